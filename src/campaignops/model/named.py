"""The campaign's files a task command names (what the committed gate compares with HEAD), and
the directories it reaches without naming their files (what the fingerprint adds, model/headtree).

A command reads more than its manifest: `python3 scripts/train.py --config configs/a.yaml`
runs a script and a config that the manifest only names. Those names are found here, from the
rendered command text alone (no git): the committed gate then requires each one to be in HEAD
and byte-identical to it, and the fingerprint can hash the tracked ones.

Rules (docs/runner.md, "The committed gate"):
- each command is split as the shell would split its words (``shlex``, POSIX, with ``;&|<>()``
  as separators, so ``cmd<configs/a.yaml`` names the config); an unbalanced quote, which bash
  would refuse too, falls back to splitting on whitespace;
- a quoted word holding whitespace is a command too (``bash -c '…'``, ``ssh h '…'``): its own
  words count, down to three levels;
- every word counts, and so does the value of ``--key=value`` and ``KEY=value``;
- a literal word (none of ``$`*?[{``) counts when it names an existing file under the
  campaign root: a regular file, or a symlink that leads to one (wherever it leads: the gate
  judges the link). Paths that do not exist yet (outputs of this run) and dangling symlinks are
  left out; a directory is *reached*, not named;
- a word the shell expands (a glob, a brace, a variable, a command substitution) reaches the
  directory its literal part starts from (``configs/x/*.yaml``: ``configs/x``; ``$d/a``: the
  root); ``$CAMPAIGN_OUT`` (the runner's output root) and ``~``, ``$HOME`` reach nothing of the
  campaign. Reached directories that do not exist are left out;
- relative words are taken from the campaign root (tasks start there); absolute words count
  when they lie inside the root. Paths that leave the root (``../shared/x``, ``/scratch/x``)
  are left out: the campaign cannot vouch for them, and writing such a path is how a command
  reads data the repository does not hold;
- each path is normalised lexically to a campaign-relative POSIX path (``./a/../b`` is ``b``).
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from campaignops.core import layout

# Words no file is named by: operators and the shell's own words.
_PUNCTUATION = frozenset(";&|<>()")
# Characters that make shell words differ from whitespace-separated ones.
_SPECIAL = _PUNCTUATION | frozenset("'\"\\")
# What the shell expands in a word: a variable or command substitution, a glob, a brace. Quoting
# is gone once a word is split, so a quoted `*` counts too: the safe side (a wider reach).
_EXPANDING = frozenset("$`*?[{")
_EXPANDS = re.compile(r"[$`*?\[{]")
# The runner's own output root (runs/<stage>): never a file the campaign commits.
_OUT_VAR = re.compile(r"\$(?:\{CAMPAIGN_OUT\}|CAMPAIGN_OUT\b)")
# A word starting here is outside the campaign (a home directory), however it expands.
_HOME = ("~", "$HOME", "${HOME}")
# Quoted commands inside quoted commands: deep enough for `ssh h "bash -c '…'"`.
_MAX_DEPTH = 3


def words(command: str) -> list[str]:
    """The shell words of ``command``; operators (``&&``, ``>``, ``;``) are their own words."""
    if not _SPECIAL.intersection(command):
        return command.split()  # the same words, without shlex's per-character loop
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""  # bash reads a#b as one word; a comment naming a file is kept too
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote
        return command.split()


def _candidates(word: str) -> Iterator[str]:
    if not word or set(word) <= _PUNCTUATION:
        return
    yield word
    _, eq, value = word.partition("=")
    if eq and value:
        yield value


def _inside(candidate: str, root: str) -> str | None:
    """``candidate`` as a root-relative POSIX path ("" for the root itself), or None when it
    leaves the root (``root``: absolute and normalised). String operations only: this runs for
    every word of every command (20,000 for a 1,000-cell queue)."""
    # normpath, not resolve: a symlink is judged where it stands (by the committed gate).
    joined = candidate if candidate.startswith("/") else f"{root.rstrip('/')}/{candidate}"
    normal = os.path.normpath(joined)
    if normal == root:
        return ""
    lead = root if root.endswith("/") else root + "/"
    return normal[len(lead) :] if normal.startswith(lead) else None


def _expanded_from(candidate: str) -> str | None:
    """For a word the shell expands (a glob, a brace, a variable, a command substitution), the
    literal directory it starts from ("" for the current one, where tasks start: the campaign
    root); None when the word expands to nothing the campaign holds (the runner's own output
    root, a home directory) or does not expand."""
    if not _EXPANDING.intersection(candidate):
        return None  # most words: no regex
    literal = _OUT_VAR.sub("runs", candidate)
    found = _EXPANDS.search(literal)
    if found is None or literal.startswith(_HOME):
        return None
    head = literal[: found.start()]
    start = head.rpartition("/")[0]
    return "/" if not start and head.startswith("/") else start


@dataclass(frozen=True)
class Reach:
    """What commands can read in the campaign: the files they name (``files``) and the
    directories whose files they reach by names they do not spell out (``dirs``: a directory
    named as an argument, the literal start of a glob, brace or variable; "" the whole
    campaign). Root-relative POSIX paths, sorted, once each."""

    files: tuple[str, ...] = ()
    dirs: tuple[str, ...] = ()


def _walk(command: str, depth: int) -> Iterator[str]:
    """The words of ``command``, and those of every quoted word holding a command of its own
    (``bash -c '…'``, ``ssh host '…'``, ``xargs sh -c '…'``), down to ``_MAX_DEPTH``."""
    for word in words(command):
        yield word
        if depth < _MAX_DEPTH and any(c.isspace() for c in word):
            yield from _walk(word, depth + 1)


def reach(commands: Iterable[str], root: Path) -> Reach:
    """What ``commands`` can read inside ``root``: see ``Reach`` and the module's rules."""
    base = os.path.normpath(root.absolute())
    seen: dict[str, str | None] = {}  # rel -> "file", "dir" or None
    files: set[str] = set()
    dirs: set[str] = set()
    for command in commands:
        for word in _walk(command, 0):
            for candidate in _candidates(word):
                start = _expanded_from(candidate)
                rel = _inside(candidate if start is None else start, base)
                if rel is None:
                    continue
                if rel not in seen:
                    seen[rel] = _kind(base, rel)
                if seen[rel] == "file" and start is None:
                    files.add(rel)
                elif seen[rel] == "dir":
                    dirs.add(rel)
    return Reach(files=tuple(sorted(files)), dirs=tuple(sorted(dirs)))


def _kind(base: str, rel: str) -> str | None:
    # isfile follows links: a link to a file counts, one to a directory is a directory. A word
    # too long to be a file name names no file (not an error: any argument is a word here, and
    # most are not paths).
    if not rel:
        return "dir"
    if layout.length_problem(rel) is not None:
        return None
    try:
        mode = Path(base, rel).stat().st_mode  # one stat, following links
    except (OSError, ValueError):
        return None
    return "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else None


def files_named(commands: Iterable[str], root: Path) -> tuple[str, ...]:
    """Every existing file inside ``root`` that one of ``commands`` names, sorted, once each."""
    return reach(commands, root).files
