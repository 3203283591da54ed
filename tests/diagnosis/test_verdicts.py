from __future__ import annotations

import pytest

from campaignops.learn.diagnosis.verdicts import Evidence


@pytest.mark.parametrize(
    ("evidence", "category"),
    [
        (Evidence(state="OUT_OF_MEMORY", exit_code=0), "oom-host"),
        (Evidence(state="TIMEOUT"), "timeout"),
        (Evidence(state="PREEMPTED"), "preempted"),
        (Evidence(state="NODE_FAIL"), "node-failure"),
        (Evidence(state="FAILED", exit_code=-27), "oom-host"),  # PBS JOB_EXEC_KILL_MEM
        (Evidence(state="FAILED", exit_code=-29), "timeout"),  # PBS JOB_EXEC_KILL_WALLTIME
        (Evidence(state="PENDING", reason="DependencyNeverSatisfied"), "dependency"),
        (Evidence(state="PENDING", reason="QOSMaxJobsPerUserLimit"), "quota-limit"),
        (Evidence(state="FAILED", exit_code=1), None),
        (Evidence(state="FAILED", exit_code=137), None),  # a signal alone names nothing
        (Evidence(), None),
    ],
)
def test_the_verdict_names_a_category_only_when_the_scheduler_measured_it(
    evidence: Evidence, category: str | None
) -> None:
    assert evidence.category == category


def test_failed_means_worth_explaining() -> None:
    assert Evidence(state="FAILED", exit_code=1).failed
    assert Evidence().failed  # a log without a verdict
    assert not Evidence(state="COMPLETED", exit_code=0).failed
    assert not Evidence(state="CANCELLED").failed
