"""Contract replay of OpenPBS ``qsub``: what it accepts, taken rule by rule from its source.

No PBS server can run here, so ``campaign submit`` is tested against this replay instead. It
is NOT OpenPBS and copies none of its code: each rule below is re-written from the OpenPBS
source it cites (github.com/openpbs/openpbs, master, commit cd7ab5eda), and a submission that
breaks one is refused with qsub's own message and exit status. What the replay does not check
(hooks, ACLs, limits of a real site) is left out, not guessed.

Sources, by rule:

- Options: ``GETOPT_ARGS`` in src/cmds/qsub_sup.c; each option's handling in ``process_opts``
  (src/cmds/qsub.c). Command-line options win over script directives (``if_cmd_line``).
- Directives: ``get_script`` (src/cmds/qsub_sup.c) reads ``#PBS`` lines (``pbs_ispbsdir``,
  leading blanks allowed) until the first executable line (``pbs_isexecutable``,
  src/lib/Libcmds/check_job_script.c: not blank, not ``#``, not ``#!``, not ``:``); a bad
  directive is "qsub: directive error: ..." and exit 1; a CR LF line is refused.
- ``-N``: ``check_job_name`` (src/lib/Libcmds/ck_job_name.c) with ``chk_alpha`` 0 for a
  QueueJob request (``verify_value_jobname``, src/lib/Libecl/ecl_verify_values.c): at most
  ``PBS_MAXJOBNAME`` = 230 characters (src/include/pbs_ifl.h) of ``[A-Za-z0-9_.+-]``.
- ``-J X-Y[:Z][%C]``: ``chk_Jrange`` (src/lib/Libcmds/chk_Jrange.c): X < Y, Z >= 1; ``%C``
  sets ``max_run_subjobs`` (qsub.c); not with ``-r n`` (``NO_RERUN_ARRAY``); at most
  ``max_array_size`` subjobs, default ``PBS_MAX_ARRAY_JOB_DFL`` = 10000
  (src/include/server_limits.h, ``setup_ajinfo`` in src/server/array_func.c).
- ``-r``: one letter, ``y`` or ``n`` (qsub.c).
- ``-j``: ``oe``, ``eo`` or ``n`` (``verify_value_joinpath``); ``-k``: letters of ``oedn``, not
  both keep and ``n``, ``d`` only with one of them (``verify_keepfiles_common``);
  ``-m``: ``n`` or letters of ``abej``, not ``j`` alone (``verify_value_mailpoints``).
- ``-l``: ``walltime`` as ``decode_time`` (src/lib/Libattr/attr_fn_time.c) reads it:
  ``[[H:]M:]S[.ms]``, digits only; ``select`` as ``parse_chunk_r``
  (src/lib/Libifl/grunt_parse.c): ``[N:]res=value[:res=value]``, chunks joined by ``+``,
  every resource known to the server (msg_unkresc, src/lib/Liblog/pbs_messages.c).
- ``-W depend=``: ``parse_depend_list`` (src/lib/Libcmds/parse_depend.c): ``type:jobid[:jobid]``
  with a known type, no dependency on a subjob.
- ``-v``: a comma-separated ``name[=value]`` list (``expand_varlist``, qsub.c).
"""

from __future__ import annotations

import getopt
import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

GETOPT_ARGS = "a:A:c:C:e:fhIj:J:k:l:m:M:N:o:p:q:r:R:S:u:v:VW:XzP:"
PBS_MAXJOBNAME = 230
MAX_ARRAY_SIZE = 10000
CMDLINE, SCRIPT = 2, 1  # qsub.c: CMDLINE, CMDLINE - 1
DEPTYPES = (
    "on", "synccount", "after", "afterok", "afternotok", "afterany", "before",
    "beforeok", "beforenotok", "beforeany", "syncwith", "runone",
)  # fmt: skip
# Built-in resources of a fresh OpenPBS server and how their values decode
# (src/server/resc_def_all: long, size, time or string); a site adds its own (resourcedef).
LONG = re.compile(r"[0-9]+")
SIZE = re.compile(r"[0-9]+([kmgtp]?[bw])?", re.IGNORECASE)  # to_size, attr_fn_size.c
TIME = re.compile(r"[0-9]+(:[0-9]+){0,2}(\.[0-9]+)?")  # decode_time, attr_fn_time.c
BUILTIN = {
    "ncpus": LONG, "ngpus": LONG, "mpiprocs": LONG, "ompthreads": LONG, "nodect": LONG,
    "naccelerators": LONG, "nchunk": LONG, "mem": SIZE, "vmem": SIZE, "pmem": SIZE,
    "walltime": TIME, "cput": TIME, "select": None, "place": None, "arch": None,
    "host": None, "vnode": None, "software": None, "accelerator_model": None,
}  # fmt: skip
PLACE = {"free", "pack", "scatter", "vscatter", "excl", "shared", "exclhost"}


