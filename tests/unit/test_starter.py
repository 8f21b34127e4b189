"""The texts `flowproof init` writes (flowproof/doors/starter.py): the docs show them as written, and
any agent command survives the trip into the starter flow's YAML."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from flowproof.doors.starter import record_workflow, replay_workflow, starter_spec

CI_DOC = Path(__file__).resolve().parents[2] / "docs" / "ci.md"


@pytest.mark.parametrize("workflow", [replay_workflow, record_workflow])
def test_docs_ci_shows_the_workflow_init_writes(workflow: object) -> None:
    assert callable(workflow)
    assert workflow() in CI_DOC.read_text(), (
        "docs/ci.md and flowproof/doors/starter.py disagree: copy the workflow into docs/ci.md"
    )


@pytest.mark.parametrize(
    "command",
    [
        "python3 agent.py",
        "node agent.js --mode: fast",
        "python3 agent.py # not a comment",
        "'quoted' at the start",
        "*star first",
        "{ braces }",
        'say "hi" \\ there',
        "npm start -- --flag=yes ",
    ],
)
def test_any_agent_command_reads_back_from_the_starter_flow(command: str) -> None:
    parsed = yaml.safe_load(starter_spec(command, None))
    assert parsed["agent"]["command"] == command
