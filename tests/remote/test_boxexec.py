"""The box executor run as on a box: ``python3 boxexec.py start|status|cancel …`` subprocesses on
job directories under a temp dir, real bash tasks, ``nvidia-smi`` a replay of recorded output."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from campaignops.remote import commands
from campaignops.remote.executor import Executor
from campaignops.remote.records import alive
from campaignops.remote.supervision import killpg
from tests.remote.boxkit import BOXEXEC, Box

# A task that appends its index to deploy/<file> once per run, so a re-run shows.
RAN = 'echo "$CAMPAIGN_TASK_INDEX" >> ran'
# Holds until deploy/go-<index> exists (no sleep the test would have to guess).
HOLD = 'while [ ! -e "go-$CAMPAIGN_TASK_INDEX" ]; do sleep 0.05; done'

# Claims its GPU with mkdir while it runs: a second task on a claimed GPU says CLASH.
CLAIM = (
    'mkdir "gpu-$CUDA_VISIBLE_DEVICES" 2>/dev/null || echo CLASH >> clashes\n'
    'echo "gpu=$CUDA_VISIBLE_DEVICES"\n'
    f"{HOLD}\n"
    'rmdir "gpu-$CUDA_VISIBLE_DEVICES"'
)


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Box]:
    made = Box(tmp_path)
    yield made
    made.stop_everything()


def test_one_task_per_gpu_each_sees_its_gpu(box: Box) -> None:
    box.job("j", dict.fromkeys(range(6), CLAIM), gpus=[0, 1, 2, 3])
    assert box.start("j")["started"] is True
    # The launches are saved one by one; the waiting tasks' reason comes with the tick's end.
    view = box.until("j", lambda v: v["tasks"]["5"]["reason"] is not None, "5 waiting")
    running = {i: t["gpu"] for i, t in view["tasks"].items() if t["state"] == "RUNNING"}
    assert running == {"0": 0, "1": 1, "2": 2, "3": 3}
    assert [view["tasks"][i]["state"] for i in ("4", "5")] == ["PENDING", "PENDING"]
    assert view["tasks"]["4"]["reason"] == (
        "no GPU below 500 MiB (0: held by a task; 1: held by a task; 2: held by a task; "
        "3: held by a task)"
    )
    for i in range(6):
        (box.deploy / f"go-{i}").touch()
    view = box.finished("j")
    assert view["state"] == "COMPLETED"
    assert box.marks("clashes") == []
    for i, task in view["tasks"].items():
        assert f"gpu={task['gpu']}" in box.log("j", int(i))
    # nvidia-smi was asked again before each of the six launches.
    assert len(box.marks("../nvsmi-calls")) >= 6


def test_two_jobs_on_one_box_never_share_a_gpu(box: Box) -> None:
    # The memory a new task takes shows late (here: never): only the bookkeeping of every
    # job on the box keeps the second job off the first one's GPUs.
    for job_id in ("a", "b"):
        box.job(job_id, dict.fromkeys(range(2), CLAIM), gpus=[0, 1])
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(box.start, ["a", "b"]))
    views = {}
    for job_id in ("a", "b"):
        box.until(
            job_id,
            lambda v: all(t["state"] != "PENDING" or t["reason"] for t in v["tasks"].values()),
            "settled",
        )
        views[job_id] = box.job_view(job_id)
    running = [
        t["gpu"] for v in views.values() for t in v["tasks"].values() if t["state"] == "RUNNING"
    ]
    assert sorted(running) == [0, 1]
    for i in range(2):
        (box.deploy / f"go-{i}").touch()
    assert [box.finished(j)["state"] for j in ("a", "b")] == ["COMPLETED", "COMPLETED"]
    assert box.marks("clashes") == []


def test_a_gpu_with_memory_used_at_or_over_the_threshold_is_not_used(box: Box) -> None:
    box.set_gpus(used={"1": 500, "2": 7358})  # 500 is not below 500
    box.job("j", dict.fromkeys(range(4), 'echo "gpu=$CUDA_VISIBLE_DEVICES"'), gpus=[0, 1, 2, 3])
    box.start("j")
    view = box.finished("j")
    assert view["state"] == "COMPLETED"
    assert {t["gpu"] for t in view["tasks"].values()} == {0, 3}


@pytest.fixture
def make_box(tmp_path: Path) -> Iterator[Callable[[str | None], Box]]:
    made: list[Box] = []

    def make(recording: str | None) -> Box:
        made.append(Box(tmp_path, recording))
        return made[-1]

    yield make
    for box in made:
        box.stop_everything()


def test_a_busy_gpu_makes_tasks_wait_with_the_reason_until_it_frees(
    make_box: Callable[[str | None], Box],
) -> None:
    box = make_box("rtx3050-busy.csv")
    box.job("j", {0: RAN}, gpus=[0])
    box.start("j")
    view = box.until("j", lambda v: v["tasks"]["0"]["reason"] is not None, "waiting")
    assert view["tasks"]["0"] == {
        "state": "PENDING", "exit_code": None, "start": None, "end": None, "attempts": 0,
        "gpu": None, "reason": "no GPU below 500 MiB (0: 7358 MiB used)",
    }  # fmt: skip
    assert view["executor_alive"] is True
    box.set_gpus(used={"0": 3})
    assert box.finished("j")["tasks"]["0"]["state"] == "COMPLETED"
    assert box.marks("ran") == ["0"]


DRIVER_LOST = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."


@pytest.mark.parametrize(
    ("recording", "gpu_state", "reason"),
    [
        (None, {}, "nvidia-smi is not on PATH"),
        (
            "v100-idle.csv",
            {"fail": {"code": 9, "message": DRIVER_LOST}},
            f"nvidia-smi exited 9: {DRIVER_LOST}",
        ),
        ("gb10-na.csv", {}, "no GPU below 500 MiB (0: memory.used is [N/A])"),
        ("v100-idle.csv", {}, "no GPU below 500 MiB (3: not in nvidia-smi's list)"),
    ],
    ids=["missing", "driver-lost", "not-reported", "absent-gpu"],
)
def test_no_usable_gpu_answer_leaves_tasks_waiting_never_crashes(
    make_box: Callable[[str | None], Box],
    recording: str | None,
    gpu_state: dict[str, object],
    reason: str,
) -> None:
    box = make_box(recording)
    box.set_gpus(**gpu_state)
    gpus = [3] if reason.endswith("list)") else [0]
    box.job("j", {0: RAN}, gpus=gpus)
    box.start("j")
    view = box.until("j", lambda v: v["tasks"]["0"]["reason"] is not None, "waiting")
    assert (view["state"], view["tasks"]["0"]["reason"], view["executor_alive"]) == (
        "PENDING", reason, True,
    )  # fmt: skip
    assert box.call("cancel", str(box.root / "j"))["by"] == "executor"
    view = box.finished("j")
    assert (view["state"], view["tasks"]["0"]["reason"]) == ("CANCELLED", "cancelled")
    assert box.marks("ran") == []


OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
RETRY = {"max_attempts": 3, "delay_s": 0.2, "patterns": [r"CUDA out of memory"]}


def test_an_oom_in_the_log_is_retried_on_a_free_gpu_until_it_completes(box: Box) -> None:
    # Fails with the OOM line on its first two runs, succeeds on the third.
    body = f'{RAN}\n[ "$(wc -l < ran)" -ge 3 ] || {{ echo "{OOM}" >&2; exit 1; }}'
    box.job("j", {0: body}, gpus=[0, 1], oom_retry=RETRY)
    box.start("j")
    view = box.finished("j")
    assert view["tasks"]["0"]["state"] == "COMPLETED"
    assert view["tasks"]["0"]["attempts"] == 3
    assert box.marks("ran") == ["0", "0", "0"]


def test_oom_retries_run_out_then_out_of_memory_and_other_failures_are_not_retried(
    box: Box,
) -> None:
    tasks = {0: f'{RAN}\necho "{OOM}" >&2\nexit 1', 1: f"{RAN}\nexit 3"}
    box.job("j", tasks, gpus=[0, 1], oom_retry=dict(RETRY, max_attempts=2))
    box.start("j")
    view = box.finished("j")
    oom, other = view["tasks"]["0"], view["tasks"]["1"]
    assert (oom["state"], oom["attempts"], oom["exit_code"], oom["reason"]) == (
        "OUT_OF_MEMORY", 2, 1, "oom: 2 attempts",
    )  # fmt: skip
    assert (other["state"], other["attempts"], other["exit_code"]) == ("FAILED", 1, 3)
    assert sorted(box.marks("ran")) == ["0", "0", "1"]
    assert view["state"] == "OUT_OF_MEMORY"


def test_an_oom_line_from_an_earlier_attempt_does_not_count_again(box: Box) -> None:
    # Attempt 1 dies of OOM; attempt 2 fails otherwise: FAILED, not retried a third time.
    body = f'{RAN}\nif [ "$(wc -l < ran)" = 1 ]; then echo "{OOM}"; fi\nexit 1'
    box.job("j", {0: body}, gpus=[0], oom_retry=RETRY)
    box.start("j")
    task = box.finished("j")["tasks"]["0"]
    assert (task["state"], task["attempts"]) == ("FAILED", 2)


def test_the_scripts_own_exit_codes_name_the_reason(box: Box) -> None:
    box.job("j", {0: "exit 96", 1: "exit 97", 2: "exit 0"})
    box.start("j")
    tasks = box.finished("j")["tasks"]
    got = {i: (t["state"], t["exit_code"], t["reason"]) for i, t in tasks.items()}
    assert got == {
        "0": ("FAILED", 96, "precondition"),
        "1": ("FAILED", 97, "output-missing"),
        "2": ("COMPLETED", 0, None),
    }


def test_time_limit_warns_then_terms_then_the_task_ends_timeout(box: Box) -> None:
    # The warning reaches the batch shell (here the task itself: its trap marks a file).
    body = "trap 'echo warned >> signals' USR1\ntrap 'echo term >> signals; exit 143' TERM\n"
    body += "while :; do sleep 0.05; done"
    box.job("j", {0: body}, time_limit_s=2, warning={"signal": "USR1", "seconds": 1})
    box.start("j")
    task = box.finished("j")["tasks"]["0"]
    assert (task["state"], task["exit_code"]) == ("TIMEOUT", 143)
    assert box.marks("signals") == ["warned", "term"]


def test_a_task_deaf_to_term_is_killed_after_the_kill_wait(box: Box) -> None:
    box.job("j", {0: "trap '' TERM\nwhile :; do sleep 0.05; done"}, time_limit_s=1, kill_wait_s=1)
    box.start("j")
    task = box.finished("j")["tasks"]["0"]
    assert (task["state"], task["exit_code"]) == ("TIMEOUT", 128 + signal.SIGKILL)


def test_cancel_one_task_leaves_the_others_running(box: Box) -> None:
    box.job("j", dict.fromkeys(range(3), f"{HOLD}\n{RAN}"), max_parallel=3)
    box.start("j")
    box.until("j", lambda v: all(t["state"] == "RUNNING" for t in v["tasks"].values()), "running")
    assert box.call("cancel", str(box.root / "j"), "--tasks", "1") == {
        "by": "executor", "requested": ["1"],
    }  # fmt: skip
    box.until("j", lambda v: v["tasks"]["1"]["state"] == "CANCELLED", "cancelled")
    for i in (0, 1, 2):
        (box.deploy / f"go-{i}").touch()
    view = box.finished("j")
    assert [view["tasks"][i]["state"] for i in "012"] == ["COMPLETED", "CANCELLED", "COMPLETED"]
    assert view["state"] == "CANCELLED"  # worst first
    assert sorted(box.marks("ran")) == ["0", "2"]


def test_a_cancelled_pending_task_never_starts(box: Box) -> None:
    box.job("j", {0: f"{HOLD}\n{RAN}", 1: RAN}, max_parallel=1)
    box.start("j")
    box.until("j", lambda v: v["tasks"]["0"]["state"] == "RUNNING", "running")
    box.call("cancel", str(box.root / "j"), "--tasks", "1")
    box.until("j", lambda v: v["tasks"]["1"]["state"] == "CANCELLED", "cancelled")
    (box.deploy / "go-0").touch()
    view = box.finished("j")
    assert (view["tasks"]["1"]["attempts"], box.marks("ran")) == (0, ["0"])


def test_cancel_with_no_executor_records_a_task_that_died_after_the_look(
    box: Box, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task that dies between the cancel's look at it and the check "is any still alive?"
    still gets its end: the cancel used to return with the job RUNNING (a flake under load)."""
    box.job("j", {0: f"{HOLD}\n{RAN}"})
    box.start("j")
    box.until("j", lambda v: v["tasks"]["0"]["state"] == "RUNNING", "running")
    os.kill(box.state("j")["executor"]["pid"], signal.SIGKILL)
    box.until("j", lambda v: not v["executor_alive"], "executor dead")
    save = Executor.save

    def save_then_die(self: Executor) -> None:
        save(self)
        for task in self.tasks.values():  # the stopped task ends right after the look
            if task["stop"] and alive(task):
                killpg(task["pid"], signal.SIGKILL)
                deadline = time.monotonic() + 30
                while alive(task):
                    assert time.monotonic() < deadline, "the task outlived its KILL"
                    time.sleep(0.01)

    monkeypatch.setattr(Executor, "save", save_then_die)
    result = commands.cmd_cancel(box.root / "j", None)
    assert (result["by"], result["state"]) == ("cancel", "CANCELLED")
    assert box.state("j")["tasks"]["0"]["state"] == "CANCELLED"


