"""What every check family receives: the campaign root, its policy, and the files to check."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any

from campaignops.core import gitrefs, layout
from campaignops.core.errors import UsageError, YamlSyntaxError
from campaignops.core.files import FileReader
from campaignops.model import policy as policy_mod


@dataclass(frozen=True)
class CheckContext:
    root: Path
    policy: policy_mod.Policy
    files: Mapping[str, tuple[str, ...]]
    explicit: bool
    today: dt.date
    reader: FileReader
    base: str | None = None
    fix: bool = False
    # The IDs this run reports; --fix repairs only what is selected.
    selected: frozenset[str] | None = None

    def wants(self, code_id: str) -> bool:
        return self.selected is None or code_id in self.selected

    def of(self, kind: str) -> tuple[str, ...]:
        """The files of ``kind`` to check in this run."""
        return self.files.get(kind, ())

    @cached_property
    def touched(self) -> frozenset[str] | None:
        """With ``base``, the files the change since it touches (campaignops.core.gitrefs
        .changed_files); None without ``base`` (a full run: every file counts as touched)."""
        if self.base is None:
            return None
        return gitrefs.changed_files(self.root, ref=self.base)

    def is_touched(self, rel: str) -> bool:
        touched = self.touched
        return touched is None or rel in touched

    @cached_property
    def tree(self) -> tuple[str, ...]:
        """Every file in the campaign (for cross-file rosters), walked once, lazily."""
        return tuple(layout.walk(self.root))

    def all_of(self, kind: str) -> tuple[str, ...]:
        """Every file of ``kind`` in the campaign, whatever paths were passed."""
        if not self.explicit:
            return self.of(kind)
        return tuple(r for r in self.tree if kind in layout.kinds_of(r, self.policy.globs))

    def texts(self, kind: str) -> Iterator[tuple[str, str]]:
        """``(path, text)`` for each readable file of ``kind``; unreadable ones become problems."""
        for rel in self.of(kind):
            text = self.reader.read_text(rel)
            if text is not None:
                yield rel, text

    def yamls(self, kind: str) -> Iterator[tuple[str, Any, YamlSyntaxError | None]]:
        """``(path, data, syntax_error)`` for each readable YAML file of ``kind``."""
        for rel in self.of(kind):
            parsed = self.reader.read_yaml(rel)
            if parsed is not None:
                yield rel, parsed[0], parsed[1]


def _looks_like_script(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(2) == b"#!"
    except OSError:
        return False


def build(
    *,
    paths: Sequence[str] = (),
    cwd: Path,
    today: dt.date | None = None,
    base: str | None = None,
    fix: bool = False,
) -> CheckContext:
    """Find the campaign, load its policy, and classify the files to check.

    With no ``paths``, files are discovered from the policy's globs; outside a campaign that is
    a usage error. With ``paths`` (as pre-commit passes them), each is classified by its path.
    """
    for raw in paths or ():
        layout.guard_length(raw)
    found_root = layout.find_root(cwd)
    if found_root is None and paths:
        # pre-commit runs at the repository top; the campaign may be a subdirectory of it.
        found_root = layout.find_root((cwd / paths[0]).parent)
    if found_root is None and not paths:
        raise UsageError(
            message=f"no {layout.POLICY_FILE} in {cwd} or any parent directory",
            hint="run inside a campaign repository, or pass the files to check",
        )
    root = found_root or cwd.resolve()
    reader = FileReader(root)
    policy = policy_mod.Policy()
    if found_root is not None:
        parsed = reader.read_yaml(layout.POLICY_FILE)
        data = parsed[0] if parsed else None
        policy = policy_mod.from_data(data, found=True)

    relpaths: list[str] = []
    if paths:
        for raw in paths:
            rel = layout.root_relative(
                raw,
                root=root,
                cwd=cwd,
                hint="run campaign check from inside the campaign, or pass paths under its root",
            )
            full = root / rel
            if full.is_dir() and not full.is_symlink():
                sub = layout.walk(full)
                relpaths.extend(f"{rel}/{s}" if rel != "." else s for s in sub)
            else:
                relpaths.append(rel)
    else:
        relpaths = layout.walk(root)

    files: dict[str, list[str]] = {}
    for rel in dict.fromkeys(relpaths):
        kinds = set(layout.kinds_of(rel, policy.globs))
        if (
            paths
            and layout.SCRIPT not in kinds
            and "." not in rel.rsplit("/", 1)[-1]
            and _looks_like_script(root / rel)
        ):
            kinds.add(layout.SCRIPT)
        for kind in kinds:
            files.setdefault(kind, []).append(rel)
    # The first commit of a repository (copier copy, git init, pre-commit install, commit):
    # there is no HEAD to compare with, and everything is new, so this is a full check.
    if base == "HEAD" and gitrefs.unborn_head(root):
        base = None
    return CheckContext(
        root=root,
        policy=policy,
        files=MappingProxyType({k: tuple(v) for k, v in files.items()}),
        explicit=bool(paths),
        today=today or dt.date.today(),
        reader=reader,
        base=base,
        fix=fix,
    )
