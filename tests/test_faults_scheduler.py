"""A scheduler that hangs or prints garbage, as seen by `campaign submit` and `campaign status
--refresh` on a generic-slurm backend: scripts named sbatch, squeue, sacct and scancel first on
PATH (tests/scenarios/test_scheduler_faults.py does the same for a missing scheduler). What must
hold afterwards is the fault suite's (tests/faultkit.py): the ledger parses, nothing is
duplicated, a command that failed with exit 2 left the ledger as it was, and the next command
works once the scheduler answers again.
"""

from __future__ import annotations

import os
import random
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest

from campaignops.backends import command as scheduler
from campaignops.model import ledger
from tests.conftest import Result
from tests.faultkit import (
    LEDGER,
    SEED,
    Breaches,
    assert_nothing_duplicated,
    ledger_records,
    quick_campaign,
)


@pytest.fixture
def small(new_campaign: Callable[..., Path]) -> Path:
    return quick_campaign(new_campaign)


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
    try:
        done: Result = run(*argv)
    except Exception:
        return -1, traceback.format_exc()
    return done.code, done.out + done.err


def test_a_hung_scheduler_is_a_bounded_wait_and_an_honest_exit(
    small: Path, run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(scheduler, "TIMEOUT_S", 1.0)
    # The retries' own delays (1, 2, 4 s) are tests/runner/test_scheduler.py's subject; here
    # they would only make each hung query wait 7 s more.
    monkeypatch.setattr(scheduler, "BASE_DELAY_S", 0.01)
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


# Scheduler answers that once escaped as a traceback (issue 16: every answer validated before
# use): a task index str.isdigit takes but int() does not, numbers past int()'s 4300 digits, a
# dotted size on a step. Each is exit 2 with the answer named, and the ledger is left as it was.
HOSTILE_ANSWERS = {
    "squeue task ²": ("squeue", "4242|²|RUNNING|None|quick.t001.smoke|1|1|1:00|c\n"),
    "squeue 5000-digit id": ("squeue", f"{'1' * 5000}|N/A|RUNNING|None|n|1|1|1:00|c\n"),
    "sacct 5000-digit exit": (
        "sacct",
        f"4242|n|FAILED|{'1' * 5000}:0|1|1|1|00:01||1G|00:05:00|1|00:00:01||c\n",
    ),
    "sacct dotted MaxRSS": (
        "sacct",
        "4242|n|COMPLETED|0:0|1|1|1|00:01||1G|00:05:00|1|00:00:01||c\n"
        "4242.batch|batch|COMPLETED|0:0|1|1|1|00:01|1..2K|1G|00:05:00|1|00:00:01||\n",
    ),
}


@pytest.mark.parametrize("answer", sorted(HOSTILE_ANSWERS))
def test_a_hostile_scheduler_answer_is_an_error_exit_never_a_traceback(
    small: Path, run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str
) -> None:  # type: ignore[no-untyped-def]
    fake = _fake_bin(tmp_path, monkeypatch)
    _act(fake, "sbatch", "echo 4242\n")
    code, text = _safe(run, *SLURM_SUBMIT, "--targets", "t000")
    assert code == 0 and "as job 4242" in text, text
    command, printed = HOSTILE_ANSWERS[answer]
    data = tmp_path / f"{command}.out"
    data.write_text(printed)
    _act(fake, command, f'cat "{data}"\n')
    before = (small / LEDGER).read_bytes()
    # What cannot be read is unknown (an index, an exit code, a size) or, for a job id, the
    # backend's error naming the command: exit 2, before anything is written.
    for argv in (("status", "--refresh"), (*SLURM_SUBMIT, "--targets", "t001")):
        code, text = _safe(run, *argv)
        assert code in (0, 2) and "Traceback" not in text, f"{argv}: {text}"
        if code == 2:
            assert f"{command} printed" in text, text
            assert (small / LEDGER).read_bytes() == before, f"{argv}: exit 2 changed the ledger"
