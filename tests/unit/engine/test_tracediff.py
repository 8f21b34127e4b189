"""The trace diff's argument and schema lines: dotted paths, whole lists when lengths differ."""

from __future__ import annotations

from flowproof.trace.changes import value_changes


def test_changed_leaves_are_dotted_paths_in_order() -> None:
    old = {"flight": {"id": "KQ311"}, "passengers": [{"name": "Ann"}], "seat": None}
    new = {"passengers": [{"name": "Bo"}], "flight": {"id": "KQ999"}, "meal": "veg"}
    assert list(value_changes(old, new)) == [
        'flight.id: "KQ311" → "KQ999"',
        'passengers.0.name: "Ann" → "Bo"',
        "seat: (none) → (absent)",
        'meal: (absent) → "veg"',
    ]


def test_a_list_that_changed_length_is_shown_whole() -> None:
    assert list(value_changes({"ids": [1]}, {"ids": [1, 2]})) == ["ids: [1] → [1, 2]"]


def test_key_order_and_number_types_are_not_changes() -> None:
    assert list(value_changes({"a": 1, "b": 2}, {"b": 2.0, "a": True})) == []


def test_whole_values_have_no_path() -> None:
    assert list(value_changes("a", "b")) == ['(whole): "a" → "b"']


def test_an_mcp_lane_diff_names_changed_calls_and_arguments() -> None:
    from flowproof.mcp.kind import McpLaneKind
    from flowproof.mcp.lane import Call, Notice

    def call(tool: str, **arguments: object) -> Call:
        return Call({"method": "tools/call", "params": {"name": tool, "arguments": arguments}}, {})

    old = [Call({"method": "initialize"}, {}), call("read", path="/a")]
    new = [
        Call({"method": "initialize"}, {}),
        Notice({"method": "n"}, 1),
        call("read", path="/b"),
        call("delete", path="/b"),
    ]
    diff_mcp_lanes = McpLaneKind().changes
    lines = diff_mcp_lanes(old, new)
    assert lines[0].startswith("tool calls: previously initialize → tools/call read; now ")
    assert "now also calls tools/call delete" in lines[0]
    assert any("arguments.path" in line and '"/a"' in line and '"/b"' in line for line in lines)
    assert diff_mcp_lanes(old, old) == []
