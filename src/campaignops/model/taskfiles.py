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
# The experiment-queue tool fills per-job {name} placeholders into precondition paths; so does
# the runner, per task, from the task's grid values and args (fill_placeholders).
BRACE_PLACEHOLDER = re.compile(r"(?<!\$)\{[A-Za-z_][A-Za-z0-9_]*\}")
# Either form, ${name} or {name}: group 1 is the name.
TASK_PLACEHOLDER = re.compile(r"\$?\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*\Z")
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


def fill_placeholders(text: str, values: Mapping[str, object]) -> tuple[str, tuple[str, ...]]:
    """``text`` with each ``${name}`` and ``{name}`` a task's ``values`` (its grid values and
    args) define replaced by the value, and the names nothing fills: a ``{name}``, or a
    lowercase ``${name}`` (an ``${UPPER_CASE}`` one is left to the environment)."""
    missing: list[str] = []

    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in values:
            return str(values[name])
        if not (m.group(0).startswith("$") and _ENV_NAME.match(name)):
            missing.append(name)
        return m.group(0)

    return TASK_PLACEHOLDER.sub(one, text), tuple(dict.fromkeys(missing))


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
    if (glob := GLOB.search(text)) is not None:
        return (
            f"holds {glob.group(0)!r}, a glob: the script checks one literal path, so the task "
            "would end output-missing whatever file it wrote"
        )
    return None


# Characters a shell would expand as a pattern; an output path is checked literally.
GLOB = re.compile(r"[*?\[]")


STAGE_ROOT = "${CAMPAIGN_OUT}"


def under_stage_root(text: str) -> bool:
    """An output under the stage's own root (``${CAMPAIGN_OUT}/``): the stage's own by place,
    so a task that finds it complete there (a wrapper's resume) may count it. Any other output
    is the task's own only if written since it started (backends/script.py)."""
    return text.startswith(STAGE_ROOT + "/")


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