def test_cancel_with_no_executor_stops_the_tasks_itself(box: Box) -> None:
    box.job("j", dict.fromkeys(range(2), f"{HOLD}\n{RAN}"))
    box.start("j")
    box.until("j", lambda v: all(t["state"] == "RUNNING" for t in v["tasks"].values()), "running")
    os.kill(box.state("j")["executor"]["pid"], signal.SIGKILL)
    box.until("j", lambda v: not v["executor_alive"], "executor dead")
    result = box.call("cancel", str(box.root / "j"))
    assert (result["by"], result["state"]) == ("cancel", "CANCELLED")
    view = box.job_view("j")
    assert [t["state"] for t in view["tasks"].values()] == ["CANCELLED", "CANCELLED"]
    assert box.marks("ran") == []


def test_a_killed_executor_resumes_without_rerunning_finished_tasks(box: Box) -> None:
    # 0 ends before the kill; 1 ends while no executor runs (its receipt tells); 2 is still
    # running at the restart (adopted, not started again).
    box.job("j", {0: RAN, 1: f"{HOLD}\n{RAN}", 2: f"{HOLD}\n{RAN}"}, max_parallel=3)
    first = box.start("j")
    box.until("j", lambda v: v["tasks"]["0"]["state"] == "COMPLETED", "0 done")
    os.kill(first["pid"], signal.SIGKILL)
    box.until("j", lambda v: not v["executor_alive"], "executor dead")
    (box.deploy / "go-1").touch()
    # Task 1 writes its mark, then its receipt, with no executor watching.
    deadline = time.monotonic() + 30
    while not (box.root / "j" / "receipts" / "1.1.json").exists():
        assert time.monotonic() < deadline, "task 1 never wrote its receipt"
        time.sleep(0.05)
    again = box.start("j")
    assert again["started"] is True and again["pid"] != first["pid"]
    view = box.until("j", lambda v: v["tasks"]["1"]["state"] == "COMPLETED", "1 judged")
    assert view["tasks"]["2"]["state"] == "RUNNING"
    (box.deploy / "go-2").touch()
    view = box.finished("j")
    assert view["state"] == "COMPLETED"
    assert [t["attempts"] for t in view["tasks"].values()] == [1, 1, 1]
    assert sorted(box.marks("ran")) == ["0", "1", "2"]


