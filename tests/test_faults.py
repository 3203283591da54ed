"""Faults around the runner: a submit killed at random points, a full disk, a read-only ledger,
a scheduler command that hangs or prints garbage.

After each fault: the ledger parses, no record is duplicated, every job the local backend
started is in the ledger once the next `campaign status --refresh` has run, and the next
command works without any clean-up. Kills and disks are real (kill -9 of real `campaign
submit` processes, a tmpfs mount, a read-only bind mount); the scheduler faults are scripts
named sbatch, squeue and sacct first on PATH (tests/scenarios/test_scheduler_faults.py does the
same for a missing scheduler).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from campaignops import ledger
from campaignops.runner import scheduler
from tests.conftest import Result, git

SEED = int(os.environ.get("CAMPAIGN_FAULT_SEED", "20261124"))
KILLS = 100
LEDGER = ".campaign/ledger.jsonl"


def _quick(n: int) -> str:
    """A manifest of n one-line targets: each smoke is its own target, so no kill's leftover
    job blocks the next submit through no_sibling."""
    jobs = "".join(
        f"  - id: t{i:03d}\n"
        f"    cmd: sh -c 'mkdir -p $CAMPAIGN_OUT/q && echo $$ >> $CAMPAIGN_OUT/q/t{i:03d}'\n"
        f"    output: ${{CAMPAIGN_OUT}}/q/t{i:03d}\n"
        for i in range(n)
    )
    return f'backend: local\nresources: {{time: "00:05:00", cpus: 1, mem: 100M}}\njobs:\n{jobs}'


def _campaign_cmd(root: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "campaignops", *args],
        cwd=root,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def small(tmp_path: Path, run, monkeypatch: pytest.MonkeyPatch) -> Path:  # type: ignore[no-untyped-def]
    """A campaign (local and generic-slurm) with manifests/quick.yaml (150 targets), committed."""
    monkeypatch.chdir(tmp_path)
    made = run(
        "new",
        "faults",
        "--defaults",
        "--data",
        "backends=generic-slurm,local",
        "--data",
        "smoke_backend=local",
        "--data",
        "require_pushed=no",
    )
    assert made.code == 0, made.err
    root = tmp_path / "faults"
    (root / "manifests/quick.yaml").write_text(_quick(150), encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "quick targets")
    monkeypatch.chdir(root)
    return root


# --- what must hold after any fault -------------------------------------------------------------


def ledger_records(root: Path) -> list[dict[str, object]]:
    """Every line of the ledger as JSON (a torn last line is the only one allowed to fail)."""
    lines = (root / LEDGER).read_bytes().split(b"\n")
    records = []
    for i, line in enumerate(lines):
        if not line:
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            assert i == len(lines) - 1, f"line {i + 1} of the ledger is not JSON: {line[:200]!r}"
    ledger.read(root)  # the product's own reader accepts it
    return records


def assert_nothing_duplicated(records: list[dict[str, object]]) -> None:
    intents = Counter(r["ledger_id"] for r in records if r.get("kind") == "intent")
    assert [k for k, n in intents.items() if n > 1] == [], "an intent recorded twice"
    results = Counter(r["ledger_id"] for r in records if r.get("kind") == "result")
    assert [k for k, n in results.items() if n > 1] == [], "a submission's result recorded twice"
    owners: dict[object, set[object]] = {}
    for r in records:
        if r.get("job_id"):
            owners.setdefault(r["job_id"], set()).add(r["ledger_id"])
    assert {j: o for j, o in owners.items() if len(o) > 1} == {}, "one job under two entries"
    lines = Counter(json.dumps(r, sort_keys=True) for r in records)
    assert [line for line, n in lines.items() if n > 1] == [], "an identical record twice"


def started_jobs(root: Path) -> dict[str, str]:
    """job id -> ledger id of every job the local backend started (its job.json's comment)."""
    started = {}
    for job in sorted((root / ".campaign/local").glob("local-*/job.json")):
        data = json.loads(job.read_text(encoding="utf-8"))
        started[str(data["job_id"])] = str(data["comment"]).split()[0]
    return started


def stray_dirs(root: Path) -> list[str]:
    return sorted(
        d.name
        for d in (root / ".campaign/local").glob("local-*")
        if d.is_dir() and not (d / "job.json").is_file()
    )


def assert_every_started_job_recorded(root: Path, records: list[dict[str, object]]) -> None:
    recorded = {(r.get("job_id"), r.get("ledger_id")) for r in records if r.get("job_id")}
    missing = {j: lid for j, lid in started_jobs(root).items() if (j, lid) not in recorded}
    assert missing == {}, f"jobs started but not in the ledger after a refresh: {missing}"


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


def _killed_submit(root: Path, target: str, delay: float) -> int | None:
    """Start `campaign submit` for one target and SIGKILL it after ``delay`` seconds (None: it
    had already exited, with the code returned)."""
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


def test_kill_9_of_submit_at_random_points_loses_and_duplicates_nothing(small: Path, run) -> None:  # type: ignore[no-untyped-def]
    root = small
    rng = random.Random(SEED)
    # How long an undisturbed submit takes here. A kill in its first third lands in the
    # interpreter's start-up, which holds nothing to tear: the kills land over the rest.
    spans = []
    for target in ("t000", "t001"):
        start = time.monotonic()
        done = subprocess.run(_submit_argv(target), cwd=root, capture_output=True, check=False)
        spans.append(time.monotonic() - start)
        assert done.returncode == 0, done.stderr
    span = max(spans)
    kills = finished = 0
    landed: Counter[str] = Counter()
    broken_by_strays: list[str] = []
    for i in range(2, 149):
        if kills >= KILLS:
            break
        target = f"t{i:03d}"
        before = ledger_records(root)
        code = _killed_submit(root, target, span * rng.uniform(0.3, 1.05))
        if code is None:
            kills += 1
            landed[_landed(before, ledger_records(root))] += 1
        else:
            finished += 1
        strays = stray_dirs(root)
        if strays:
            landed["left a local-N directory without job.json"] += 1
        refreshed: Result = run("status", "--refresh")
        if strays and (refreshed.code != 0 or "Traceback" in refreshed.err):
            broken_by_strays.append(f"{target}: {refreshed.err.strip()[-300:]}")
            for stray in strays:  # clean up by hand, to go on counting the other kinds
                shutil.rmtree(root / ".campaign/local" / stray)
            continue
        assert refreshed.code == 0 and "Traceback" not in refreshed.err, refreshed.err
        records = ledger_records(root)
        assert_nothing_duplicated(records)
        assert_every_started_job_recorded(root, records)
    assert kills >= KILLS, f"only {kills} kills in {finished + kills} submits"
    print(f"\nfaults: {kills} kills of campaign submit ({dict(landed)}), {finished} finished")
    if broken_by_strays:
        pytest.xfail(
            f"item 2, hostile1: a stray local-N directory broke refresh {len(broken_by_strays)} "
            f"time(s), first: {broken_by_strays[0]}"
        )
    # The next command works without clean-up: a fresh submit, then its job is found.
    done = subprocess.run(_submit_argv("t149"), cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    deadline = time.monotonic() + 60
    while True:
        assert _refresh(run).code == 0
        records = ledger_records(root)
        assert_nothing_duplicated(records)
        if not any(j.state in ("PENDING", "RUNNING") for j in ledger.read(root).jobs):
            break
        assert time.monotonic() < deadline, "the jobs did not finish"
        time.sleep(0.5)
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


# Tracebacks another change of issue 12 removes: the test notes them and is an expected failure
# while they are all it finds (remove an entry once its fix is merged).
KNOWN = (
    (("git", "No space left on device"), "item 5: a full disk during git status"),
    (("dispatch.py", "No space left on device"), "item 5: a full disk writing the job script"),
    (("PermissionError", "ledger.jsonl"), "item 5: an immutable ledger"),
    # The same failure on a read-only mount (EROFS): item 5's fix must catch OSError at large.
    (("Read-only file system", "ledger.jsonl"), "item 5: a read-only ledger (EROFS)"),
    (("orphan scripts",), "item 5: an orphan .campaign/jobs/*.sh"),
    (("local-N directory without job.json",), "item 2: a stray local-N directory (hostile1)"),
    (("scheduler.py", "UnicodeDecodeError"), "item 5: scheduler output that is not UTF-8"),
    (("sacct.py", "OverflowError"), "item 5: an out-of-range epoch"),
    (("sacct.py", "year"), "item 5: an out-of-range epoch"),
    (("localstate.py",), "item 2: a broken local-N state entry (hostile1)"),
)


def _known(text: str) -> str | None:
    return next((why for signs, why in KNOWN if all(s in text for s in signs)), None)


class Breaches:
    def __init__(self) -> None:
        self.found: list[str] = []

    def check(self, what: str, code: int, err: str) -> None:
        if code not in (0, 1, 2) or "Traceback" in err:
            self.found.append(f"{what}: exit {code}\n{err[-2000:]}")

    def verdict(self) -> None:
        unknown = [f for f in self.found if _known(f) is None]
        assert unknown == [], "\n\n".join(unknown[:3])
        if self.found:
            pytest.xfail(f"known issues: {sorted({str(_known(f)) for f in self.found})}")


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
            done = _campaign_cmd(root, *argv)
            breaches.check(
                f"{' '.join(argv)} with {leave} bytes free", done.returncode, done.stderr
            )
        ledger_records(root)
        filler.unlink()
        time.sleep(0.3)  # a job started on the full disk ends (it cannot write its output)
    # Room again: the next commands work as they are, and find every job that was started.
    refreshed = _campaign_cmd(root, "status", "--refresh")
    breaches.check("status --refresh after", refreshed.returncode, refreshed.stderr)
    strays = stray_dirs(root)
    if strays:
        breaches.found.append(f"the full disk left a local-N directory without job.json: {strays}")
        for stray in strays:  # by hand, to check the rest
            shutil.rmtree(root / ".campaign/local" / stray)
        refreshed = _campaign_cmd(root, "status", "--refresh")
    assert refreshed.returncode == 0, refreshed.stderr
    records = ledger_records(root)
    assert_nothing_duplicated(records)
    assert_every_started_job_recorded(root, records)
    argv = ("submit", "manifests/quick.yaml", "--stage", "smoke", "--targets", "t099")
    done = _campaign_cmd(root, *argv)
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
        done = _campaign_cmd(root, *argv)
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
        refused = _campaign_cmd(root, "submit", "manifests/quick.yaml", "--stage", "smoke")
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


# --- a scheduler that hangs or prints garbage ---------------------------------------------------


def _fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """sbatch, squeue, sacct and scancel first on PATH; each runs `<bin>/<name>.sh`, which a
    test rewrites between commands."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    for name in ("sbatch", "squeue", "sacct", "scancel"):
        (bin_dir / name).write_text(f'#!/bin/bash\nexec bash "{bin_dir}/{name}.sh" "$@"\n')
        (bin_dir / name).chmod(0o755)
        (bin_dir / f"{name}.sh").write_text("exit 0\n")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def _act(bin_dir: Path, name: str, body: str) -> None:
    (bin_dir / f"{name}.sh").write_text(body)


SLURM_SUBMIT = ("submit", "manifests/quick.yaml", "--stage", "smoke", "--backend", "generic-slurm")


def _safe(run, *argv: str) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    """Run in-process; an exception that escapes is returned as a traceback (exit None)."""
    import traceback

    try:
        done: Result = run(*argv)
    except Exception:
        return -1, traceback.format_exc()
    return done.code, done.out + done.err


def test_a_hung_scheduler_is_a_bounded_wait_and_an_honest_exit(
    small: Path, run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(scheduler, "TIMEOUT_S", 1.0)
    fake = _fake_bin(tmp_path, monkeypatch)
    breaches = Breaches()
    before = (small / LEDGER).read_bytes()
    # squeue hangs: the sibling gate cannot be checked, nothing is submitted or recorded.
    _act(fake, "squeue", "exec sleep 600\n")
    code, text = _safe(run, *SLURM_SUBMIT, "--targets", "t000")
    breaches.check("submit, squeue hung", code, text)
    assert code == 2 and (small / LEDGER).read_bytes() == before, text
    # sbatch hangs: the job may be queued; it is recorded as an unknown outcome, once.
    _act(fake, "squeue", "exit 0\n")
    _act(fake, "sbatch", "exec sleep 600\n")
    code, text = _safe(run, *SLURM_SUBMIT, "--targets", "t001")
    breaches.check("submit, sbatch hung", code, text)
    assert code == 1 and "outcome unknown" in text, text
    (job,) = ledger.read(small).jobs
    assert job.job_id is None and job.text("outcome") == "unknown"
    # sacct hangs during the refresh: exit 2, and the ledger is not touched.
    _act(fake, "sacct", "exec sleep 600\n")
    _act(fake, "squeue", "exec sleep 600\n")
    after_submit = (small / LEDGER).read_bytes()
    code, text = _safe(run, "status", "--refresh")
    breaches.check("status --refresh, sacct hung", code, text)
    assert code == 2 and (small / LEDGER).read_bytes() == after_submit, text
    # The scheduler answers again and has never heard of the job: the next refresh settles
    # it, and the next submit works without anyone cleaning up.
    _act(fake, "sacct", "exit 0\n")
    _act(fake, "squeue", "exit 0\n")
    _act(fake, "sbatch", "echo 4242\n")
    code, text = _safe(run, "status", "--refresh")
    breaches.check("status --refresh, answering", code, text)
    assert code == 0, text
    assert_nothing_duplicated(ledger_records(small))
    code, text = _safe(run, *SLURM_SUBMIT, "--targets", "t002")
    assert code == 0 and "as job 4242" in text, text
    assert_nothing_duplicated(ledger_records(small))
    breaches.verdict()


GARBAGE_ROUNDS = 60


def _garbage(rng: random.Random) -> bytes:
    kind = rng.randrange(6)
    if kind == 0:
        return rng.randbytes(rng.randint(0, 300))
    if kind == 1:  # sacct -P lines with the wrong number of fields and odd values
        odd = [
            "",
            "4242",
            "4242_0",
            "-1",
            "99999999999999999999",
            "COMPLETED",
            "FAILED",
            "1e999",
            "NaN",
            "0:0",
            "9:99",
            "\xff",
            "Unknown",
            "None",
            "2026-13-45",
        ]
        lines = ["|".join(rng.choice(odd) for _ in range(rng.randint(1, 16))) for _ in range(5)]
        return "\n".join(lines).encode("utf-8", "surrogateescape")
    if kind == 2:  # epochs past what datetime holds
        return rng.choice([b"4242|COMPLETED|0:0|99999999999999|1|2\n", b"-99999999999\n"])
    if kind == 3:
        return b"Submitted batch job " + str(rng.randint(-5, 10**30)).encode() + b"\n"
    if kind == 4:
        return b"\xff\xfe" + rng.randbytes(20)
    return b"\n" * rng.randint(0, 5000)


def test_a_garbage_printing_scheduler_never_crashes_or_corrupts_the_ledger(
    small: Path, run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(scheduler, "TIMEOUT_S", 5.0)
    fake = _fake_bin(tmp_path, monkeypatch)
    rng = random.Random(SEED)
    breaches = Breaches()
    for n in range(GARBAGE_ROUNDS):
        for name in ("sbatch", "squeue", "sacct"):
            data = tmp_path / f"{name}.out"
            data.write_bytes(_garbage(rng) if rng.random() < 0.6 else b"")
            # Exit 0 mostly; otherwise an error exit, not a transient one (no retry sleeps).
            code = rng.choice((0, 0, 0, 1, 2))
            _act(fake, name, f'cat "{data}"\nexit {code}\n')
        argv = (
            (*SLURM_SUBMIT, "--targets", f"t{n:03d}")
            if rng.random() < 0.5
            else ("status", "--refresh")
        )
        before = (small / LEDGER).read_bytes()
        code, text = _safe(run, *argv)
        breaches.check(" ".join(argv), code, text)
        records = ledger_records(small)
        assert_nothing_duplicated(records)
        if code == 2:
            assert (small / LEDGER).read_bytes() == before, f"{argv}: exit 2 changed the ledger"
    # A sane scheduler again: the next commands work as they are.
    for name in ("sacct", "squeue"):
        _act(fake, name, "exit 0\n")
    _act(fake, "sbatch", "echo 777\n")
    code, text = _safe(run, "status", "--refresh")
    breaches.check("status --refresh after", code, text)
    assert code == 0, text
    code, text = _safe(run, *SLURM_SUBMIT, "--targets", "t149")
    assert code == 0 and "as job 777" in text, text
    assert_nothing_duplicated(ledger_records(small))
    breaches.verdict()
