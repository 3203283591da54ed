"""The local backend on real processes: detached executors, arrays under a cap, afterok, limits.

No mocks: every job is submitted with the argv the runner would run, its executor is a real
detached process, and its tasks are real bash. Test helpers poll the state files every 0.1 s
and every wait is bounded.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from campaignops.backends.local import directives as localjob
from campaignops.backends.local import jobfiles as localjobs
from campaignops.backends.local import machine as local
from campaignops.backends.local import state as localstate
from campaignops.model import walltime
from campaignops.model.jobspec import JobSpec, JobState, Resources
from campaignops.model.states import FINISHED
from tests import waiting
from tests.runner.expected import EXIT, TRAPS, WAIT, case

WAIT_S = 30.0


def wait_until(what: str, check: Callable[[], Any], timeout: float = WAIT_S) -> Any:
    return waiting.until(what, check, timeout=timeout, most=0.1)  # the checks read files


def group_gone(pgid: int) -> bool:
    try:
        os.kill(-pgid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    state_root = tmp_path / ".campaign" / "local"
    yield state_root
    # Leave nothing running: cancel whatever a failed test left behind and wait for its end.
    for job_id in localstate.list_jobs(state_root):
        state = localstate.read_json(state_root / job_id / "state.json")
        if state is None or state["state"] not in FINISHED:
            subprocess.run(local.cancel_argv([job_id], state_root=str(state_root)), check=False)
            wait_until(f"{job_id} to end", lambda j=job_id: finished(state_root, j), 60)


def state_of(root: Path, job_id: str) -> dict[str, Any]:
    """The job's state file as the readers take it (localstate.read_state), with the pid of the
    executor it names."""
    state = localstate.read_state(root / job_id)
    if not isinstance(state, dict):
        return {"state": "PENDING", "tasks": []}
    executor = state.get("executor") or {}
    return state | ({"executor_pid": executor["pid"]} if "pid" in executor else {})


def task_of(root: Path, job_id: str, index: int) -> dict[str, Any]:
    tasks = state_of(root, job_id)["tasks"]
    return dict(tasks[index]) if index < len(tasks) else {}


def finished(root: Path, job_id: str) -> bool:
    return state_of(root, job_id)["state"] in FINISHED


def submit_script(root: Path, text: str) -> str:
    script = root.parent / f"job-{time.monotonic_ns()}.sh"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(text)
    argv = local.submit_argv(str(script), state_root=str(root))
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=WAIT_S)
    return local.parse_job_id(out.stdout)


def submit(root: Path, spec: JobSpec) -> str:
    return submit_script(root, local.render(spec))


def spec(workdir: Path, *tasks: str, **kw: Any) -> JobSpec:
    return JobSpec(name=kw.pop("name", "demo.t1.smoke"), workdir=str(workdir), tasks=tasks, **kw)


def query(root: Path, *job_ids: str) -> dict[str, JobState]:
    argvs = local.query_argvs(job_ids, state_root=str(root))
    outs = [subprocess.run(a, capture_output=True, text=True, check=True).stdout for a in argvs]
    return local.parse_states(outs)


def final(root: Path, job_id: str) -> JobState:
    wait_until(f"{job_id} to finish", lambda: finished(root, job_id))
    return query(root, job_id)[job_id]


def stamp(path: Path) -> str:
    """A shell command writing the current time (seconds since the epoch) to ``path``."""
    return f"date +%s.%N > {path}"


# --- render and directives ---------------------------------------------------------------------


SWEEP = JobSpec(
    name="demo.lr-sweep.production",
    workdir="/home/me/my campaign",
    tasks=("python train.py --lr 0.1", "python train.py --lr 0.2  # wide", "make eval"),
    resources=Resources(time="1-02:30", mem="4G"),
    max_parallel=2,
    after=("local-3", "local-4"),
    comment="L17 0123abc",
    warning_seconds=120,
    env={"OMP_NUM_THREADS": "1", "GREETING": "hi there"},
)


def test_render_array_with_cap_dependency_limit_and_warning() -> None:
    assert local.render(SWEEP) == (
        "#!/bin/bash\n"
        "# Local job, run by campaignops.backends.local.executor, which reads the #LOCAL lines as\n"
        "# sbatch reads #SBATCH. Rendered from a committed manifest: change that, not this.\n"
        "#LOCAL --job-name=demo.lr-sweep.production\n"
        "#LOCAL --chdir=/home/me/my campaign\n"
        "#LOCAL --log-dir=logs\n"
        "#LOCAL --comment=L17 0123abc\n"
        "#LOCAL --array=0-2%2\n"
        "#LOCAL --dependency=afterok:local-3:local-4\n"
        "#LOCAL --time=1-02:30:00\n"
        "#LOCAL --signal=B:USR1@120\n"
        "#LOCAL --kill-wait=30\n"
        "#LOCAL --mem=4G\n"
        "set -euo pipefail\n"
        "cd '/home/me/my campaign'\n"
        'export CAMPAIGN_TASK_INDEX="${CAMPAIGN_TASK_INDEX:-0}"\n'
        "export GREETING='hi there'\n"
        "export OMP_NUM_THREADS=1\n"
        + TRAPS
        + case("python train.py --lr 0.1", "python train.py --lr 0.2  # wide", "make eval")
        + WAIT
        + EXIT
    )
    assert SWEEP.time_s == 95400  # D-HH:MM: hours first, as the manifest schema says
    assert localjob.parse_directives(local.render(SWEEP)).time_s == 95400


def test_render_single_job_has_no_array_dependency_or_limit() -> None:
    assert local.render(JobSpec(name="c.t.smoke", workdir="/w", tasks=("true",))) == (
        "#!/bin/bash\n"
        "# Local job, run by campaignops.backends.local.executor, which reads the #LOCAL lines as\n"
        "# sbatch reads #SBATCH. Rendered from a committed manifest: change that, not this.\n"
        "#LOCAL --job-name=c.t.smoke\n"
        "#LOCAL --chdir=/w\n"
        "#LOCAL --log-dir=logs\n"
        "#LOCAL --kill-wait=30\n"
        "set -euo pipefail\n"
        "cd /w\n"
        'export CAMPAIGN_TASK_INDEX="${CAMPAIGN_TASK_INDEX:-0}"\n'
        + TRAPS
        + case("true")
        + WAIT
        + EXIT
    )


def test_render_single_job_limit_is_hours_minutes() -> None:
    """``00:20`` is 20 minutes here as on Slurm and PBS, written in three fields."""
    job = JobSpec(
        name="c.t.smoke", workdir="/w", tasks=("true",), resources=Resources(time="00:20")
    )
    assert local.render(job) == (
        "#!/bin/bash\n"
        "# Local job, run by campaignops.backends.local.executor, which reads the #LOCAL lines as\n"
        "# sbatch reads #SBATCH. Rendered from a committed manifest: change that, not this.\n"
        "#LOCAL --job-name=c.t.smoke\n"
        "#LOCAL --chdir=/w\n"
        "#LOCAL --log-dir=logs\n"
        "#LOCAL --time=00:20:00\n"
        "#LOCAL --kill-wait=30\n"
        "set -euo pipefail\n"
        "cd /w\n"
        'export CAMPAIGN_TASK_INDEX="${CAMPAIGN_TASK_INDEX:-0}"\n'
        + TRAPS
        + case("true")
        + WAIT
        + EXIT
    )
    assert localjob.parse_directives(local.render(job)).time_s == 1200


def test_render_refuses_a_time_that_is_not_a_walltime() -> None:
    job = JobSpec(name="c.t.smoke", workdir="/w", tasks=("true",), resources=Resources(time="90 m"))
    with pytest.raises(walltime.WalltimeError, match="'90 m' is not a time limit"):
        local.render(job)


def test_a_directive_time_out_of_range_is_refused() -> None:
    script = "#!/bin/bash\n#LOCAL --job-name=x\n#LOCAL --chdir=/w\n#LOCAL --time=00:60:00\ntrue\n"
    with pytest.raises(localjob.LocalBackendError, match="minutes 60 is over 59"):
        localjob.parse_directives(script)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"comment": "L1\nrm -rf /"}, "single lines"),
        ({"env": {"BAD-NAME": "x"}}, "shell variables"),
        ({"tasks": ()}, "no tasks"),
    ],
)
def test_render_refuses_what_cannot_be_a_script(change: dict[str, Any], words: str) -> None:
    job = JobSpec(**{"name": "c.t.smoke", "workdir": "/w", "tasks": ("true",), **change})
    with pytest.raises(localjob.LocalBackendError) as info:
        local.render(job)
    assert words in str(info.value)


@pytest.mark.parametrize(
    "separator", ["\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
)
def test_render_refuses_every_line_separator_in_a_directive(separator: str) -> None:
    # parse_directives splits as str.splitlines: a U+2028 in an id cut the job name short.
    name = f"c.wi{separator}de.smoke"
    job = JobSpec(name=name, workdir="/w", tasks=("true",))
    with pytest.raises(localjob.LocalBackendError) as info:
        local.render(job)
    assert str(info.value) == (
        f"job {name!r}: job-name {name!r} cannot be one #LOCAL line\n"
        "  hint: names, comments and paths must be non-empty single lines (no line or "
        "paragraph separators)"
    )


def test_submit_refuses_unknown_directive_and_unknown_parent(root: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.sh"
    bad.write_text(
        "#!/bin/bash\n#LOCAL --job-name=x\n#LOCAL --chdir=/w\n#LOCAL --partition=gpu\ntrue\n"
    )
    out = subprocess.run(local.submit_argv(str(bad), state_root=str(root)), capture_output=True)
    assert out.returncode == 1 and b"unknown directive '#LOCAL --partition=gpu'" in out.stderr
    orphan = local.render(spec(tmp_path, "true", after=("local-404",)))
    bad.write_text(orphan)
    out = subprocess.run(local.submit_argv(str(bad), state_root=str(root)), capture_output=True)
    assert out.returncode == 1 and b"no local job local-404" in out.stderr
    assert localstate.list_jobs(root) == []
    assert local.parse_job_id("local-12-0a9fe3\n") == "local-12-0a9fe3"
    assert local.parse_job_id("local-12\n") == "local-12"  # ids from before the random part
    with pytest.raises(localjob.LocalBackendError):
        local.parse_job_id("Traceback (most recent call last):")


# --- running jobs ------------------------------------------------------------------------------


def test_job_outlives_the_process_that_submitted_it(root: Path, tmp_path: Path) -> None:
    gate, done = tmp_path / "gate", tmp_path / "done"
    job = spec(tmp_path, f"while [ ! -e {gate} ]; do sleep 0.05; done; echo ok > {done}")
    script = tmp_path / "job.sh"
    script.write_text(local.render(job))
    argv = local.submit_argv(str(script), state_root=str(root))
    child = (
        "import subprocess, sys\n"
        f"out = subprocess.run({argv!r}, capture_output=True, text=True, check=True)\n"
        "print(out.stdout.strip())\n"
    )
    # The submitting process has exited before the task can finish (it waits for the gate).
    submitter = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
    job_id = local.parse_job_id(submitter.stdout)
    assert submitter.returncode == 0 and not done.exists()
    wait_until("the task to start", lambda: state_of(root, job_id)["state"] == "RUNNING")
    executor = state_of(root, job_id)["executor_pid"]
    assert os.getsid(executor) == executor  # a session (and process group) of its own
    gate.touch()
    result = final(root, job_id)
    assert (result.state, result.exit_code, done.read_text()) == ("COMPLETED", 0, "ok\n")
    assert (result.name, str(result.submitted)[-6:]) == ("demo.t1.smoke", "+00:00")
    assert (tmp_path / "logs" / f"demo.t1.smoke-{job_id}.out").exists()


def test_array_of_six_never_runs_more_than_two_at_once(root: Path, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    tasks = [
        f"{stamp(marks / f'{i}.start')}; sleep 0.3; {stamp(marks / f'{i}.end')}" for i in range(6)
    ]
    job_id = submit(root, spec(tmp_path, *tasks, max_parallel=2))
    result = final(root, job_id)
    assert (result.state, result.exit_code) == ("COMPLETED", 0)
    spans = [
        (float((marks / f"{i}.start").read_text()), float((marks / f"{i}.end").read_text()))
        for i in range(6)
    ]
    most = max(sum(1 for s, e in spans if s <= t <= e) for t, _ in spans)
    assert most <= 2
    states = query(root, *(f"{job_id}_{i}" for i in range(6)))
    assert {s.state for s in states.values()} == {"COMPLETED"}
    logs = sorted(p.name for p in (tmp_path / "logs").iterdir())
    assert logs == [f"demo.t1.smoke-{job_id}_{i}.out" for i in range(6)]


def test_a_failing_task_fails_its_array_with_its_exit_code(root: Path, tmp_path: Path) -> None:
    job_id = submit(root, spec(tmp_path, "true", "echo broken >&2; exit 7", "true"))
    result = final(root, job_id)
    assert (result.state, result.exit_code) == ("FAILED", 7)
    tasks = query(root, f"{job_id}_0", f"{job_id}_1")
    assert (tasks[f"{job_id}_0"].state, tasks[f"{job_id}_1"].state) == ("COMPLETED", "FAILED")
    assert (tmp_path / "logs" / f"demo.t1.smoke-{job_id}_1.out").read_text() == "broken\n"
    assert result.started is not None and result.ended is not None
    assert result.started.endswith("+00:00") and result.ended >= result.started
    # How an array's state folds: the worst task, with its exit code.
    assert localjob.fold([("FAILED", 2), ("TIMEOUT", 143), ("COMPLETED", 0)]) == ("TIMEOUT", 143)
    assert localjob.fold([("FAILED", 7), ("CANCELLED", None)]) == ("CANCELLED", 7)
    assert localjob.fold([("COMPLETED", 0), ("RUNNING", None)]) == ("RUNNING", None)


def test_afterok_child_starts_only_after_its_parent_completed(root: Path, tmp_path: Path) -> None:
    gate, parent_end, child_start = tmp_path / "gate", tmp_path / "p.end", tmp_path / "c.start"
    wait_gate = f"while [ ! -e {gate} ]; do sleep 0.05; done"
    parent = submit(root, spec(tmp_path, f"{wait_gate}; {stamp(parent_end)}", name="c.a.smoke"))
    child = submit(root, spec(tmp_path, stamp(child_start), name="c.b.smoke", after=(parent,)))
    wait_until("the child's executor", lambda: "executor_pid" in state_of(root, child))
    assert query(root, child)[child].state == "PENDING"
    gate.touch()
    assert final(root, child).state == "COMPLETED"
    assert float(child_start.read_text()) >= float(parent_end.read_text())


def test_a_failed_parent_cancels_its_afterok_child(root: Path, tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    parent = submit(root, spec(tmp_path, "exit 3", name="c.a.smoke"))
    child = submit(root, spec(tmp_path, f"touch {ran}", "true", name="c.b.smoke", after=(parent,)))
    assert final(root, parent).state == "FAILED"
    assert final(root, child).state == "CANCELLED"
    assert state_of(root, child)["reason"] == "DependencyNeverSatisfied"
    assert {t["state"] for t in state_of(root, child)["tasks"]} == {"CANCELLED"}
    assert not ran.exists()


def ppid(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))


@pytest.mark.skipif(sys.platform != "linux", reason="/proc and PR_SET_CHILD_SUBREAPER are Linux")
def test_time_limit_times_out_and_leaves_no_process(root: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "straggler.pid"
    # Task 0 leaves an orphan that ignores TERM (its parent subshell exits at once): it would
    # outlive the task unless the executor adopts it and kills the group. Task 1 ignores TERM
    # itself, so only the KILL after kill-wait ends it.
    orphan = f"( (trap '' TERM; exec sleep 300) & echo $! > {pid_file} ); sleep 300"
    job = spec(tmp_path, orphan, "trap '' TERM; sleep 300", resources=Resources(time="0:00:02"))
    job_id = submit_script(root, local.render(job).replace("--kill-wait=30", "--kill-wait=1"))
    straggler = wait_until("the straggler", lambda: pid_file.exists() and pid_file.read_text())
    executor = state_of(root, job_id)["executor_pid"]
    assert wait_until("its adoption", lambda: ppid(int(straggler)) == executor)
    result = final(root, job_id)
    assert (result.state, result.exit_code, result.timelimit) == ("TIMEOUT", 143, "00:00:02")
    tasks = [task_of(root, job_id, i) for i in (0, 1)]
    assert [(t["state"], t["exit_code"]) for t in tasks] == [("TIMEOUT", 143), ("TIMEOUT", 137)]
    # The executor reaps what it killed before it reports the end: no wait needed here.
    assert [group_gone(t["pgid"]) for t in tasks] == [True, True]
    with pytest.raises(ProcessLookupError):
        os.kill(int(straggler), 0)


def test_warning_signal_reaches_the_batch_shell_before_the_limit(
    root: Path, tmp_path: Path
) -> None:
    warned, termed = tmp_path / "warned", tmp_path / "termed"
    task = (
        f"trap '{stamp(warned)}' USR1; trap '{stamp(termed)}; exit 143' TERM; "
        "while true; do sleep 0.1; done"
    )
    job = spec(tmp_path, task, resources=Resources(time="00:00:03"), warning_seconds=2)
    result = final(root, submit(root, job))
    assert result.state == "TIMEOUT"
    assert float(warned.read_text()) < float(termed.read_text())


def test_cancel_ends_running_and_pending_tasks(root: Path, tmp_path: Path) -> None:
    job_id = submit(root, spec(tmp_path, "sleep 300", "sleep 300", max_parallel=1))
    wait_until("task 0 to run", lambda: task_of(root, job_id, 0).get("state") == "RUNNING")
    pgid = task_of(root, job_id, 0)["pgid"]
    subprocess.run(local.cancel_argv([job_id], state_root=str(root)), check=True)
    assert final(root, job_id).state == "CANCELLED"
    assert [t["state"] for t in state_of(root, job_id)["tasks"]] == ["CANCELLED", "CANCELLED"]
    assert task_of(root, job_id, 1)["pgid"] is None  # never started
    assert group_gone(pgid)


def test_cancel_of_one_task_stops_it_and_lets_the_others_run(root: Path, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    wait_gate = f"while [ ! -e {gate} ]; do sleep 0.05; done"
    # Task 0 runs; task 2 waits for the cap and is cancelled before it ever starts.
    job_id = submit(root, spec(tmp_path, "sleep 300", wait_gate, "touch ran", max_parallel=2))
    wait_until("tasks 0 and 1 to run", lambda: task_of(root, job_id, 1).get("state") == "RUNNING")
    pgid = task_of(root, job_id, 0)["pgid"]
    argv = local.cancel_argv([local.task_id(job_id, 0), f"{job_id}_2"], state_root=str(root))
    subprocess.run(argv, check=True)
    wait_until("task 0 to end", lambda: task_of(root, job_id, 0).get("state") == "CANCELLED")
    assert group_gone(pgid) and task_of(root, job_id, 1)["state"] == "RUNNING"
    gate.touch()
    result = final(root, job_id)
    states = [t["state"] for t in state_of(root, job_id)["tasks"]]
    assert states == ["CANCELLED", "COMPLETED", "CANCELLED"]
    assert (result.state, state_of(root, job_id)["reason"]) == ("CANCELLED", None)
    assert task_of(root, job_id, 2)["pgid"] is None and not (tmp_path / "ran").exists()
    out = subprocess.run(
        local.cancel_argv([f"{job_id}_3"], state_root=str(root)), capture_output=True, text=True
    )
    assert out.returncode == 1 and f"local job {job_id} has no task 3 (0-2)" in out.stderr


def test_a_task_of_a_dead_executor_is_cancelled_by_cancel_itself(
    root: Path, tmp_path: Path
) -> None:
    job_id = submit(root, spec(tmp_path, "sleep 300", "sleep 300"))
    wait_until("both tasks to run", lambda: task_of(root, job_id, 1).get("state") == "RUNNING")
    state = state_of(root, job_id)
    os.kill(state["executor_pid"], signal.SIGKILL)
    wait_until("the executor to die", lambda: not localstate.alive(state["executor_pid"]))
    subprocess.run(local.cancel_argv([f"{job_id}_1"], state_root=str(root)), check=True)
    assert [t["state"] for t in state_of(root, job_id)["tasks"]] == ["RUNNING", "CANCELLED"]
    assert wait_until("task 1's group to die", lambda: group_gone(state["tasks"][1]["pgid"]))
    assert not group_gone(state["tasks"][0]["pgid"])
    states = query(root, f"{job_id}_1", job_id)
    assert (states[f"{job_id}_1"].state, states[job_id].state) == ("CANCELLED", "NODE_FAIL")


def test_log_path_is_where_the_executor_writes(root: Path, tmp_path: Path) -> None:
    single = submit(root, spec(tmp_path, "echo one"))
    array = submit(root, spec(tmp_path, "echo a", "echo b"))
    final(root, single), final(root, array)
    path = local.log_path(single, name="demo.t1.smoke", index=None)
    assert (tmp_path / path).read_text() == "one\n"
    path = local.log_path(array, name="demo.t1.smoke", index=1)
    assert (path, (tmp_path / path).read_text()) == (f"logs/demo.t1.smoke-{array}_1.out", "b\n")


def test_a_dead_executor_reads_as_node_fail_and_cancel_still_cleans_up(
    root: Path, tmp_path: Path
) -> None:
    job_id = submit(root, spec(tmp_path, "sleep 300"))
    wait_until("the task to run", lambda: state_of(root, job_id)["state"] == "RUNNING")
    state = state_of(root, job_id)
    os.kill(state["executor_pid"], signal.SIGKILL)
    lost = wait_until("NODE_FAIL", lambda: query(root, job_id)[job_id].state == "NODE_FAIL")
    assert lost
    subprocess.run(local.cancel_argv([job_id], state_root=str(root)), check=True)
    assert query(root, job_id)[job_id].state == "CANCELLED"
    assert wait_until("the orphaned task to die", lambda: group_gone(state["tasks"][0]["pgid"]))


def test_an_executor_dead_before_its_first_write_reads_as_node_fail(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An executor that dies at start-up, before it writes any state: /bin/false in its place.
    script = tmp_path / "job.sh"
    script.write_text(local.render(spec(tmp_path, "true")))
    monkeypatch.setattr(sys, "executable", "/bin/false")
    job_id = localjobs.submit(root, script)
    monkeypatch.undo()
    pid = int((root / job_id / localjob.STARTED_BY).read_text())
    wait_until("the executor to exit", lambda: not localstate.alive(pid))
    assert not (root / job_id / "state.json").exists()
    assert query(root, job_id)[job_id].state == "NODE_FAIL"
    # A cancel writes the end itself: nobody else will.
    subprocess.run(local.cancel_argv([job_id], state_root=str(root)), check=True)
    assert query(root, job_id)[job_id].state == "CANCELLED"


STUCK_SUBMIT = """
import sys, time
from pathlib import Path
from campaignops.backends.local import jobfiles

