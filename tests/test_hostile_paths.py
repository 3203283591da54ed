"""Hostile paths, ledger values, scheduler output and faults, through the CLI in a campaign from
`campaign new`: exit 0/1/2 with a message naming what is wrong, never a traceback, nothing lost.

In-process cases (``run``) fail on any uncaught exception; the subprocess cases also see what only
a real process shows (a traceback on stderr, an exit code, several processes at once).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from campaignops.backends.pbs import accounting as qstat
from campaignops.backends.slurm import accounting as sacct
from campaignops.core import layout
from campaignops.model import ledger
from tests.conftest import git

LONG = "a" * 300  # one path component over the 255 bytes every Linux filesystem takes
LIMIT = "limited to 255 bytes"


def campaign_cli(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "campaignops", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )


def commit_all(root: Path, message: str = "hostile edit") -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{rel} has no {old!r}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def finished_smoke(root: Path, run) -> list[str]:  # type: ignore[no-untyped-def]
    """Submit the example smoke on the local backend and refresh until it has finished; the
    ledger's lines afterwards."""
    assert run("submit", "manifests/example.yaml", "--stage", "smoke").code == 0
    for _ in range(600):
        done = run("status", "--refresh")
        assert done.code == 0, done.err
        (job,) = ledger.read(root).jobs
        if job.state == "COMPLETED":
            break
        subprocess.run(["sleep", "0.1"], check=True)
    else:
        pytest.fail("the example smoke did not finish")
    return (root / layout.LEDGER_FILE).read_text(encoding="utf-8").splitlines()


# --- paths too long to open ----------------------------------------------------------------------


