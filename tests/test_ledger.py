"""Reading the ledger: records folded by ledger_id, sorted by submission, damage skipped."""

from __future__ import annotations

import json
from pathlib import Path

from campaignops.model import ledger

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def line(**fields: object) -> str:
    return json.dumps({"v": 1, **fields})


INTENT = line(
    kind="intent",
    ledger_id="L-000001",
    time="2026-11-01T10:00:00Z",
    backend="local",
    stage="smoke",
    targets=["a"],
    fingerprint="sha256:" + "0" * 64,
    commit=COMMIT,
    manifest="manifests/smoke.yaml",
)
RESULT = line(
    kind="result",
    ledger_id="L-000001",
    time="2026-11-01T10:00:05Z",
    job_id="101",
    submitted="2026-11-01T10:00:05Z",
    state="PENDING",
)
STATE = line(
    kind="state",
    ledger_id="L-000001",
    time="2026-11-01T10:05:00Z",
    job_id=None,  # a null never erases what an earlier record said
    state="COMPLETED",
    exit_code=0,
    started="2026-11-01T10:01:05Z",
    ended="2026-11-01T10:03:10Z",
)


def test_intent_result_and_state_fold_into_one_job() -> None:
    parsed = ledger.parse("\n".join([INTENT, RESULT, STATE]) + "\n")

    assert parsed.skipped == ()
    (job,) = parsed.jobs
    assert job.ledger_id == "L-000001"
    assert job.kind == "state"
    assert job.job_id == "101"
    assert job.state == "COMPLETED"
    assert job.exit_code == 0
    assert (job.stage, job.backend, job.targets, job.commit) == ("smoke", "local", ("a",), COMMIT)
    assert job.first_line == 1
    assert job.first_time == "2026-11-01T10:00:00Z"
    assert job.queue_wait() == 60.0
    assert job.run_time() == 125.0
    assert parsed.by_id["L-000001"] is job


def test_recorded_durations_win_over_timestamps() -> None:
    extra = line(
        kind="state",
        ledger_id="L-000001",
        time="2026-11-01T10:06:00Z",
        queue_wait_s=7,
        run_time_s=8.5,
    )
    (job,) = ledger.parse("\n".join([INTENT, RESULT, STATE, extra])).jobs
    assert (job.queue_wait(), job.run_time()) == (7.0, 8.5)


def test_jobs_sort_by_submission_instant_then_ledger_id() -> None:
    def submitted(lid: str, when: str | None, time: str) -> str:
        return line(kind="result", ledger_id=lid, time=time, submitted=when)

    text = "\n".join(
        [
            # Later as text, earlier as an instant (+02:00): sorts first.
            submitted("L-late-text", "2026-11-01T11:30:00+02:00", "2026-11-01T09:30:00Z"),
            submitted("L-b-tied", "2026-11-01T10:00:00Z", "2026-11-01T10:00:00Z"),
            submitted("L-a-tied", "2026-11-01T10:00:00Z", "2026-11-01T10:00:00Z"),
            # No submission time yet: the first record's time stands in.
            line(kind="intent", ledger_id="L-intent", time="2026-11-01T10:30:00Z"),
            submitted("L-undated", "yesterday", "not a time"),
        ]
    )
    order = [j.ledger_id for j in ledger.parse(text).jobs]
    assert order == ["L-late-text", "L-a-tied", "L-b-tied", "L-intent", "L-undated"]


def test_torn_last_line_is_skipped_and_reported() -> None:
    torn = RESULT[: len(RESULT) // 2]
    parsed = ledger.parse(f"{INTENT}\n{torn}")

    (job,) = parsed.jobs
    assert job.kind == "intent"
    assert job.job_id is None
    assert parsed.skipped == (ledger.Skipped(line=2, reason="not valid JSON", last=True),)


def test_every_cut_of_the_last_record_leaves_the_jobs_as_they_were() -> None:
    before = ledger.parse(f"{INTENT}\n{RESULT}\n").jobs
    for cut in range(1, len(STATE)):
        parsed = ledger.parse(f"{INTENT}\n{RESULT}\n{STATE[:cut]}")
        assert parsed.jobs == before, cut
        assert [(s.line, s.last) for s in parsed.skipped] == [(3, True)], cut


def test_complete_record_without_its_newline_is_read() -> None:
    (job,) = ledger.parse(f"{INTENT}\n{RESULT}").jobs
    assert job.job_id == "101"


def test_damaged_lines_in_the_middle_are_skipped_not_fatal() -> None:
    text = "\n".join(
        [INTENT, "{torn", "", "[1, 2]", json.dumps({"v": 1, "kind": "state"}), RESULT, STATE]
    )
    parsed = ledger.parse(text + "\n")

    assert [j.state for j in parsed.jobs] == ["COMPLETED"]
    assert parsed.skipped == (
        ledger.Skipped(line=2, reason="not valid JSON", last=False),
        ledger.Skipped(line=4, reason="not a JSON object", last=False),
        ledger.Skipped(line=5, reason="record has no ledger_id", last=False),
    )


def test_wrongly_typed_fields_read_as_unknown() -> None:
    odd = line(
        kind="result",
        ledger_id="L-000001",
        time="x",
        job_id=7,
        exit_code=True,
        targets="a",
        queue_wait_s=-3,
    )
    (job,) = ledger.parse(odd).jobs
    assert (job.job_id, job.exit_code, job.targets, job.queue_wait()) == (None, None, (), None)


def test_read_missing_ledger_is_empty(tmp_path: Path) -> None:
    assert ledger.read(tmp_path) == ledger.Ledger()


def test_read_folds_the_file(tmp_path: Path) -> None:
    (tmp_path / ".campaign").mkdir()
    (tmp_path / ".campaign" / "ledger.jsonl").write_text(f"{INTENT}\n{RESULT}\n")
    assert [j.job_id for j in ledger.read(tmp_path).jobs] == ["101"]


def test_a_write_torn_inside_a_character_spoils_only_its_line(tmp_path: Path) -> None:
    (tmp_path / ".campaign").mkdir()
    torn = json.dumps(
        {"v": 1, "kind": "state", "ledger_id": "L-000001", "error": "é"}, ensure_ascii=False
    ).encode()
    torn = torn[: torn.index("é".encode()) + 1]  # half of the two-byte character
    data = b"\xef\xbb\xbf" + f"{INTENT}\n{RESULT}\n".encode() + torn
    (tmp_path / ".campaign" / "ledger.jsonl").write_bytes(data)

    parsed = ledger.read(tmp_path)

    assert [j.job_id for j in parsed.jobs] == ["101"]
    assert parsed.skipped == (ledger.Skipped(line=3, reason="not valid UTF-8", last=True),)
