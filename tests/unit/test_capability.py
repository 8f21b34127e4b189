"""The capability every URL given to the agent carries, and how a path is checked for it."""

from __future__ import annotations

import pytest

from flowproof.guards.capability import Capability

STRICT = Capability(token="Tk-1_x")


@pytest.mark.parametrize(
    ("path", "admitted"),
    [
        ("/Tk-1_x/v1/chat/completions", "/v1/chat/completions"),
        ("/Tk-1_x/api/chat", "/api/chat"),
        ("/Tk-1_x/", "/"),
        ("/Tk-1_x", "/"),
        ("/v1/chat/completions", None),
        ("/", None),
        ("", None),
        ("/Tk-1_y/v1/chat/completions", None),
        ("/Tk-1_xx/v1/chat/completions", None),
        ("/Tk-1/v1/chat/completions", None),
        ("/v1/Tk-1_x/chat/completions", None),
        ("//Tk-1_x/v1/chat/completions", None),
    ],
)
def test_only_a_path_that_starts_with_the_whole_token_is_admitted(
    path: str, admitted: str | None
) -> None:
    assert STRICT.admit(path) == admitted


def test_a_url_flow_admits_a_path_without_it_unchanged_and_strips_it_when_present() -> None:
    open_door = Capability(token="Tk-1_x", required=False)
    assert open_door.admit("/v1/chat/completions") == "/v1/chat/completions"
    assert open_door.admit("/Tk-1_x/v1/chat/completions") == "/v1/chat/completions"


def test_each_capability_is_fresh_url_safe_and_kept_out_of_its_repr() -> None:
    tokens = {Capability().token for _ in range(50)}
    assert len(tokens) == 50
    for token in tokens:
        assert len(token) == 24 and token.replace("-", "").replace("_", "").isalnum()
    capability = Capability()
    assert capability.token not in repr(capability)
