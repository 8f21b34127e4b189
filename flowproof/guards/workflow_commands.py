"""GitHub Actions workflow commands: the ones flowproof writes, and keeping every other line it
prints from being read as one.

The runner reads each line a step prints, on stdout and on stderr alike, and acts on any line
whose first non-blank characters are `::` (`::error file=…::message`, `::add-mask::…`,
`::stop-commands::…`). flowproof prints untrusted text all the time: spec file names, flow
names, control ids, the paths an agent requested, reasons quoting model text. So its own
commands are built here with every value escaped as the runner unescapes it, and every other
line goes through `defuse`, which sets a line that would start a command behind the same
`  | ` prefix that agent stderr tails carry.

The runner still reads the older form too, `##[command …]data`, and that one ANYWHERE in a
line whose start is not a command. No prefix helps there, so `defuse` writes `##[` as `##\\[`.

Pure: strings in, strings out. Nothing here prints.
"""

from __future__ import annotations

import json
import re

COMMAND_START = "::"
"""What a line starts with, after leading blanks, for the runner to read it as a command."""
OLD_COMMAND = "##["
"""The older command form, which the runner finds anywhere in a line."""
OLD_COMMAND_SHOWN = "##\\["
GUARD = "  | "
"""Set before a line that would otherwise start a command: the prefix of a quoted stderr tail."""

# The runner's own unescaping, reversed. `%` goes first so the escapes it adds stay intact.
_DATA_ESCAPES = (("%", "%25"), ("\r", "%0D"), ("\n", "%0A"))
_PROPERTY_ESCAPES = (*_DATA_ESCAPES, (":", "%3A"), (",", "%2C"))
_LINE_BREAK = re.compile("(\r\n|\r|\n)")


def escape_data(text: str) -> str:
    """A command's message: `%`, CR and LF escaped, so it stays on its one line."""
    return _escape(text, _DATA_ESCAPES)


def escape_property(text: str) -> str:
    """A command's property value: as data, and `:` and `,` too, which would otherwise end the
    value (a file named `a,title=x.yaml` adding a `title` of its own)."""
    return _escape(text, _PROPERTY_ESCAPES)


def workflow_command(name: str, message: str, properties: dict[str, str] | None = None) -> str:
    """One line the runner reads as command `name`: `::name key=value,…::message`."""
    given = ",".join(f"{key}={escape_property(value)}" for key, value in (properties or {}).items())
    head = f"{name} {given}" if given else name
    return f"{COMMAND_START}{head}{COMMAND_START}{escape_data(message)}"


def starts_command(line: str) -> bool:
    """Whether the runner would read `line` as a workflow command."""
    return line.lstrip().startswith(COMMAND_START) or OLD_COMMAND in line


def defuse(text: str) -> str:
    """`text` with every line that would start a workflow command set behind `GUARD`, and every
    `##[` written `##\\[`; other lines, and the line breaks between them, are left exactly as
    they were. A lone CR ends a line too: the runner splits lines as .NET does, so
    `abc\\r::warning` is two lines to it."""
    parts = _LINE_BREAK.split(text)  # lines at even indexes, the breaks between them at odd
    return "".join(
        _defuse_line(part) if index % 2 == 0 else part for index, part in enumerate(parts)
    )


def _defuse_line(line: str) -> str:
    line = line.replace(OLD_COMMAND, OLD_COMMAND_SHOWN)
    return GUARD + line if line.lstrip().startswith(COMMAND_START) else line


def quoted(value: str) -> str:
    """A name as shown on a line of flowproof's own (a flow, a spec path, a control id): as it
    is when it is one plain line, JSON-quoted when it holds a line break or another control
    character or could start a command, so the line stays one line that says what it is."""
    if value.isprintable() and not value.lstrip().startswith(COMMAND_START):
        return value
    return json.dumps(value, ensure_ascii=False)


def _escape(text: str, escapes: tuple[tuple[str, str], ...]) -> str:
    for char, escape in escapes:
        text = text.replace(char, escape)
    return text
