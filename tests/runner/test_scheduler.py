"""Scheduler calls: transient failures retried with backoff, rejections and outages reported."""

from __future__ import annotations

import functools
import stat
from pathlib import Path
from typing import Any

import pytest

from campaignops.backends import command as scheduler
from campaignops.backends import registry as backends
from campaignops.backends.pbs import backend as pbs
from campaignops.backends.slurm import backend as slurm


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


# --- a submission: retried only on an error known to come before acceptance (issue 16, item 3)

SOCKET_TIMEOUT = (
    "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation"
)


@pytest.mark.parametrize(
    "message",
    [
        SOCKET_TIMEOUT,
        "sbatch: error: Batch job submission failed: Unable to contact slurm controller (send failure)",
        "sbatch: error: Batch job submission failed: Unable to contact slurm controller (receive failure)",
        "sbatch: error: Batch job submission failed: Zero Bytes were transmitted or received",
        "sbatch: error: Batch job submission failed: Resource temporarily unavailable",
        "sbatch: error: slurm_receive_msg: Socket timed out on send/recv operation\n"
        "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)",
        "qsub: End of File",
        "",
    ],
)
def test_a_submission_that_may_have_been_accepted_is_an_unknown_outcome_at_once(
    tmp_path: Path, message: str
) -> None:
    argv = flaky(tmp_path, failures=99, message=message)
    with pytest.raises(scheduler.OutcomeUnknown) as info:
        scheduler.call(
            argv,
            sleep=lambda s: None,
            submission=True,
            retryable=slurm.TRANSIENT,
            unsent=slurm.UNSENT,
        )
    assert (tmp_path / "count").read_text().strip() == "1"  # called once: never retried
    assert info.value.exit_code == 1 and "outcome is unknown" in info.value.message
    assert info.value.hint.startswith("campaign status --refresh (do not submit it again")


@pytest.mark.parametrize(
    ("backend", "message"),
    [
        (slurm, "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)"),
        (slurm, "sbatch: error: Batch job submission failed: Unable to create job record, try again"),
        (slurm, "connect: Connection refused"),
        (pbs, "qsub: cannot connect to server pbs01 (errno=15010)"),
    ],
)  # fmt: skip
def test_a_submission_that_sent_nothing_is_retried(
    tmp_path: Path, backend: Any, message: str
) -> None:
    delays: list[float] = []
    argv = flaky(tmp_path, failures=2, message=message)
    done = scheduler.call(
        argv,
        base_delay=0.5,
        sleep=delays.append,
        submission=True,
        retryable=backend.TRANSIENT,
        unsent=backend.UNSENT,
    )
    assert (done.stdout.strip(), done.attempts, delays) == ("4242", 3, [0.5, 1.0])


def test_a_submission_that_never_connects_says_nothing_was_submitted(tmp_path: Path) -> None:
    message = "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)"
    argv = flaky(tmp_path, failures=99, message=message)
    with pytest.raises(scheduler.SchedulerUnavailable) as info:
        scheduler.call(
            argv,
            sleep=lambda s: None,
            submission=True,
            retryable=slurm.TRANSIENT,
            unsent=slurm.UNSENT,
        )
    assert "failed 4 times" in info.value.message and "nothing was submitted" in info.value.hint


def test_a_submission_refused_for_a_reason_is_rejected_once(tmp_path: Path) -> None:
    argv = flaky(tmp_path, failures=99, message="sbatch: error: invalid partition specified: nope")
    with pytest.raises(scheduler.SchedulerRejected):
        scheduler.call(
            argv,
            sleep=lambda s: None,
            submission=True,
            retryable=slurm.TRANSIENT,
            unsent=slurm.UNSENT,
        )
    assert (tmp_path / "count").read_text().strip() == "1"


def test_a_submission_killed_by_a_signal_is_an_unknown_outcome(tmp_path: Path) -> None:
    script = tmp_path / "fake-sbatch-killed"
    script.write_text("#!/bin/bash\nkill -KILL $$\n")
    script.chmod(0o755)
    with pytest.raises(scheduler.OutcomeUnknown) as info:
        scheduler.call([str(script)], sleep=lambda s: None, submission=True)
    assert "killed by signal 9" in info.value.message


def test_the_submitting_call_of_each_backend_uses_its_unsent_errors() -> None:
    for backend in (slurm, pbs):
        bound = backends.submitting(backend, scheduler.call)
        assert isinstance(bound, functools.partial)
        assert bound.keywords["unsent"] is backend.UNSENT and bound.keywords["submission"]
