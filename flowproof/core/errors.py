"""Every exception flowproof raises on purpose, and what each one means for the exit code.

    FlowproofError                 bad input, not a bad agent: the CLI prints it, exit 2
    ├── SpecError                  a spec or suite file cannot be run as written; carries the
    │                              path, the line and the fix (a file that is not UTF-8 too)
    ├── StepError                  an assertion step's text cannot be used. Raised by the pure
    │   │                          parsers, which know no file: the loader re-raises it as a
    │   │                          SpecError naming the file and the line, and so does the
    │   │                          evaluator for a value only known at run time (`${PAT}`)
    │   ├── GrammarError           the step's sentence does not parse
    │   ├── MatcherError           a matcher given a value it cannot use (`matches ([`)
    │   └── SecretStepError        assert_no_secret_leak given something that is not a name
    ├── ToolResultsExhausted       a tool was called more often than its `results:` list has
    │                              entries. Caught by the proxy and reported as the FLOW's
    │                              failure (exit 1): the spec was fine, the agent went further
    ├── TraceError                 a trace is unreadable, not UTF-8, holds a credential, or was
    │                              written by a newer flowproof
    ├── RunRecordError             a run record (report.json) cannot be found or read
    ├── GitHubError                `flowproof github comment` cannot post (a bad setting, or an
    │                              API error other than the 403 of a fork PR's read-only token;
    │                              defined in flowproof/github/context.py)
    └── ConfigError                the environment or command line does not allow the run (an
                                   unset ${VAR}, no specs found, a runs dir that is a file)

Anything else that escapes is a bug in flowproof: the CLI's one error boundary (cli/boundary.py)
turns it into exit 3, one line on stderr, and the traceback saved beside the run record.

Divergences, failed assertions and agents that crash are NOT exceptions: they are values in a
flow's outcome (engine/outcome.py), because they are the product, not a crash of flowproof.
An upstream model error at record is an outcome too (the flow fails, exit 1).

Exit codes: 0 every flow passed, 1 a flow failed, 2 a usage or configuration error (any
FlowproofError, or click's own usage errors), 3 an internal error; 128+N when signal N stopped
the run (130 SIGINT, 143 SIGTERM, 129 SIGHUP), after the agent's tree is stopped and the run
record written with the interrupted flow marked.
"""

from __future__ import annotations

from pathlib import Path

EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2
EXIT_INTERNAL = 3


class FlowproofError(Exception):
    """A problem with flowproof's input, not with the agent under test (exit code 2)."""


class SpecError(FlowproofError):
    """A spec that cannot be run as written; the message points at the file and line."""

    def __init__(self, path: Path | str, line: int | None, message: str, hint: str = "") -> None:
        self.path = Path(path)
        self.line = line
        self.message = message
        self.hint = hint
        where = f"{self.path}:{line}" if line else f"{self.path}"
        text = f"{where}: {message}"
        if hint:
            text += f"; {hint}"
        super().__init__(text)


class StepError(FlowproofError, ValueError):
    """An assertion step's text cannot be used; the message quotes the part at fault.

    Also a ValueError, as the parsers that raise it are value parsers."""


class GrammarError(StepError):
    """An assertion step's sentence cannot be compiled."""


class MatcherError(StepError):
    """A matcher was given a value it cannot use."""


class SecretStepError(StepError):
    """An assert_no_secret_leak step's text is not a list of environment variable names."""


class ToolResultsExhausted(FlowproofError):
    """A tool was called more times than its `results:` list has entries."""

    def __init__(self, tool: str, call_number: int, available: int, message: str) -> None:
        """`message` is worded by flowproof/core/mocks.py, which speaks for both boundaries."""
        self.tool, self.call_number, self.available = tool, call_number, available
        super().__init__(message)


class TraceError(FlowproofError):
    """A trace file exists but cannot be used."""


class RunRecordError(FlowproofError):
    """A run record cannot be found or read."""


class ConfigError(FlowproofError):
    """The environment or command line does not allow the run (exit code 2)."""


def one_line(error: BaseException) -> str:
    """An error as one line: its class, then its text with the whitespace folded."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
