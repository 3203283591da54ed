from __future__ import annotations

from pathlib import Path

from campaignops.learn.diagnosis import logtext


def test_lines_split_on_carriage_returns_and_lose_colours_stamps_and_rank_prefixes() -> None:
    text = (
        " 10%|#   | 1/10\r 50%|#####| 5/10\rslurmstepd: error: *** JOB 7 ON n1 CANCELLED ***\n"
        "\x1b[31m[rank3]: RuntimeError: boom\x1b[0m\n"
        "2026-11-24 10:00:01,123 ERROR step failed\n"
        "[2026-11-24T10:00:01Z] [default0]: NCCL error\n"
        "3: srun label\n"
        "\n"
    )
    assert [(ln.number, ln.text) for ln in logtext.lines_of(text)] == [
        (1, "10%|#   | 1/10"),
        (2, "50%|#####| 5/10"),
        (3, "slurmstepd: error: *** JOB 7 ON n1 CANCELLED ***"),
        (4, "RuntimeError: boom"),
        (5, "ERROR step failed"),
        (6, "NCCL error"),
        (7, "srun label"),
    ]


def test_a_huge_line_is_cut_before_any_matcher_sees_it() -> None:
    (line,) = logtext.lines_of("x" * 100_000)
    assert len(line.text) == logtext.MAX_LINE


def test_tail_reads_the_last_lines_within_a_byte_bound(tmp_path: Path) -> None:
    log = tmp_path / "x.out"
    log.write_bytes(b"".join(b"line %d\n" % i for i in range(1000)) + b"\xff\xfe bad bytes\n")
    text = logtext.tail(log, lines=3)
    assert text.splitlines() == ["line 998", "line 999", "\ufffd\ufffd bad bytes"]
    big = tmp_path / "big.out"
    big.write_bytes(b"a" * (logtext.TAIL_BYTES * 2) + b"\nlast\n")
    assert logtext.tail(big) == "last"  # the cut first line is dropped, not half-read
