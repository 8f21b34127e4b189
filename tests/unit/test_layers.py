"""The layers docs/architecture.md draws are the layers the code has.

Every `import` in flowproof/ (at the top of a file, inside a function, or under TYPE_CHECKING)
is read with `ast`. An import may go to a floor below its own or stay inside its own folder;
inside a folder the files' imports form no circle. The floors are the `layers` block of
docs/architecture.md, so the page and the code cannot drift apart.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"


@dataclass(frozen=True)
class Import:
    source: str  # dotted module that imports
    target: str  # dotted module imported
    line: int


def read_floors(markdown: str) -> dict[str, int]:
    """Unit -> floor number (0 is the ground) from the page's ```layers block, top line first."""
    found = re.search(r"^```layers\n(.*?)^```", markdown, re.MULTILINE | re.DOTALL)
    if found is None:
        raise AssertionError(f"{ARCHITECTURE}: no ```layers block")
    lines = [line.split() for line in found.group(1).splitlines() if line.strip()]
    floors: dict[str, int] = {}
    for height, units in enumerate(reversed(lines)):
        for unit in units:
            assert unit not in floors, f"{unit} is on two floors of the layers block"
            floors[unit] = height
    return floors


def module_name(package: Path, file: Path) -> str:
    parts = list(file.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def resolve(package: Path, dotted: str) -> str | None:
    """The module file a dotted name lands on inside `package`, most specific first."""
    parts = dotted.split(".")
    while len(parts) > 1:
        base = package.parent.joinpath(*parts)
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            return ".".join(parts)
        parts.pop()
    return parts[0] if parts[0] == package.name else None


def imports_of(package: Path) -> list[Import]:
    found: list[Import] = []
    for file in sorted(package.rglob("*.py")):
        source = module_name(package, file)
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"), str(file))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from a.b import c` may name the module a.b.c or a name inside a.b
                names = [f"{node.module}.{alias.name}" for alias in node.names]
            for name in names:
                if name.split(".")[0] != package.name:
                    continue
                target = resolve(package, name)
                if target is not None and target != source:
                    found.append(Import(source, target, node.lineno))
    return list(dict.fromkeys(found))


def unit_of(dotted: str) -> str:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def path_of(package: Path, dotted: str) -> str:
    folder = package.parent.joinpath(*dotted.split("."))
    return str(
        (folder / "__init__.py" if folder.is_dir() else folder.with_suffix(".py")).relative_to(
            package.parent
        )
    )


def layer_problems(package: Path, floors: dict[str, int]) -> list[str]:
    """Every unit the page does not place, import that runs back up, and circle in a folder."""
    problems: list[str] = []
    units = {unit_of(module_name(package, file)) for file in package.rglob("*.py")}
    for unit in sorted(units - floors.keys()):
        problems.append(f"{package.name}/{unit} is on no floor: add it to the layers block")
    graph: dict[str, set[str]] = {}
    for each in imports_of(package):
        low, high = unit_of(each.target), unit_of(each.source)
        if low == high:
            graph.setdefault(each.source, set()).add(each.target)
        elif low in floors and high in floors and floors[low] >= floors[high]:
            way = "up" if floors[low] > floors[high] else "across"
            problems.append(
                f"{path_of(package, each.source)}:{each.line} imports {path_of(package, each.target)}, "
                f"which runs {way} from {high} to {low}"
            )
    problems.extend(circles(package, graph))
    return problems


def circles(package: Path, graph: dict[str, set[str]]) -> list[str]:
    """Each circle among one folder's files, named once from its smallest member."""
    seen: set[tuple[str, ...]] = set()
    found: list[str] = []

    def walk(start: str, here: str, trail: list[str]) -> None:
        for there in sorted(graph.get(here, ())):
            if there == start:
                ring = trail[trail.index(min(trail)) :] + trail[: trail.index(min(trail))]
                if tuple(ring) not in seen:
                    seen.add(tuple(ring))
                    found.append(
                        "circle: " + " -> ".join(path_of(package, m) for m in [*ring, ring[0]])
                    )
            elif there not in trail and there > start:
                walk(start, there, [*trail, there])

    for start in sorted(graph):
        walk(start, start, [start])
    return found


def test_flowproof_keeps_the_layers_the_architecture_page_draws() -> None:
    floors = read_floors(ARCHITECTURE.read_text(encoding="utf-8"))
    assert layer_problems(ROOT / "flowproof", floors) == []


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


FLOORS = "```layers\ntop\nlow\n```\n"


def test_an_import_that_runs_up_a_floor_is_named_with_its_line(tmp_path: Path) -> None:
    package = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/top/__init__.py": "",
            "pkg/top/a.py": "import pkg.low.b\n",
            "pkg/low/__init__.py": "",
            "pkg/low/b.py": "def f():\n    from pkg.top.a import x\n",
        },
    )
    floors = read_floors(FLOORS) | {"__init__": 9}
    assert layer_problems(package, floors) == [
        "pkg/low/b.py:2 imports pkg/top/a.py, which runs up from low to top"
    ]


def test_a_folder_on_no_floor_and_a_circle_inside_a_folder_are_named(tmp_path: Path) -> None:
    package = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/low/__init__.py": "",
            "pkg/low/a.py": "from pkg.low import b\n",
            "pkg/low/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from pkg.low.a import A\n",
            "pkg/new/__init__.py": "",
        },
    )
    floors = read_floors(FLOORS) | {"__init__": 9}
    assert layer_problems(package, floors) == [
        "pkg/new is on no floor: add it to the layers block",
        "circle: pkg/low/a.py -> pkg/low/b.py -> pkg/low/a.py",
    ]


def test_two_folders_on_one_floor_may_not_import_each_other(tmp_path: Path) -> None:
    package = _write(
        tmp_path,
        {"pkg/__init__.py": "", "pkg/a/__init__.py": "import pkg.b\n", "pkg/b/__init__.py": ""},
    )
    floors = read_floors("```layers\na b\n```\n") | {"__init__": 9}
    assert layer_problems(package, floors) == [
        "pkg/a/__init__.py:1 imports pkg/b/__init__.py, which runs across from a to b"
    ]


def test_the_page_without_a_layers_block_is_an_error() -> None:
    with pytest.raises(AssertionError, match="no ```layers block"):
        read_floors("# nothing here\n")
