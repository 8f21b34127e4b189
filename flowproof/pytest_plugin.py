"""flowproof in pytest (registered as the `flowproof` plugin through the `pytest11` entry point).

- `pytest --flowproof specs/` collects every spec under the paths as one test per flow, so
  `-k`, `-x`, `--junitxml` and pytest-xdist work on flows as on any test. A YAML file is a spec
  when it says `app: agent` (workflow files and other YAML are left alone).
- The `flowproof_flow` fixture runs a flow whose agent is a Python function the test calls
  itself, in process (flowproof/inprocess.py):

      def test_booking(flowproof_flow):
          with flowproof_flow("specs/booking.yaml") as flow:
              assert "booked" in my_agent.run(flow.prompt)

Both replay; `--flowproof-record` records instead (with FLOWPROOF_AGENT_UPSTREAM and the key
set, as `flowproof record` needs). Only pytest is imported until a flow runs, so the plugin
costs a pytest session nothing when it is not used (`-p no:flowproof` turns it off).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

SPEC_MARK = re.compile(r"^app:\s*agent\s*(#.*)?$", re.MULTILINE)
SUITE_FILE = "flowproof.yaml"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("flowproof")
    group.addoption(
        "--flowproof",
        action="store_true",
        default=False,
        help="Collect flowproof specs (YAML files with `app: agent`) as tests, one per flow.",
    )
    group.addoption(
        "--flowproof-record",
        action="store_true",
        default=False,
        help="Record flows (collected specs and flowproof_flow) instead of replaying them.",
    )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if not parent.config.getoption("flowproof"):
        return None
    if file_path.suffix not in (".yaml", ".yml") or file_path.name == SUITE_FILE:
        return None
    try:
        text = file_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if not SPEC_MARK.search(text):
        return None
    return SpecFile.from_parent(parent, path=file_path)


class SpecFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        yield FlowItem.from_parent(self, name=self.path.stem)


class FlowItem(pytest.Item):
    """One flow, run as `flowproof run` (or `record`) runs it, with its run record written."""

    def runtest(self) -> None:
        import asyncio

        from flowproof.engine.front import RunOptions, run_spec, write_single_run
        from flowproof.inprocess import FlowFailed

        flow = asyncio.run(run_spec(self.path, RunOptions(_mode(self.config))))
        write_single_run(flow)  # under the runs dir `flowproof run` uses
        if not flow.outcome.passed:
            raise FlowFailed(flow.outcome)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        from flowproof.errors import FlowproofError
        from flowproof.inprocess import FlowFailed
        from flowproof.redaction import REDACT

        if isinstance(excinfo.value, FlowFailed | FlowproofError):
            return REDACT(str(excinfo.value))  # an agent may have echoed a key into a reason
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"flowproof flow {self.path}"


@pytest.fixture
def flowproof_flow(
    request: pytest.FixtureRequest,
) -> Callable[[str | Path], AbstractContextManager[Any]]:
    """`with flowproof_flow(spec) as flow:` runs the flow around the block (see the module)."""
    from flowproof.inprocess import in_process_flow

    mode = _mode(request.config)
    return lambda spec: in_process_flow(spec, mode)


def _mode(config: pytest.Config) -> Any:
    from flowproof.engine.outcome import Mode

    return Mode.RECORD if config.getoption("flowproof_record") else Mode.REPLAY
