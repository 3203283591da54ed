"""The campaign's files a task command names: what the committed gate compares with HEAD.

A command reads more than its manifest: `python3 scripts/train.py --config configs/a.yaml`
runs a script and a config that the manifest only names. Those names are found here, from the
rendered command text alone (no git): the committed gate then requires each one to be in HEAD
and byte-identical to it, and the fingerprint can hash the tracked ones.

Rules (docs/runner.md, "The committed gate"):
- each command is split as the shell would split its words (``shlex``, POSIX, with ``;&|<>()``
  as separators, so ``cmd<configs/a.yaml`` names the config); an unbalanced quote, which bash
  would refuse too, falls back to splitting on whitespace;
- every word counts, and so does the value of ``--key=value`` and ``KEY=value``;
- a word counts when it names an existing file under the campaign root: a regular file, or a
  symlink that leads to one (wherever it leads: the gate judges the link). Directories, paths
  that do not exist yet (outputs of this run) and dangling symlinks are left out;
- relative words are taken from the campaign root (tasks start there); absolute words count
  when they lie inside the root. Paths that leave the root (``../shared/x``, ``/scratch/x``)
  are left out: the campaign cannot vouch for them, and writing such a path is how a command
  reads data the repository does not hold;
- each path is normalised lexically to a campaign-relative POSIX path (``./a/../b`` is ``b``).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Iterator
from pathlib import Path

from campaignops import layout

# Words no file is named by: operators and the shell's own words.
_PUNCTUATION = frozenset(";&|<>()")
# Characters that make shell words differ from whitespace-separated ones.
_SPECIAL = _PUNCTUATION | frozenset("'\"\\")


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


def _inside(candidate: str, root: Path) -> str | None:
    """``candidate`` as a root-relative POSIX path, or None when it leaves the root."""
    # normpath, not resolve: a symlink is judged where it stands (by the committed gate).
    normal = Path(os.path.normpath(root / candidate))  # an absolute candidate replaces root
    try:
        rel = normal.relative_to(root)
    except ValueError:
        return None
    return rel.as_posix() if rel.parts else None


def files_named(commands: Iterable[str], root: Path) -> tuple[str, ...]:
    """Every existing file inside ``root`` that one of ``commands`` names, sorted, once each."""
    base = Path(os.path.normpath(root.absolute()))
    seen: dict[str, bool] = {}
    found: set[str] = set()
    for command in commands:
        for word in words(command):
            for candidate in _candidates(word):
                rel = _inside(candidate, base)
                if rel is None:
                    continue
                if rel not in seen:
                    # isfile follows links: a link to a file counts, one to a directory not.
                    # A word too long to be a file name names no file (not an error: any
                    # argument is a word here, and most are not paths).
                    seen[rel] = layout.length_problem(rel) is None and (base / rel).is_file()
                if seen[rel]:
                    found.add(rel)
    return tuple(sorted(found))
