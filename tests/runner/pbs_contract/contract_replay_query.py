"""Contract replay of OpenPBS ``qstat``, ``qselect`` and ``qdel`` (see contract_replay_server).

Rules, by source:

- ``qstat``: options ``GETOPT_ARGS`` "ainpqrstwxu:fGHJMQEBW:T1F:D:" and the conflict checks
  of src/cmds/qstat.c: ``-F json`` needs ``-f`` and takes no alternate display (``-a -i -r
  -u -n -s -H -T -G -M``: "qstat: conflicting options." and exit 2). ``-x`` adds finished jobs,
  ``-t`` an array's subjobs after it. Without ids: every job (finished ones with ``-x``).
  Only ``-f -F json`` is answered: the runner asks nothing else.
- ``qselect``: ``GETOPT_ARGS`` "a:A:c:h:HJl:N:p:q:r:s:t:Tu:xP:" (src/cmds/qselect.c); ``-N``
  matches the name exactly, ``-x`` adds finished jobs; one id a line.
- ``qdel``: ``GETOPT_ARGS`` "W:x" (src/cmds/qdel.c); an unknown id is "qdel: Unknown Job Id"
  and the exit status is the error code's low byte (``any_failed = p_delstatus->code``).
"""

from __future__ import annotations

import getopt
import json
import sys
import time
from collections.abc import Sequence

import contract_replay_server as srv

CONFLICT = "qstat: conflicting options."


def _usage(msg: str) -> int:
    print(msg, file=sys.stderr)
    return 2


def qstat(argv: Sequence[str]) -> int:
    try:
        opts, ids = getopt.getopt(list(argv), "ainpqrstwxu:fGHJMQEBW:T1F:D:")
    except getopt.GetoptError as exc:
        return _usage(f"qstat: {exc.msg}")
    flags = {o[1] for o, _ in opts}
    fmt = next((a for o, a in opts if o == "-F"), "default").lower()
    if fmt not in ("default", "dsv", "json"):
        return _usage("usage: qstat [-f] [-J] [-p] [-t] [-x] [-E] [-F format]")
    alternate = flags & set("airunsHTGM")
    if fmt != "default" and ("f" not in flags or alternate):
        return _usage(CONFLICT)
    if fmt != "json" or flags & set("qQBJ"):
        return _usage("qstat: the contract replay answers qstat -f -F json only")
    history, subjobs = "x" in flags, "t" in flags
    failed = 0
    jobs: dict[str, object] = {}
    with srv.state() as data:
        if ids:
            chosen = []
            for text in ids:
                found = srv._find(data, text)
                if found is None:
                    print(f"qstat: Unknown Job Id {text}", file=sys.stderr)
                    failed = srv.PBSE_UNKJOBID
                elif found[0]["state"] == "F" and not history:
                    print(
                        f"qstat: {text} Job has finished, use -x or -H to obtain historical"
                        " job information",
                        file=sys.stderr,
                    )
                    failed = srv.PBSE_HISTJOBID
                else:
                    chosen.append(found)
        else:
            every = [data["jobs"][k] for k in sorted(data["jobs"], key=int)]
            chosen = [(j, None) for j in every if history or j["state"] != "F"]
        for job, index in chosen:
            if index is not None:
                jobs[f"{job['seq']}[{index}].{srv.server()}"] = srv.record(job, index)
                continue
            jobs[job["id"]] = srv.record(job, None)
            for i in srv._indices(job) if subjobs else []:
                jobs[f"{job['seq']}[{i}].{srv.server()}"] = srv.record(job, i)
    doc: dict[str, object] = {
        "timestamp": int(time.time()),
        "pbs_version": srv.VERSION,
        "pbs_server": srv.server(),
    }
    if jobs:
        doc["Jobs"] = jobs
    print(json.dumps(doc, indent=4, separators=(",", ":")))
    return failed & 0xFF  # exit(any_failed): the status is its low byte


def qselect(argv: Sequence[str]) -> int:
    try:
        opts, rest = getopt.getopt(list(argv), "a:A:c:h:HJl:N:p:q:r:s:t:Tu:xP:")
    except getopt.GetoptError as exc:
        return _usage(f"qselect: {exc.msg}")
    if rest:
        return _usage("qselect: the contract replay takes no destination")
    names = [a for o, a in opts if o == "-N"]
    if {o for o, _ in opts} - {"-N", "-x"}:
        return _usage("qselect: the contract replay answers -N and -x only")
    history = any(o == "-x" for o, _ in opts)
    with srv.state() as data:
        for key in sorted(data["jobs"], key=int):
            job = data["jobs"][key]
            if (history or job["state"] != "F") and (not names or job["name"] == names[-1]):
                print(job["id"])
    return 0


def qdel(argv: Sequence[str]) -> int:
    try:
        _, ids = getopt.getopt(list(argv), "W:x")
    except getopt.GetoptError as exc:
        return _usage(f"qdel: {exc.msg}")
    failed = 0
    with srv.state() as data:
        for text in ids:
            found = srv._find(data, text)
            if found is None:
                print(f"qdel: Unknown Job Id {text}", file=sys.stderr)
                failed = srv.PBSE_UNKJOBID
            elif found[0]["state"] == "F":
                print(f"qdel: Job has finished {text}", file=sys.stderr)
                failed = srv.PBSE_HISTJOBID
            else:
                srv._delete(found[0], "Job deleted by qdel")
    return failed & 0xFF
