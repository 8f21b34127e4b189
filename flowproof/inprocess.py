"""A flow whose agent is a Python function the caller runs itself, in this process.

    with in_process_flow("specs/booking.yaml") as flow:
        reply = my_agent.run(flow.prompt)      # its SDK reads OPENAI_BASE_URL & co. from here
    # leaving the block judges the flow; FlowFailed carries the reasons

The flow runs exactly as `flowproof run` (or `record`) runs it: the same proxy, matching,
assertions, trace and run record, on a background event loop in a thread of its own. Only the
driver differs: instead of starting a command, it sets the variables flowproof would inject
(the base URLs, the placeholder keys, FLOWPROOF_PROMPT, the MCP stand-ins' variables and the
spec's `agent.env`) in `os.environ` for the block, and the block's end is the agent's exit. An
SDK client must therefore be built inside the block (one built at import time read the
environment before flowproof set it).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from flowproof.containment.engage import IN_PROCESS, uncontained_session
from flowproof.drivers.command import AgentOutcome
from flowproof.drivers.env import agent_environment, proxy_handles
from flowproof.engine.drive import DriveResult
from flowproof.engine.outcome import FlowOutcome, Mode
from flowproof.engine.run import run_flow
from flowproof.mcp.boundary import McpBoundary
from flowproof.spec.load import LoadedSpec, load_spec
from flowproof.spec.refs import resolve
from flowproof.spec.suite import Suite, find_suite

START_SECONDS = 30.0
"""How long the background loop may take to bring the boundaries up."""


class FlowFailed(AssertionError):
    """The flow failed: its reasons, most fundamental first, as `flowproof run` prints them."""

    def __init__(self, outcome: FlowOutcome) -> None:
        super().__init__("\n".join(outcome.reasons))
        self.outcome = outcome


@dataclass(slots=True)
class InProcessFlow:
    prompt: str
    """The spec's prompt steps, joined (FLOWPROOF_PROMPT)."""
    environment: dict[str, str]
    """What flowproof set in os.environ for the block."""
    outcome: FlowOutcome | None = None
    """Set when the block has ended and the flow was judged."""


@dataclass(slots=True)
class _Handover:
    ready: threading.Event = field(default_factory=threading.Event)
    finished: asyncio.Event | None = None
    loop: asyncio.AbstractEventLoop | None = None
    flow: InProcessFlow | None = None
    outcome: FlowOutcome | None = None
    crash: BaseException | None = None
    agent_error: str = ""


@contextmanager
def in_process_flow(
    spec: str | Path, mode: Mode = Mode.REPLAY, *, write_record: bool = True
) -> Iterator[InProcessFlow]:
    from flowproof.engine.strategy import strategy_for

    path = Path(spec)
    loaded = load_spec(path)
    suite = find_suite(path, Path.cwd())
    strategy = strategy_for(mode, loaded, os.environ)
    handover = _Handover()
    started = time.monotonic()
    begun = datetime.now(UTC)

    async def agent(
        loaded: LoadedSpec,
        suite: Suite | None,
        environ: Mapping[str, str],
        port: int,
        stop: asyncio.Event,
        tool_boundary: McpBoundary,
    ) -> DriveResult:
        handover.finished = asyncio.Event()
        handover.flow = _injected(loaded, suite, environ, port, tool_boundary)
        handover.ready.set()
        began = time.monotonic()
        await handover.finished.wait()
        outcome = AgentOutcome(
            exit_code=1 if handover.agent_error else 0,
            timed_out=False,
            stopped_early=False,
            stdout_tail="",
            stderr_tail=handover.agent_error,
            seconds=time.monotonic() - began,
        )
        return DriveResult(outcome, egress=uncontained_session(loaded, IN_PROCESS))

    def background() -> None:
        loop = asyncio.new_event_loop()
        handover.loop = loop
        try:
            handover.outcome = loop.run_until_complete(
                run_flow(loaded, strategy, suite=suite, agent=agent)
            )
        except BaseException as exc:  # handed to the caller's thread, raised there
            handover.crash = exc
        finally:
            loop.close()
            handover.ready.set()  # a flow that could not start never reaches the agent

    thread = threading.Thread(target=background, name="flowproof-flow", daemon=True)
    thread.start()
    handover.ready.wait(START_SECONDS)
    if handover.flow is None:  # the flow ended (or crashed) before its agent could run
        thread.join()
        _raise_for(handover, loaded, mode, started, begun, write_record)
        raise AssertionError("flowproof: the flow could not start")  # unreachable
    saved = {name: os.environ.get(name) for name in handover.flow.environment}
    os.environ.update(handover.flow.environment)
    try:
        yield handover.flow
    except BaseException as exc:
        handover.agent_error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        _restore(saved)
        assert handover.loop is not None and handover.finished is not None
        handover.loop.call_soon_threadsafe(handover.finished.set)
        thread.join()
    handover.flow.outcome = handover.outcome
    _raise_for(handover, loaded, mode, started, begun, write_record)


def _injected(
    loaded: LoadedSpec,
    suite: Suite | None,
    environ: Mapping[str, str],
    port: int,
    tool_boundary: McpBoundary,
) -> InProcessFlow:
    """The variables a command agent would have been given that differ from this process's."""
    handles = {**proxy_handles(port), **tool_boundary.handles()}
    prompt = resolve("\n".join(loaded.prompts), environ)
    spec_env = {**(suite.settings.env if suite else {}), **loaded.spec.agent.env}
    full = agent_environment(environ, handles, prompt, spec_env, tool_boundary.environment())
    changed = {name: value for name, value in full.items() if os.environ.get(name) != value}
    return InProcessFlow(prompt, changed)


def _restore(saved: Mapping[str, str | None]) -> None:
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _raise_for(
    handover: _Handover,
    loaded: LoadedSpec,
    mode: Mode,
    started: float,
    begun: datetime,
    write_record: bool,
) -> None:
    if handover.crash is not None:
        raise handover.crash
    outcome = handover.outcome
    assert outcome is not None
    if write_record:
        _write_record(outcome, loaded, mode, time.monotonic() - started, begun)
    if not outcome.passed:
        raise FlowFailed(outcome)


def _write_record(
    outcome: FlowOutcome, loaded: LoadedSpec, mode: Mode, seconds: float, begun: datetime
) -> None:
    from flowproof.engine.runrecord import flow_record, run_record
    from flowproof.errors import EXIT_FAILED, EXIT_PASSED
    from flowproof.redaction import REDACT
    from flowproof.runrecord.store import new_run_id, runs_dir, write_run_record

    REDACT.hide_all(outcome.secrets)
    code = EXIT_PASSED if outcome.passed else EXIT_FAILED
    flows = [flow_record(outcome, loaded, seconds)]
    record = run_record(new_run_id(begun), mode.value, begun, code, flows, [])
    write_run_record(record, runs_dir(None, os.environ), REDACT)
