"""The ledger writer: schema-valid records, round-tripping through the reader, torn lines."""

from __future__ import annotations

import datetime as dt
import multiprocessing
import re
from pathlib import Path
from typing import Any

import pytest

from campaignops.core import layout, schema
from campaignops.model import ledger
from campaignops.model import ledger_writer as lw
from campaignops.model.jobspec import JobState

COMMIT = "0123456789abcdef0123456789abcdef01234567"
FP = "sha256:" + "ab" * 32
T0 = dt.datetime(2026, 11, 21, 10, 0, tzinfo=dt.timezone.utc)
ID_PATTERN = re.compile(schema.load(schema.LEDGER_RECORD)["properties"]["ledger_id"]["pattern"])


def intent(lid: str, **changes: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "ledger_id": lid,
        "time": T0,
        "campaign": "demo",
        "backend": "local",
        "stage": "smoke",
        "targets": ["lr0.1_s1", "lr0.1_s2"],
        "fingerprint": FP,
        "commit": COMMIT,
        "manifest": "manifests/smoke.yaml",
        "wrappers": {"scripts/run_one.v1.sh": FP},
        "array": "0-1%2",
        "after": ["4000"],
        "override": "raised --mem",
    } | changes
    return lw.intent_record(**fields)


def chain(lid: str) -> list[dict[str, Any]]:
    return [
        intent(lid),
        lw.result_record(
            ledger_id=lid,
            time=T0 + dt.timedelta(seconds=1),
            job_id="4001",
            submitted=T0 + dt.timedelta(seconds=1),
            state="PENDING",
        ),
        lw.state_record(
            ledger_id=lid,
            time=T0 + dt.timedelta(minutes=40),
            state=JobState(
                job_id="4001",
                state="FAILED",
                exit_code=1,
                submitted="2026-11-21T10:00:01Z",
                started="2026-11-21T11:05:00+01:00",
                ended="2026-11-21T10:35:00Z",
                elapsed_s=1800.0,
            ),
            signature="FAILED:1 KeyError: <n>",
        ),
    ]


def test_ledger_ids_match_the_schema_and_never_repeat() -> None:
    ids = {lw.new_ledger_id(T0) for _ in range(10_000)}
    assert len(ids) == 10_000
    assert all(ID_PATTERN.match(i) for i in ids)
    assert next(iter(ids)).startswith("L20261121T100000Z-")


def test_ledger_ids_and_times_are_utc_and_refuse_naive_datetimes() -> None:
    paris = dt.timezone(dt.timedelta(hours=1))
    assert lw.new_ledger_id(T0.astimezone(paris)).startswith("L20261121T100000Z-")
    assert lw.format_time(dt.datetime(2026, 11, 21, 11, 0, 5, 123, tzinfo=paris)) == (
        "2026-11-21T10:00:05Z"
    )
    with pytest.raises(ValueError, match="naive datetime"):
        lw.new_ledger_id(dt.datetime(2026, 11, 21, 10, 0))


def test_every_record_is_schema_valid() -> None:
    records = [
        *chain("L-000001"),
        intent("L-000002", wrappers=None, array=None, after=(), override=None),
        intent("L-000003", time_s=3600),
        lw.result_record(
            ledger_id="L-000002", time=T0, job_id=None, error="sbatch: invalid partition"
        ),
        lw.state_record(ledger_id="L-000002", time=T0, state=JobState(job_id="1", state="UNKNOWN")),
        lw.cancel_record(
            ledger_id="L-000001",
            time=T0,
            job_id="4001",
            cancel_ids=["4001_1"],
            targets=["lr0.1_s2"],
            by="me@login1",
            reason="wrong learning rate",
        ),
    ]
    for record in records:
        assert list(schema.validate(schema.LEDGER_RECORD, record)) == [], record


def test_an_intent_records_its_time_limit_and_the_schema_refuses_a_bad_one() -> None:
    record = intent("L-000003", time_s=5400)
    assert record["time_s"] == 5400
    assert "time_s" not in intent("L-000004")  # no limit asked: the key is left out
    for bad in (-1, 1.5, "01:30:00"):
        assert list(schema.validate(schema.LEDGER_RECORD, record | {"time_s": bad})), bad


def test_records_leave_nulls_out_and_lead_with_the_envelope() -> None:
    record = lw.result_record(ledger_id="L-000002", time=T0, job_id=None, error="rejected")
    assert record == {
        "v": 1,
        "kind": "result",
        "ledger_id": "L-000002",
        "time": "2026-11-21T10:00:00Z",
        "error": "rejected",
    }
    assert lw.encode(record) == (
        '{"v": 1, "kind": "result", "ledger_id": "L-000002", '
        '"time": "2026-11-21T10:00:00Z", "error": "rejected"}'
    )


