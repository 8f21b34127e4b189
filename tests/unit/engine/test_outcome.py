"""What a flow came to: secret values never show in a repr, and the exit-code rule."""

from __future__ import annotations

from pathlib import Path

from flowproof.core.errors import ConfigError, SpecError
from flowproof.engine.outcome import ConfigProblem, FlowOutcome, Mode, Secrets, Summary
from flowproof.engine.runrecord import flow_record


def test_an_outcome_holding_secrets_does_not_show_them() -> None:
    outcome = FlowOutcome(
        Path("s.yaml"), "f", Mode.REPLAY, (), secrets=Secrets({"DB_PASSWORD": "hunter2"})
    )
    assert "hunter2" not in repr(outcome) and "DB_PASSWORD" in repr(outcome)
    assert dict(outcome.secrets) == {"DB_PASSWORD": "hunter2"}


def test_a_configuration_error_outranks_a_failed_flow() -> None:
    failed = flow_record(FlowOutcome(Path("s.yaml"), "f", Mode.REPLAY, ("it failed",)), None)
    passed = flow_record(FlowOutcome(Path("p.yaml"), "p", Mode.REPLAY, ()), None)
    assert Summary([passed]).exit_code == 0
    assert Summary([passed, failed]).exit_code == 1
    assert Summary([failed], [ConfigProblem("bad")]).exit_code == 2
    assert Summary().exit_code == 0


def test_a_config_problem_keeps_the_file_and_line_a_spec_error_names() -> None:
    problem = ConfigProblem.from_error(SpecError("specs/a.yaml", 4, "bad key"), Path("x"))
    assert (problem.spec, problem.line) == (Path("specs/a.yaml"), 4)
    other = ConfigProblem.from_error(ConfigError("${X} is not set"), Path("specs/b.yaml"))
    assert (other.spec, other.line, other.message) == (
        Path("specs/b.yaml"),
        None,
        "${X} is not set",
    )
