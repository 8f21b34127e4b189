"""What `flowproof init` writes: a starter flow, the `.gitignore` line and the two CI workflows.

Pure: the texts are built here from the agent command and the spec lines doctor declared, and
`cli/init.py` writes them. The texts are Python strings, not package data files, so that the
wheel and the frozen engine carry them as they carry any module.

The workflows are the recipes of docs/ci.md; a change to one belongs in both.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from flowproof._version import __version__

SPEC_PATH = Path("specs") / "example.yaml"
GITIGNORE_PATH = Path(".gitignore")
REPLAY_WORKFLOW_PATH = Path(".github") / "workflows" / "flowproof.yml"
RECORD_WORKFLOW_PATH = Path(".github") / "workflows" / "flowproof-record.yml"

RUNS_IGNORE_LINE = ".flowproof/"
"""Run records are written under .flowproof/runs/ by every run: never committed."""
_IGNORE_SPELLINGS = frozenset((".flowproof", ".flowproof/", "/.flowproof", "/.flowproof/"))

PLACEHOLDER_COMMAND = "python3 agent.py"
STARTER_PROMPT = "Say hello, and name the capital of Kenya."
NEXT_COMMANDS = (
    "flowproof doctor --agent {command}",
    f"flowproof record --verify {SPEC_PATH.as_posix()}",
    "flowproof run",
)


@dataclass(frozen=True, slots=True)
class Declared:
    """What `flowproof doctor` found when init ran the agent once (no doctor run: None)."""

    requests: int
    """Model requests that reached the proxy."""
    lines: tuple[str, ...]
    """The `normalize:`/`ignore_fields:` spec lines its findings need (maybe none)."""


def starter_spec(command: str | None, declared: Declared | None) -> str:
    """specs/example.yaml: a flow that loads as written and says what to change."""
    agent = yaml_scalar(command or PLACEHOLDER_COMMAND)
    change_command = (
        "# The command `flowproof init --agent` was given."
        if command
        else "# CHANGE: the shell command that starts your agent."
    )
    return _SPEC.format(
        version=__version__,
        doctor=next_commands(command)[0],
        change_command=change_command,
        command=agent,
        declarations=_declarations(command, declared),
        prompt=yaml_scalar(STARTER_PROMPT),
    )


def _declarations(command: str | None, declared: Declared | None) -> str:
    """The lines doctor declared, or the hint that says how to get them."""
    if declared is not None and declared.requests and declared.lines:
        lines = "\n".join(declared.lines)
        return (
            "# `flowproof doctor` ran the agent once at init and found values in its model\n"
            "# requests that change between runs or machines; these lines make them match\n"
            "# (docs/specs.md, `normalize:` and `ignore_fields:`):\n"
            f"{lines}\n"
        )
    if declared is not None and declared.requests:
        return (
            "# `flowproof doctor` ran the agent once at init: nothing in its model requests\n"
            "# needs a `normalize:` or `ignore_fields:` line.\n"
        )
    run = f"flowproof doctor --agent {shell_quote(command or PLACEHOLDER_COMMAND)}"
    return (
        "# Run `" + run + "`: it runs the agent once against a canned\n"
        "# reply (no model, no key) and prints the `normalize:` / `ignore_fields:` lines to\n"
        "# add here for values that change between runs (dates, per-run ids).\n"
    )


_SPEC = """\
# A starter flow, written by `flowproof init` (flowproof {version}).
# Change the parts marked CHANGE, then run, from the project's root:
#   {doctor}
#       does the agent's model client reach flowproof's proxy? (no model, no key)
#   flowproof record --verify specs/example.yaml
#       record the flow once against the real model (the key from FLOWPROOF_AGENT_KEY)
#   flowproof run
#       replay it: no model, no key, no network
# Every key is described in docs/specs.md, every step in docs/steps.md.

name: Example flow - the agent answers a greeting   # CHANGE: what this flow checks
app: agent
agent:
  {change_command}
  # It runs in the directory you start flowproof from; its OpenAI, Anthropic, Gemini,
  # Azure OpenAI or Ollama client is pointed at flowproof's proxy through OPENAI_BASE_URL
  # and friends. A client that reads another variable: map it in `env:` below.
  command: {command}
  # env:
  #   MY_CLIENT_BASE_URL: "${{flowproof.proxy_url}}"   # includes /v1
  # timeout: 300                                     # seconds

{declarations}
# Tools the agent calls whose real results change from run to run: pin what the model is
# told, so the next request matches the trace (docs/specs.md, "Tool results").
# tools:
#   - name: search_flights
#     result: {{ flights: [ {{ id: KQ311, dest: NBO }} ] }}

steps:
  # CHANGE: the task. Prompt steps reach your agent, joined, in FLOWPROOF_PROMPT.
  - prompt: {prompt}
  # CHANGE: what must hold afterwards.
  - assert: reply contains Nairobi
  # - assert_tool_call: search_flights where destination contains NBO
  # - assert_no_tool_call: create_booking
"""


def gitignore_with_runs(existing: str | None) -> str | None:
    """The .gitignore with the run records' line added; None when it already has it."""
    if existing is not None and any(
        line.strip() in _IGNORE_SPELLINGS for line in existing.splitlines()
    ):
        return None
    text = existing or ""
    if text and not text.endswith("\n"):
        text += "\n"
    return text + "# flowproof's run records (every run writes one)\n" + RUNS_IGNORE_LINE + "\n"


