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

from campaignops.core.errors import InputError

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
# What the runner itself writes in a checkout: its bookkeeping (ledger, wrapper lock, STATUS.md,
# the submit lock) and, under these directories, the stages' outputs (OUT_ROOT), the
# task logs (JobSpec.log_dir), the job scripts and each backend's per-machine state. Never
# source: the committed gate does not ask it to be committed, the fingerprint does not hash it.
RUNNER_FILES = frozenset({LEDGER_FILE, LOCK_FILE, "STATUS.md", ".campaign/submit.lock"})
RUNNER_DIRS = ("runs/", "logs/", ".campaign/jobs/", ".campaign/local/", ".campaign/ssh/")

DEFAULT_GLOBS: Mapping[str, tuple[str, ...]] = {
    MANIFEST: ("manifests/**/*.yaml", "manifests/**/*.yml"),
    BACKEND: ("backends/*.md",),
    QUEUE: ("queues/**/*.txt",),
    SCRIPT: ("scripts/**/*.sh", "scripts/**/*.bash", "**/*.sh", "**/*.bash"),
    WRAPPER: ("scripts/**/*.sh", "scripts/**/*.bash"),
    MARKDOWN: ("**/*.md",),
    YAML: ("**/*.yaml", "**/*.yml"),
    FAILURES: ("failures.yaml", "failures.local.yaml"),  # upstream, then the campaign's own
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
# What Linux filesystems take (NAME_MAX, PATH_MAX less its NUL): a longer user-given path fails
# with ENAMETOOLONG wherever it is opened, so it is refused once, by name, before that.
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4095


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


def _shown(path: str) -> str:
    # A 300-byte name in full would bury the message: each long component is abridged.
    return "/".join(p if len(p) <= 40 else f"{p[:32]}…{p[-4:]}" for p in path.split("/"))


def _size(text: str) -> int:
    try:
        return len(os.fsencode(text))
    except UnicodeEncodeError:  # a lone surrogate no file name can hold: count it generously
        return len(text.encode("utf-8", "surrogatepass"))


def length_problem(path: str) -> str | None:
    """Why ``path`` is too long for the filesystem (a component over MAX_NAME_BYTES, the whole
    over MAX_PATH_BYTES, both in UTF-8 bytes), or None."""
    for part in path.split("/"):
        size = _size(part)
        if size > MAX_NAME_BYTES:
            return (
                f"path component {_shown(part)!r} is {size} bytes; "
                f"a file name is limited to {MAX_NAME_BYTES} bytes"
            )
    size = _size(path)
    if size > MAX_PATH_BYTES:
        return f"path is {size} bytes; a path is limited to {MAX_PATH_BYTES} bytes"
    return None


# What a killed atomic write leaves beside its target (campaignops.core.atomic: ".NAME.<12 hex>.tmp").
ATOMIC_LEFTOVER = re.compile(r"(?P<dir>(?:[^/]+/)*)\.(?P<name>[^/]+)\.[0-9a-f]{12}\.tmp")


def runner_written(rel: str) -> bool:
    """Whether ``rel`` (campaign-relative; a directory may end in /) is the runner's own: its
    files, its directories, and what a process killed while writing one of its files left."""
    leftover = ATOMIC_LEFTOVER.fullmatch(rel)
    if leftover is not None and leftover["dir"] + leftover["name"] in RUNNER_FILES:
        return True
    return rel in RUNNER_FILES or (rel if rel.endswith("/") else rel + "/").startswith(RUNNER_DIRS)


def guard_length(path: str, *, hint: str = "use a shorter name") -> str:
    """``path``, or InputError (exit 2) naming it and the limit when it is too long to open."""
    problem = length_problem(path)
    if problem is not None:
        raise InputError(path=_shown(path), message=problem, hint=hint)
    return path


def root_relative(raw: str, *, root: Path, cwd: Path, hint: str) -> str:
    """``raw`` (relative to ``cwd``, or absolute) as a POSIX path relative to ``root``.

    Normalised lexically, not resolved: a symlink is judged where it stands, by the FileReader.
    """
    guard_length(raw)
    absolute = Path(os.path.normpath(cwd.resolve() / raw))
    try:
        return absolute.relative_to(root).as_posix()
    except ValueError:
        raise InputError(path=raw, message=f"outside the campaign root {root}", hint=hint) from None


# A stage's outputs live under runs/<stage>/ (the task's $CAMPAIGN_OUT; pull copies nowhere else).
OUT_ROOT = "runs"


def stage_root(stage: str) -> str:
    return f"{OUT_ROOT}/{stage}"