class Refused(Exception):
    """qsub's refusal: the message it prints on stderr and its exit status."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Request:
    """What qsub sends the server: attributes by name, with the pass that set each one."""

    attrs: dict[str, str] = field(default_factory=dict)
    resources: dict[str, str] = field(default_factory=dict)
    variables: dict[str, str] = field(default_factory=dict)
    passes: dict[str, int] = field(default_factory=dict)
    rerun: str = "y"  # qsub.c: static char roptarg = 'y'
    array: bool = False


def _set(req: Request, opt: str, attr: str, value: str, passet: int) -> None:
    # if_cmd_line(x): an option set on the command line is not overridden by a directive.
    if req.passes.get(opt, 0) <= passet:
        req.passes[opt] = passet
        req.attrs[attr] = value


def check_job_name(name: str) -> None:
    if len(name) > PBS_MAXJOBNAME:
        raise Refused("qsub: Job name is too long")  # PBSE_JOBNBIG
    if not name or not all(c.isascii() and (c.isalnum() or c in "-_+.") for c in name):
        raise Refused("qsub: illegal -N value")


def chk_jrange(text: str) -> int:
    """The number of subjobs of ``X-Y[:Z]``, or Refused."""
    match = re.fullmatch(r"([0-9]+)-([0-9]+)(?::([0-9]+))?", text)
    if match is None or int(match[1]) >= int(match[2]) or int(match[3] or 1) < 1:
        raise Refused("qsub: illegal -J value")
    start, end, step = int(match[1]), int(match[2]), int(match[3] or 1)
    count = (end - start + step) // step
    if count > MAX_ARRAY_SIZE:
        raise Refused("qsub: Array job exceeds server or queue size limit")
    return count


def _keepfiles(value: str) -> bool:
    keep, dont, direct = (any(c in value for c in s) for s in ("oe", "n", "d"))
    ok = bool(value) and set(value) <= set("oedn")
    return ok and not (keep and dont) and not (direct and not (keep or dont))


def _mailpoints(value: str) -> bool:
    value = value.lstrip()
    return value == "n" or (bool(value) and value != "j" and set(value) <= set("abej"))


def _resource(name: str, value: str, known: dict[str, re.Pattern[str] | None]) -> None:
    if name not in known:
        raise Refused(f"qsub: Unknown resource: {name}")
    pattern = known[name]
    if name == "select":
        for chunk in value.split("+"):
            match = re.fullmatch(r"(?:([0-9]+)(?::|$))?(.*)", chunk.strip())
            if not chunk.strip()[:1].isalnum() or match is None:
                raise Refused("qsub: illegal -l value")
            for pair in filter(None, (match[2] or "").split(":")):
                key, eq, val = pair.partition("=")
                if not eq or not val:
                    raise Refused("qsub: illegal -l value")
                _resource(key, val, known)
    elif name == "place":
        words = value.split(":")
        if not all(w in PLACE or re.fullmatch(r"group=[A-Za-z_][A-Za-z0-9_]*", w) for w in words):
            raise Refused("qsub: illegal -l value")
    elif pattern is not None and not pattern.fullmatch(value):
        raise Refused(f"qsub: Illegal attribute or resource value Resource_List.{name}")


def depend(value: str) -> list[tuple[str, list[str]]]:
    items = []
    for item in value.split(","):
        words = item.strip().split(":")
        if words[0] not in DEPTYPES or len(words) < 2 or not all(words[1:]):
            raise Refused("qsub: illegal -W value")
        for job in words[1:]:
            if "[" in job and "[]" not in job:
                raise Refused("cannot have dependancy on subjob or range\nqsub: illegal -W value")
        items.append((words[0], words[1:]))
    return items


def process_opts(
    req: Request, argv: Sequence[str], passet: int, known: dict[str, re.Pattern[str] | None]
) -> list[str]:
    """Apply options as qsub.c's process_opts does; returns the operands (script, args)."""
    try:
        opts, rest = getopt.getopt(list(argv), GETOPT_ARGS)
    except getopt.GetoptError as exc:
        raise Refused(f"qsub: {exc.msg}") from None
    for opt, arg in opts:
        o = opt[1]
        if o == "N":
            check_job_name(arg)
            _set(req, o, "Job_Name", arg, passet)
        elif o == "J":
            if req.rerun != "y":
                raise Refused("qsub:  cannot submit non-rerunable Array Job")
            rng, pct, cap = arg.partition("%")
            chk_jrange(rng)
            _set(req, o, "array_indices_submitted", rng, passet)
            if pct:
                if "max_run_subjobs" in req.attrs:
                    raise Refused("qsub: multiple max_run_subjobs values found")
                if not LONG.fullmatch(cap) or int(cap) < 1:
                    raise Refused("qsub: illegal -J value")
                req.attrs["max_run_subjobs"] = cap
            req.array = True
        elif o == "r":
            if arg not in ("y", "n"):
                raise Refused("qsub: illegal -r value")
            if arg == "n" and req.array:
                raise Refused("qsub:  cannot submit non-rerunable Array Job")
            req.rerun = arg
            _set(req, o, "Rerunable", "True" if arg == "y" else "False", passet)
        elif o == "j":
            if arg not in ("oe", "eo", "n"):
                raise Refused("qsub: illegal -j value")
            _set(req, o, "Join_Path", arg, passet)
        elif o == "k":
            if not _keepfiles(arg):
                raise Refused("qsub: illegal -k value")
            _set(req, o, "Keep_Files", arg, passet)
        elif o == "m":
            if not _mailpoints(arg):
                raise Refused("qsub: illegal -m value")
            _set(req, o, "Mail_Points", arg.lstrip(), passet)
        elif o in "oe":
            _set(req, o, "Output_Path" if o == "o" else "Error_Path", arg, passet)
        elif o in "AMqP":
            attr = {"A": "Account_Name", "M": "Mail_Users", "q": "queue", "P": "project"}[o]
            _set(req, o, attr, arg, passet)
        elif o == "l":
            for item in arg.split(","):  # set_resources: name=value[,name=value]
                name, eq, value = item.partition("=")
                if not eq or not value:
                    raise Refused("qsub: illegal -l value")
                _resource(name.strip(), value.strip(), known)
                req.resources[name.strip()] = value.strip()
        elif o == "v":
            for item in filter(None, arg.split(",")):
                name, eq, value = item.partition("=")
                req.variables[name] = value if eq else os.environ.get(name, "")
        elif o == "W":
            key, eq, value = arg.strip().partition("=")
            if not eq or not value:
                raise Refused("qsub: illegal -W value")
            if key == "depend":
                depend(value)
            _set(req, "W" + key, key, value, passet)
        elif o in "IX":
            raise Refused(f"qsub: the contract replay runs batch jobs only (-{o})")
        else:
            _set(req, o, "-" + o, arg, passet)
    return rest


