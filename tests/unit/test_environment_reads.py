"""Nothing below the command line reads or changes flowproof's own environment except
flowproof/host/environ.py: a flow reads the snapshot its context took when it opened, so a
variable that changes mid-run cannot move what one part of a flow sees and not another."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = ("cli/", "host/environ.py")
"""The command line reads the environment it was started in; host/environ.py is the one
reader below it."""


def environment_reads(package: Path) -> list[str]:
    """`file:line what` for every use of os.environ, os.getenv, os.putenv or os.unsetenv in
    `package` outside ALLOWED."""
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if relative.startswith(ALLOWED):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = _environment_name(node)
            if name:
                found.append(f"{package.name}/{relative}:{getattr(node, 'lineno', 0)} {name}")
    return found


def _environment_name(node: ast.AST) -> str:
    names = ("environ", "environb", "getenv", "putenv", "unsetenv")
    if isinstance(node, ast.Attribute) and node.attr in names:
        if isinstance(node.value, ast.Name) and node.value.id == "os":
            return f"os.{node.attr}"
    if isinstance(node, ast.ImportFrom) and node.module == "os":
        taken = [alias.name for alias in node.names if alias.name in names]
        return f"from os import {', '.join(taken)}" if taken else ""
    return ""


def test_only_the_environment_module_reads_flowproofs_environment() -> None:
    assert environment_reads(ROOT / "flowproof") == []


def test_a_read_of_os_environ_below_the_command_line_is_named(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "engine").mkdir(parents=True)
    (package / "cli").mkdir()
    (package / "host").mkdir()
    (package / "engine" / "a.py").write_text(
        '"""os.environ in words."""\nimport os\nx = 1\ny = os.environ.get("A")\n'
    )
    (package / "engine" / "b.py").write_text("from os import getenv, path\n")
    (package / "cli" / "c.py").write_text("import os\nz = os.environ\n")
    (package / "host" / "environ.py").write_text("import os\nz = dict(os.environ)\n")
    assert environment_reads(package) == [
        "pkg/engine/a.py:4 os.environ",
        "pkg/engine/b.py:1 from os import getenv",
    ]
