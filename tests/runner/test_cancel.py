"""campaignops.runner.cancel: finding the job, mapping targets to tasks, log tails, refusals.

The scenario suite (tests/scenarios/test_cancel.py) plays the whole command on live local jobs;
these tests pin the cases a live job cannot easily show: an id recorded twice, a job with no
id, a Slurm array's task ids and log names (no scheduler call is made before ``cancel``), a
backend that refuses (a real localexec that has no such job), and long logs.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from campaignops.core.errors import UsageError
from campaignops.model import ledger_writer as lw
from campaignops.runner import cancel

T0 = dt.datetime(2026, 11, 21, 10, 0, tzinfo=dt.timezone.utc)
FP = "sha256:" + "0" * 64
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def submitted(
    root: Path, lid: str, job_id: str | None, *, backend: str = "local", targets: tuple[str, ...]
) -> None:
    intent = lw.intent_record(
        ledger_id=lid,
        time=T0,
        campaign="demo",
        backend=backend,
        stage="smoke",
        targets=targets,
        fingerprint=FP,
        commit=COMMIT,
        manifest="manifests/m.yaml",
        name="demo.m.smoke",
    )
    result = lw.result_record(ledger_id=lid, time=T0, job_id=job_id, state="PENDING")
    lw.append(root, [intent, *([result] if job_id else [])])


def test_tail_reads_the_last_lines_from_the_end_of_a_long_log(tmp_path: Path) -> None:
    log = tmp_path / "long.out"
    log.write_text("".join(f"step {i} loss {1 / (i + 1):.6f}\n" for i in range(100_000)))
    assert log.stat().st_size > cancel.TAIL_BYTES
    assert cancel.tail(log) == tuple(
        f"step {i} loss {1 / (i + 1):.6f}" for i in range(99_980, 100_000)
    )
    log.write_bytes(b"one\ntwo \xff\n")  # a task's output need not be UTF-8
    assert cancel.tail(log) == ("one", "two \ufffd")
    assert cancel.tail(tmp_path / "none.out") is None


def test_a_job_id_recorded_twice_asks_for_the_ledger_id(campaign: Path) -> None:
    # Two clones before ids carried a random part: both recorded local-1.
    submitted(campaign, "L-alice-01", "local-1", targets=("t1",))
    submitted(campaign, "L-bob-0001", "local-1", targets=("t1",))
    with pytest.raises(UsageError) as info:
        cancel.prepare(root=campaign, job="local-1")
    assert "recorded 2 times: L-alice-01 (local), L-bob-0001 (local)" in str(info.value)
    assert "pass the ledger id" in info.value.hint
    assert cancel.prepare(root=campaign, job="L-bob-0001").ledger_id == "L-bob-0001"


def test_a_submission_without_a_job_id_has_nothing_to_cancel(campaign: Path) -> None:
    submitted(campaign, "L-lost-001", None, targets=("t1",))
    submitted(campaign, "L-refused1", None, targets=("t1",))
    refusal = lw.result_record(ledger_id="L-refused1", time=T0, job_id=None, error="bad qos")
    lw.append(campaign, [refusal])
    with pytest.raises(UsageError, match="L-lost-001 holds no submitted job: no job id"):
        cancel.prepare(root=campaign, job="L-lost-001")
    with pytest.raises(UsageError, match="L-refused1 holds no submitted job: bad qos"):
        cancel.prepare(root=campaign, job="L-refused1")


def test_targets_of_a_slurm_array_become_task_ids_and_their_logs(campaign: Path) -> None:
    submitted(campaign, "L-slurm-01", "4001", backend="generic-slurm", targets=("a", "b", "c"))
    (campaign / "logs").mkdir()
    (campaign / "logs/demo.m.smoke-4001_2.out").write_text("epoch 1\nepoch 2\n")
    plan = cancel.prepare(root=campaign, job="4001", targets=["c", "a"])
    assert (plan.whole, plan.cancel_ids, plan.targets) == (False, ("4001_0", "4001_2"), ("a", "c"))
    assert plan.logs == (
        cancel.TaskLog(target="a", index=0, path="logs/demo.m.smoke-4001_0.out", tail=None),
        cancel.TaskLog(
            target="c", index=2, path="logs/demo.m.smoke-4001_2.out", tail=("epoch 1", "epoch 2")
        ),
    )
    every = cancel.prepare(root=campaign, job="4001", targets=["a", "b", "c"])
    assert (every.whole, every.cancel_ids) == (True, ("4001",))
    with pytest.raises(UsageError, match="does not run d"):
        cancel.prepare(root=campaign, job="4001", targets=["d"])


def test_a_single_job_cancels_whole_and_its_log_has_no_index(campaign: Path) -> None:
    submitted(campaign, "L-single-1", "4002", backend="generic-slurm", targets=("a",))
    plan = cancel.prepare(root=campaign, job="4002", targets=["a"])
    assert (plan.whole, plan.cancel_ids) == (True, ("4002",))
    assert [log.path for log in plan.logs] == ["logs/demo.m.smoke-4002.out"]
    assert [log.index for log in plan.logs] == [None]


def test_a_cancel_the_backend_refuses_is_exit_1_and_records_nothing(campaign: Path) -> None:
    # Another clone's local job: this checkout's executor has no such job.
    submitted(campaign, "L-other-01", "local-3-0a0b0c", targets=("t1",))
    before = (campaign / ".campaign/ledger.jsonl").read_text()
    plan = cancel.prepare(root=campaign, job="local-3-0a0b0c")
    with pytest.raises(cancel.CancelRefused) as info:
        cancel.cancel(root=campaign, plan=plan, by="me@here")
    assert info.value.exit_code == 1
    assert "local did not cancel local-3-0a0b0c: " in info.value.message
    assert "no local job local-3-0a0b0c" in info.value.message
    assert "checkout that submitted it" in info.value.hint
    assert (campaign / ".campaign/ledger.jsonl").read_text() == before


def test_a_task_id_points_to_targets(campaign: Path) -> None:
    submitted(campaign, "L-arr-0001", "local-7", targets=("t1", "t2"))
    with pytest.raises(UsageError) as info:
        cancel.prepare(root=campaign, job="local-7_1")
    assert "'local-7_1' names one task of job local-7" in str(info.value)
    assert info.value.hint == "cancel it with: campaign cancel local-7 --targets t2"
