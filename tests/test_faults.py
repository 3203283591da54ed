"""Faults around a submission: `kill -9` of `campaign submit` at random points, a full disk, a
read-only ledger (tests/test_faults_scheduler.py: a scheduler that hangs or prints garbage).

After each fault: the ledger parses, no record is duplicated, every job the local backend
started is in the ledger once the next `campaign status --refresh` has run, and the next
command works without any clean-up (tests/faultkit.py). Kills and disks are real: kill -9 of
real `campaign submit` processes, a tmpfs mount, a read-only bind mount and `chattr +i`.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from campaignops.model import ledger
from tests import waiting
from tests.conftest import Result
from tests.faultkit import (
    LEDGER,
    SEED,
    Breaches,
    assert_every_started_job_recorded,
    assert_nothing_duplicated,
    campaign_cmd,
    ledger_records,
    quick_campaign,
    started_jobs,
    stray_dirs,
)

KILLS = 100
TARGETS = 200  # quick.yaml's: kills, the submits that end before their kill, the next submit


@pytest.fixture
def small(new_campaign: Callable[..., Path]) -> Path:
    return quick_campaign(new_campaign, targets=TARGETS)


# --- kill -9 at random points -------------------------------------------------------------------


def _submit_argv(target: str) -> list[str]:
    argv = [sys.executable, "-m", "campaignops", "submit", "manifests/quick.yaml"]
    return [*argv, "--stage", "smoke", "--targets", target]


def _live_in_group(pgid: int) -> list[int]:
    """The processes of group ``pgid`` that still run (zombies, which this machine's init may
    reap late, do not count)."""
    live = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(fields[2]) == pgid and fields[0] != "Z":
            live.append(int(stat.parent.name))
    return live


def _drain(pgid: int) -> None:
    """Wait for what the killed submit had started in its process group (the local backend's
    `localexec submit`, which outlives it and may still be writing the job's state) to end:
    the *next* refresh is the one after that, not one racing it. Jobs themselves run in their
    own sessions and are not waited for."""
    deadline = time.monotonic() + 30
    while _live_in_group(pgid):
        assert time.monotonic() < deadline, f"a killed submit's group {pgid} runs after 30 s"
        time.sleep(0.02)


def _killed_submit(root: Path, target: str, delay: float, *, group: bool) -> int | None:
    """Start `campaign submit` for one target and SIGKILL it after ``delay`` seconds (None: it
    had already exited, with the code returned): the process alone (the OOM killer, `kill -9
    PID`), or with ``group`` its whole process group, children included (a closed terminal)."""
    proc = subprocess.Popen(
        _submit_argv(target),
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: what it started is found below
    )
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        if group:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stderr.close()  # type: ignore[union-attr]
        _drain(proc.pid)
        return None
    err = proc.stderr.read().decode("utf-8", "replace")  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]
    assert proc.returncode in (0, 1, 2) and "Traceback" not in err, err
    return proc.returncode


def _refresh(run) -> Result:  # type: ignore[no-untyped-def]
    done: Result = run("status", "--refresh")
    assert "Traceback" not in done.err, done.err
    return done


def _landed(before: list[dict[str, object]], after: list[dict[str, object]]) -> str:
    new = after[len(before) :]
    kinds = [r.get("kind") for r in new]
    if not new:
        return "before the intent"
    return "after the result" if "result" in kinds else "between intent and result"


@pytest.mark.serial  # its jobs must finish within a bounded wait
def test_kill_9_of_submit_at_random_points_loses_and_duplicates_nothing(
    small: Path, run, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    root = small
    rng = random.Random(SEED)
    # How long an undisturbed submit takes here (the second run: the first fills caches). A
    # kill in its first third lands in the interpreter's start-up, which holds nothing to
    # tear: the kills land over the rest. A submit that ends before its kill shortens the span.
    spans = []
    for target in ("t000", "t001"):
        start = time.monotonic()
        done = subprocess.run(_submit_argv(target), cwd=root, capture_output=True, check=False)
        spans.append(time.monotonic() - start)
        assert done.returncode == 0, done.stderr
    span = spans[-1]
    kills = finished = 0
    landed: Counter[str] = Counter()
    for i in range(2, TARGETS - 1):
        if kills >= KILLS:
            break
        target = f"t{i:03d}"
        before = ledger_records(root)
        start = time.monotonic()
        group = rng.random() < 0.5
        code = _killed_submit(root, target, span * rng.uniform(0.3, 1.0), group=group)
        if code is None:
            kills += 1
            landed[_landed(before, ledger_records(root))] += 1
            landed["with its process group" if group else "the process alone"] += 1
        else:
            finished += 1
            if code == 0:  # a whole submit: a refusal is shorter and says nothing of the span
                span = min(span, time.monotonic() - start)
        strays = stray_dirs(root)
        if strays:
            landed["left a local-N directory without job.json"] += 1
        refreshed: Result = run("status", "--refresh")  # strays are skipped, never a failure
        assert refreshed.code == 0 and "Traceback" not in refreshed.err, refreshed.err
        records = ledger_records(root)
        assert_nothing_duplicated(records)
        assert_every_started_job_recorded(root, records)
    assert kills >= KILLS, f"only {kills} kills in {finished + kills} submits"
    with capsys.disabled():
        print(f"\nfaults: {kills} kills of campaign submit ({dict(landed)}), {finished} finished")
    # The next command works without clean-up: a fresh submit, then its job is found.
    done = subprocess.run(_submit_argv(f"t{TARGETS - 1}"), cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr

    def finished() -> list[dict[str, object]] | None:
        assert _refresh(run).code == 0
        records = ledger_records(root)
        assert_nothing_duplicated(records)
        if any(j.state in ("PENDING", "RUNNING") for j in ledger.read(root).jobs):
            return None
        return records  # not empty: the submits above are in it

    # Bounded, with room for a loaded machine: dev/test.sh runs this beside the parallel part.
    def unfinished() -> str:
        live = [j for j in ledger.read(root).jobs if j.state in ("PENDING", "RUNNING")]
        shown = [(j.ledger_id, j.job_id, j.state, dict(j.record)) for j in live[:3]]
        return f"the jobs to finish ({len(live)} not: {shown})"

    # A submit killed after job.json but before it started the executor left its job PENDING
    # for ever (issue 17); the executor lock, held from before job.json until the executor
    # ends, now tells such a job's end (NODE_FAIL).
    records = waiting.until(unfinished, finished, timeout=240, most=1.0)
    assert_every_started_job_recorded(root, records)


# --- a full disk --------------------------------------------------------------------------------


def _mount(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *argv], capture_output=True, text=True, check=False)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs: a disk the test can fill."""
    if os.geteuid() != 0:
        pytest.skip("a full disk needs a tmpfs mount, and mounting needs root")
    mnt = tmp_path / "disk"
    mnt.mkdir()
    mounted = _mount("-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt))
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(mnt: Path, leave: int) -> Path:
    """Fill the disk so that about ``leave`` bytes stay free."""
    filler = mnt / "filler"
    stat = os.statvfs(mnt)
    size = max(0, stat.f_bavail * stat.f_frsize - leave)
    with filler.open("wb") as f:
        try:
            f.write(b"\0" * size)
            f.flush()
        except OSError:
            pass
    return filler


def test_a_full_disk_fails_commands_cleanly_and_the_next_ones_work(
    small: Path, tmpfs: Path
) -> None:
    root = tmpfs / "faults"
    shutil.copytree(small, root, symlinks=True)
    breaches = Breaches()
    # Leave less and less room: each write of a submission (script, intent, job state, result,
    # STATUS.md) is the first to fail at some level.
    for n, leave in enumerate((262144, 65536, 16384, 4096, 0)):
        filler = _fill(tmpfs, leave)
        for argv in (
            ("submit", "manifests/quick.yaml", "--stage", "smoke", "--targets", f"t{n:03d}"),
            ("status", "--refresh"),
            ("check",),
            ("render",),
        ):
            done = campaign_cmd(root, *argv)
            breaches.check(
                f"{' '.join(argv)} with {leave} bytes free", done.returncode, done.stderr
            )
        ledger_records(root)
        filler.unlink()
        time.sleep(0.3)  # a job started on the full disk ends (it cannot write its output)
    # Room again: the next commands work as they are, and find every job that was started. A
    # write that failed may have left a local-N directory without job.json: the local backend
    # must skip it, not break on it.
    refreshed = campaign_cmd(root, "status", "--refresh")
    breaches.check("status --refresh after", refreshed.returncode, refreshed.stderr)
    strays = stray_dirs(root)
    if strays and (refreshed.returncode != 0 or "Traceback" in refreshed.stderr):
        breaches.found.append(
            f"a local-N directory without job.json breaks the refresh: {strays}\n"
            f"{refreshed.stderr[-1000:]}"
        )
        for stray in strays:  # by hand, to check the rest
            shutil.rmtree(root / ".campaign/local" / stray)
        refreshed = campaign_cmd(root, "status", "--refresh")
    assert refreshed.returncode == 0, refreshed.stderr
    records = ledger_records(root)
    assert_nothing_duplicated(records)
    assert_every_started_job_recorded(root, records)
    argv = ("submit", "manifests/quick.yaml", "--stage", "smoke", "--targets", "t099")
    done = campaign_cmd(root, *argv)
    assert done.returncode == 0, done.stdout + done.stderr
    breaches.verdict()


# --- a read-only ledger -------------------------------------------------------------------------


@pytest.fixture(params=["read-only mount", "immutable"])
def frozen(request: pytest.FixtureRequest, small: Path) -> Iterator[Path]:
    """The ledger made unwritable even for root: a read-only bind mount, or chattr +i."""
    if os.geteuid() != 0:
        pytest.skip("root writes through file modes: only a mount or chattr +i stops it")
    path = small / LEDGER
    if request.param == "immutable":
        made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
        if made.returncode != 0:
            pytest.skip(f"chattr +i is not supported here: {made.stderr.strip()}")
        undo = ["chattr", "-i", str(path)]
    else:
        made = _mount("--bind", str(path), str(path))
        if made.returncode == 0:
            made = _mount("-o", "remount,ro,bind", str(path))
        if made.returncode != 0:
            subprocess.run(["umount", str(path)], check=False)
            pytest.skip(f"cannot bind-mount the ledger read-only: {made.stderr.strip()}")
        undo = ["umount", str(path)]
    try:
        yield path
    finally:
        subprocess.run(undo, check=False)


def test_a_read_only_ledger_refuses_before_starting_anything(
    small: Path, frozen: Path, run
) -> None:  # type: ignore[no-untyped-def]
    root = small
    before = frozen.read_bytes()
    breaches = Breaches()
    for argv in (
        ("submit", "manifests/quick.yaml", "--stage", "smoke", "--targets", "t000"),
        ("status", "--refresh"),
        ("render",),
        ("check",),
    ):
        done = campaign_cmd(root, *argv)
        breaches.check(" ".join(argv), done.returncode, done.stderr)
        assert frozen.read_bytes() == before
    # Nothing was started that the ledger could not record, and no script was left behind.
    assert started_jobs(root) == {}
    orphans = sorted(p.name for p in (root / ".campaign/jobs").glob("*.sh"))
    if orphans:
        breaches.found.append(f"orphan scripts for unrecorded submissions (ledger): {orphans}")
    breaches.verdict()


def test_after_a_read_only_ledger_the_next_submit_works(small: Path, run) -> None:  # type: ignore[no-untyped-def]
    """The second half of the read-only case, on its own so that a known issue in the first
    does not hide it: once writable again, nothing needs cleaning up."""
    root = small
    path = root / LEDGER
    if os.geteuid() != 0:
        pytest.skip("needs a read-only bind mount (root)")
    if _mount("--bind", str(path), str(path)).returncode != 0:
        pytest.skip("cannot bind-mount the ledger")
    try:
        assert _mount("-o", "remount,ro,bind", str(path)).returncode == 0
        refused = campaign_cmd(root, "submit", "manifests/quick.yaml", "--stage", "smoke")
        assert refused.returncode in (1, 2), refused.stdout + refused.stderr
    finally:
        subprocess.run(["umount", str(path)], check=False)
    for p in (root / ".campaign/jobs").glob("*.sh"):  # item 5's orphans; see the test above
        p.unlink()
    done = run("submit", "manifests/quick.yaml", "--stage", "smoke", "--targets", "t001")
    assert done.code == 0, done.out + done.err
    assert _refresh(run).code == 0
    records = ledger_records(root)
    assert_nothing_duplicated(records)
    assert_every_started_job_recorded(root, records)
