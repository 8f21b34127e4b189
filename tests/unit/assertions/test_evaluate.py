import json
from pathlib import Path
from typing import Any

import pytest

from flowproof.assertions.evaluate import SpecLine, StepRef, Verdict, evaluate
from flowproof.assertions.grammar import Assertion
from flowproof.assertions.kinds import parse_step
from flowproof.assertions.trajectory import ToolCall, Trajectory
from flowproof.core.errors import ConfigError, SpecError


def make_call(name: str, arguments: Any = None, *, turn: int = 0) -> ToolCall:
    """A call whose arguments are JSON (an empty object unless given)."""
    arguments = {} if arguments is None else arguments
    return ToolCall(name=name, arguments=arguments, raw_arguments=json.dumps(arguments), turn=turn)


def make_raw_call(name: str, raw: str) -> ToolCall:
    """A call whose arguments are not JSON: the trajectory keeps the raw string."""
    return ToolCall(name=name, arguments=raw, raw_arguments=raw, turn=0)


def make_trajectory(
    *calls: ToolCall, reply: str | None = "Booked KQ311 for you.", reason: str = ""
) -> Trajectory:
    return Trajectory(tool_calls=calls, reply=reply, reply_absent_reason=reason)


def make_step(number: int, line: str, file: str = "booking.yaml") -> tuple[StepRef, Assertion]:
    kind, _, text = line.partition(": ")
    return StepRef(number, file, 10 + number), parse_step(kind, text)


def run(
    trajectory: Trajectory, *lines: str, strict: bool = False, env: dict[str, str] | None = None
) -> list[Verdict]:
    def resolve(text: str) -> str:
        for name, value in (env or {}).items():
            text = text.replace("${" + name + "}", value)
        return text

    steps = [make_step(number, line) for number, line in enumerate(lines, start=1)]
    at = SpecLine("specs/booking.yaml", 7) if strict else None
    return evaluate(steps, trajectory, strict=at, resolve=resolve)


def messages(verdicts: list[Verdict]) -> list[str]:
    return [verdict.message for verdict in verdicts]


BOOKING = make_trajectory(
    make_call("search_flights", {"destination": "NBO"}),
    make_call("check_visa", {"country": "KE"}),
    make_call("create_booking", {"flight": {"id": "KQ311"}, "passengers": [{"name": "Casey"}]}),
)


def test_step_ref_reads_like_a_location() -> None:
    assert str(StepRef(3, "booking.yaml", 14)) == "step 3 (booking.yaml:14)"


def test_an_ordered_subsequence_passes_with_unlisted_calls_between() -> None:
    verdicts = run(
        BOOKING,
        "assert_tool_call: search_flights where destination contains NBO",
        "assert_tool_call: create_booking where flight.id equals KQ311"
        " and passengers.0.name is Casey",
    )
    first, second = StepRef(1, "booking.yaml", 11), StepRef(2, "booking.yaml", 12)
    assert verdicts == [
        Verdict(
            step=first,
            at=SpecLine("booking.yaml", 11),
            kind="assert_tool_call",
            expected="assert_tool_call search_flights where destination contains NBO",
            observed="",
            passed=True,
            message="",
        ),
        Verdict(
            step=second,
            at=SpecLine("booking.yaml", 12),
            kind="assert_tool_call",
            expected="assert_tool_call create_booking where flight.id equals KQ311"
            " and passengers.0.name is Casey",
            observed="",
            passed=True,
            message="",
        ),
    ]
    assert str(verdicts[0]) == (
        "step 1 (booking.yaml:11): assert_tool_call search_flights where destination contains NBO"
    )


