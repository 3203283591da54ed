"""git's own answers, one call each, for the committed gate's facts (runner/gitfacts.py): the
status of the campaign, HEAD's blobs, and which ignore rule hides a path and where it comes from.
Every call takes literal pathspecs and reads HEAD's own objects.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from campaignops.core.gitcli import fields, run


@dataclass(frozen=True)
class Entry:
    """A blob in HEAD's tree."""

    mode: str
    sha: str
    size: int


def status(top: Path, spec: str) -> list[tuple[str, str]]:
    # Porcelain v1 with -z: "XY path\0", paths relative to the top; no renames, so one field.
    out = run(
        top,
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--ignored=matching",
        "--no-renames",
        "--",
        spec,
    )
    return [(e[:2], e[3:]) for e in fields(out) if len(e) > 3]


def tree(top: Path, specs: Sequence[str]) -> dict[str, Entry]:
    """HEAD's blobs under ``specs``, by path."""
    out: dict[str, Entry] = {}
    for line in fields(run(top, "ls-tree", "-r", "-l", "-z", "HEAD", "--", *specs)):
        meta, _, rel = line.partition("\t")
        mode, kind, sha, size = meta.split()  # the size is right-aligned: split on any run
        if kind == "blob":
            out[rel] = Entry(mode=mode, sha=sha, size=int(size))
    return out


def _rule_sources(top: Path, rels: Sequence[str]) -> dict[str, tuple[str, str, str]]:
    """Of ``rels`` (untracked), those an ignore or exclude rule hides: rel -> (source, line,
    rule), the source as git names it (a .gitignore relative to the top, .git/info/exclude, or
    core.excludesFile's path)."""
    if not rels:
        return {}
    data = b"".join(os.fsencode(r) + b"\0" for r in rels)
    # Exit 1: none of them is ignored.
    out = fields(run(top, "check-ignore", "-v", "-z", "--stdin", stdin=data, ok=(0, 1)))
    return {
        out[i + 3]: (out[i], out[i + 1], out[i + 2])
        for i in range(0, len(out) - 3, 4)
        if out[i]  # -v lists a matching negation (!rule) too: then it is not ignored
        and not out[i + 2].startswith("!")
    }


def ignore_rules(top: Path, rels: Sequence[str]) -> dict[str, str]:
    """Of ``rels`` (untracked), those an ignore or exclude rule hides: rel -> "source:line: rule"."""
    return {rel: f"{s}:{n}: {r}" for rel, (s, n, r) in _rule_sources(top, rels).items()}


def local_rules(top: Path, lead: str, ignored: Iterable[str]) -> dict[str, str]:
    """Of the ignored entries (campaign-relative), those only a rule outside HEAD hides
    (.git/info/exclude, core.excludesFile, a .gitignore HEAD does not hold): rel -> "source:
    line: rule". A committed .gitignore is the campaign's own word that a path is no source
    (an output, a cache, a credential); a rule only this clone has is not. Two calls at most."""
    found = _rule_sources(top, [lead + rel for rel in ignored])
    # Only a .gitignore inside the repository can be in HEAD (core.excludesFile may name a path
    # outside it, which ls-tree would refuse).
    sources = sorted(
        {
            s
            for s, _, _ in found.values()
            if posixpath.basename(s) == ".gitignore"
            and not posixpath.isabs(s)
            and ".." not in s.split("/")
        }
    )
    listing = run(top, "ls-tree", "-z", "--name-only", "HEAD", "--", *sources) if sources else b""
    held = set(fields(listing))
    return {q[len(lead) :]: f"{s}:{n}: {r}" for q, (s, n, r) in found.items() if s not in held}
