"""Story: `campaign cancel` on the real Slurm cluster, one target of an array, then the rest.

The same story as test_cancel.py plays on the local backend: here scancel, sacct and squeue
are real, and the ledger learns each task's end from them.
"""

from __future__ import annotations

import pytest

from campaignops.model import ledger
from tests import waiting
from tests.scenarios.conftest import Life

pytestmark = pytest.mark.slurm

PAIR = """\
resources: {time: "00:10:00", mem: 100M}
max_parallel: 2
smoke:
  args: {seconds: 300}
jobs:
  - id: slow
    cmd: bash -c 'echo slow started; sleep "$2"' slow
    args: {seconds: 600}
  - id: other
    cmd: bash -c 'echo other started; sleep "$2"' other
    args: {seconds: 600}
"""


def _until(life: Life, ok, what: str, timeout: float = 120) -> ledger.Job:  # type: ignore[no-untyped-def]
    def seen() -> ledger.Job | None:
        assert life.run("status", "--refresh").code == 0
        job = life.jobs()[-1]
        return job if ok(job) else None

    told = lambda: f"{what}: {dict(life.jobs()[-1].record)}"  # noqa: E731
    return waiting.until(told, seen, timeout=timeout, most=1.0)


def test_cancel_one_target_then_the_job_on_slurm(camp, run, slurm_cluster) -> None:  # type: ignore[no-untyped-def]
    life = Life(root=camp, backend="generic-slurm", run=run)
    life.write("manifests/pair.yaml", PAIR)
    assert life.submit("manifests/pair.yaml", "smoke").code == 0
    job = _until(life, lambda j: j.state == "RUNNING", "the array running")
    one = life.run("cancel", str(job.job_id), "--targets", "other")
    assert one.code == 0, one.err
    job = _until(
        life,
        lambda j: (t := j.task("other")) is not None and t.state == "CANCELLED",
        "task 'other' cancelled",
    )
    slow = job.task("slow")
    assert slow is not None and slow.state == "RUNNING"  # its sibling is untouched
    assert job.record["cancel_ids"] == [f"{job.job_id}_1"]
    whole = life.run("cancel", str(job.job_id))
    assert whole.code == 0, whole.err
    assert "slow started" in whole.out  # the log tail came first
    ended = _until(life, lambda j: j.state == "CANCELLED", "the job cancelled")
    assert {t: ended.task(t).state for t in ended.targets} == {  # type: ignore[union-attr]
        "slow": "CANCELLED",
        "other": "CANCELLED",
    }