def test_strict_reports_every_unlisted_call() -> None:
    trajectory = make_trajectory(*BOOKING.tool_calls, make_call("send_email"))
    verdicts = run(
        trajectory,
        "assert_tool_call: search_flights",
        "assert_tool_call: create_booking",
        strict=True,
    )
    assert [v.passed for v in verdicts] == [True, True, False]
    unlisted = (
        "calls not listed by any assert_tool_call:"
        " check_visa (call 2 of 4), send_email (call 4 of 4)"
    )
    assert verdicts[2] == Verdict(
        step=None,
        at=SpecLine("specs/booking.yaml", 7),
        kind="strict",
        expected="strict: true",
        observed=unlisted,
        passed=False,
        # The strict verdict names the file and the line of `strict:`, like a step's.
        message=f"booking.yaml:7: strict: {unlisted}",
    )
    assert str(verdicts[2]) == verdicts[2].message


def test_strict_passes_silently_when_every_call_is_listed() -> None:
    verdicts = run(
        BOOKING,
        "assert_tool_call: search_flights",
        "assert_tool_call: check_visa",
        "assert_tool_call: create_booking",
        strict=True,
    )
    assert [v.passed for v in verdicts] == [True, True, True]


def test_strict_counts_a_call_only_a_failed_step_wanted_as_unlisted() -> None:
    verdicts = run(
        BOOKING, "assert_tool_call: create_booking where flight.id equals X", strict=True
    )
    assert verdicts[-1].message == (
        "booking.yaml:7: strict: calls not listed by any assert_tool_call: search_flights (call 1 of 3),"
        " check_visa (call 2 of 3), create_booking (call 3 of 3)"
    )


def test_without_strict_unlisted_calls_add_no_verdict() -> None:
    assert len(run(BOOKING, "assert_tool_call: create_booking")) == 1


def test_called_once_with_another_value() -> None:
    trajectory = make_trajectory(
        make_call("search_flights"),
        make_call("check_visa"),
        make_call("create_booking", {"flight": {"id": "KQ999"}}),
    )
    steps = [
        (StepRef(2, "booking.yaml", 12), parse_step("assert_tool_call", "search_flights")),
        (
            StepRef(3, "booking.yaml", 14),
            parse_step("assert_tool_call", "create_booking where flight.id equals KQ311"),
        ),
    ]
    verdicts = evaluate(steps, trajectory, strict=None, resolve=lambda text: text)
    assert verdicts[1] == Verdict(
        step=StepRef(3, "booking.yaml", 14),
        at=SpecLine("booking.yaml", 14),
        kind="assert_tool_call",
        expected="assert_tool_call create_booking where flight.id equals KQ311",
        observed='create_booking was called once, with flight.id = "KQ999"',
        passed=False,
        message="step 3 (booking.yaml:14): assert_tool_call create_booking where flight.id"
        ' equals KQ311 — create_booking was called once, with flight.id = "KQ999"',
    )


def test_called_several_times_shows_each_failing_value() -> None:
    trajectory = make_trajectory(
        make_call("search_flights"),
        make_call("create_booking", {"flight": {"id": "KQ999"}}),
        make_call("check_visa"),
        make_call("create_booking", {"flight": {}}),
    )
    [verdict] = run(trajectory, "assert_tool_call: create_booking where flight.id equals KQ311")
    assert verdict.message == (
        "step 1 (booking.yaml:11): assert_tool_call create_booking where flight.id equals KQ311"
        ' — create_booking was called 2 times: flight.id = "KQ999" (call 2 of 4),'
        " flight.id is absent (call 4 of 4)"
    )


def test_only_the_failing_clauses_are_shown_joined_with_and() -> None:
    trajectory = make_trajectory(make_call("book", {"id": "KQ999", "seat": None, "n": 2}))
    [verdict] = run(
        trajectory, "assert_tool_call: book where id equals KQ311 and n equals 2 and seat is absent"
    )
    assert verdict.message.endswith(' — book was called once, with id = "KQ999" and seat = null')


def test_never_called_lists_the_calls() -> None:
    [verdict] = run(BOOKING, "assert_tool_call: pay")
    assert verdict.message == (
        "step 1 (booking.yaml:11): assert_tool_call pay — pay was never called;"
        " the calls were: search_flights, check_visa, create_booking"
    )


