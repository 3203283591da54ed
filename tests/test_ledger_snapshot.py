"""Reading the ledger at any size: the per-process memo and the snapshot of the folded prefix
give exactly the fold of the whole file, are never used stale, and leave torn tails alone."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from campaignops.core import files
from campaignops.core.errors import InputError
from campaignops.model import ledger, ledger_snapshot

LEDGER = ".campaign/ledger.jsonl"


def rec(kind: str, lid: str, minute: int, **fields: Any) -> str:
    head = {"v": 1, "kind": kind, "ledger_id": lid, "time": f"2026-11-01T10:{minute:02d}:00Z"}
    return json.dumps(head | fields)


def history() -> list[str]:
    """Jobs whose records interleave: arrays with per-task records merged field by field,
    nulls that must not erase, a job whose targets change, damaged lines in the middle."""
    lines: list[str] = []
    for n in range(6):
        lid = f"L-{n:03d}"
        targets = [f"t{n}-{i}" for i in range(4)]
        lines.append(rec("intent", lid, n, stage="smoke", targets=targets, fingerprints={"t": "x"}))
    for n in range(6):
        lid = f"L-{n:03d}"
        lines.append(rec("result", lid, 10 + n, job_id=f"local-{n}", state="PENDING"))
        lines.append(rec("state", lid, 20 + n, state="RUNNING", tasks={"0": {"state": "RUNNING"}}))
        if n == 2:
            lines.append("{not json")
            lines.append(b"\xff\xfe broken".decode("utf-8", "surrogateescape"))
            lines.append(json.dumps({"v": 1, "kind": "state"}))  # no ledger_id
            lines.append("")
        lines.append(
            rec(
                "state",
                lid,
                30 + n,
                state="COMPLETED",
                exit_code=0,
                job_id=None,
                tasks={
                    "0": {"state": "COMPLETED", "exit_code": 0, "reason": None},
                    "1": {"state": "FAILED", "exit_code": 3},
                },
            )
        )
        lines.append(rec("state", lid, 40 + n, tasks={"1": {"signature": "boom"}}))
    return lines


def encode(lines: list[str]) -> bytes:
    return "".join(f"{x}\n" for x in lines).encode("utf-8", "surrogateescape")


def canonical(read: ledger.Ledger) -> Any:
    return (
        [
            (j.ledger_id, json.loads(json.dumps(dict(j.record))), j.first_line, j.first_time)
            for j in read.jobs
        ],
        read.skipped,
    )


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".campaign").mkdir()
    yield tmp_path
    ledger_snapshot.forget()


@pytest.fixture
def eager(monkeypatch: pytest.MonkeyPatch) -> None:
    """Snapshot after every read that parsed a line (the real threshold is 2,000 lines)."""
    monkeypatch.setattr(ledger_snapshot, "SNAPSHOT_AFTER", 1)


def write(root: Path, data: bytes) -> None:
    (root / LEDGER).write_bytes(data)


def snapshot(root: Path) -> Path:
    return root / ".git" / ledger_snapshot.SNAPSHOT_FILE


def fresh_read(root: Path) -> ledger.Ledger:
    """As a new command would read it: nothing kept in this process."""
    ledger_snapshot.forget()
    return ledger.read(root)


@pytest.mark.usefixtures("eager")
def test_a_snapshot_and_the_tail_fold_exactly_as_the_whole_file(root: Path) -> None:
    lines = history()
    whole = canonical(ledger.parse(ledger.decode(encode(lines))))
    assert whole[1], "the history has skipped lines to carry through the snapshot"
    for cut in range(len(lines) + 1):
        snapshot(root).unlink(missing_ok=True)
        write(root, encode(lines[:cut]))
        assert canonical(fresh_read(root)) == canonical(
            ledger.parse(ledger.decode(encode(lines[:cut])))
        )
        assert snapshot(root).exists() == (cut > 0)
        write(root, encode(lines))  # the rest appended by another command
        assert canonical(fresh_read(root)) == whole, f"cut after line {cut}"


@pytest.mark.usefixtures("eager")
def test_one_process_continues_its_fold_after_an_append_and_old_ledgers_stay_as_read(
    root: Path,
) -> None:
    lines = history()
    write(root, encode(lines[:9]))
    before = ledger.read(root)
    kept = canonical(before)
    write(root, encode(lines))
    after = ledger.read(root)
    assert canonical(after) == canonical(ledger.parse(ledger.decode(encode(lines))))
    assert canonical(before) == kept, "a Ledger already returned never changes"
    assert ledger.read(root) is after, "an unchanged file is not read again"


def test_a_snapshot_is_used_only_while_the_bytes_it_covers_are_the_ledgers(
    root: Path, eager: None
) -> None:
    lines = history()
    write(root, encode(lines))
    fresh_read(root)
    # The same size, an earlier byte changed (a merge, a checkout, an edit): not this fold.
    edited = [x.replace('"COMPLETED"', '"CANCELLED"') for x in lines]
    assert len(encode(edited)) == len(encode(lines))
    write(root, encode(edited))
    read = fresh_read(root)
    assert canonical(read) == canonical(ledger.parse(ledger.decode(encode(edited))))
    assert {j.state for j in read.jobs} == {"CANCELLED"}


def test_a_rewrite_within_the_clock_tick_is_seen_by_the_same_process(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two writes of one size within one tick of the file system's clock leave the same size
    # and times (not reproducible on demand: the file's identity is pinned instead).
    monkeypatch.setattr(ledger_snapshot, "_identity", lambda status: (1, 2, 3))
    lines = history()
    write(root, encode(lines))
    assert {j.state for j in ledger.read(root).jobs} == {"COMPLETED"}
    edited = [x.replace('"COMPLETED"', '"CANCELLED"') for x in lines]
    write(root, encode(edited))
    assert {j.state for j in ledger.read(root).jobs} == {"CANCELLED"}


def test_a_file_unchanged_for_a_while_is_trusted_by_its_identity(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ledger_snapshot, "_identity", lambda status: (1, 2, 3))
    later = time.time_ns() + 60 * 10**9  # read a minute after the last change
    monkeypatch.setattr(ledger_snapshot, "_now_ns", lambda: later)
    lines = history()
    write(root, encode(lines))
    first = ledger.read(root)
    (root / LEDGER).write_bytes(b"")  # the pinned identity says: unchanged
    assert ledger.read(root) is first


def test_a_damaged_snapshot_is_ignored(root: Path, eager: None) -> None:
    lines = history()
    write(root, encode(lines))
    fresh_read(root)
    data = bytearray(snapshot(root).read_bytes())
    at = data.index(b"COMPLETED", data.index(b"\n"))
    data[at : at + 9] = b"CANCELLED"  # same length, same JSON: only the check can tell
    snapshot(root).write_bytes(bytes(data))
    assert canonical(fresh_read(root)) == canonical(ledger.parse(ledger.decode(encode(lines))))


def test_a_torn_last_line_is_read_as_skipped_and_never_enters_the_snapshot(
    root: Path, eager: None
) -> None:
    lines = history()
    torn = rec("state", "L-000", 50, state="FAILED", exit_code=9)
    write(root, encode(lines) + torn[:25].encode())
    read = fresh_read(root)
    assert read.skipped[-1].last
    assert read.by_id["L-000"].state == "COMPLETED"
    assert b'FAILED", "exit_code": 9' not in snapshot(root).read_bytes()
    # The writer's next append starts on a fresh line; the torn fragment stays skipped.
    write(root, encode(lines) + torn[:25].encode() + b"\n" + encode([torn]))
    whole = canonical(ledger.parse(ledger.decode((root / LEDGER).read_bytes())))
    assert canonical(ledger.read(root)) == whole  # this process, going on from its fold
    read = fresh_read(root)
    assert canonical(read) == whole
    assert read.by_id["L-000"].state == "FAILED"
    assert read.by_id["L-000"].exit_code == 9
    assert [s.last for s in read.skipped][-1] is False


def test_jobs_from_a_snapshot_read_their_per_task_fields_as_the_fold_left_them(
    root: Path, eager: None
) -> None:
    write(root, encode(history()))
    fresh_read(root)
    job = fresh_read(root).by_id["L-001"]
    assert "tasks" in job.record and "error" not in job.record
    assert job.record.get("error", "none") == "none"
    failed = job.task("t1-1")
    assert failed is not None
    assert (failed.state, failed.exit_code, failed.signature) == ("FAILED", 3, "boom")
    assert list(job.record)[:3] == ["v", "kind", "ledger_id"]  # the fold's key order


def test_a_small_ledger_gets_no_snapshot(root: Path) -> None:
    write(root, encode(history()))
    fresh_read(root)
    assert not snapshot(root).exists()


def test_outside_a_git_checkout_there_is_no_snapshot_and_reading_works(
    tmp_path: Path, eager: None
) -> None:
    (tmp_path / ".campaign").mkdir()
    write(tmp_path, encode(history()))
    assert canonical(fresh_read(tmp_path)) == canonical(
        ledger.parse(ledger.decode(encode(history())))
    )
    assert not (tmp_path / ".git").exists()


def test_a_ledger_linked_out_of_the_campaign_is_refused(root: Path, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    outside = tmp_path_factory.mktemp("elsewhere") / "ledger.jsonl"
    outside.write_bytes(encode(history()))
    (root / LEDGER).symlink_to(outside)
    with pytest.raises(InputError, match="outside the campaign"):
        fresh_read(root)


def test_a_directory_in_the_ledgers_place_is_refused(root: Path) -> None:
    (root / LEDGER).mkdir()
    with pytest.raises(InputError, match="not a regular file"):
        fresh_read(root)


def test_a_ledger_over_the_file_cap_is_read_by_campaign_status(repo: Path, run) -> None:  # type: ignore[no-untyped-def]
    # Bulk lines: one finished job, then state records padded with a long reason, to 17 MiB.
    pad = "x" * 400
    first = rec("intent", "L-big", 0, stage="smoke", targets=["a"], backend="local")
    more = rec("state", "L-big", 1, job_id="local-1", state="COMPLETED", exit_code=0, reason=pad)
    count = files.MAX_BYTES // len(more) + 100
    data = (first + "\n" + (more + "\n") * count).encode()
    assert len(data) > files.MAX_BYTES
    (repo / LEDGER).write_bytes(data)
    ledger_snapshot.forget()
    status = run("status")
    assert status.code == 0, status.err
    assert "local-1" in status.out and "COMPLETED" in status.out
    check = run("check", "--select", "VIEW,EOL")
    assert "limited to" not in check.out + check.err


def test_the_snapshot_lives_in_the_git_directory_of_the_checkout_holding_the_campaign(
    tmp_path: Path, eager: None
) -> None:
    repo = tmp_path / "repo"
    camp = repo / "campaigns" / "one"  # a campaign below its repository's top
    (camp / ".campaign").mkdir(parents=True)
    identity = ("-c", "user.name=t", "-c", "user.email=t@example.org")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", *identity, "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "0"])
    write(camp, encode(history()))
    fresh_read(camp)
    assert (repo / ".git" / ledger_snapshot.SNAPSHOT_FILE).is_file()
    # A linked worktree keeps its own (its .git is a file naming its git directory).
    tree = tmp_path / "tree"
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", str(tree)], check=True)
    (tree / "campaigns/one/.campaign").mkdir(parents=True)
    write(tree / "campaigns/one", encode(history()[:20]))
    read = fresh_read(tree / "campaigns/one")
    assert canonical(read) == canonical(ledger.parse(ledger.decode(encode(history()[:20]))))
    assert (repo / ".git/worktrees/tree" / ledger_snapshot.SNAPSHOT_FILE).is_file()


def test_campaign_status_refresh_parses_each_ledger_line_once(
    repo: Path,
    run,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # refresh, the unfinished count, STATUS.md and the printed table all read the ledger; the
    # refresh appends in between: only the appended lines are parsed again.
    parsed: list[int] = []
    feed = ledger.Folding.feed

    def counting(self: ledger.Folding, text: str) -> None:
        before = self.lines
        feed(self, text)
        parsed.append(self.lines - before)

    monkeypatch.setattr(ledger.Folding, "feed", counting)
    open_job = [
        rec("intent", "L-open", 50, stage="smoke", targets=["z"], backend="local"),
        rec("result", "L-open", 51, job_id="local-77", state="PENDING"),
    ]
    write(repo, encode(history() + open_job))
    # The local backend knows local-77 as finished (an UNKNOWN answer is never recorded).
    job_dir = repo / ".campaign/local/local-77"
    job_dir.mkdir(parents=True)
    head = {"name": "z", "comment": "L-open", "submitted": "2026-11-01T10:51:00Z"}
    (job_dir / "job.json").write_text(json.dumps(head | {"timelimit": "00:10:00", "size": 1}))
    end = {"state": "COMPLETED", "exit_code": 0, "executor_pid": None}
    (job_dir / "state.json").write_text(json.dumps(end | {"tasks": [{"index": 0, **end}]}))
    ledger_snapshot.forget()
    done = run("status", "--refresh")
    assert done.code == 0, done.err
    total = (repo / LEDGER).read_bytes().count(b"\n")
    assert total > len(history()) + 2, "the refresh appended a state record"
    assert sum(parsed) == total
