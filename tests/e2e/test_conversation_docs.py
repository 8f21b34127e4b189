"""The conversational agents docs/specs.md shows, one per SDK, run as written: each records a
two-turn conversation against the scripted upstream and replays it with no model."""

from __future__ import annotations

import json
import re
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT, flowproof
from tests.e2e.booking import record
from tests.upstream.scripted import ScriptedUpstream, text

NODE_MODULES = ROOT / "tests" / "agents" / "node" / "node_modules"
EXAMPLES = {  # the heading above the example's code block → its file and the command
    "OpenAI SDK, Python:": ("agent.py", f"{sys.executable} agent.py"),
    "Anthropic SDK, Python:": ("agent.py", f"{sys.executable} agent.py"),
    "OpenAI SDK, Node (an ES module, `agent.mjs`):": ("agent.mjs", "node agent.mjs"),
}


def example(heading: str) -> str:
    page = (ROOT / "docs" / "specs.md").read_text()
    section = page.split("### The conversation contract", 1)[1]
    found = re.search(re.escape(heading) + r"\n\n```[a-z]+\n(.*?)```", section, re.DOTALL)
    assert found is not None, f"docs/specs.md: no code block under {heading!r}"
    return found.group(1)


@pytest.mark.parametrize("heading", list(EXAMPLES))
def test_the_documented_agent_records_and_replays_a_conversation(
    heading: str, tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    name, command = EXAMPLES[heading]
    if name.endswith(".mjs"):
        if shutil.which("node") is None or not (NODE_MODULES / "openai").is_dir():
            pytest.skip("needs node and the npm openai package (make install)")
        (tmp_path / "node_modules").symlink_to(NODE_MODULES)
    (tmp_path / name).write_text(example(heading))
    spec = textwrap.dedent(f"""\
        name: A documented agent holds a conversation
        app: agent
        agent:
          command: {command}
        steps:
          - conversation:
              - user: Hello
                steps:
                  - assert: reply contains first answer
              - user: "And then?\\nTell me."
                steps:
                  - assert: reply contains second answer
        """)
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "chat.yaml").write_text(spec)
    upstream.script = [text("The first answer."), text("The second answer.")]
    recorded = record(tmp_path, upstream)
    assert recorded.code == 0, recorded.output
    upstream.stop()
    trace = json.loads((tmp_path / "specs" / "chat.trace.json").read_text())
    assert [turn["conversation_turn"] for turn in trace["lanes"]["model"]] == [1, 2]
    # The second turn's request carries the line read from stdin, line break and all.
    last = trace["lanes"]["model"][1]["request"]["messages"][-1]
    assert last == {"role": "user", "content": "And then?\nTell me."}
    replayed = flowproof("run", "specs", cwd=tmp_path)
    assert replayed.code == 0, replayed.output
    assert "2 of 2 turns served" in replayed.stderr
