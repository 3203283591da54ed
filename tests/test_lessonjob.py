"""campaignops.learn.lesson_job: which job and task a ``--job`` names, and its diagnosed entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from campaignops.core.errors import UsageError
from campaignops.learn import lesson_job as lessonjob
from campaignops.model import ledger


def history(tmp_path: Path, *records: dict[str, object]) -> ledger.Ledger:
    path = tmp_path / ".campaign" / "ledger.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return ledger.read(tmp_path)


def intent(lid: str, job_id: str, targets: list[str], **more: object) -> dict[str, object]:
    return {
        "v": 1,
        "kind": "intent",
        "ledger_id": lid,
        "time": "2026-11-24T10:00:00Z",
        "job_id": job_id,
        "targets": targets,
        **more,
    }


def diag(entry: str) -> dict[str, object]:
    return {"state": "FAILED", "exit_code": 1, "diagnosis": {"entry": entry, "category": "x"}}


@pytest.fixture
def jobs(tmp_path: Path) -> ledger.Ledger:
    return history(
        tmp_path,
        intent(
            "L1",
            "4242",
            ["a", "b", "c"],
            tasks={"0": diag("cuda-oom"), "1": diag("disk-full"), "2": {"state": "COMPLETED"}},
        ),
        intent("L2", "77", ["solo"], state="FAILED", diagnosis={"entry": "nan-loss"}),
        intent("L3", "88", ["p", "q"], tasks={"1": diag("cuda-oom")}),
        intent("L4", "99[].pbs1", ["p", "q"], tasks={"1": diag("nan-loss")}),
        intent("L5", "5", ["x"]),
        intent("L6", "5", ["y"]),
    )


def test_a_task_gives_its_own_diagnosis(jobs: ledger.Ledger) -> None:
    ref = lessonjob.find_job(jobs, "4242_1")
    assert ref == lessonjob.JobRef(label="4242_1", ledger_id="L1", index=1, entries=("disk-full",))
    assert lessonjob.entry_of(ref) == "disk-full"
    assert lessonjob.entry_of(lessonjob.find_job(jobs, "4242_2")) == "new"


def test_a_whole_job_with_one_diagnosis(jobs: ledger.Ledger) -> None:
    assert lessonjob.entry_of(lessonjob.find_job(jobs, "77")) == "nan-loss"
    assert lessonjob.entry_of(lessonjob.find_job(jobs, "88")) == "cuda-oom"


def test_a_ledger_id_is_labelled_with_its_job_id(jobs: ledger.Ledger) -> None:
    ref = lessonjob.find_job(jobs, "L2")
    assert (ref.label, ref.index, ref.entries) == ("77", None, ("nan-loss",))


def test_a_pbs_subjob(jobs: ledger.Ledger) -> None:
    ref = lessonjob.find_job(jobs, "99[1].pbs1")
    assert (ref.label, ref.ledger_id, ref.index, ref.entries) == (
        "99[1].pbs1",
        "L4",
        1,
        ("nan-loss",),
    )


def test_several_diagnoses_are_ambiguous(jobs: ledger.Ledger) -> None:
    ref = lessonjob.find_job(jobs, "4242")
    assert ref.entries == ("cuda-oom", "disk-full")
    with pytest.raises(UsageError, match="diagnosed as cuda-oom, disk-full") as exc:
        lessonjob.entry_of(ref)
    assert exc.value.hint == "name one task (4242_INDEX) or pass --entry ID"


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("nope", "no job 'nope' in the ledger"),
        ("4242_3", "job 4242 has 3 task(s); no task 3"),
        ("5", "job id '5' is recorded 2 times: L5 (None), L6 (None)"),
    ],
)
def test_unknown_or_ambiguous_jobs_are_usage_errors(
    jobs: ledger.Ledger, ref: str, message: str
) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        lessonjob.find_job(jobs, ref)
