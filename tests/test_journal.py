"""The append-only journal: concurrent appends stay whole, torn lines never merge."""

from __future__ import annotations

import multiprocessing
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from campaignops.core import journal

if TYPE_CHECKING:
    from multiprocessing.synchronize import Event

WORKERS = 8
LINES = 200
# Long enough that an interleaved write would split a line across two others.
PAD = "x" * 300
LINE = re.compile(rf"(?P<w>[0-9]+):(?P<i>[0-9]+):{PAD}\Z")


def _append_many(path: str, worker: int, start: Event) -> None:
    start.wait()
    for i in range(LINES):
        if i % 10 == 0 and i + 1 < LINES:
            continue  # written with the next line, as a batch of two
        lines = [f"{worker}:{i}:{PAD}"]
        if i % 10 == 1:
            lines.insert(0, f"{worker}:{i - 1}:{PAD}")
        journal.append_lines(Path(path), lines)


def test_concurrent_appends_lose_and_interleave_nothing(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "ledger.jsonl"
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=_append_many, args=(str(path), w, start)) for w in range(WORKERS)]
    for proc in procs:
        proc.start()
    start.set()
    for proc in procs:
        proc.join(timeout=120)
        assert proc.exitcode == 0

    lines, torn = journal.read_lines(path)
    assert torn is None
    assert len(lines) == WORKERS * LINES
    seen: dict[int, list[int]] = {}
    for line in lines:
        match = LINE.match(line)
        assert match, f"damaged line {line[:60]!r}"
        seen.setdefault(int(match["w"]), []).append(int(match["i"]))
    # Each writer's lines arrive whole and in its own order.
    assert seen == {w: list(range(LINES)) for w in range(WORKERS)}
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644 & ~mask


def test_torn_last_line_is_reported_and_never_merged(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    journal.append_lines(path, ["one", "two"])
    with path.open("ab") as fh:
        fh.write(b'{"half": ')  # a writer that died mid-line
    assert journal.read_lines(path) == (["one", "two"], '{"half": ')

    journal.append_lines(path, ["three"])
    assert path.read_bytes() == b'one\ntwo\n{"half": \nthree\n'
    assert journal.read_lines(path) == (["one", "two", '{"half": ', "three"], None)


def test_missing_file_reads_empty_and_first_append_creates_it(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "journal"
    assert journal.read_lines(path) == ([], None)
    journal.append_lines(path, [])
    assert not path.exists()
    journal.append_lines(path, ["first"])
    assert path.read_text(encoding="utf-8") == "first\n"


def test_lines_with_line_breaks_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    with pytest.raises(ValueError, match="line break"):
        journal.append_lines(path, ["ok", "two\nlines"])
    with pytest.raises(ValueError, match="line break"):
        journal.append_lines(path, ["cr\r"])
    assert not path.exists()


def test_unicode_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    journal.append_lines(path, ["ångström 计算", ""])
    assert journal.read_lines(path) == (["ångström 计算", ""], None)