def test_never_called_when_no_tools_were_asked_for() -> None:
    [verdict] = run(make_trajectory(), "assert_tool_call: pay")
    assert verdict.message == (
        "step 1 (booking.yaml:11): assert_tool_call pay — pay was never called;"
        " the model asked for no tools"
    )


def test_a_long_list_of_calls_is_cut() -> None:
    trajectory = make_trajectory(*(make_call(f"t{i}") for i in range(25)))
    [verdict] = run(trajectory, "assert_tool_call: pay")
    names = ", ".join(f"t{i}" for i in range(20))
    assert verdict.message.endswith(f"the calls were: {names}, and 5 more")


def test_order_violation() -> None:
    [_, verdict] = run(
        BOOKING, "assert_tool_call: create_booking", "assert_tool_call: search_flights"
    )
    assert verdict.message == (
        "step 2 (booking.yaml:12): assert_tool_call search_flights — search_flights was called,"
        " but only before the previous assert_tool_call matched (call 1 of 3)"
    )


def test_order_violation_also_shows_later_calls_that_did_not_match() -> None:
    trajectory = make_trajectory(
        make_call("search", {"q": "NBO"}),
        make_call("book"),
        make_call("search", {"q": "MBA"}),
    )
    [_, verdict] = run(
        trajectory, "assert_tool_call: book", "assert_tool_call: search where q is NBO"
    )
    assert verdict.message.endswith(
        " — search was called, but only before the previous assert_tool_call matched"
        ' (call 1 of 3); after it: q = "MBA" (call 3 of 3)'
    )


def test_a_failed_step_takes_no_call_and_does_not_move_the_cursor() -> None:
    verdicts = run(
        BOOKING,
        "assert_tool_call: search_flights",
        "assert_tool_call: pay",
        "assert_tool_call: check_visa",
    )
    assert [v.passed for v in verdicts] == [True, False, True]


def test_repeated_calls_are_taken_one_per_step_in_order() -> None:
    trajectory = make_trajectory(
        make_call("search", {"q": "NBO"}), make_call("search", {"q": "MBA"})
    )
    passing = run(trajectory, "assert_tool_call: search", "assert_tool_call: search where q is MBA")
    assert [v.passed for v in passing] == [True, True]
    failing = run(
        trajectory,
        "assert_tool_call: search",
        "assert_tool_call: search",
        "assert_tool_call: search",
    )
    assert failing[2].message.endswith(
        " — search was called, but only before the previous assert_tool_call matched"
        " (call 1 of 2, call 2 of 2)"
    )


def test_arguments_that_are_not_json_satisfy_no_clause() -> None:
    trajectory = make_trajectory(make_raw_call("create_booking", "flight=KQ311"))
    [verdict] = run(trajectory, "assert_tool_call: create_booking where flight exists")
    assert verdict.message == (
        "step 1 (booking.yaml:11): assert_tool_call create_booking where flight exists"
        ' — create_booking was called once, but its arguments are not JSON: "flight=KQ311"'
    )


def test_arguments_the_reader_refuses_fail_a_clause_and_a_forbidding_step_saying_why() -> None:
    raw, why = "[" * 300 + "]" * 300, "[0][0]… (126 levels more): too deeply nested"
    trajectory = make_trajectory(ToolCall("transfer", raw, raw, 0, unreadable=why))
    [judged] = run(trajectory, "assert_tool_call: transfer where amount exists")
    assert judged.message.endswith(
        f' — transfer was called once, but its arguments cannot be read ({why}): "{"[" * 200}…"'
    )
    [forbidden] = run(trajectory, "assert_no_tool_call: transfer")
    assert forbidden.message.endswith(
        f" — the model asked for transfer (call 1 of 1) with arguments that cannot be read ({why}):"
        f' "{"[" * 200}…"'
    )