def stuck(job_dir, lock_fd):  # killed here: job.json written, its executor not yet started
    print(job_dir.name, flush=True)
    time.sleep(600)

jobfiles._start = stuck
jobfiles.submit(Path(sys.argv[1]), Path(sys.argv[2]))
"""


def test_a_submit_killed_before_it_started_the_executor_leaves_no_job_pending(
    root: Path, tmp_path: Path
) -> None:
    # kill -9 of the submit between job.json and the executor's start: its job used to read
    # PENDING for ever (no executor.pid, no state.json); the lock submit holds says it all.
    script = tmp_path / "job.sh"
    script.write_text(local.render(spec(tmp_path, "true")))
    argv = [sys.executable, "-c", STUCK_SUBMIT, str(root), str(script)]
    submit_proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    job_id = submit_proc.stdout.readline().strip()  # type: ignore[union-attr]
    assert (root / job_id / "job.json").is_file(), job_id
    assert query(root, job_id)[job_id].state == "PENDING"  # being submitted: not gone
    submit_proc.kill()
    submit_proc.wait()
    submit_proc.stdout.close()  # type: ignore[union-attr]
    assert not (root / job_id / localjob.STARTED_BY).exists()
    assert query(root, job_id)[job_id].state == "NODE_FAIL"
    subprocess.run(local.cancel_argv([job_id], state_root=str(root)), check=True)
    assert query(root, job_id)[job_id].state == "CANCELLED"


def test_the_executor_keeps_the_lock_submit_handed_it(root: Path, tmp_path: Path) -> None:
    job_id = submit(root, spec(tmp_path, "sleep 300"))
    wait_until("the task to run", lambda: state_of(root, job_id)["state"] == "RUNNING")
    holder = int((root / job_id / "executor.lock").read_text())
    assert holder == state_of(root, job_id)["executor_pid"]  # the handed lock, its pid in it
    subprocess.run(local.cancel_argv([job_id], state_root=str(root)), check=True)
    assert final(root, job_id).state == "CANCELLED"


def test_a_zombie_executor_is_not_alive(tmp_path: Path) -> None:
    # What a killed executor becomes under a PID 1 that does not reap: kill -0 still succeeds.
    zombie = subprocess.Popen(["true"], start_new_session=True)
    wait_until("the zombie", lambda: "State:\tZ" in Path(f"/proc/{zombie.pid}/status").read_text())
    os.kill(-zombie.pid, 0)
    assert not localstate.alive(zombie.pid)
    zombie.wait()


def test_concurrent_submits_get_distinct_ids(root: Path, tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text(local.render(spec(tmp_path, "true")))
    argv = local.submit_argv(str(script), state_root=str(root))

    def one(_: int) -> str:
        out = subprocess.run(argv, capture_output=True, text=True, check=True)
        return local.parse_job_id(out.stdout)

    with ThreadPoolExecutor(max_workers=8) as pool:
        ids = list(pool.map(one, range(8)))
    assert sorted(localstate.job_number(j) for j in ids) == list(range(1, 9))
    assert all(re.fullmatch(r"local-[1-8]-[0-9a-f]{6}", j) for j in ids)
    for job_id in ids:
        wait_until(f"{job_id} to finish", lambda j=job_id: finished(root, j))


def test_status_of_many_jobs_is_one_call(root: Path, tmp_path: Path) -> None:
    ok = submit(root, spec(tmp_path, "true"))
    bad = submit(root, spec(tmp_path, "exit 4", "true"))
    final(root, ok), final(root, bad)
    ids = [ok, bad, f"{bad}_1", "local-999"]
    argvs = local.query_argvs(ids, state_root=str(root))
    assert len(argvs) == 1
    out = subprocess.run(argvs[0], capture_output=True, text=True, check=True).stdout
    states = {k: (v.state, v.exit_code) for k, v in local.parse_states([out]).items()}
    assert states == {
        ok: ("COMPLETED", 0),
        bad: ("FAILED", 4),
        f"{bad}_1": ("COMPLETED", 0),
        "local-999": ("UNKNOWN", None),
    }


def test_siblings_are_the_unfinished_jobs_of_a_name(root: Path, tmp_path: Path) -> None:
    done = submit(root, spec(tmp_path, "true", name="c.t.smoke", comment="L1 abc"))
    final(root, done)
    live = submit(root, spec(tmp_path, "sleep 300", name="c.t.smoke", comment="L2 abc"))
    submit(root, spec(tmp_path, "sleep 300", name="c.other.smoke"))

    def siblings(include_finished: bool) -> list[tuple[str, str | None]]:
        argv = local.sibling_argv(
            ["c.t.smoke"], state_root=str(root), include_finished=include_finished
        )
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        return [(s.job_id, s.comment) for s in local.parse_siblings(out)]

    assert siblings(False) == [(live, "L2 abc")]
    assert siblings(True) == [(done, "L1 abc"), (live, "L2 abc")]


# --- one loop: a job submitted before it -----------------------------------------------------


@pytest.mark.parametrize(
    "module", ["campaignops.backends.local.executor", "campaignops.runner.localexec"]
)
def test_a_job_submitted_before_one_loop_runs_from_its_old_start(
    root: Path, tmp_path: Path, module: str
) -> None:
    """An older submit wrote job.json without the box executor's keys and started ``python -m
    <module> run``: that start runs the job under the one supervisor, and status reads it."""
    job_id = "local-7-abcdef"
    job_dir = root / job_id
    job_dir.mkdir(parents=True)
    text = local.render(spec(tmp_path, "echo first > one", "exit 3", max_parallel=1))
    (job_dir / "script.sh").write_text(text)
    old = {"job_id": job_id, "name": "demo.t1.smoke", "comment": "", "timelimit": None}
    old |= {"submitted": "2026-11-27T00:00:00+00:00", "size": 2}
    (job_dir / "job.json").write_text(json.dumps(old))
    argv = [sys.executable, "-m", module, "run", "--state", str(root), job_id]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=WAIT_S, check=False)
    assert done.returncode == 0, done.stderr
    result = query(root, job_id)[job_id]
    assert (result.state, result.exit_code) == ("FAILED", 3)
    assert [result.tasks[i].state for i in (0, 1)] == ["COMPLETED", "FAILED"]
    assert (tmp_path / "one").read_text() == "first\n"
    assert isinstance(json.loads((job_dir / "state.json").read_text())["tasks"], dict)


def test_a_job_run_by_the_local_executor_before_one_loop_still_reads(root: Path) -> None:
    """The local executor's own state file (a list of tasks, executor_pid), left by a job that
    ended before the upgrade, reads as it did."""
    job_id = "local-8-abcdef"
    job_dir = root / job_id
    job_dir.mkdir(parents=True)
    old = {"job_id": job_id, "name": "demo.t1.smoke", "comment": "L1 c", "timelimit": None}
    old |= {"submitted": "2026-11-27T00:00:00+00:00", "size": 1}
    (job_dir / "job.json").write_text(json.dumps(old))
    task = {"index": 0, "state": "COMPLETED", "exit_code": 0, "pgid": 12345}
    task |= {"started": "2026-11-27T00:00:01+00:00", "ended": "2026-11-27T00:00:03+00:00"}
    state = {"job_id": job_id, "state": "COMPLETED", "reason": None, "executor_pid": 12340}
    state |= {"started": task["started"], "ended": task["ended"], "exit_code": 0}
    state |= {"elapsed_s": 2.0, "tasks": [task | {"elapsed_s": 2.0, "log": "logs/x.out"}]}
    (job_dir / "state.json").write_text(json.dumps(state))
    result = query(root, job_id)[job_id]
    assert (result.state, result.exit_code, result.elapsed_s) == ("COMPLETED", 0, 2.0)
    assert result.tasks[0].started == "2026-11-27T00:00:01+00:00"


def test_a_cancel_after_the_end_leaves_the_end_as_it_was(root: Path, tmp_path: Path) -> None:
    job_id = submit(root, spec(tmp_path, "true"))
    assert final(root, job_id).reason is None
    subprocess.run(local.cancel_argv([job_id], state_root=str(root)), check=True)
    result = query(root, job_id)[job_id]
    assert (result.state, result.reason) == ("COMPLETED", None)


def test_a_cancelled_job_says_so(root: Path, tmp_path: Path) -> None:
    job_id = submit(root, spec(tmp_path, "sleep 30"))
    wait_until("the task to start", lambda: state_of(root, job_id)["state"] == "RUNNING")
    subprocess.run(local.cancel_argv([job_id], state_root=str(root)), check=True)
    result = final(root, job_id)
    assert (result.state, result.reason) == ("CANCELLED", "cancelled")
