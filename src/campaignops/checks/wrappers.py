"""WRAP checks: wrappers: versioned names, immutability once locked, append-only lock."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence

from campaignops.checks.context import CheckContext
from campaignops.checks.finding import Code, Finding, code_table
from campaignops.core import gitrefs, layout
from campaignops.model import lockfile

FAMILY = "WRAP"
SUMMARY = "wrappers: versioned names, immutability once locked, append-only lock"
CODES = code_table(
    Code(
        id="WRAP001",
        message="wrapper name {name!r} has no version; expected <name>.v<N>.<ext>",
        hint="rename it, e.g. to {suggestion}, and point manifests and queues at the new name",
    ),
    Code(
        id="WRAP002",
        message="locked wrapper changed since it was locked on {date}: locked {locked}, now {current}",
        hint="a locked wrapper never changes: copy it to {next_version} (cp {wrapper} {next_version}), restore the original (git checkout -- {wrapper}), and point new queues and manifests at {next_version}",
    ),
    Code(
        id="WRAP003",
        message="locked wrapper {wrapper} was deleted (locked {locked})",
        hint="restore it (git checkout -- {wrapper}): submitted jobs and the ledger refer to it",
    ),
    Code(
        id="WRAP004",
        message="lock entry {entry!r} was {change} since {base}; the lock is append-only",
        hint="restore the entry (git checkout {base} -- .campaign/wrappers.lock) and only append",
    ),
    Code(
        id="WRAP005",
        message="malformed lock line: {problem}",
        hint="lock lines are '<path> sha256:<64 hex> <YYYY-MM-DD>'; restore the file from git",
    ),
)


def check(ctx: CheckContext) -> Iterator[Finding]:
    yield from _names(ctx)
    text = ctx.reader.read_text(layout.LOCK_FILE) if ctx.reader.exists(layout.LOCK_FILE) else ""
    if text is None:
        return  # unreadable: the reader has recorded why
    entries, problems = lockfile.parse(text)
    for line, problem in problems:
        yield CODES["WRAP005"].at(layout.LOCK_FILE, line, problem=problem)
    yield from _locked(ctx, lockfile.by_path(entries))
    if ctx.base is not None:
        yield from _appended_only(ctx, text)


def _names(ctx: CheckContext) -> Iterator[Finding]:
    for rel in ctx.of(layout.WRAPPER):
        directory, _, basename = rel.rpartition("/")
        if lockfile.VERSIONED.match(basename):
            continue
        suggestion = lockfile.versioned_suggestion(basename)
        yield CODES["WRAP001"].at(
            rel,
            name=basename,
            suggestion=f"{directory}/{suggestion}" if directory else suggestion,
        )


def _locked(ctx: CheckContext, locked: dict[str, lockfile.LockEntry]) -> Iterator[Finding]:
    """Every lock entry, whichever paths were passed: a deletion is never passed by pre-commit."""
    for rel, entry in locked.items():
        if not ctx.reader.exists(rel):
            if rel in ctx.reader.problems:
                continue  # refused by name (too long to open): exit 2 says why
            yield CODES["WRAP003"].at(
                layout.LOCK_FILE, entry.line, wrapper=rel, locked=entry.digest
            )
            continue
        data = ctx.reader.read_bytes(rel)
        if data is None:
            continue
        current = lockfile.digest(data)
        if current == entry.digest:
            continue
        taken = set(locked) | set(ctx.tree)
        yield CODES["WRAP002"].at(
            rel,
            wrapper=rel,
            date=entry.date.isoformat(),
            locked=entry.digest,
            current=current,
            next_version=lockfile.next_version(rel, taken=taken),
        )


def _appended_only(ctx: CheckContext, text: str) -> Iterator[Finding]:
    assert ctx.base is not None
    data = gitrefs.show(ctx.root, ref=ctx.base, rel=layout.LOCK_FILE)
    if data is None:
        return
    before = [line for _, line in lockfile.entry_lines(data.decode("utf-8", errors="replace"))]
    now = lockfile.entry_lines(text)
    for change, entry, line in base_changes(before, [line for _, line in now]):
        yield CODES["WRAP004"].at(
            layout.LOCK_FILE,
            now[line][0] if line is not None else 1,
            entry=entry,
            change=change,
            base=ctx.base,
        )


def base_changes(before: Sequence[str], now: Sequence[str]) -> list[tuple[str, str, int | None]]:
    """How ``now`` breaks "every entry of ``before`` is kept, unchanged and in its order":
    ``(change, entry, index in now)``.

    ``change`` is 'changed', 'removed' or 'moved' (a base entry elsewhere than its place); the
    index is None for a removal. A new entry may stand anywhere: git's union merge of two clones
    puts one side's new lines before the other's, and an entry inserted to shadow an older one
    for the same path names a second digest, which WRAP005 reports whatever its place.
    """
    if list(now[: len(before)]) == list(before):
        return []
    out: list[tuple[str, str, int | None]] = []
    matcher = difflib.SequenceMatcher(a=list(before), b=list(now), autojunk=False)
    opcodes = matcher.get_opcodes()
    claimed = {j for tag, _, _, j1, j2 in opcodes if tag == "equal" for j in range(j1, j2)}
    for tag, i1, i2, j1, j2 in opcodes:
        if tag in ("replace", "delete"):
            for k in range(i1, i2):
                paired = j1 + (k - i1)
                if tag == "replace" and paired < j2:
                    out.append(("changed", before[k], paired))
                    claimed.add(paired)
                    continue
                moved = _find(now, before[k], exclude=claimed)
                if moved is None:
                    out.append(("removed", before[k], None))
                else:
                    out.append(("moved", before[k], moved))
                    claimed.add(moved)
    return out


def _find(items: Sequence[str], wanted: str, *, exclude: set[int]) -> int | None:
    for index, item in enumerate(items):
        if item == wanted and index not in exclude:
            return index
    return None
