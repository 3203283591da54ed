"""The Finding record and the Code table entry every check family declares."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Finding:
    """One problem at one place. ``path`` is relative to the campaign root, POSIX style."""

    path: str
    line: int
    col: int
    id: str
    message: str
    hint: str

    def as_dict(self) -> dict[str, str | int]:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "id": self.id,
            "message": self.message,
            "hint": self.hint,
        }


@dataclass(frozen=True)
class Code:
    """A stable check ID with its message and hint templates (``str.format`` fields)."""

    id: str
    message: str
    hint: str

    def at(self, path: str, line: int = 1, col: int = 1, /, **fields: object) -> Finding:
        return Finding(
            path=path,
            line=max(line, 1),
            col=max(col, 1),
            id=self.id,
            message=self.message.format(**fields),
            hint=self.hint.format(**fields),
        )


def code_table(*codes: Code) -> dict[str, Code]:
    """Index codes by ID, refusing duplicates (a typo here would silently shadow a check)."""
    table: dict[str, Code] = {}
    for code in codes:
        if code.id in table:
            raise ValueError(f"duplicate check ID {code.id}")
        table[code.id] = code
    return table
