"""assert_no_egress: its step text, its verdicts, and how a spec declares allow_egress."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from flowproof.assertions.egress import EgressEvidence, check_no_egress, parse_no_egress
from flowproof.assertions.evaluate import StepRef
from flowproof.containment.engage import EgressSession
from flowproof.core.errors import SpecError, StepError
from flowproof.engine.egress import flow_egress
from flowproof.spec.load import load_spec

REF = StepRef(3, "specs/egress.yaml", 12)
CONTAINED = "contained (linux seccomp)"


def test_certified_when_contained_and_nothing_was_refused() -> None:
    verdict = check_no_egress(REF, parse_no_egress(""), EgressEvidence(True, CONTAINED))
    assert verdict.passed and verdict.observed == ""


def test_a_refused_destination_is_named() -> None:
    evidence = EgressEvidence(
        True, CONTAINED, ("connect 203.0.113.7:8080", "sendto 203.0.113.7:53")
    )
    verdict = check_no_egress(REF, parse_no_egress(""), evidence)
    assert not verdict.passed
    assert verdict.message == (
        "step 3 (egress.yaml:12): assert_no_egress — the agent attempted 2 undeclared "
        "destinations, refused: connect 203.0.113.7:8080, sendto 203.0.113.7:53; declare each "
        "one it may reach in agent.allow_egress"
    )


def test_many_refusals_are_counted_after_five() -> None:
    blocked = tuple(f"connect 203.0.113.{n}:80" for n in range(8))
    verdict = check_no_egress(REF, parse_no_egress(""), EgressEvidence(True, CONTAINED, blocked))
    assert "connect 203.0.113.4:80 and 3 more;" in verdict.message


def test_an_uncontained_run_cannot_be_certified_even_with_nothing_blocked() -> None:
    tier = "not contained (egress containment is Linux-only; this platform is not contained)"
    verdict = check_no_egress(REF, parse_no_egress(""), EgressEvidence(False, tier))
    assert not verdict.passed
    assert verdict.observed == f"cannot certify: {tier}"


def test_no_evidence_at_all_cannot_be_certified() -> None:
    verdict = check_no_egress(REF, parse_no_egress(""), None)
    assert verdict.observed.startswith("cannot certify: not contained")


def test_the_step_takes_no_text() -> None:
    with pytest.raises(StepError) as raised:
        parse_no_egress("203.0.113.7")
    assert str(raised.value) == (
        "assert_no_egress takes no text (got '203.0.113.7'); write `- assert_no_egress` and "
        "list what the agent may reach in agent.allow_egress"
    )


SPEC = """\
name: Egress
app: agent
agent:
  command: python3 agent.py
  allow_egress:
    - 198.51.100.9:443
    - ${SERVICE_HOST}:443
steps:
  - prompt: Book me a flight
  - assert_no_egress
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "egress.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_a_bare_step_and_the_allow_list_load_unresolved(tmp_path: Path) -> None:
    loaded = load_spec(write(tmp_path, SPEC))
    assert loaded.spec.agent.allow_egress == ["198.51.100.9:443", "${SERVICE_HOST}:443"]
    assert [(s.kind, s.ref.line) for s in loaded.assertions] == [("assert_no_egress", 10)]


def test_the_step_with_an_empty_value_loads_too(tmp_path: Path) -> None:
    loaded = load_spec(write(tmp_path, SPEC.replace("- assert_no_egress", "- assert_no_egress:")))
    assert [s.kind for s in loaded.assertions] == ["assert_no_egress"]


def test_a_malformed_entry_is_a_spec_error_at_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, SPEC.replace("198.51.100.9:443", "198.51.100.9:http"))
    with pytest.raises(SpecError) as raised:
        load_spec(path)
    assert str(raised.value).replace(str(tmp_path) + "/", "") == (
        "egress.yaml:6: agent.allow_egress[0]: '198.51.100.9:http': the port must be a number "
        "from 1 to 65535, not 'http'; an entry is host:port, ip:port, cidr:port, [v6]:port, or a "
        "bare host, ip or cidr (any port)"
    )


def test_a_reference_that_resolves_to_garbage_fails_at_its_line_without_the_value(
    tmp_path: Path,
) -> None:
    loaded = load_spec(write(tmp_path, SPEC))
    with pytest.raises(SpecError) as raised:
        flow_egress(loaded, {"SERVICE_HOST": "secret host name"})
    message = str(raised.value).replace(str(tmp_path) + "/", "")
    assert message.startswith(
        "egress.yaml:7: agent.allow_egress[1] '${SERVICE_HOST}:443' does not resolve to "
    )
    assert "secret host name" not in message


def test_a_flow_without_egress_engages_none(tmp_path: Path) -> None:
    text = SPEC.replace("  allow_egress:\n    - 198.51.100.9:443\n    - ${SERVICE_HOST}:443\n", "")
    loaded = load_spec(write(tmp_path, text.replace("  - assert_no_egress\n", "")))
    assert flow_egress(loaded, {}) is None


def test_a_url_flow_is_never_contained(tmp_path: Path) -> None:
    text = SPEC.replace(
        "command: python3 agent.py", "url: http://127.0.0.1:9/task\n  proxy_port: 9"
    )
    session = flow_egress(load_spec(write(tmp_path, text)), {"SERVICE_HOST": "h"})
    assert isinstance(session, EgressSession) and not session.contained
    assert session.tier.startswith("not contained (a url: service is started outside flowproof")


def test_allow_egress_without_the_step_warns_where_uncontained() -> None:
    session = EgressSession("not contained (reason)", False, ("198.51.100.9:443",), False)
    assert session.warnings() == [
        "allow_egress (198.51.100.9:443) was not enforced: this run was not contained (reason), "
        "so the agent could reach anything; add the step `- assert_no_egress` to make the flow "
        "fail where containment is unavailable"
    ]
    assert EgressSession(CONTAINED, True, ("198.51.100.9:443",), False).warnings() == []
    assert EgressSession("not contained (r)", False, ("x:1",), True).warnings() == []


def test_a_declared_name_that_resolves_to_nothing_is_a_warning() -> None:
    session = EgressSession(CONTAINED, True, ("nowhere.invalid:443",), True)
    session.unresolved = ("nowhere.invalid",)
    assert session.warnings() == [
        "allow_egress names nowhere.invalid, which resolved to no address when the agent "
        "started; a connection to it is refused unless it resolves when the agent connects"
    ]


def test_an_in_process_agent_is_never_contained(tmp_path: Path) -> None:
    from flowproof.containment.engage import IN_PROCESS
    from flowproof.engine.egress import uncontained_egress

    session = uncontained_egress(load_spec(write(tmp_path, SPEC)), IN_PROCESS)
    assert session is not None and not session.contained
    assert session.evidence().tier == (
        "not contained (an in-process agent runs inside flowproof's own process, which "
        "flowproof cannot contain; only a command: agent can be contained)"
    )
