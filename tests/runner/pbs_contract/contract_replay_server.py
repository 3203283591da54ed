"""Contract replay of an OpenPBS server behind ``qsub``, ``qstat``, ``qselect`` and ``qdel``.

Not OpenPBS (no PBS server can run here): a state directory (``$PBS_CONTRACT_STATE``) holds the
jobs; ``cycle`` plays one scheduling pass, running each queued job's script with bash, one
subjob after another, as a MOM would (``PBS_ARRAY_INDEX``, ``PBS_JOBID``, the ``-v`` variables,
``-j oe`` output written in place as ``<dir>/<job id>.OU`` for an ``-o`` ending in ``/``:
``JOB_STDOUT_SUFFIX``, src/include/job.h). Tests call ``cycle`` where a real server's scheduler
would run on its own, so no test waits on a clock. Of the dependency types qsub accepts, only
``afterok`` (the one the runner writes) is honoured; a job waiting on one is held (H).

What ``qstat -f -F json`` prints follows OpenPBS and the recorded real outputs in
tests/runner/recorded/: the header (``timestamp``, ``pbs_version``, ``pbs_server``, qstat.c), a
``Jobs`` object only when a job matched (``first_stat``), attributes in the recorded order,
values parsed as JSON where they parse (``pbs_json_insert_parsed``, pbs_cjson.c) except
``Job_Name``, ``Account_Name`` and ``project`` (``batch_item_json_type_triage``, qstat.c), times
as ``ctime(3)`` in ``$TZ``. States and substates are job.h's (Q 10, H 22 waiting on a
dependency, R 42, B 70, F/X 91 deleted, 92 finished, 93 failed); an array's ``Exit_status`` is
set from each ending subjob, 1 for a positive one, 2 for a negative one, else 0
(``update_subjob_state``, src/server/array_func.c). A job killed at its walltime ends with
``Exit_status`` -29 (``JOB_EXEC_KILL_WALLTIME``, job.h). An unknown id is "qstat: Unknown Job Id"
and exit 15001 & 255; a finished one without ``-x`` is PBSE_HISTJOBID (qstat.c, pbs_error.h).
"""

from __future__ import annotations

import contextlib
import fcntl
import getpass
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import contract_replay_qsub as q  # the bin/ scripts put this directory on sys.path

STATE_ENV = "PBS_CONTRACT_STATE"
VERSION = "23.06.06"  # the OpenPBS release whose rules this replays (master, cd7ab5eda)
PBSE_UNKJOBID, PBSE_HISTJOBID = 15001, 15139
KILL_DELAY_S = 10  # the queue's kill_delay default (pbs_queue_attributes.7B)
_ID = re.compile(r"([0-9]+)(\[([0-9]*)\])?(?:\.(.+))?")


def server() -> str:
    return os.environ.get("PBS_CONTRACT_SERVER", "pbs-contract-01.example")


def queues() -> list[str]:
    """The server's queues (``PBS_CONTRACT_QUEUES``); the first is the default (``workq``)."""
    return os.environ.get("PBS_CONTRACT_QUEUES", "workq").split(",")


def known_resources() -> dict[str, re.Pattern[str] | None]:
    site = filter(None, os.environ.get("PBS_CONTRACT_RESOURCES", "").split(","))
    return {**q.BUILTIN, **dict.fromkeys(site)}


