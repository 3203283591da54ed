"""The files a task needs (preconditions) and makes (outputs): accepted paths and precondition types.

Shared by the MAN checks, which report what the runner would refuse, and the rendered job script,
which checks them in bash. A path is text relative to the campaign checkout whose only expansions
are ``${NAME}`` environment references (``${CAMPAIGN_OUT}``): anything else a shell would expand
(``$HOME``, ``$(cmd)``, `` `cmd` ``, globs, ``~``) is either refused or kept literal, so what the
script checks is what the manifest says.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# The experiment-queue tool fills per-job {name} placeholders into precondition paths; the
# runner checks preconditions once per job, as written.
BRACE_PLACEHOLDER = re.compile(r"(?<!\$)\{[A-Za-z_][A-Za-z0-9_]*\}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class PreconditionType:
    """How the rendered script tests one precondition type: ``test`` is bash with ``{path}``
    standing for the quoted path; ``fails`` is what the log line says when it does not hold."""

    test: str
    fails: str
    holds: str  # for the documentation and the checks' hint


# The experiment-queue seed defines checkpoint_exists; the other two are the plain bash tests.
# A checkpoint may be one file or a directory of shards; an empty file is a crashed save.
PRECONDITION_TYPES: Mapping[str, PreconditionType] = MappingProxyType(
    {
        "checkpoint_exists": PreconditionType(
            test="[ -d {path} ] || [ -s {path} ]",
            fails="no directory or non-empty file there",
            holds="a directory or a non-empty file",
        ),
        "dir_exists": PreconditionType(
            test="[ -d {path} ]", fails="no directory there", holds="a directory"
        ),
        "file_exists": PreconditionType(
            test="[ -f {path} ]", fails="no file there", holds="a file (possibly empty)"
        ),
    }
)


def path_problem(text: str) -> str | None:
    """What keeps ``text`` from being a path the script checks, or None."""
    if not text.strip():
        return "is empty"
    if _CONTROL.search(text):
        return "holds a control character (a path is one line)"
    rest = ENV_REF.sub("", text)
    if "$" in rest:
        return "uses '$' other than in ${NAME} (only environment references ${NAME} expand)"
    return None


def output_problem(text: str) -> str | None:
    """What keeps ``text`` from being a task's output path, or None: a task writes only inside
    the campaign checkout, so an output is relative and never climbs out with ``..``."""
    problem = path_problem(text)
    if problem is not None:
        return problem
    if text.startswith("/"):
        return "is absolute"
    if ".." in text.split("/"):
        return "leaves the campaign ('..')"
    return None


STAGE_ROOT = "${CAMPAIGN_OUT}"


def stage_root_problem(text: str) -> str | None:
    """An output outside the stage's own root, or None. A smoke's finished output under a
    shared path would make production "already complete" (run_one and resumable tasks skip a
    cell they find done), so a manifest must write under ``${CAMPAIGN_OUT}``."""
    if text.startswith(STAGE_ROOT + "/"):
        return None
    return f"is not under {STAGE_ROOT}/, the stage's own output root"


def shell_word(text: str) -> str:
    """``text`` as one bash word: ``${NAME}`` references double-quoted (they expand, without
    word splitting or globbing), everything else single-quoted where needed (literal). The
    caller has checked ``path_problem(text)`` is None."""
    parts: list[str] = []
    pos = 0
    for m in ENV_REF.finditer(text):
        if m.start() > pos:
            parts.append(shlex.quote(text[pos : m.start()]))
        parts.append(f'"${{{m.group(1)}}}"')
        pos = m.end()
    if pos < len(text):
        parts.append(shlex.quote(text[pos:]))
    return "".join(parts)
