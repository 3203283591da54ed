"""docs/architecture.md's map stays true: every module of the package is named under its wing,
and every wing the map shows exists (issue 17: "keep docs/architecture.md true")."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "campaignops"
MAP = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def _map_block() -> str:
    section = MAP.split("## The map", 1)[1].split("\n## ", 1)[0]
    return section.split("src/campaignops/", 1)[1].split("```", 1)[0]


def _mapped() -> set[str]:
    found: set[str] = set()
    wing = ""
    for line in _map_block().splitlines():
        top = re.match(r"  (\w+)/\s", line)
        if top:
            wing = top.group(1)
            continue
        entry = re.match(r"    (\S+\.py)\s", line)
        if entry and wing:
            found.add(f"{wing}/{entry.group(1)}")
    return found


def _modules() -> set[str]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if "/" not in rel or path.name == "__init__.py":
            continue  # the package top (__init__, __main__) and each package's own docstring
        found.add(rel)
    return found


def test_the_map_names_every_module_under_its_wing() -> None:
    missing = sorted(_modules() - _mapped())
    assert not missing, f"docs/architecture.md 'The map' does not name: {missing}"


def test_every_module_the_map_names_exists() -> None:
    stale = sorted(_mapped() - _modules())
    assert not stale, f"docs/architecture.md 'The map' names modules that are gone: {stale}"


def test_at_most_a_few_modules_sit_at_the_package_top() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert top == ["__init__.py", "__main__.py"], top