@contextlib.contextmanager
def state() -> Iterator[dict[str, Any]]:
    """The server's jobs, locked while the caller reads or changes them."""
    root = os.environ.get(STATE_ENV)
    if not root:
        raise q.Refused(f"Connection refused\n{STATE_ENV} is not set: no contract server", 1)
    base = Path(root)
    (base / "spool").mkdir(parents=True, exist_ok=True)
    with (base / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = base / "jobs.json"
        data = json.loads(path.read_text()) if path.exists() else {"next": 1000, "jobs": {}}
        yield data
        path.write_text(json.dumps(data, indent=1))


def _ctime(epoch: float | None) -> str | None:
    return None if epoch is None else time.ctime(epoch)


def _hms(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _parsed(value: object) -> object:
    """pbs_json_insert_parsed: a value that parses as JSON is printed as such, else a string.
    cJSON reads numbers leniently (leading zeros too), as this does."""
    if not isinstance(value, str):
        return value
    if re.fullmatch(r"-?[0-9]+", value):
        return int(value)
    with contextlib.suppress(ValueError):
        return json.loads(value)
    return value


# --- qsub ------------------------------------------------------------------------------------


def qsub(argv: Sequence[str]) -> str:
    read: dict[str, str] = {}
    req, _ = q.parse(argv, read, known_resources())
    queue = req.attrs.pop("queue", queues()[0])
    if queue not in queues():
        raise q.Refused(f"qsub: Unknown queue {queue}")
    host, cwd, now = socket.gethostname(), str(Path.cwd()), time.time()
    with state() as data:
        for _, ids in q.depend(req.attrs["depend"]) if "depend" in req.attrs else []:
            for dep in ids:
                if _find(data, dep) is None:
                    raise q.Refused(f"qsub: Unknown Job Id {dep}")
        seq = data["next"]
        data["next"] = seq + 1
        job_id = f"{seq}[].{server()}" if req.array else f"{seq}.{server()}"
        spool = Path(os.environ[STATE_ENV]) / "spool" / f"{seq}.SC"
        spool.write_text(read["script"], encoding="utf-8")
        name = req.attrs.pop("Job_Name")
        env = {
            "PBS_O_HOME": os.environ.get("HOME", "/"), "PBS_O_LANG": os.environ.get("LANG", "C"),
            "PBS_O_LOGNAME": getpass.getuser(), "PBS_O_PATH": os.environ.get("PATH", ""),
            "PBS_O_MAIL": f"/var/spool/mail/{getpass.getuser()}",
            "PBS_O_SHELL": os.environ.get("SHELL", "/bin/bash"), "PBS_O_WORKDIR": cwd,
            "PBS_O_SYSTEM": "Linux", "PBS_O_QUEUE": queue, "PBS_O_HOST": host,
        }  # fmt: skip
        data["jobs"][str(seq)] = {
            "id": job_id, "seq": seq, "name": name, "queue": queue, "owner": f"{getpass.getuser()}@{host}",
            "attrs": req.attrs, "resources": req.resources, "variables": {**env, **req.variables},
            "script": str(spool), "cwd": cwd, "host": host, "ctime": now,
            "submit_args": " ".join(argv), "range": req.attrs.get("array_indices_submitted"),
            "runs": {}, "state": "Q",
        }  # fmt: skip
        # A dependency not yet met holds the job (H, substate 22 JOB_SUBSTATE_DEPNHOLD).
        job = data["jobs"][str(seq)]
        if any(_ok(data, dep) is not True for dep in _afterok(job)):
            job["state"] = "H"
    return job_id


# --- the server's records --------------------------------------------------------------------


def _indices(job: dict[str, Any]) -> list[int]:
    if not job["range"]:
        return []
    start, end, step = (int(x) for x in re.split("[-:]", job["range"] + ":1")[:3])
    return list(range(start, end + 1, step))


def _find(data: dict[str, Any], text: str) -> tuple[dict[str, Any], int | None] | None:
    """The job (and subjob index) an id names: ``123``, ``123[]``, ``123[4].server``."""
    m = _ID.fullmatch(text.strip())
    if m is None or m[1] not in data["jobs"] or (m[4] and m[4] != server()):
        return None
    job = data["jobs"][m[1]]
    if bool(m[2]) != bool(job["range"]):
        return None  # an array is named 123[], a plain job 123
    index = int(m[3]) if m[3] else None
    if index is not None and index not in _indices(job):
        return None
    return job, index


def _resource_list(job: dict[str, Any]) -> dict[str, object]:
    res = dict(job["resources"])
    select = res.get("select")
    if select:  # the server derives nodect and ncpus from the chunks (make_schedselect)
        nodes = cpus = 0
        for chunk in select.split("+"):
            m = re.fullmatch(r"(?:([0-9]+)(?::|$))?(.*)", chunk)
            count = int(m[1] or 1) if m else 1
            per = re.search(r"(?:^|:)ncpus=([0-9]+)", m[2] if m else "")
            nodes, cpus = nodes + count, cpus + count * (int(per[1]) if per else 1)
        res |= {"nodect": str(nodes), "ncpus": str(cpus)}
        res.setdefault("place", "pack")
    res.setdefault("ncpus", "1")
    return {k: _parsed(v) for k, v in sorted(res.items())}


def _array_counts(job: dict[str, Any]) -> str:
    runs = job["runs"]
    states = [runs.get(str(i), {}).get("state", "Q") for i in _indices(job)]
    count = {s: sum(1 for x in states if x == s) for s in "QRX"}
    return f"Queued:{count['Q']} Running:{count['R']} Exiting:0 Expired:{count['X']} "


def record(job: dict[str, Any], index: int | None) -> dict[str, object]:
    """One job's (or subjob's) attributes as ``qstat -f -F json`` prints them."""
    run = job["runs"].get(str(index) if index is not None else "job", {})
    array = bool(job["range"]) and index is None
    state = job["state"] if index is None else run.get("state", "Q")
    attrs, host = job["attrs"], job["host"]
    seq = job["seq"]
    default_out = f"{host}:{job['cwd']}/{job['name']}"
    rec: dict[str, object] = {"Job_Name": job["name"], "Job_Owner": job["owner"]}
    if "walltime_s" in run:
        rec["resources_used"] = {
            "cpupercent": 0, "cput": _hms(run["walltime_s"]), "mem": "0kb", "ncpus": 1,
            "vmem": "0kb", "walltime": _hms(run["walltime_s"]),
        }  # fmt: skip
    rec |= {"job_state": state, "queue": job["queue"], "server": server()}
    if "Account_Name" in attrs:
        rec["Account_Name"] = attrs["Account_Name"]
    rec |= {"Checkpoint": "u", "ctime": _ctime(job["ctime"])}
    if "depend" in attrs:
        rec["depend"] = attrs["depend"]
    rec["Error_Path"] = attrs.get("Error_Path", f"{default_out}.e{seq}")
    if "session" in run:
        rec |= {"exec_host": "contract/0*1", "exec_vnode": "(contract:ncpus=1)"}
    rec |= {
        "Hold_Types": "n", "Join_Path": attrs.get("Join_Path", "n"),
        "Keep_Files": attrs.get("Keep_Files", "n"), "Mail_Points": attrs.get("Mail_Points", "a"),
    }  # fmt: skip
    if "Mail_Users" in attrs:
        rec["Mail_Users"] = attrs["Mail_Users"]
    out = attrs.get("Output_Path", f"{default_out}.o{seq}")
    rec |= {
        "mtime": _ctime(run.get("mtime", job.get("mtime", job["ctime"]))),
        "Output_Path": out if ":" in out else f"{host}:{out}", "Priority": 0,
        "qtime": _ctime(job["ctime"]), "Rerunable": attrs.get("Rerunable", "True"),
        "Resource_List": _resource_list(job),
    }  # fmt: skip
    for key in ("stime", "obittime"):
        if key in run:
            rec[key] = _ctime(run[key])
    if "session" in run:
        rec["session_id"] = run["session"]
    rec["jobdir"] = job["variables"]["PBS_O_HOME"]
    rec["substate"] = run.get("substate", 22 if state == "H" else 10)
    rec["Variable_List"] = {k: _parsed(v) for k, v in job["variables"].items()}
    if "comment" in run:
        rec["comment"] = run["comment"]
    rec |= {"etime": _ctime(job["ctime"]), "umask": 22, "run_count": 1 if "stime" in run else 0}
    rec["eligible_time"] = "00:00:00"
    if "exit" in run:
        rec["Exit_status"] = run["exit"]
    rec["Submit_arguments"] = job["submit_args"]
    if array:
        rec |= {"array": "True", "array_state_count": _array_counts(job)}
        rec["array_indices_submitted"] = job["range"]
        if "max_run_subjobs" in attrs:
            rec["max_run_subjobs"] = int(attrs["max_run_subjobs"])
    if index is not None:
        rec |= {"array_id": job["id"], "array_index": index}
    if state in "FX" and "obittime" in run:
        rec["history_timestamp"] = int(run["obittime"])
    rec |= {"project": "_pbs_project_default", "Submit_Host": host}
    return {
        k: v if k in ("Job_Name", "Account_Name", "project") else _parsed(v) for k, v in rec.items()
    }


# --- running jobs ----------------------------------------------------------------------------


def _execute(job: dict[str, Any], index: int | None) -> dict[str, Any]:
    """Run the job's script as a MOM would: bash, in $HOME, with PBS's variables."""
    key = f"{job['seq']}[{index}].{server()}" if index is not None else job["id"]
    env = {
        **{k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "USER", "TZ")},
        **job["variables"],
        "PATH": job["variables"]["PBS_O_PATH"], "PBS_JOBID": key, "PBS_JOBNAME": job["name"],
        "PBS_QUEUE": job["queue"], "PBS_ENVIRONMENT": "PBS_BATCH",
    }  # fmt: skip
    if index is not None:
        env |= {"PBS_ARRAY_INDEX": str(index), "PBS_ARRAY_ID": job["id"]}
    out = job["attrs"].get("Output_Path", "")
    log = Path(f"{out}{key}.OU") if out.endswith("/") else Path(out) if out else None
    if log is None or not log.parent.is_dir():
        log = Path(os.environ[STATE_ENV]) / "undelivered" / f"{key}.OU"
        log.parent.mkdir(exist_ok=True)
    limit = q.TIME.fullmatch(job["resources"].get("walltime", ""))
    wall = None
    if limit:
        parts = [int(p) for p in limit[0].split(".")[0].split(":")]
        wall = sum(p * 60**i for i, p in enumerate(reversed(parts)))
    start = time.time()
    with log.open("ab") as sink:
        proc = subprocess.Popen(
            ["bash", job["script"]], cwd=env.get("HOME", "/"), env=env, stdout=sink,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            code = proc.wait(timeout=wall)
            status = code if code >= 0 else 256 - code  # killed by signal N: 256 + N
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=KILL_DELAY_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            status = -29  # JOB_EXEC_KILL_WALLTIME
    end = time.time()
    return {
        "state": "X" if index is not None else "F", "substate": 93 if status < 0 else 92,
        "stime": start, "obittime": end, "mtime": end, "walltime_s": end - start,
        "session": proc.pid, "exit": status,
        "comment": f"Job run at {time.strftime('%a %b %d at %H:%M', time.localtime(start))} on"
        " (contract:ncpus=1) and " + ("exceeded resource walltime" if status == -29 else "finished"),
    }  # fmt: skip


def _ok(data: dict[str, Any], dep: str) -> bool | None:
    """afterok: True once the job ended with status 0, False once it ended otherwise."""
    found = _find(data, dep)
    if found is None or found[0]["state"] != "F":
        return None
    runs = found[0]["runs"].values()
    return all(r.get("exit") == 0 for r in runs) and bool(runs)


def _delete(job: dict[str, Any], why: str) -> None:
    now = time.time()
    units = [str(i) for i in _indices(job)] or ["job"]
    for unit in units:
        run = job["runs"].setdefault(unit, {})
        if "exit" not in run:
            done = "X" if unit != "job" else "F"
            run |= {"state": done, "substate": 91, "mtime": now, "comment": why}
    job |= {"state": "F", "mtime": now}


def _afterok(job: dict[str, Any]) -> list[str]:
    value = job["attrs"].get("depend")
    return [d for kind, ids in q.depend(value) if kind == "afterok" for d in ids] if value else []


def cycle() -> list[str]:
    """One scheduling pass: every job whose dependencies are met runs to its end, in order
    (holding the server's lock: a job that calls qstat itself would wait forever).
    A job whose afterok dependency ended badly is deleted (depend_on_term). Returns the ids
    run."""
    ran = []
    with state() as data:
        for seq in sorted(data["jobs"], key=int):
            job = data["jobs"][seq]
            if job["state"] not in "QH":
                continue
            deps = _afterok(job)
            verdicts = [_ok(data, d) for d in deps]
            if False in verdicts:
                _delete(
                    job, "Job deleted as result of dependency on job " + deps[verdicts.index(False)]
                )
                continue
            if None in verdicts:
                continue
            for index in _indices(job) or [None]:
                run = _execute(job, index)
                job["runs"][str(index) if index is not None else "job"] = run
                if index is not None:
                    parent = job["runs"].setdefault("job", {"stime": run["stime"]})
                    e = run["exit"]
                    parent["exit"] = 1 if e > 0 else 2 if e < 0 else 0
            if job["range"]:  # chk_array_doneness: the array ends with its last subjob
                end = job["runs"][str(_indices(job)[-1])]["obittime"]
                job["runs"]["job"] |= {"state": "F", "substate": 92, "obittime": end, "mtime": end}
            job["state"] = "F"
            ran.append(job["id"])
    return ran


def main(command: str, argv: Sequence[str]) -> int:
    time.tzset()
    try:
        if command == "qsub":
            print(qsub(argv))
            return 0
        from contract_replay_query import qdel, qselect, qstat

        return {"qstat": qstat, "qselect": qselect, "qdel": qdel}[command](argv)
    except q.Refused as exc:
        print(str(exc), file=sys.stderr)
        return exc.status


if __name__ == "__main__":
    # `python3 contract_replay_server.py cycle`: the scheduling pass a test asks for.
    time.tzset()
    print("\n".join(cycle()))
