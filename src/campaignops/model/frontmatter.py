"""YAML front matter of a Markdown page: the lines between a leading ``---`` and the next ``---``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from campaignops.core import yamldoc
from campaignops.core.errors import InputError, YamlSyntaxError


@dataclass(frozen=True)
class FrontMatter:
    text: str
    first_line: int  # 1-based line of the first YAML line (the line after the opening ---)


def split(text: str) -> FrontMatter | None:
    """The front matter block of ``text``, or None when the page has none (or never closes it)."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        return None
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r") in ("---", "..."):
            return FrontMatter(text="\n".join(lines[1:i]) + "\n", first_line=2)
    return None


def mapping(text: str, *, path: str) -> dict[str, Any]:
    """A backend page's front matter as a mapping ({} when the page has none)."""
    found = split(text)
    if found is None:
        return {}
    try:
        data = yamldoc.load(found.text, path=path, line_offset=found.first_line - 1)
    except YamlSyntaxError as exc:
        raise InputError(
            path=path,
            message=f"front matter is not valid YAML "
            f"(line {exc.line + found.first_line - 1}: {exc.problem})",
            hint="fix the front matter, then run campaign render",
        ) from None
    return data if isinstance(data, dict) else {}
