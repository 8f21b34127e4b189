"""flowproof in pytest (registered as the `flowproof` plugin through the `pytest11` entry point).

- `pytest --flowproof specs/` collects every spec under the paths as one test per flow, so
  `-k`, `-x`, `--junitxml` and pytest-xdist work on flows as on any test. A YAML file is a spec
  when it says `app: agent` (workflow files and other YAML are left alone).
- The `flowproof_flow` fixture runs a flow whose agent is a Python function the test calls
  itself, in process (flowproof/doors/inprocess.py):

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


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("flowproof") or config.getoption("flowproof_record"):
        _refuse_a_second_flowproof()


def _refuse_a_second_flowproof() -> None:
    """The package index's other `flowproof` in this environment: stop, as the command does."""
    from flowproof.host.distribution import second_flowproof

    message = second_flowproof()
    if message is not None:
        raise pytest.UsageError(message)


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
        item = FlowItem.from_parent(self, name=self.path.stem)
        title = flow_title(self.path)
        if title:
            # `-k Zanzibar` selects "Trip planner books Zanzibar": -k matches keywords by
            # substring, and the file's stem rarely holds the words a flow is known by.
            item.extra_keyword_matches.add(title)
            item.user_properties.append(("flow", title))  # --junitxml shows it
            item.flow_title = title
        yield item


def flow_title(path: Path) -> str:
    """The spec's `name:`, read without the spec loader ('' when it has none or will not
    parse: running the flow then says what is wrong, with its file and line)."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return ""
    name = data.get("name") if isinstance(data, dict) else None
    return " ".join(name.split()) if isinstance(name, str) else ""


class FlowItem(pytest.Item):
    """One flow, run as `flowproof run` (or `record`) runs it, with its run record written."""

    flow_title = ""
    """The flow's `name:` (its keyword for `-k`, and how failures and reports name it)."""

    def runtest(self) -> None:
        from flowproof.doors.api import Flow
        from flowproof.doors.inprocess import FlowFailed
        from flowproof.engine.outcome import Mode

        flow = Flow(self.path)  # its run record goes under the runs dir `flowproof run` uses
        result = flow.record() if _mode(self.config) is Mode.RECORD else flow.run()
        if not result.passed:
            raise FlowFailed(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        from flowproof.core.errors import FlowproofError
        from flowproof.doors.inprocess import FlowFailed
        from flowproof.guards.redaction import REDACT

        if isinstance(excinfo.value, FlowFailed | FlowproofError):
            # An agent may have echoed a key into a reason.
            message = REDACT(str(excinfo.value))
            replaying = not self.config.getoption("flowproof_record")
            if isinstance(excinfo.value, FlowFailed) and replaying:
                message += f"\n{self._rerecord_hint()}"
            return message
        return super().repr_failure(excinfo)

    def _rerecord_hint(self) -> str:
        """How to accept the change, when the change is the intended one."""
        return (
            f"if the agent changed on purpose, re-record this flow: "
            f"pytest --flowproof --flowproof-record '{self.nodeid}' "
            "(with FLOWPROOF_AGENT_UPSTREAM and the provider's key set), "
            "then review the trace's diff before committing it"
        )

    def reportinfo(self) -> tuple[Path, int | None, str]:
        title = f" '{self.flow_title}'" if self.flow_title else ""
        return self.path, None, f"flowproof flow{title} {self.path}"


@pytest.fixture
def flowproof_flow(
    request: pytest.FixtureRequest,
) -> Callable[[str | Path], AbstractContextManager[Any]]:
    """`with flowproof_flow(spec) as flow:` runs the flow around the block (see the module)."""
    from flowproof.doors.inprocess import in_process_flow

    _refuse_a_second_flowproof()
    mode = _mode(request.config)
    return lambda spec: in_process_flow(spec, mode)


def _mode(config: pytest.Config) -> Any:
    from flowproof.engine.outcome import Mode

    return Mode.RECORD if config.getoption("flowproof_record") else Mode.REPLAY
