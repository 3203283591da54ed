"""What the scheduler's own verdict says, before any log is read.

A final state such as OUT_OF_MEMORY is the scheduler's measurement, so it outranks a log
line: the log may only pick a more specific entry within the verdict's category (an OOM job's
log often ends in the peers' "Connection reset by peer"). FAILED, and the states that say
nothing about the cause, leave the decision to the log. Sources: Slurm's job_state_codes and
job_reason_codes pages, OpenPBS's ``job.h`` exit codes (JOB_EXEC_KILL_MEM -27, WALLTIME -29),
Kubernetes' OOMKilled / DeadlineExceeded reasons (docs/runner.md "Diagnosis" cites them).
"""

from __future__ import annotations

from dataclasses import dataclass

from campaignops.backends import registry
from campaignops.model.states import STATE_CATEGORIES

# States that are not failures to explain.
NOT_FAILURES = frozenset({"COMPLETED", "CANCELLED", "PENDING", "RUNNING", "UNKNOWN"})


@dataclass(frozen=True)
class Evidence:
    """The scheduler's verdict on one task (all optional: ``--log FILE`` has none)."""

    state: str | None = None
    exit_code: int | None = None
    reason: str | None = None

    @property
    def category(self) -> str | None:
        state = (self.state or "").upper()
        if state in STATE_CATEGORIES:
            return STATE_CATEGORIES[state]
        # A scheduler's own words: its pending reasons, its server's exit codes.
        return registry.verdict_category(self.exit_code, self.reason)

    @property
    def failed(self) -> bool:
        """Worth diagnosing: ended in failure (or unknown: ``--log`` without a verdict)."""
        if self.state is None:
            return True
        if self.state == "COMPLETED":
            return self.exit_code not in (0, None)
        return self.state not in NOT_FAILURES

    def describe(self) -> str:
        parts = [self.state or "no verdict"]
        if self.exit_code is not None:
            parts.append(f"exit {self.exit_code}")
        if self.reason:
            parts.append(self.reason)
        return ", ".join(parts)