def replay_workflow() -> str:
    return _REPLAY_WORKFLOW


def record_workflow() -> str:
    return _RECORD_WORKFLOW.format(version=__version__)


_REPLAY_WORKFLOW = """\
# Replays every flow under specs/ on each pull request: no model, no key, no network, so it
# runs on pull requests from forks too. Written by `flowproof init`; see docs/ci.md.
name: flowproof
on:
  pull_request:
  # Run it by hand on a branch: a pull request opened by the re-record workflow with the
  # default GITHUB_TOKEN does not start this workflow (see flowproof-record.yml).
  workflow_dispatch:
permissions:
  contents: read
  pull-requests: write   # the sticky PR comment; a fork's read-only token gets a notice instead
jobs:
  replay:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      # CHANGE: set up what your agent needs to start, as your other workflows do, e.g.
      # - uses: actions/setup-python@v5
      #   with: { python-version: "3.12" }
      # - run: pip install -r requirements.txt
      - uses: flowproof/action@v1
        with:
          specs: specs/
          upload-report: true    # the HTML report and JUnit XML, as the job's artifact
          comment: auto          # one sticky PR comment: posted on a failure, then kept current
"""

_RECORD_WORKFLOW = """\
# Re-records the traces against the real model, weekly and by hand, and opens a pull request
# with the new traces. Written by `flowproof init`; see docs/ci.md.
#
# Why a pull request and not an artifact: a re-record is the moment drift is accepted, so a
# human should read the changed traces (and the `--diff` in this job's log) and merge them the
# way any change is merged; an artifact would have to be downloaded and committed by hand.
#
# A pull request opened with the default GITHUB_TOKEN does NOT start other workflows (GitHub's
# rule, so that workflows cannot trigger each other in loops): the replay workflow would not
# run on it. Either store a fine-grained personal access token or a GitHub App token (contents
# and pull requests: read and write) as the secret FLOWPROOF_PR_TOKEN, which the step below
# uses when it is set, or run the replay workflow by hand on the PR branch (Actions -> flowproof
# -> Run workflow), which it allows through `workflow_dispatch`.
name: flowproof record
on:
  schedule:
    - cron: "0 6 * * 1"   # Mondays, 06:00 UTC
  workflow_dispatch:
permissions:
  contents: write
  pull-requests: write
concurrency: flowproof-record   # one re-record at a time
jobs:
  record:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      # CHANGE: install what your agent needs to start (its runtime and dependencies), e.g.
      # - uses: actions/setup-python@v5
      #   with: {{ python-version: "3.12" }}
      # - run: pip install -r requirements.txt
      - run: npx --yes flowproof@{version} record specs/ --diff --verify
        env:
          # The key of the provider your agent calls (OpenAI, Anthropic, Gemini, Azure OpenAI,
          # ...), stored as the repository secret FLOWPROOF_AGENT_KEY. flowproof reads it
          # first for every provider and puts it in the outbound auth header only: the
          # traces, run records and this log never hold it. The provider's own variable
          # (ANTHROPIC_API_KEY, GOOGLE_API_KEY, AZURE_OPENAI_API_KEY, ...) works too.
          FLOWPROOF_AGENT_KEY: ${{{{ secrets.FLOWPROOF_AGENT_KEY }}}}
          # Another OpenAI-compatible endpoint, a gateway, or your Azure OpenAI resource:
          # FLOWPROOF_AGENT_UPSTREAM: https://gateway.example/v1
          # AZURE_OPENAI_ENDPOINT: ${{{{ vars.AZURE_OPENAI_ENDPOINT }}}}
      - uses: peter-evans/create-pull-request@v7
        with:
          token: ${{{{ secrets.FLOWPROOF_PR_TOKEN || github.token }}}}
          # Only the traces: run records (.flowproof/runs/, ignored by .gitignore) and
          # anything else the agent left behind stay out of the pull request.
          add-paths: "*.trace.json"
          branch: flowproof/re-record
          commit-message: "flowproof: re-record traces"
          title: "flowproof: re-recorded traces"
          body: The trajectory diff of each changed flow is in the job log (`record --diff`).
"""


def yaml_scalar(text: str) -> str:
    """`text` as a YAML value on one line: plain when YAML reads it back unchanged, else a
    double-quoted (JSON) string, which YAML reads as the same text."""
    plain_ok = "\n" not in text and text == text.strip()
    if plain_ok and _reads_back(text):
        return text
    return json.dumps(text, ensure_ascii=False)


def _reads_back(text: str) -> bool:
    try:
        return bool(yaml.safe_load(f"key: {text}\n") == {"key": text})
    except yaml.YAMLError:
        return False


def shell_quote(text: str) -> str:
    """`text` as one shell word, in double quotes when it needs none of $ ` \\ " (which read
    more naturally in a printed command), else single quotes."""
    if not any(char in text for char in '$`\\"'):
        return f'"{text}"'
    return "'" + text.replace("'", "'\\''") + "'"


def next_commands(command: str | None) -> Sequence[str]:
    first, *rest = NEXT_COMMANDS
    return (first.format(command=shell_quote(command or PLACEHOLDER_COMMAND)), *rest)