def test_a_task_lost_without_receipt_is_started_again_as_a_new_attempt(box: Box) -> None:
    box.job("j", {0: f"{RAN}\n{HOLD}"})
    first = box.start("j")
    box.until("j", lambda v: v["tasks"]["0"]["state"] == "RUNNING", "running")
    box.until("j", lambda v: box.marks("ran") == ["0"], "ran once")
    os.kill(first["pid"], signal.SIGKILL)
    os.killpg(box.state("j")["tasks"]["0"]["pid"], signal.SIGKILL)  # wrapper and task: no receipt
    box.until("j", lambda v: not v["executor_alive"], "executor dead")
    (box.deploy / "go-0").touch()
    box.start("j")
    task = box.finished("j")["tasks"]["0"]
    assert (task["state"], task["attempts"]) == ("COMPLETED", 2)
    assert box.marks("ran") == ["0", "0"]


def test_afterok_waits_for_its_parent_and_never_runs_after_a_failed_one(box: Box) -> None:
    box.job("parent", {0: f"{HOLD}\ntouch parent-done"})
    box.job("child", {0: "[ -e parent-done ] && echo ok >> child-saw"}, after=["parent"])
    box.job("bad", {0: "exit 1"})
    box.job("orphan", {0: RAN, 1: RAN}, after=["bad", "parent"])
    for job_id in ("parent", "child", "bad", "orphan"):
        box.start(job_id)
    orphan = box.finished("orphan")
    assert orphan["state"] == "CANCELLED"
    assert {t["reason"] for t in orphan["tasks"].values()} == {"DependencyNeverSatisfied"}
    child = box.until("child", lambda v: v["tasks"]["0"]["reason"] is not None, "waiting")
    assert (child["state"], child["tasks"]["0"]["reason"]) == ("PENDING", "Dependency")
    (box.deploy / "go-0").touch()
    assert box.finished("child")["state"] == "COMPLETED"
    assert box.marks("child-saw") == ["ok"]
    assert box.marks("ran") == []