def directives(script: str, prefix: str = "#PBS") -> list[list[str]]:
    """The ``#PBS`` directives before the first executable line, each split like make_argv."""
    found = []
    for line in script.splitlines(keepends=True):
        if line.endswith("\r\n"):
            raise Refused("qsub: script contains cr, lf", status=1)
        stripped = line.lstrip()
        if stripped.startswith(prefix):
            found.append(shlex.split(stripped[len(prefix) :]))
        elif not (line[:1] == ":" or line[:2] == "#!" or not stripped or stripped[0] == "#"):
            break  # pbs_isexecutable: the job's first command ends the directives
    return found


def parse(
    argv: Sequence[str], read: dict[str, str], known: dict[str, re.Pattern[str] | None]
) -> tuple[Request, str]:
    """The request of ``qsub ARGV``: the command line first, then the script's directives."""
    req = Request()
    rest = process_opts(req, argv, CMDLINE, known)
    if not rest:
        raise Refused("qsub: the contract replay needs a script operand", status=2)
    path = rest[0]
    try:
        with Path(path).open(encoding="utf-8", newline="") as handle:
            text = handle.read()
    except OSError as exc:
        raise Refused(f"qsub: script file:: {exc.strerror}", status=1) from None
    read["script"] = text
    for words in directives(text):
        try:
            process_opts(req, words, SCRIPT, known)
        except Refused as exc:
            msg = f"qsub: directive error: {' '.join(words)}\n{exc}"
            raise Refused(msg, status=1) from None
    req.attrs.setdefault("Job_Name", Path(path).name[:PBS_MAXJOBNAME])
    return req, path
