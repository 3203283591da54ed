"""The ledger's per-target index (issue 22): kept with the fold and the snapshot, it answers as
the index built from the whole ledger at every point of the file, is rebuilt when the snapshot
is stale (a merge of two clones' ledgers), and the gates ask it without decoding a single
job's record."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from campaignops.model import ledger, ledger_index, ledger_snapshot
from campaignops.runner import gates

LEDGER = ".campaign/ledger.jsonl"
FP_A, FP_B = "sha256:" + "a" * 64, "sha256:" + "b" * 64


def rec(kind: str, lid: str, minute: int, **fields: Any) -> str:
    head = {"v": 1, "kind": kind, "ledger_id": lid, "time": f"2026-11-01T{minute // 60:02d}:"}
    head["time"] += f"{minute % 60:02d}:00Z"
    return json.dumps(head | fields)


def smoke(lid: str, minute: int, targets: list[str], fp: str, states: list[str]) -> list[str]:
    """A smoke array: intent, result, a running state, then each task's end."""
    tasks = {
        str(i): {"state": s, "exit_code": 0 if s == "COMPLETED" else 1}
        for i, s in enumerate(states)
    }
    return [
        rec(
            "intent",
            lid,
            minute,
            stage="smoke",
            targets=targets,
            fingerprints=dict.fromkeys(targets, fp),
            manifest="manifests/m.yaml",
        ),
        rec("result", lid, minute + 1, job_id=f"{100 + minute}", state="PENDING"),
        rec("state", lid, minute + 2, state="RUNNING"),
        rec("state", lid, minute + 3, state="FAILED", tasks=tasks),
    ]


def history() -> list[str]:
    """Targets smoked under two configs, failures of one signature, a cancel, a refused
    submission, a job still running, and a job whose submission time moves it back."""
    two = ["a", "b"]
    lines = [
        *smoke("L-01", 0, two, FP_A, ["COMPLETED", "FAILED"]),
        *smoke("L-02", 10, two, FP_A, ["FAILED", "FAILED"]),
        *smoke("L-03", 20, two, FP_B, ["FAILED", "CANCELLED"]),
        *smoke("L-04", 30, two, FP_B, ["FAILED", "FAILED"]),
        *smoke("L-04b", 35, ["a"], FP_B, ["FAILED"]),
        rec("intent", "L-05", 40, stage="single", targets=["a"], fingerprint=FP_B),
        rec("result", "L-05", 41, error="sbatch: error: invalid partition"),
        rec("intent", "L-06", 50, stage="production", targets=["a", "c"], fingerprint=FP_B),
        rec("result", "L-06", 51, job_id="200", state="PENDING", placement=[{"on": "box"}]),
        *smoke("L-07", 60, ["b", "c"], FP_B, ["FAILED", "COMPLETED"]),
        # Recorded late, submitted first: its result moves it before every other job.
        rec("intent", "L-08", 70, stage="smoke", targets=["c"], fingerprint=FP_A),
        rec("result", "L-08", 71, job_id="50", submitted="2026-10-31T00:00:00Z"),
        rec("state", "L-08", 72, state="COMPLETED", exit_code=0),
        rec("state", "L-06", 80, state="RUNNING"),
    ]
    return lines


def answers(index: ledger_index.Index, jobs: tuple[ledger.Job, ...]) -> Any:
    """Everything the gates and views ask of an index, for every target and config."""
    named = {j.ledger_id: j for j in jobs}

    def order(lid: str) -> Any:
        return named[lid].sort_key()

    out: dict[str, Any] = {"live": sorted(index.live), "counts": dict(index.counts)}
    out["placed"] = sorted(index.placed)
    for target in sorted(index.targets()):
        for fp in (FP_A, FP_B, None):
            out[f"{target} smoked {fp}"] = index.smoked(target, fp)
            out[f"{target} finished {fp}"] = index.finished(target, fp, 3, order)
        for stage in ledger.STAGES:
            out[f"{target} latest {stage}"] = index.latest(target, stage)
            out[f"{target} submitted {stage}"] = index.latest(
                target, stage, lambda lid: not named[lid].error, order
            )
    return out