def test_start_is_idempotent(box: Box) -> None:
    box.job("j", {0: HOLD})
    first, second = box.start("j"), box.start("j")
    assert first["started"] is True and first["via"] == "setsid"
    assert second == {"started": False, "pid": first["pid"], "via": None, "cleaned": []}
    (box.deploy / "go-0").touch()
    assert box.finished("j")["state"] == "COMPLETED"


def test_racing_starts_leave_one_executor(box: Box) -> None:
    box.job("j", {0: f"{HOLD}\n{RAN}"})
    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(box.start, ["j"] * 3))
    # Each start answers with the executor that holds the lock: the same one.
    assert {a["pid"] for a in answers} == {box.state("j")["executor"]["pid"]}
    (box.deploy / "go-0").touch()
    box.finished("j")
    assert box.marks("ran") == ["0"]


def test_status_answers_every_job_in_one_document(box: Box) -> None:
    box.job("a", {0: "exit 0", 1: "exit 97"}, gpus=[2])
    box.job("b", {5: "exit 0"})
    (box.root / ".c.tmp").mkdir()  # a job directory the backend is still writing
    box.start("a")
    box.finished("a")
    status = box.status()
    assert set(status) == {"now", "jobs", "gpus"}
    assert status["gpus"] == [
        {"index": i, "memory_used_mib": 103, "memory_total_mib": 16384} for i in range(4)
    ]
    a = status["jobs"]["a"]
    for task in a["tasks"].values():
        assert task.pop("start") and task.pop("end")
    assert a == {
        "state": "FAILED",
        "executor_alive": False,
        "awaits": [],
        "tasks": {
            "0": {"state": "COMPLETED", "exit_code": 0, "attempts": 1, "gpu": 2, "reason": None},
            "1": {
                "state": "FAILED",
                "exit_code": 97,
                "attempts": 1,
                "gpu": 2,
                "reason": "output-missing",
            },
        },
    }
    pending = {"state": "PENDING", "exit_code": None, "start": None, "end": None, "attempts": 0,
               "gpu": None, "reason": None}  # fmt: skip
    assert status["jobs"]["b"] == {
        "state": "PENDING",
        "executor_alive": False,
        "awaits": [],
        "tasks": {"5": pending},
    }