def test_unreadable_scheduler_times_are_dropped_not_written() -> None:
    state = JobState(job_id="7", state="PENDING", submitted="Unknown", started="None", ended="")
    record = lw.state_record(ledger_id="L-000003", time=T0, state=state)
    assert {"submitted", "started", "ended"}.isdisjoint(record)
    naive = lw.state_record(
        ledger_id="L-000003",
        time=T0,
        state=JobState(job_id="7", state="RUNNING", started="2026-11-21T10:00:00"),
    )
    assert naive["started"] == "2026-11-21T10:00:00Z"  # the reader takes zoneless times as UTC
    nan = JobState(job_id="7", state="RUNNING", elapsed_s=float("nan"))
    assert "run_time_s" not in lw.state_record(ledger_id="L-000003", time=T0, state=nan)


def test_a_chain_round_trips_through_the_reader(tmp_path: Path) -> None:
    lw.append(tmp_path, chain("L-000001")[:1])
    lw.append(tmp_path, chain("L-000001")[1:])
    read = ledger.read(tmp_path)
    assert read.skipped == ()
    (job,) = read.jobs
    assert job.ledger_id == "L-000001"
    assert (job.kind, job.stage, job.backend, job.commit) == ("state", "smoke", "local", COMMIT)
    assert (job.job_id, job.state, job.exit_code) == ("4001", "FAILED", 1)
    assert job.targets == ("lr0.1_s1", "lr0.1_s2")
    assert job.text("fingerprint") == FP
    assert job.text("signature") == "FAILED:1 KeyError: <n>"
    assert job.text("override") == "raised --mem"
    assert job.record["wrappers"] == {"scripts/run_one.v1.sh": FP}
    assert job.queue_wait() == pytest.approx(299.0)  # 10:00:01 → 10:05:00 UTC (11:05 +01:00)
    assert job.run_time() == pytest.approx(1800.0)


def test_a_cancel_record_keeps_the_jobs_targets_and_needs_who(tmp_path: Path) -> None:
    cancel = lw.cancel_record(
        ledger_id="L-000001",
        time=T0,
        job_id="4001",
        cancel_ids=["4001_1"],
        targets=["lr0.1_s2"],
        by="me@login1",
    )
    lw.append(tmp_path, [*chain("L-000001"), cancel])
    (job,) = ledger.read(tmp_path).jobs
    assert job.targets == ("lr0.1_s1", "lr0.1_s2")  # the fold keeps what the job runs
    assert (job.kind, job.record["cancel_targets"], job.text("cancel_by")) == (
        "cancel",
        ["lr0.1_s2"],
        "me@login1",
    )
    assert "cancel_reason" not in job.record
    with pytest.raises(lw.InvalidRecord, match="'cancel_by' is a required property"):
        lw.encode({k: v for k, v in cancel.items() if k != "cancel_by"})


def test_a_torn_last_line_is_reported_and_never_corrupts_the_rest(tmp_path: Path) -> None:
    path = tmp_path / layout.LEDGER_FILE
    path.parent.mkdir()
    complete = [lw.encode(r) for r in chain("L-000001")]
    torn = lw.encode(intent("L-000002"))[:57]
    path.write_text("\n".join(complete) + "\n" + torn)  # a crash mid-append: no newline
    lw.append(
        tmp_path, [intent("L-000003"), lw.result_record(ledger_id="L-000003", time=T0, job_id="9")]
    )
    read = ledger.read(tmp_path)
    assert sorted(read.by_id) == ["L-000001", "L-000003"]
    assert read.by_id["L-000001"].state == "FAILED"
    assert read.by_id["L-000003"].job_id == "9"
    assert read.skipped == (ledger.Skipped(line=4, reason="not valid JSON", last=False),)
    assert path.read_text().split("\n")[3] == torn


def test_an_invalid_record_writes_nothing(tmp_path: Path) -> None:
    lw.append(tmp_path, [intent("L-000001")])
    before = (tmp_path / layout.LEDGER_FILE).read_bytes()
    bad_stage = intent("L-000002") | {"stage": "prod"}
    with pytest.raises(lw.InvalidRecord, match="L-000002"):
        lw.append(tmp_path, [intent("L-000003"), bad_stage])
    # The schema's number type lets NaN through (NaN < 0 is false); JSON cannot hold it.
    nan = lw.result_record(ledger_id="L-000004", time=T0, job_id="1") | {
        "queue_wait_s": float("nan")
    }
    with pytest.raises(lw.InvalidRecord, match="NaN"):
        lw.append(tmp_path, [nan])
    assert (tmp_path / layout.LEDGER_FILE).read_bytes() == before


def _append_many(root: str, worker: int) -> None:
    for n in range(50):
        lid = f"L-w{worker}-{n:04d}"
        lw.append(
            Path(root), [intent(lid), lw.result_record(ledger_id=lid, time=T0, job_id=str(n))]
        )


def test_concurrent_submissions_from_processes_never_interleave(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(str(tmp_path), w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert [p.exitcode for p in procs] == [0] * 4
    read = ledger.read(tmp_path)
    assert read.skipped == ()
    assert len(read.jobs) == 200
    assert all(j.kind == "result" and j.stage == "smoke" for j in read.jobs)