def test_arguments_that_are_not_json_still_satisfy_a_bare_tool_step() -> None:
    trajectory = make_trajectory(make_raw_call("create_booking", "flight=KQ311"))
    assert run(trajectory, "assert_tool_call: create_booking")[0].passed


def test_long_raw_arguments_are_cut() -> None:
    raw = "x" * 250
    trajectory = make_trajectory(make_raw_call("t", raw), make_raw_call("t", 'a "quoted"\nline'))
    [verdict] = run(trajectory, "assert_tool_call: t where a exists")
    assert verdict.message.endswith(
        f' — t was called 2 times: its arguments are not JSON: "{"x" * 200}…" (call 1 of 2),'
        ' its arguments are not JSON: "a \\"quoted\\"\\nline" (call 2 of 2)'
    )


def test_a_json_string_argument_is_json() -> None:
    call = ToolCall(name="t", arguments="hello", raw_arguments='"hello"', turn=0)
    assert run(make_trajectory(call), "assert_tool_call: t where x is absent")[0].passed


def test_json_values_compare_as_json() -> None:
    trajectory = make_trajectory(make_call("t", {"count": 3, "ok": True, "note": None}))
    verdicts = run(
        trajectory,
        "assert_tool_call: t where count equals 3 and ok equals true and note equals null",
        "assert_tool_call: t where ok equals 1",
    )
    assert [v.passed for v in verdicts] == [True, False]
    assert verdicts[1].message.endswith(" — t was called once, with ok = true")


def test_assert_no_tool_call_passes_when_the_tool_was_never_asked_for() -> None:
    assert run(BOOKING, "assert_no_tool_call: transfer_funds")[0].passed


def test_assert_no_tool_call_names_the_offending_call() -> None:
    trajectory = make_trajectory(
        make_call("transfer_funds", {"amount": 5000, "to": "acct-9"}), make_call("check_balance")
    )
    steps = [(StepRef(2, "guard.yaml", 9), parse_step("assert_no_tool_call", "transfer_funds"))]
    [verdict] = evaluate(steps, trajectory, strict=None, resolve=lambda text: text)
    assert verdict.message == (
        "step 2 (guard.yaml:9): assert_no_tool_call transfer_funds — the model asked for"
        ' transfer_funds (call 1 of 2) with {"amount": 5000, "to": "acct-9"}'
    )


def test_assert_no_tool_call_names_every_offending_call_wherever_it_is() -> None:
    trajectory = make_trajectory(
        make_call("refund", {"amount": 5}),
        make_call("check"),
        make_raw_call("refund", "all of it"),
    )
    [verdict] = run(trajectory, "assert_no_tool_call: refund")
    assert verdict.message.endswith(
        ' — the model asked for refund 2 times: call 1 of 3 with {"amount": 5},'
        ' call 3 of 3 with arguments that are not JSON: "all of it"'
    )


def test_assert_no_tool_call_where_narrows_to_matching_calls() -> None:
    trajectory = make_trajectory(
        make_call("issue_refund", {"status": "pending"}),
        make_call("issue_refund", {"status": "approved"}),
    )
    passing = run(trajectory, "assert_no_tool_call: issue_refund where status equals rejected")
    assert passing[0].passed
    [failing] = run(trajectory, "assert_no_tool_call: issue_refund where status equals approved")
    assert failing.message == (
        "step 1 (booking.yaml:11): assert_no_tool_call issue_refund where status equals approved"
        ' — the model asked for issue_refund (call 2 of 2) with {"status": "approved"}'
    )


def test_assert_no_tool_call_where_counts_unreadable_arguments_against_it() -> None:
    trajectory = make_trajectory(make_raw_call("issue_refund", "status=approved"))
    [verdict] = run(trajectory, "assert_no_tool_call: issue_refund where status equals approved")
    assert verdict.message.endswith(
        " — the model asked for issue_refund (call 1 of 1)"
        ' with arguments that are not JSON: "status=approved"'
    )