def test_conda_activates_the_environment_before_the_script(box: Box) -> None:
    hook = box.tmp / "conda-hook.sh"
    hook.write_text('conda() { [ "$1" = activate ] && export CONDA_DEFAULT_ENV="$2"; }\n')
    box.job("j", {0: 'echo "env=$CONDA_DEFAULT_ENV"'}, conda={"hook": str(hook), "env": "trainer"})
    box.start("j")
    assert box.finished("j")["state"] == "COMPLETED"
    assert "env=trainer" in box.log("j", 0)


FAKE_CONDA = 'conda() { [ "$1" = activate ] && export CONDA_DEFAULT_ENV="$2"; }\n'


@pytest.mark.parametrize("form", ["root", "conda.sh", "program", "eval", "detected"])
def test_conda_hook_in_each_of_the_seeds_forms(box: Box, form: str) -> None:
    # The experiment-queue's conda_hook: a conda root, a conda.sh path, the conda program (a
    # bare path, wrapped in its shell hook) or an `eval "$(... hook)"` string; none: the
    # usual install roots.
    root = box.tmp / "home" / "miniconda3"
    (root / "etc/profile.d").mkdir(parents=True)
    (root / "etc/profile.d/conda.sh").write_text(FAKE_CONDA)
    program = root / "bin" / "conda"
    program.parent.mkdir()
    program.write_text(f"#!/bin/sh\ncat {root}/etc/profile.d/conda.sh\n")
    program.chmod(0o755)
    hook = {
        "root": str(root),
        "conda.sh": str(root / "etc/profile.d/conda.sh"),
        "program": str(program),
        "eval": f'eval "$({program} shell.bash hook)"',
        "detected": None,
    }[form]
    box.job("j", {0: 'echo "env=$CONDA_DEFAULT_ENV"'}, conda={"hook": hook, "env": "trainer"})
    box.env["HOME"] = str(box.tmp / "home")  # no conda on this PATH: detected under HOME
    box.start("j")
    assert box.finished("j")["state"] == "COMPLETED"
    assert "env=trainer" in box.log("j", 0)


