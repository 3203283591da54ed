"""How the box executor detaches and what it tolerates: tmux sessions (real tmux, a private
socket), stale sessions, the oldest Python it promises (3.8), and nvidia-smi's odd rows."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from campaignops.remote import artifact, executor, jobstate
from campaignops.remote.gpus import parse_gpus
from campaignops.remote.records import alive
from tests.remote.boxkit import BOXEXEC, RECORDINGS, Box

HOLD = 'while [ ! -e "go-$CAMPAIGN_TASK_INDEX" ]; do sleep 0.05; done'
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Box]:
    made = Box(tmp_path)
    yield made
    made.stop_everything()


def sessions(box: Box) -> list[str]:
    out = subprocess.run(
        ["tmux", "-L", box.env["BOXEXEC_TMUX_SOCKET"], "list-sessions", "-F", "#{session_name}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return sorted(out.stdout.split())


@needs_tmux
def test_start_runs_the_executor_in_a_tmux_session_named_for_the_job(box: Box) -> None:
    del box.env["BOXEXEC_DETACH"]
    # A tmux server already running (started by an earlier login) without the variable:
    socket = box.env["BOXEXEC_TMUX_SOCKET"]
    subprocess.run(["tmux", "-L", socket, "new-session", "-d", "-s", "login", "sleep 600"],
                   env=box.env, check=True)  # fmt: skip
    box.env["SEEN_BY_TASK"] = "from the ssh session"
    box.job("j", {0: f'echo "seen=$SEEN_BY_TASK"\n{HOLD}'})
    started = box.start("j")
    assert (started["started"], started["via"]) == (True, "tmux")
    assert (box.root / "j" / "executor.env").stat().st_mode & 0o777 == 0o600
    assert sessions(box) == ["campaignops-j", "login"]
    view = box.until("j", lambda v: v["executor_alive"], "executor up")
    assert box.state("j")["executor"]["pid"] == started["pid"]
    assert box.start("j")["started"] is False
    (box.deploy / "go-0").touch()
    assert box.finished("j")["state"] == "COMPLETED"
    assert view["tasks"]["0"]["state"] in ("PENDING", "RUNNING")
    assert "seen=from the ssh session" in box.log("j", 0)
    # The session ends with its executor.
    deadline = time.monotonic() + 30
    while sessions(box) != ["login"]:
        assert time.monotonic() < deadline, sessions(box)
        time.sleep(0.05)


@needs_tmux
def test_killing_the_session_kills_the_executor_not_its_tasks(box: Box) -> None:
    del box.env["BOXEXEC_DETACH"]
    box.job("j", {0: f"{HOLD}\necho done >> ran"})
    box.start("j")
    box.until("j", lambda v: v["tasks"]["0"]["state"] == "RUNNING", "running")
    socket = box.env["BOXEXEC_TMUX_SOCKET"]
    subprocess.run(["tmux", "-L", socket, "kill-session", "-t", "=campaignops-j"], check=True)
    box.until("j", lambda v: not v["executor_alive"], "executor gone")
    task = box.state("j")["tasks"]["0"]
    assert alive(task)
    (box.deploy / "go-0").touch()
    box.start("j")
    assert box.finished("j")["tasks"]["0"]["state"] == "COMPLETED"
    assert box.marks("ran") == ["done"]


@needs_tmux
def test_start_cleans_sessions_of_finished_gone_and_executorless_jobs(box: Box) -> None:
    socket = box.env["BOXEXEC_TMUX_SOCKET"]
    box.env["BOXEXEC_STARTING_S"] = "0"
    box.job("done", {0: "exit 0"})
    box.start("done")  # setsid: its run finishes; then a session is left under its name
    box.finished("done")
    box.job("idle", {0: "exit 0"})  # a session whose pane runs no executor
    for name, jobdir in (
        ("done", box.root / "done"),
        ("gone", box.root / "gone"),
        ("idle", box.root / "idle"),
        ("other", None),  # not ours to judge: no job directory recorded
    ):
        session = f"campaignops-{name}"
        subprocess.run(
            ["tmux", "-L", socket, "new-session", "-d", "-s", session, "sleep 600"], check=True
        )
        if jobdir is not None:
            subprocess.run(
                ["tmux", "-L", socket, "set-option", "-t", f"={session}:", "@campaignops_jobdir", str(jobdir)],
                check=True,
            )  # fmt: skip
    time.sleep(1.1)  # session_created has a one-second grain
    box.job("new", {0: "exit 0"})
    result = box.start("new")
    assert sorted(result["cleaned"]) == ["campaignops-done", "campaignops-gone", "campaignops-idle"]
    assert sessions(box) == ["campaignops-other"]
    assert box.finished("new")["state"] == "COMPLETED"


def python38() -> str | None:
    """A Python 3.8 that runs (a pyenv shim may exist and refuse)."""
    found = [
        shutil.which("python3.8"),
        *map(str, Path.home().glob(".pyenv/versions/3.8*/bin/python3.8")),
    ]
    for python in filter(None, found):
        probe = subprocess.run([python, "-c", "import sys; print(sys.version_info[:2])"],
                               capture_output=True, text=True, check=False)  # fmt: skip
        if probe.returncode == 0 and probe.stdout.strip() == "(3, 8)":
            return python
    return None


PYTHON38 = python38()


@pytest.mark.skipif(PYTHON38 is None, reason="no Python 3.8 here")
def test_the_executor_runs_under_python_3_8(box: Box) -> None:
    """The box may be old: the whole life of a job under the oldest Python promised."""
    box.job("j", {0: "echo ok", 1: "exit 97"}, gpus=[0, 1])
    python = PYTHON38
    assert python is not None
    box.call("start", str(box.root / "j"), python=python)
    view = box.finished("j")
    assert [t["state"] for t in view["tasks"].values()] == ["COMPLETED", "FAILED"]
    assert box.call("status", str(box.root), python=python)["jobs"]["j"] == view
    assert "ran" in json.dumps(box.call("run", str(box.root / "j"), python=python))


def test_the_executor_is_python_3_8_syntax_and_imports_only_the_standard_library() -> None:
    """Every module of the zip a box gets: its own package, else the standard library."""
    for name, data in artifact.members().items():
        tree = ast.parse(data.decode("utf-8"), filename=name, feature_version=(3, 8))
        imported = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in (
                node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")]
            )
        }
        ours = {i for i in imported if i.startswith("campaignops.remote.")}
        others = {i.split(".")[0] for i in imported - ours}
        assert others <= set(__import__("sys").stdlib_module_names) | {"__future__"}, name
        assert all(f"campaignops/remote/{i.split('.')[2]}.py" in artifact.members() for i in ours)


def test_the_zip_is_the_same_bytes_each_time_and_runs_from_any_directory(tmp_path: Path) -> None:
    assert artifact.build() == artifact.build()
    # -S: no site-packages, so no campaignops but the zip's own (as on a box).
    out = subprocess.run(
        [sys.executable, "-S", str(BOXEXEC), "status", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["jobs"] == {}


def test_nvidia_smi_rows_parse_with_odd_spacing_units_and_n_a() -> None:
    text = " 0 ,  103,16384\n1, [N/A], [N/A]\n2, 7358 MiB, 8192 MiB\n\nNo devices were found\n"
    assert parse_gpus(text) == [
        {"index": 0, "memory_used_mib": 103, "memory_total_mib": 16384},
        {"index": 1, "memory_used_mib": None, "memory_total_mib": None},
        {"index": 2, "memory_used_mib": 7358, "memory_total_mib": 8192},
    ]


def test_every_recording_replays_into_rows() -> None:
    for recording in sorted(RECORDINGS.glob("*.csv")):
        rows = [ln for ln in recording.read_text().splitlines() if ln and not ln.startswith("#")]
        parsed = parse_gpus("\n".join(rows))
        assert [r["index"] for r in parsed] == list(range(len(rows))), recording.name


def test_the_replay_refuses_any_other_query(box: Box) -> None:
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=index,memory.free", "--format=csv,noheader,nounits"],
        env=box.env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert out.returncode == 2
    assert "replays only" in out.stdout


def test_the_executors_copies_of_runner_constants_agree_with_the_runner() -> None:
    """boxexec may import nothing of ours, so it carries copies; they must not drift."""
    from campaignops.backends import script
    from campaignops.model import jobspec, states

    assert dict(script.REASONS) == executor.REASONS
    assert tuple(s for s in states.WORST_FIRST if s != "UNKNOWN") == jobstate.WORST_FIRST
    assert set(jobstate.FINISHED) <= states.FINISHED
    source = Path(executor.__file__).read_text(encoding="utf-8")
    assert f"{jobspec.TASK_INDEX}=key" in source  # the task env