def test_assert_no_tool_call_takes_no_call_from_the_subsequence() -> None:
    verdicts = run(
        BOOKING,
        "assert_tool_call: search_flights",
        "assert_no_tool_call: pay",
        "assert_tool_call: check_visa",
        strict=True,
    )
    assert [v.passed for v in verdicts] == [True, True, True, False]


def test_reply_contains() -> None:
    verdicts = run(BOOKING, "assert: reply contains KQ311", "assert: reply is Booked")
    assert [v.passed for v in verdicts] == [True, True]


def test_reply_is_case_sensitive_and_quoted_on_failure() -> None:
    [verdict] = run(BOOKING, "assert: reply contains booked")
    assert verdict.message == (
        "step 1 (booking.yaml:11): assert reply contains booked"
        ' — the reply was "Booked KQ311 for you."'
    )


def test_a_long_reply_is_cut() -> None:
    reply = "y" * 300
    [verdict] = run(make_trajectory(reply=reply), "assert: reply is booked")
    assert verdict.message.endswith(f' — the reply was "{"y" * 200}…"')


def test_no_reply_gives_the_reason() -> None:
    trajectory = make_trajectory(reply=None, reason="the last turn ended on a tool call")
    [verdict] = run(trajectory, "assert: reply contains booked")
    assert verdict.message == (
        "step 1 (booking.yaml:11): assert reply contains booked"
        " — the trajectory has no reply: the last turn ended on a tool call"
    )


def test_no_reply_without_a_reason() -> None:
    [verdict] = run(make_trajectory(reply=None), "assert: reply contains booked")
    assert verdict.message.endswith(" — the trajectory has no reply")


def test_an_empty_reply_is_a_reply() -> None:
    [verdict] = run(make_trajectory(reply=""), "assert: reply contains booked")
    assert verdict.message.endswith(' — the reply was ""')


def test_var_references_are_resolved_at_evaluation() -> None:
    trajectory = make_trajectory(make_call("pay", {"account": "acct-42"}), reply="Paid acct-42.")
    lines = (
        "assert_tool_call: pay where account equals ${ACCOUNT}",
        "assert: reply contains ${ACCOUNT}",
    )
    assert [v.passed for v in run(trajectory, *lines, env={"ACCOUNT": "acct-42"})] == [True, True]
    failing = run(trajectory, *lines, env={"ACCOUNT": "acct-7"})
    # The message quotes the reference as written, never its value.
    assert failing[0].message == (
        "step 1 (booking.yaml:11): assert_tool_call pay where account equals ${ACCOUNT}"
        ' — pay was called once, with account = "acct-42"'
    )


def test_the_resolver_sees_each_value_text() -> None:
    seen: list[str] = []

    def resolve(text: str) -> str:
        seen.append(text)
        return text

    steps = [
        make_step(1, "assert_tool_call: t where a equals x ${A} and b exists and c matches ^${C}"),
        make_step(2, "assert_no_tool_call: u where d contains ${D}"),
        make_step(3, "assert: reply contains ${R}"),
    ]
    evaluate(steps, make_trajectory(), strict=None, resolve=resolve)
    assert seen == ["x ${A}", "^${C}", "${D}", "${R}"]


def test_resolver_errors_propagate() -> None:
    def resolve(text: str) -> str:
        raise KeyError("ACCOUNT")

    with pytest.raises(KeyError):
        evaluate(
            [make_step(1, "assert_tool_call: pay where account equals ${ACCOUNT}")],
            BOOKING,
            strict=None,
            resolve=resolve,
        )


def test_a_regex_broken_by_resolution_is_a_spec_error_at_the_step() -> None:
    steps = [
        make_step(1, "assert_tool_call: search_flights"),
        (
            StepRef(3, "specs/booking.yaml", 12),
            parse_step("assert_tool_call", "t where id matches ${P}"),
        ),
    ]
    with pytest.raises(SpecError) as raised:
        evaluate(steps, BOOKING, strict=None, resolve=lambda text: text.replace("${P}", "[0-9"))
    assert (raised.value.path, raised.value.line) == (Path("specs/booking.yaml"), 12)
    assert str(raised.value) == (
        "specs/booking.yaml:12: step 3 (assert_tool_call): matches: invalid regex '[0-9':"
        " unterminated character set at position 0 (from ${P});"
        " fix that variable's value in the environment, or the step"
    )


