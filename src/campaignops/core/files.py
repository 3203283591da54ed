"""Reading campaign files safely: inside the campaign, bounded in size, text where text is due.

Every check reads through one FileReader so hostile input is handled in one place: a symlink that
leaves the campaign is not followed, a file over MAX_BYTES is refused, a file with NUL bytes or
invalid UTF-8 is refused as text. Each refusal is kept as an InputError (the CLI exits 2 and names
the file) while the other files are still checked.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from campaignops.core import layout, yamldoc
from campaignops.core.errors import InputError, YamlSyntaxError

MAX_BYTES = 16 * 1024 * 1024
# The runner's own append-only files grow with the campaign: they have no cap.
UNCAPPED = frozenset({layout.LEDGER_FILE})


class FileReader:
    """Memoising reader rooted at a campaign directory; collects problems instead of raising."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.problems: dict[str, InputError] = {}
        self._bytes: dict[str, bytes | None] = {}
        self._yaml: dict[str, tuple[Any, YamlSyntaxError | None] | None] = {}
        self._dirs: dict[Path, bool] = {}

    def _refuse(self, rel: str, message: str, hint: str) -> None:
        self.problems.setdefault(rel, InputError(path=rel, message=message, hint=hint))

    def too_long(self, rel: str) -> bool:
        """True (and ``rel`` refused, by name and limit) when no filesystem can open it."""
        problem = layout.length_problem(rel)
        if problem is not None:
            self._refuse(rel, problem, "use a shorter name")
        return problem is not None

    def exists(self, rel: str) -> bool:
        return not self.too_long(rel) and os.path.lexists(self.root / rel)

    def is_file(self, rel: str) -> bool:
        """A regular file (through symlinks) at ``rel``; a name too long to open is refused."""
        return not self.too_long(rel) and (self.root / rel).is_file()

    def inside(self, rel: str) -> bool:
        """True when ``rel`` resolves (through any symlinks) to a place inside the campaign.

        Directories are resolved once each and cached: a campaign has far fewer directories than
        files, and resolving every file dominated reading thousands of small ones. A symlink loop
        resolves nowhere, so it is not inside.
        """
        path = self.root / rel
        if path.is_symlink():
            return self._resolves_inside(path)
        parent = path.parent
        if parent not in self._dirs:
            self._dirs[parent] = self._resolves_inside(parent)
        return self._dirs[parent]

    def _resolves_inside(self, path: Path) -> bool:
        try:
            target = path.resolve()
        except (RuntimeError, OSError):  # a loop: RuntimeError before Python 3.13
            return False
        return target == self.root or self.root in target.parents

    def read_bytes(self, rel: str) -> bytes | None:
        if rel in self._bytes:
            return self._bytes[rel]
        data = self._load(rel)
        self._bytes[rel] = data
        return data

    def _load(self, rel: str) -> bytes | None:
        path = self.root / rel
        if self.too_long(rel):
            return None
        if not os.path.lexists(path):
            self._refuse(rel, "no such file", "check the path")
            return None
        if not self.inside(rel):
            where = f"symlink to {path.readlink()}" if path.is_symlink() else "path"
            self._refuse(
                rel,
                f"{where}, outside the campaign or in a symlink loop; not followed",
                "keep campaign files inside the repository (copy the file in, or exclude it)",
            )
            return None
        try:
            if not path.is_file():
                self._refuse(rel, "not a regular file", "pass files, not directories")
                return None
            size = path.stat().st_size
            if size > MAX_BYTES and rel not in UNCAPPED:
                self._refuse(
                    rel,
                    f"file is {size / 2**20:.1f} MiB; campaign files are limited to "
                    f"{MAX_BYTES // 2**20} MiB",
                    "this is not a campaign file: move data out of the checked paths",
                )
                return None
            return path.read_bytes()
        except FileNotFoundError:
            self._refuse(rel, "no such file", "check the path")
        except OSError as exc:
            self._refuse(rel, f"cannot read: {exc.strerror}", "check permissions")
        return None

    def read_text(self, rel: str) -> str | None:
        """UTF-8 text with a leading BOM removed (EOL reports BOMs), or None if refused."""
        data = self.read_bytes(rel)
        if data is None:
            return None
        if b"\x00" in data:
            self._refuse(rel, "binary file (contains NUL bytes)", "campaign files are text")
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            self._refuse(
                rel,
                f"invalid UTF-8 at line {line} (byte offset {exc.start})",
                "re-save the file as UTF-8",
            )
            return None
        return text.removeprefix("\ufeff")

    def read_yaml(self, rel: str) -> tuple[Any, YamlSyntaxError | None] | None:
        """``(data, None)``, ``(None, syntax_error)``, or None when the file was refused."""
        if rel in self._yaml:
            return self._yaml[rel]
        text = self.read_text(rel)
        result: tuple[Any, YamlSyntaxError | None] | None
        if text is None:
            result = None
        else:
            try:
                result = (yamldoc.load(text, path=rel), None)
            except YamlSyntaxError as exc:
                result = (None, exc)
            except InputError as exc:
                self.problems.setdefault(rel, exc)
                result = None
        self._yaml[rel] = result
        return result
