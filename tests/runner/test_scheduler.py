"""Scheduler calls: transient failures retried with backoff, rejections and outages reported."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from campaignops.runner import scheduler


def flaky(tmp_path: Path, *, failures: int, message: str) -> list[str]:
    """A real command that fails ``failures`` times with ``message``, then prints 4242."""
    counter = tmp_path / "count"
    script = tmp_path / "fake-sbatch"
    script.write_text(
        "#!/bin/bash\n"
        f'n=$(cat "{counter}" 2>/dev/null || echo 0); echo $((n+1)) > "{counter}"\n'
        f'if [ "$n" -lt {failures} ]; then echo "{message}" >&2; exit 1; fi\n'
        "echo 4242\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return [str(script), "--parsable"]


def test_transient_errors_are_retried_with_exponential_backoff(tmp_path: Path) -> None:
    delays: list[float] = []
    argv = flaky(tmp_path, failures=2, message="sbatch: error: Socket timed out on send/recv")
    result = scheduler.call(argv, base_delay=0.5, sleep=delays.append)
    assert (result.stdout.strip(), result.attempts, delays) == ("4242", 3, [0.5, 1.0])


def test_a_scheduler_that_stays_down_is_unavailable_after_bounded_attempts(tmp_path: Path) -> None:
    delays: list[float] = []
    argv = flaky(tmp_path, failures=99, message="Resource temporarily unavailable")
    with pytest.raises(scheduler.SchedulerUnavailable) as info:
        scheduler.call(argv, attempts=4, base_delay=0.1, sleep=delays.append)
    assert info.value.exit_code == 2 and "failed 4 times" in info.value.message
    assert delays == [0.1, 0.2, 0.4]
    assert (tmp_path / "count").read_text().strip() == "4"


def test_a_rejection_is_not_retried(tmp_path: Path) -> None:
    argv = flaky(tmp_path, failures=99, message="sbatch: error: invalid partition specified: nope")
    with pytest.raises(scheduler.SchedulerRejected) as info:
        scheduler.call(argv, sleep=lambda s: None)
    assert "invalid partition" in info.value.message
    assert (tmp_path / "count").read_text().strip() == "1"


def test_missing_command_is_unavailable() -> None:
    with pytest.raises(scheduler.SchedulerUnavailable) as info:
        scheduler.call(["no-such-sbatch-here"], sleep=lambda s: None)
    assert "command not found" in info.value.message