@pytest.mark.parametrize(
    "line",
    ["assert_no_tool_call: t where id equals ${UNSET}", "assert: reply contains ${UNSET}"],
)
def test_an_unset_variable_is_a_spec_error_at_the_step(line: str) -> None:
    def resolve(text: str) -> str:
        raise ConfigError("${UNSET} is used by the spec but is not set in the environment")

    kind, _, text = line.partition(": ")
    steps = [(StepRef(2, "specs/booking.yaml", 9), parse_step(kind, text))]
    with pytest.raises(SpecError) as raised:
        evaluate(steps, BOOKING, strict=None, resolve=resolve)
    assert str(raised.value) == (
        f"specs/booking.yaml:9: step 2 ({kind}): ${{UNSET}} is used by the spec but is not set"
        " in the environment; set it before running flowproof, or take the reference out of"
        " the step"
    )


def test_a_pass_has_no_observed_text_and_a_failure_carries_it() -> None:
    passed, failed = run(BOOKING, "assert: reply contains KQ311", "assert: reply contains no")
    assert (passed.kind, passed.expected, passed.observed) == (
        "assert",
        "assert reply contains KQ311",
        "",
    )
    assert (failed.kind, failed.observed) == ("assert", 'the reply was "Booked KQ311 for you."')
    assert failed.message == f"{failed.step}: {failed.expected} — {failed.observed}"


def test_step_ref_keeps_the_spec_path_and_prints_the_file_name() -> None:
    ref = StepRef(3, "specs/flows/booking.yaml", 14)
    assert (ref.spec, ref.file, str(ref)) == (
        "specs/flows/booking.yaml",
        "booking.yaml",
        "step 3 (booking.yaml:14)",
    )
    assert ref.at == SpecLine("specs/flows/booking.yaml", 14)
    assert str(ref.at) == "booking.yaml:14"


# The tool boundary: `server/tool` judges what the agent EXECUTED at an MCP server.

GUARD = Trajectory(
    tool_calls=(make_call("export_rows", {"rows": 100}),),
    reply="I cannot export in plan mode.",
    executed=(make_call("exports/list_tables"),),
)


def test_the_model_asked_and_the_code_refused_are_judged_at_two_boundaries() -> None:
    verdicts = run(
        GUARD,
        "assert_tool_call: export_rows",
        "assert_no_tool_call: exports/export_rows",
        "assert_tool_call: exports/list_tables",
    )
    assert [v.passed for v in verdicts] == [True, True, True]


def test_a_call_that_reached_the_server_fails_the_guard_saying_the_agent_called_it() -> None:
    executed = Trajectory((), "done", executed=(make_call("exports/export_rows", {"rows": 100}),))
    (verdict,) = run(executed, "assert_no_tool_call: exports/export_rows")
    assert verdict.observed == (
        'the agent called exports/export_rows (call 1 of 1) with {"rows": 100}'
    )


def test_a_tool_boundary_step_does_not_see_the_model_s_calls() -> None:
    (verdict,) = run(GUARD, "assert_tool_call: exports/export_rows")
    assert verdict.observed == (
        "exports/export_rows was never called; the calls were: exports/list_tables"
    )
    (verdict,) = run(make_trajectory(), "assert_tool_call: exports/export_rows")
    assert verdict.observed == "exports/export_rows was never called; the agent called no MCP tools"


def test_strict_lists_only_the_model_s_calls() -> None:
    verdicts = run(GUARD, "assert_tool_call: export_rows", strict=True)
    assert [v.passed for v in verdicts] == [True]
