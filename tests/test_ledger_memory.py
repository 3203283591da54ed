"""The ledger's in-memory form stays compact (issue 22): a cold read (no snapshot: a fresh
clone, a merge of another clone's ledger) of a year of jobs peaked at ~440 MiB for 100,000
records, eight times the file. Not timed: memory is measured with tracemalloc, and the
structure that keeps it small (packed jobs with slots, an index built without keeping every
record decoded, packing as the fold goes) is checked as structure."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from campaignops.model import ledger, ledger_fold, ledger_snapshot
from campaignops.model.ledger_packed import Packed

FP = "sha256:" + "ab" * 32
TARGETS = ["alpha", "beta", "gamma", "delta"]
JOBS = 2000  # 8,000 records, ~3.3 MB: past SNAPSHOT_AFTER, so the cold read writes one


def smoke(n: int) -> Iterator[dict[str, Any]]:
    """One finished 4-task smoke in four records, as an agent's day writes dozens."""
    lid, job_id = f"L{n:06d}", f"local-{n}"
    when = f"2026-01-{1 + n // 1440 % 28:02d}T{n // 60 % 24:02d}:{n % 60:02d}:00Z"
    head = {"v": 1, "ledger_id": lid, "time": when}
    yield head | {
        "kind": "intent",
        "stage": "smoke",
        "backend": "local",
        "targets": TARGETS,
        "fingerprint": FP,
        "fingerprints": dict.fromkeys(TARGETS, FP),
        "manifest": "manifests/example.yaml",
        "array": "0-3",
    }
    yield head | {"kind": "result", "job_id": job_id, "submitted": when, "state": "PENDING"}
    done = {"state": "COMPLETED", "started": when, "ended": when, "exit_code": 0}
    for first, state in ((0, "RUNNING"), (2, "COMPLETED")):
        tasks = {str(i): done | {"run_time_s": 60.0 + i} for i in (first, first + 1)}
        yield head | {"kind": "state", "job_id": job_id, "state": state, "tasks": tasks}


def text(jobs: int) -> str:
    return "".join(json.dumps(r) + "\n" for n in range(jobs) for r in smoke(n))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()  # where the snapshot is kept
    (tmp_path / ".campaign").mkdir()
    return tmp_path


def cold_read(root: Path) -> tuple[ledger.Ledger, int]:
    """The ledger read as after a fresh clone (no snapshot, nothing kept in the process), and
    the peak of Python's allocations while reading it."""
    ledger_snapshot.forget()
    tracemalloc.start()
    try:
        read = ledger.read(root)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return read, peak


def test_a_cold_read_peaks_at_a_few_times_the_ledgers_size(root: Path) -> None:
    data = text(JOBS)
    (root / ".campaign/ledger.jsonl").write_text(data)
    read, peak = cold_read(root)
    assert len(read.jobs) == JOBS
    assert (root / ".git" / ledger_snapshot.SNAPSHOT_FILE).is_file(), "the snapshot was written"
    # The file's bytes are held once (to hash, and to compare after an append); the fold, the
    # index and the snapshot's writing stay under three times as much again. Before issue 22's
    # memory work the peak was ~8 times the file (its text, its list of lines, a dict of
    # strings per record, the snapshot joined in memory twice).
    assert peak <= 4 * len(data), f"peak {peak:,} bytes for a {len(data):,}-byte ledger"


def test_jobs_are_kept_packed_and_the_index_leaves_none_decoded(root: Path) -> None:
    (root / ".campaign/ledger.jsonl").write_text(text(50))
    read, _ = cold_read(root)
    records = [job.record for job in read.jobs]
    assert all(isinstance(r, Packed) for r in records)
    assert not any(r.decoded for r in records), "building the index kept records decoded"
    assert not hasattr(records[0], "__dict__"), "a packed job has slots, no per-object dict"
    assert read.jobs[0].targets == tuple(TARGETS)  # a look into a job decodes that one
    assert [r.decoded for r in records[:2]] == [True, False]


def test_packing_while_folding_gives_exactly_the_fold_of_the_whole_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Jobs whose records interleave across packing windows: packed, then unpacked and updated.
    records = [r for n in range(30) for r in smoke(n)]
    mixed = records[0::2] + records[1::2]
    whole = "".join(json.dumps(r) + "\n" for r in mixed)
    expected = [(j.ledger_id, dict(j.record)) for j in ledger.parse(whole).jobs]
    monkeypatch.setattr(ledger_fold, "PACK_EVERY", 3)
    folded = [(j.ledger_id, dict(j.record)) for j in ledger.parse(whole).jobs]
    assert folded == expected
    assert len(expected) == 30
