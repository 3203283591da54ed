"""YAML front matter of a Markdown page: the lines between a leading ``---`` and the next ``---``."""

from __future__ import annotations

from dataclasses import dataclass


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