def built(lines: list[str]) -> Any:
    whole = ledger.parse("".join(f"{x}\n" for x in lines))
    return answers(ledger_index.Index.build(whole.jobs), whole.jobs)


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".campaign").mkdir()
    monkeypatch.setattr(ledger_snapshot, "SNAPSHOT_AFTER", 1)  # a snapshot after every read
    yield tmp_path
    ledger_snapshot.forget()


def fresh_read(root: Path) -> ledger.Ledger:
    ledger_snapshot.forget()  # as a new command reads it
    return ledger.read(root)


def write(root: Path, lines: list[str]) -> None:
    (root / LEDGER).write_text("".join(f"{x}\n" for x in lines))


def test_the_index_kept_through_snapshot_and_tail_answers_as_one_built_from_the_whole(
    root: Path,
) -> None:
    lines = history()
    expected = built(lines)
    assert expected[f"a smoked {FP_A}"] == "L-01"
    assert [a.ledger_id for a in expected[f"b finished {FP_B}"]] == ["L-04", "L-07"], (
        "b's FP_B task in L-03 was CANCELLED"
    )
    assert expected["c latest smoke"] == "L-07", "L-08 was submitted before every other job"
    assert expected["c smoked None"] == "L-07"
    assert expected["placed"] == ["L-06"]
    assert (expected["a latest single"], expected["a submitted single"]) == ("L-05", None), (
        "the refused single is no attempt to retry"
    )
    for cut in range(len(lines) + 1):
        (root / ".git" / ledger_snapshot.SNAPSHOT_FILE).unlink(missing_ok=True)
        write(root, lines[:cut])
        fresh_read(root)  # writes the snapshot of the first ``cut`` lines
        write(root, lines)  # the rest appended by later commands
        got = fresh_read(root)
        assert got.index is not None
        assert answers(got.index, got.jobs) == expected, f"cut after line {cut}"
        assert answers(ledger.read(root).index, got.jobs) == expected  # kept in the process


def test_a_merge_of_two_clones_ledgers_rebuilds_the_index_from_the_records(root: Path) -> None:
    """Clone 1 has the history; clone 2 smoked the same targets (its lines end up in the
    middle of the merged file). The snapshot of clone 1's ledger no longer covers the merged
    file's start: the index is rebuilt, and smoke_first sees clone 2's smoke."""
    mine = history()
    theirs = smoke("L-90", 5, ["a", "b"], "sha256:" + "9" * 64, ["COMPLETED", "COMPLETED"])
    write(root, mine)
    assert fresh_read(root).index is not None
    merged = mine[:4] + theirs + mine[4:]
    write(root, merged)
    got = fresh_read(root)
    assert got.index is not None
    assert answers(got.index, got.jobs) == built(merged)
    request = gates.Request(
        campaign="c",
        manifest="manifests/m.yaml",
        stage="single",
        backend="local",
        targets=("a", "b"),
        paths=(),
    )
    verdict = gates.smoke_first(
        request,
        fingerprints={"a": "sha256:" + "9" * 64, "b": "sha256:" + "9" * 64},
        jobs=got.jobs,
        require_smoke=True,
        index=got.index,
    )
    assert verdict.passed, verdict.reason


def test_the_gates_ask_the_index_and_decode_no_jobs_record(root: Path) -> None:
    """smoke_first and the breaker on a ledger read from its snapshot: the answers of the index
    (a refusal of each), and not one job's whole record (targets, tasks) decoded for them."""
    lines = history()
    write(root, lines)
    fresh_read(root)
    got = fresh_read(root)  # every job from the snapshot, none decoded yet
    request = gates.Request(
        campaign="c",
        manifest="manifests/m.yaml",
        stage="single",
        backend="local",
        targets=("a", "b"),
        paths=(),
    )
    fps = {"a": FP_B, "b": FP_A}
    first = gates.smoke_first(
        request, fingerprints=fps, jobs=got.jobs, require_smoke=True, index=got.index
    )
    tripped = gates.breaker(request, jobs=got.jobs, fingerprints={"a": FP_B}, index=got.index)
    assert not first.passed and "for a, b (smokes of a ran an older config)" in first.reason
    assert not tripped.passed and "a (FAILED:1; jobs 120, 130, 135)" in tripped.reason
    decoded = [j.ledger_id for j in got.jobs if getattr(j.record, "_body", b"") is None]
    assert decoded == [], "the gates' answers come from the index alone"
