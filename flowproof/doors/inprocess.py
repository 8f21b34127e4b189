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
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from flowproof.containment.engage import IN_PROCESS
from flowproof.doors.api import FlowResult, flow_result
from flowproof.drivers.command import AgentOutcome
from flowproof.engine.context import FlowContext
from flowproof.engine.drive import DriveResult, agent_wiring
from flowproof.engine.egress import uncontained_egress
from flowproof.engine.front import FlowRun, RunOptions, open_flow, run_opened
from flowproof.engine.outcome import Mode
from flowproof.guards.redaction import REDACT
from flowproof.host.environ import lent
from flowproof.mcp.boundary import McpBoundary
from flowproof.spec.refs import resolve

START_SECONDS = 30.0
"""How long the background loop may take to bring the boundaries up."""


class FlowFailed(AssertionError):
    """The flow failed: its reasons, most fundamental first, as `flowproof run` prints them.

    `outcome`: the flow's result (the Python API's, read from its run record)."""

    def __init__(self, outcome: FlowResult) -> None:
        # What pytest prints: an agent may have echoed a key or a secret into a reason.
        super().__init__(REDACT("\n".join(outcome.reasons)))
        self.outcome = outcome


@dataclass(slots=True)
class InProcessFlow:
    prompt: str
    """The spec's prompt steps, joined (FLOWPROOF_PROMPT); a conversation's first user turn."""
    environment: dict[str, str]
    """What flowproof set in os.environ for the block."""
    turns: tuple[str, ...] = ()
    """A `conversation:` flow's user turns, turn 1 (`prompt`) first; empty for a single-turn
    flow. The block answers them in order: a turn is complete when the model's reply to it
    (a response with no tool call) has been served, as for a command agent."""
    outcome: FlowResult | None = None
    """Set when the block has ended and the flow was judged: the flow's result, read from its
    run record as the Python API's is (`passed`, `reasons`, `trajectory`, `record`, ...)."""


@dataclass(slots=True)
class _Handover:
    ready: threading.Event = field(default_factory=threading.Event)
    finished: asyncio.Event | None = None
    loop: asyncio.AbstractEventLoop | None = None
    flow: InProcessFlow | None = None
    run: FlowRun | None = None
    crash: BaseException | None = None
    agent_error: str = ""


@contextmanager
def in_process_flow(
    spec: str | Path, mode: Mode = Mode.REPLAY, *, write_record: bool = True
) -> Iterator[InProcessFlow]:
    opened = open_flow(Path(spec), RunOptions(mode))
    handover = _Handover()

    async def agent(
        context: FlowContext, port: int, stop: asyncio.Event, tool_boundary: McpBoundary
    ) -> DriveResult:
        handover.finished = asyncio.Event()
        handover.flow = _injected(context, port, tool_boundary)
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
        return DriveResult(outcome, egress=uncontained_egress(context.loaded, IN_PROCESS))

    def background() -> None:
        loop = asyncio.new_event_loop()
        handover.loop = loop
        try:
            handover.run = loop.run_until_complete(run_opened(opened, agent))
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
        _raise_for(handover, None, write_record)
        raise AssertionError("flowproof: the flow could not start")  # unreachable
    try:
        with lent(handover.flow.environment):
            yield handover.flow
    except BaseException as exc:
        handover.agent_error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        assert handover.loop is not None and handover.finished is not None
        handover.loop.call_soon_threadsafe(handover.finished.set)
        thread.join()
    _raise_for(handover, handover.flow, write_record)


def _injected(context: FlowContext, port: int, tool_boundary: McpBoundary) -> InProcessFlow:
    """The variables a command agent would have been given that differ from this process's
    (as the flow read it when it opened)."""
    wiring = agent_wiring(context, port, tool_boundary)
    full, own = wiring.environment, context.environ
    changed = {name: value for name, value in full.items() if own.get(name) != value}
    turns = tuple(resolve(turn.text, context.environ) for turn in context.loaded.conversation)
    return InProcessFlow(wiring.prompt, changed, turns)


def _raise_for(handover: _Handover, flow: InProcessFlow | None, write_record: bool) -> None:
    """The flow judged: its result handed to the block's `flow` (when its agent ran), its
    run record written, and FlowFailed raised when it failed."""
    if handover.crash is not None:
        raise handover.crash
    run = handover.run
    assert run is not None
    result = flow_result(run, write_record)
    if flow is not None:
        flow.outcome = result
    if not result.passed:
        raise FlowFailed(result)
