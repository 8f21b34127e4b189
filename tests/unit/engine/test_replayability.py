"""What doctor reports as non-replayable, from request bodies alone (no agent, no sockets)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from flowproof.engine.replayability import environment_facts, find_hazards, suggested_lines

NOW = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
CWD, HOME = "/home/casey/work/app", "/home/casey"
SESSION = "2f1c6a0e-8b7d-4c1e-9f3a-5d6e7f8a9b0c"


def hazards(*bodies: dict, now: datetime = NOW) -> list:
    return list(find_hazards(bodies, environment_facts(CWD, HOME, now), now))


def test_claude_code_style_prompt_names_the_date_and_the_session_id_not_the_default_facts() -> None:
    """The working and home directories are normalised by default: nothing to declare."""
    body = {
        "model": "claude-sonnet-4-5",
        "system": [{"type": "text", "text": f"Config lives in {HOME}/.claude."}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": f"Working directory: {CWD}\nToday's date is 2026-12-01.",
                    }
                ],
            }
        ],
        "metadata": {"user_id": f"user_abc_account__session_{SESSION}"},
    }
    found = hazards(body)
    assert [(f.label, f.normalize, f.ignore_field) for f in found] == [
        ("today's date", "date", None),
        ("a per-run id at metadata.user_id", None, "metadata.user_id"),
    ]
    assert suggested_lines(found) == [
        "normalize: [date]",
        "ignore_fields: [metadata.user_id]",
    ]
    assert found[1].render() == [
        "  a per-run id at metadata.user_id: request 1 at metadata.user_id = "
        f"'user_abc_account__session_{SESSION}'",
        "      → ignore_fields: [metadata.user_id]",
    ]


def test_every_spelling_of_today_and_the_weekday_is_one_date_finding() -> None:
    spellings = ["Tue Dec 01 2026", "December 1, 2026", "It is Tuesday.", "2026-12-01"]
    body = {"messages": [{"role": "user", "content": text} for text in spellings]}
    (date,) = hazards(body)
    assert date.normalize == "date"
    assert sorted(s.value for s in date.sightings) == sorted(
        ["Tue Dec 01 2026", "December 1, 2026", "Tuesday", "2026-12-01"]
    )


def test_the_local_date_counts_when_it_is_not_the_utc_date() -> None:
    late = datetime(2026, 12, 1, 23, 30, tzinfo=UTC).astimezone(timezone(timedelta(hours=3)))
    (date,) = hazards({"input": "Today is 2026-12-02."}, now=late)
    assert date.sightings[0].value == "2026-12-02"


def test_codex_style_ids_item_ids_cache_key_and_client_metadata() -> None:
    body = {
        "model": "gpt-4.1",
        "input": [
            {"type": "message", "id": f"msg_{SESSION}", "role": "user", "content": "hi"},
            {
                "type": "message",
                "id": f"msg_{SESSION[:-1]}d",
                "internal_chat_message_metadata_passthrough": {
                    "turn_id": SESSION,
                    "create_time": NOW.timestamp(),
                },
            },
        ],
        "prompt_cache_key": SESSION,
        "client_metadata": {"thread_id": SESSION, "turn_id": SESSION, "window": "0"},
    }
    found = hazards(body)
    assert [(f.label, f.ignore_field) for f in found] == [
        ("a per-run id at input[*].id", "input[*].id"),
        (
            "a per-run id at input[*].internal_chat_message_metadata_passthrough",
            "input[*].internal_chat_message_metadata_passthrough",
        ),
        ("a per-run id at prompt_cache_key", "prompt_cache_key"),
        ("per-run ids under client_metadata", "client_metadata"),
    ]
    # the item's identity field is declared whole: both values below it are one finding
    assert [s.path for s in found[1].sightings] == [
        "input[1].internal_chat_message_metadata_passthrough.turn_id",
        "input[1].internal_chat_message_metadata_passthrough.create_time",
    ]
    assert suggested_lines(found) == [
        'ignore_fields: ["input[*].id", "input[*].internal_chat_message_metadata_passthrough", '
        "prompt_cache_key, client_metadata]"
    ]


def test_a_per_run_value_inside_the_conversation_names_what_can_fix_it() -> None:
    body = {"messages": [{"role": "tool", "content": f"Chunk ID: {SESSION}"}]}
    (found,) = hazards(body)
    assert found.ignore_field is None
    assert found.why_not == (
        "inside the conversation (messages), where matching stays strict: no ignore_fields "
        "entry declares it. If the agent is your own code, stop sending it; if it is a tool's "
        "output, give that tool a `result:` in the spec's `tools:`; otherwise the trace matches "
        "only the run it was recorded in"
    )


def test_stable_values_are_not_reported() -> None:
    body = {
        "model": "gpt-4.1",
        "messages": [{"role": "user", "content": "Book flight KQ311 for 2 people on Monday"}],
        "max_tokens": 1024,
        "temperature": 0,
    }
    assert hazards(body) == []


@pytest.mark.parametrize("agent", [".claude", ".myagent"])
def test_a_project_slug_of_the_cwd_is_normalised_by_default_for_any_agent(agent: str) -> None:
    """A slug (with or without its leading dash) is the working directory in another spelling,
    which normalisation covers by default: no finding, and no agent's own variable named."""
    for slug in ("-home-casey-work-app", "home-casey-work-app"):
        state = f"{HOME}/{agent}/projects/{slug}/memory/"
        assert hazards({"system": [{"type": "text", "text": f"Memory at `{state}`."}]}) == []


def test_a_slug_does_not_hide_a_date_beside_it() -> None:
    state = f"{HOME}/.myagent/projects/-home-casey-work-app/2026-12-01.md"
    (date,) = hazards({"messages": [{"role": "system", "content": f"Notes: {state}"}]})
    assert date.normalize == "date"


def test_a_time_zone_variable_the_agent_prints_is_declared_as_that_variable() -> None:
    facts = environment_facts(CWD, HOME, NOW, "Etc/UTC", {"TZ": "Europe/Paris"})
    body = {"input": [{"role": "user", "content": "<timezone>Europe/Paris</timezone>"}]}
    found = list(find_hazards([body], facts, NOW))
    assert [f.label for f in found] == ["$TZ (Europe/Paris)"]
    assert suggested_lines(found) == ['normalize: ["${TZ}"]']


def test_the_machine_time_zone_is_reported_as_undeclarable() -> None:
    """Codex CLI prints the machine's zone, whatever TZ says: no normalize: fact covers it."""
    facts = environment_facts(CWD, HOME, NOW, "Etc/UTC", {"TZ": "Etc/UTC"})
    body = {"input": [{"role": "user", "content": "<timezone>Etc/UTC</timezone>"}]}
    (zone,) = find_hazards([body], facts, NOW)
    assert zone.label == "this machine's time zone Etc/UTC" and zone.normalize is None
    assert zone.why_not and zone.why_not.startswith("no normalize: fact covers a time zone")
    assert suggested_lines([zone]) == []
