"""Where campaign files live: the kinds of file, their default globs, discovery and classification.

A kind decides which checks read a file. The policy's ``paths`` may replace any kind's globs.
Globs are matched against POSIX paths relative to the campaign root; ``**`` spans directories.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

from campaignops.errors import InputError

MANIFEST = "manifests"
BACKEND = "backends"
QUEUE = "queues"
SCRIPT = "scripts"
WRAPPER = "wrappers"
MARKDOWN = "markdown"
YAML = "yaml"
FAILURES = "failures"
POLICY = "policy"
LOCK = "lock"
LEDGER = "ledger"
GITATTRIBUTES = "gitattributes"
LESSONS = "lessons"

POLICY_FILE = "campaign.yaml"
LOCK_FILE = ".campaign/wrappers.lock"
LEDGER_FILE = ".campaign/ledger.jsonl"

DEFAULT_GLOBS: Mapping[str, tuple[str, ...]] = {
    MANIFEST: ("manifests/**/*.yaml", "manifests/**/*.yml"),
    BACKEND: ("backends/*.md",),
    QUEUE: ("queues/**/*.txt",),
    SCRIPT: ("scripts/**/*.sh", "scripts/**/*.bash", "**/*.sh", "**/*.bash"),
    WRAPPER: ("scripts/**/*.sh", "scripts/**/*.bash"),
    MARKDOWN: ("**/*.md",),
    YAML: ("**/*.yaml", "**/*.yml"),
    FAILURES: ("failures.yaml",),
    POLICY: (POLICY_FILE,),
    LOCK: (LOCK_FILE,),
    LEDGER: (LEDGER_FILE,),
    GITATTRIBUTES: (".gitattributes",),
    LESSONS: ("LESSONS.md",),
}
# Kinds a policy may re-point; the rest are fixed by the format.
CONFIGURABLE = (MANIFEST, BACKEND, QUEUE, SCRIPT, WRAPPER, MARKDOWN, FAILURES)

# The page a user copies to add a backend: a template, not a backend.
BACKEND_TEMPLATE = "TEMPLATE.md"
# Directories discovery never enters (dot-directories other than these are skipped too).
KEPT_DOT_DIRS = frozenset({".campaign", ".github", ".gitlab"})
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv", "site-packages"})
SCRIPT_SUFFIXES = (".sh", ".bash", ".zsh", ".ksh")


@cache
def glob_regex(glob: str) -> re.Pattern[str]:
    """Compile a ``**``-aware glob to a regex over POSIX relative paths."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def matches(rel: str, globs: Iterable[str]) -> bool:
    return any(glob_regex(g).match(rel) for g in globs)


def kinds_of(rel: str, globs: Mapping[str, tuple[str, ...]]) -> frozenset[str]:
    """Every kind whose globs match ``rel``."""
    found = {kind for kind, patterns in globs.items() if matches(rel, patterns)}
    if BACKEND in found and rel.rsplit("/", 1)[-1] == BACKEND_TEMPLATE:
        found.discard(BACKEND)
    return frozenset(found)


def walk(root: Path) -> list[str]:
    """All files under ``root`` as sorted POSIX relative paths, skipping tool and dot directories."""
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in SKIPPED_DIRS and (not d.startswith(".") or d in KEPT_DOT_DIRS)
        )
        rel_dir = os.path.relpath(dirpath, root)
        for name in filenames:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            found.append(rel.replace(os.sep, "/"))
    return sorted(found)


def find_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding a campaign.yaml."""
    here = start.resolve()
    for candidate in (here, *here.parents):
        if (candidate / POLICY_FILE).is_file():
            return candidate
    return None


def root_relative(raw: str, *, root: Path, cwd: Path, hint: str) -> str:
    """``raw`` (relative to ``cwd``, or absolute) as a POSIX path relative to ``root``.

    Normalised lexically, not resolved: a symlink is judged where it stands, by the FileReader.
    """
    absolute = Path(os.path.normpath(cwd.resolve() / raw))
    try:
        return absolute.relative_to(root).as_posix()
    except ValueError:
        raise InputError(path=raw, message=f"outside the campaign root {root}", hint=hint) from None