def test_outputs_lists_each_finished_tasks_files_with_size_and_sha256(box: Box) -> None:
    box.job(
        "j", {0: "mkdir -p out/0 && printf abc > out/0/m.json", 1: HOLD},
        outputs={"0": ["out/0/m.json", "out/0"], "1": ["out/1"]},
    )  # fmt: skip
    box.start("j")
    box.until("j", lambda v: v["tasks"]["0"]["state"] == "COMPLETED", "0 done")
    sha = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # sha256("abc")
    entry = {"path": "out/0/m.json", "size": 3, "sha256": sha}
    assert box.call("outputs", str(box.root / "j")) == {"0": [entry, entry]}
    (box.deploy / "go-1").touch()
    box.finished("j")
    missing = {"path": "out/1", "size": None, "sha256": None}
    assert box.call("outputs", str(box.root / "j"))["1"] == [missing]


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"gpus": "0,1"}, "gpus is '0,1'"),
        ({"warning": {"signal": "NOPE", "seconds": 5}}, "warning is {'signal': 'NOPE'"),
        (
            {"oom_retry": {"max_attempts": 2, "delay_s": 1, "patterns": ["("]}},
            "oom_retry pattern '('",
        ),
        ({"indices": None}, "indices is None"),
    ],
)
def test_start_refuses_a_job_file_it_cannot_follow(
    box: Box, fields: dict[str, object], said: str
) -> None:
    box.job("j", {0: RAN}, **fields)
    out = subprocess.run(
        [sys.executable, str(BOXEXEC), "start", str(box.root / "j")],
        env=box.env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    answer = json.loads(out.stdout)
    assert (out.returncode, set(answer)) == (2, {"error", "hint"})
    assert said in answer["error"]
    assert not (box.root / "j" / "state.json").exists()


@pytest.mark.parametrize(
    ("state", "said"),
    [
        ({"state": "RUNNING", "tasks": {"0": "x"}}, "task '0' is 'x'"),
        ({"state": "RUNNING", "tasks": {"0": {"state": "RUNNING", "exit_code": [1]}}}, "exit_code"),
        ({"tasks": {}}, "state is None"),
        ({"state": "RUNNING", "tasks": {"²": {"state": "RUNNING"}}}, "task '²'"),
    ],
)
def test_a_state_file_it_did_not_write_is_refused_and_answered_unknown(
    box: Box, state: dict[str, object], said: str
) -> None:
    """A damaged or planted state.json: start refuses it (never overwrites it), status answers
    that job UNKNOWN with why and stays a valid answer (issue 16, item 6)."""
    jobdir = box.job("j", {0: RAN})
    (jobdir / "state.json").write_text(json.dumps(state))
    out = subprocess.run(
        [sys.executable, str(BOXEXEC), "start", str(jobdir)],
        env=box.env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    answer = json.loads(out.stdout)
    assert (out.returncode, set(answer)) == (2, {"error", "hint"}), out
    assert "state.json is damaged" in answer["error"] and said in answer["error"]
    assert json.loads((jobdir / "state.json").read_text()) == state
    view = box.status("j")["jobs"]["j"]
    assert (view["state"], view["tasks"]) == ("UNKNOWN", {}) and said in view["error"]