def test_long_queue_path_is_exit_2_naming_it_and_the_limit(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    edit(demo, "manifests/example-queue.yaml", "queue: queues/example.txt", f"queue: q/{LONG}")
    commit_all(demo)
    checked = run("check")
    assert checked.code == 2
    assert f"q/{LONG}" in checked.err and LIMIT in checked.err
    dry = run("submit", "manifests/example-queue.yaml", "--stage", "smoke", "--dry-run")
    assert dry.code == 2
    assert f"q/{LONG}" in dry.err and LIMIT in dry.err


def test_long_path_argument_is_exit_2(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    for args in (("check", LONG), ("check", f"manifests/{LONG}.yaml")):
        r = run(*args)
        assert r.code == 2, r.err
        assert LIMIT in r.err and "aaaaaaaa…" in r.err
    r = run("submit", f"manifests/{LONG}.yaml", "--stage", "smoke", "--dry-run")
    assert r.code == 2
    assert f"is 305 bytes; a file name is {LIMIT}" in r.err


def test_long_diagnose_log_or_catalog_is_exit_2(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    (demo / "x.log").write_text("Killed\n", encoding="utf-8")
    for args in (("--log", LONG), ("--log", "x.log", "--catalog", f"c/{LONG}.yaml")):
        r = run("diagnose", *args)
        assert r.code == 2, r.err
        assert LIMIT in r.err


def test_long_lock_entry_is_exit_2(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    entry = f"scripts/{LONG}.v1.sh sha256:{'0' * 64} 2026-11-01\n"
    (demo / layout.LOCK_FILE).write_text(entry, encoding="utf-8")
    commit_all(demo)
    r = run("check")
    assert r.code == 2
    assert f"scripts/{LONG}.v1.sh" in r.err and LIMIT in r.err


def test_long_wrapper_in_a_command_is_exit_2(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    edit(
        demo,
        "manifests/example-queue.yaml",
        "default_cmd: bash scripts/run_one.v1.sh",
        f"default_cmd: bash scripts/{LONG}.v1.sh",
    )
    commit_all(demo)
    r = run("submit", "manifests/example-queue.yaml", "--stage", "smoke", "--dry-run")
    assert r.code == 2
    assert f"scripts/{'a' * 32}…1.sh" in r.err and LIMIT in r.err


def test_backend_name_is_checked_before_any_page_is_read(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    for name in ("../README", LONG, "local/../../x"):
        r = run("submit", "manifests/example.yaml", "--stage", "smoke", "--backend", name)
        assert r.code == 2, r.err
        assert "is not a backend name" in r.err
        assert "authorized" not in r.err  # refused as a name, before the gate
    assert not (demo / ".campaign/jobs").exists()


@pytest.mark.parametrize("name", [LONG, "../README"])
def test_backend_name_from_the_ledger_is_exit_2_in_refresh(demo: Path, run, name: str) -> None:  # type: ignore[no-untyped-def]
    assert run("submit", "manifests/example.yaml", "--stage", "smoke").code == 0
    path = demo / layout.LEDGER_FILE
    hostile = path.read_text(encoding="utf-8").replace('"backend": "local"', f'"backend": "{name}"')
    path.write_text(hostile, encoding="utf-8")
    r = run("status", "--refresh")
    assert r.code == 2
    assert "is not a backend name" in r.err and "a ledger record" in r.err
    assert path.read_text(encoding="utf-8") == hostile


def test_new_under_an_existing_file_is_exit_2(tmp_path: Path, run, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("not a directory\n")
    r = run("new", "afile/x", "--defaults")
    assert r.code == 2
    assert f"{tmp_path / 'afile'} is a file, not a directory" in r.err
    r = run("new", f"{LONG}/demo", "--defaults")
    assert r.code == 2 and LIMIT in r.err


# --- ledger values -------------------------------------------------------------------------------


def test_infinite_run_time_in_the_ledger_reads_as_absent(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    lines = finished_smoke(demo, run)
    state = json.loads(lines[-1])
    assert state["kind"] == "state" and state["run_time_s"] > 0
    text = "\n".join(lines) + "\n"
    text = text.replace(f'"run_time_s": {state["run_time_s"]}', '"run_time_s": 1e999', 1)
    text += json.dumps({"v": 1, "kind": "state", "ledger_id": state["ledger_id"]})[:-1]
    text += ', "queue_wait_s": NaN, "exit_code": 0}\n'
    (demo / layout.LEDGER_FILE).write_text(text, encoding="utf-8")
    (job,) = ledger.read(demo).jobs
    assert job.number("run_time_s") is None and job.number("queue_wait_s") is None
    shown = run("status")
    assert shown.code == 0, shown.err
    assert "COMPLETED" in shown.out
    assert run("render").code == 0
    assert run("check").code == 0


def test_lone_surrogate_in_the_ledger_is_rendered_escaped(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    lines = finished_smoke(demo, run)
    # JSON may hold "\ud800"; UTF-8 cannot. The job id of a finished job is shown in STATUS.md.
    ledger_path = demo / layout.LEDGER_FILE
    ledger_path.write_text(
        "\n".join(line.replace('"job_id": "local-', '"job_id": "\\ud800local-') for line in lines)
        + "\n",
        encoding="utf-8",
    )
    refreshed = run("status", "--refresh")
    assert refreshed.code == 0, refreshed.err
    assert "\\ud800local-" in (demo / "STATUS.md").read_text(encoding="utf-8")
    assert "\\ud800local-" in refreshed.out
    assert run("check").code == 0  # STATUS.md is in sync with what render writes


def test_unpassable_job_id_is_exit_2_not_a_traceback(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    assert run("submit", "manifests/example.yaml", "--stage", "smoke").code == 0
    ledger_path = demo / layout.LEDGER_FILE
    text = ledger_path.read_text(encoding="utf-8")
    before = text.replace('"job_id": "local-', '"job_id": "\\ud800local-')
    ledger_path.write_text(before, encoding="utf-8")
    r = run("status", "--refresh")
    assert r.code == 2
    assert "cannot pass" in r.err and "unpaired surrogate" in r.err
    assert ledger_path.read_text(encoding="utf-8") == before


# --- backend pages and scheduler output ----------------------------------------------------------


def test_backend_page_not_utf8_is_exit_2_in_submit(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    page = demo / "backends/local.md"
    page.write_bytes(page.read_bytes() + b"\nbad \xff\xfe\n")
    commit_all(demo)
    for args in (("--dry-run",), ()):
        r = run("submit", "manifests/example.yaml", "--stage", "smoke", *args)
        assert r.code == 2
        assert "backends/local.md: invalid UTF-8 at line" in r.err
    assert ledger.read(demo).jobs == ()


# A contract replay: sacct and squeue as Slurm's answer to the runner's queries, with bytes that
# are not UTF-8 and an epoch past year 9999 (no real Slurm prints them on demand).
SACCT = (
    "#!/bin/bash\n"
    "printf '4242|life.x.smoke|COMPLETED|0:0|99999999999999|1700000000|1700000009|"
    "00:00:09||1G|00:05:00|1|00:00:01||L20261124T060000Z-000000000001 c\\xff\\xfe\\n'\n"
)
SQUEUE = "#!/bin/bash\nexit 0\n"  # slurmctld no longer holds the job: sacct alone answers


@pytest.fixture
def slurm_campaign(tmp_path: Path, new_campaign, monkeypatch) -> Iterator[Path]:  # type: ignore[no-untyped-def]
    root = new_campaign(
        "life", "backends=generic-slurm,local", "smoke_backend=local", "require_pushed=no"
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("sacct", SACCT), ("squeue", SQUEUE)):
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(root)
    yield root


def test_scheduler_output_not_utf8_with_an_impossible_epoch(slurm_campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    records = [
        {"v": 1, "kind": "intent", "ledger_id": "L20261124T060000Z-000000000001", "time": "2026-11-24T06:00:00Z",
         "backend": "generic-slurm", "stage": "smoke", "targets": ["x"], "name": "life.x.smoke"},
        {"v": 1, "kind": "result", "ledger_id": "L20261124T060000Z-000000000001", "time": "2026-11-24T06:00:01Z",
         "job_id": "4242", "state": "PENDING"},
    ]  # fmt: skip
    (slurm_campaign / layout.LEDGER_FILE).write_text(
        "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8"
    )
    r = run("status", "--refresh")
    assert r.code == 0, r.err
    (job,) = ledger.read(slurm_campaign).jobs
    assert job.state == "COMPLETED"
    assert job.text("submitted") is None  # past year 9999: unknown
    assert str(job.text("started")).startswith("2023-11-1")  # 1700000000, in this machine's zone
    assert job.run_time() == 9.0


@pytest.mark.parametrize("epoch", ["99999999999999", "9" * 40, "²³", "-5"])
def test_sacct_time_out_of_range_is_unknown(epoch: str) -> None:
    row = f"7|n|COMPLETED|0:0|{epoch}|{epoch}|1700000009|00:00:09||1G|00:05:00|1|00:00:01||c\n"
    (state,) = sacct.parse_states([row, ""], zone=dt.timezone.utc).values()
    assert state.state == "COMPLETED"
    assert (state.submitted, state.started) == (None, None)
    assert state.ended == "2023-11-14T22:13:29+00:00"


@pytest.mark.parametrize(
    "when", ["Tue Feb 31 10:00:00 2026", "Tue Oct  4 25:61:61 2022", "Sun Jan  1 00:00:00 0000"]
)
def test_qstat_impossible_date_is_unknown(when: str) -> None:
    job = {"job_state": "F", "Exit_status": 0, "ctime": when, "stime": when, "obittime": when}
    state = qstat.job_state("7.server", job, dt.timezone.utc)
    assert (state.submitted, state.started, state.ended) == (None, None, None)


# --- git, disks and immutable files --------------------------------------------------------------


def test_base_past_the_reflog_is_exit_2(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    for base in ("main@{1000}", "HEAD@{yesterday}"):
        r = run("check", "--base", base)
        assert r.code == 2, r.err
        assert f"--base {base}: cannot resolve base" in r.err


def _orphans(root: Path) -> list[Path]:
    jobs = root / ".campaign/jobs"
    return sorted(jobs.glob("*.sh")) if jobs.exists() else []


@pytest.fixture
def immutable_ledger(demo: Path) -> Iterator[Path]:
    path = demo / layout.LEDGER_FILE
    chattr = shutil.which("chattr")
    made = (
        chattr is not None
        and subprocess.run([chattr, "+i", str(path)], check=False).returncode == 0
    )
    if not made:
        pytest.skip("chattr +i is not available here (not root, or a filesystem without it)")
    try:
        yield path
    finally:
        subprocess.run([str(chattr), "-i", str(path)], check=True)


def test_immutable_ledger_stops_submit_before_the_script(
    demo: Path, run, immutable_ledger: Path
) -> None:  # type: ignore[no-untyped-def]
    before = immutable_ledger.read_bytes()
    r = run("submit", "manifests/example.yaml", "--stage", "smoke")
    assert r.code == 2
    assert f"{immutable_ledger}: cannot append: Operation not permitted" in r.err
    assert _orphans(demo) == []
    assert not (demo / ".campaign/local").exists()  # the local scheduler was never called
    assert immutable_ledger.read_bytes() == before


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs (root only), unmounted afterwards."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a full disk needs a tmpfs mount: run as root")
    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)]).returncode:
        pytest.skip("mounting a tmpfs is not permitted here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def test_full_disk_submit_is_exit_2_leaving_nothing(
    demo: Path, run, full_disk: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    root = full_disk / "demo"
    shutil.copytree(demo, root, symlinks=True)
    monkeypatch.chdir(root)
    with (full_disk / "fill").open("wb", buffering=0) as fh:  # unbuffered: no flush at close
        try:
            while True:
                fh.write(b"\0" * 65536)
        except OSError:
            pass
    before = (root / layout.LEDGER_FILE).read_bytes()
    r = run("submit", "manifests/example.yaml", "--stage", "smoke")
    assert r.code == 2, r.err
    assert "No space left on device" in r.err
    assert _orphans(root) == []
    assert (root / layout.LEDGER_FILE).read_bytes() == before
    (full_disk / "fill").unlink()  # space again: the next command works without clean-up
    assert run("submit", "manifests/example.yaml", "--stage", "smoke", "--dry-run").code == 0


def test_git_status_failing_is_exit_2_with_gits_message(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    # What a full disk does to git when it must write its index: git status fails. Here the
    # index is corrupt instead (a full disk cannot be aimed at git alone); a guard, it passed
    # before too: the runner runs git with --no-optional-locks, so git writes nothing itself.
    (demo / ".git/index").write_bytes(b"XXXX" + b"\0" * 64)
    r = run("submit", "manifests/example.yaml", "--stage", "smoke")
    assert r.code == 2
    assert "git status failed" in r.err and "index file corrupt" in r.err
    assert _orphans(demo) == [] and ledger.read(demo).jobs == ()


# --- concurrent refreshes ------------------------------------------------------------------------


def test_six_concurrent_refreshes_append_one_state_record(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    assert run("submit", "manifests/example.yaml", "--stage", "smoke").code == 0
    (job,) = ledger.read(demo).jobs
    state_dir = demo / ".campaign/local"
    # Let the local job finish unobserved, so every refresh finds the same change to record.
    for _ in range(600):
        views = [json.loads(p.read_text()) for p in state_dir.glob("local-*/state.json")]
        if views and all(v.get("state") == "COMPLETED" for v in views):
            break
        subprocess.run(["sleep", "0.1"], check=True)
    else:
        pytest.fail("the local job did not finish")
    procs = [campaign_cli(demo, "status", "--refresh") for _ in range(6)]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    assert [code for code, _, _ in results] == [0] * 6, results
    assert all(b"Traceback" not in err for _, _, err in results)
    records = [
        json.loads(line)
        for line in (demo / layout.LEDGER_FILE).read_text(encoding="utf-8").splitlines()
    ]
    states = [r for r in records if r["kind"] == "state" and r["ledger_id"] == job.ledger_id]
    assert len(states) == 1, states
    assert states[0]["state"] == "COMPLETED"
