"""`campaign split` through the CLI: the part files, the report, the refusals."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from campaignops import cli
from campaignops.model import queuefile, queueparts
from tests.conftest import Result

QUEUE = """\
# The ablation queue.
configs/det/big.yaml detection 50
configs/rec/a.yaml reconstruction 20
configs/rec/b.yaml reconstruction 20
configs/seg/c.yaml segmentation 30
configs/seg/d.yaml segmentation 10
configs/rec/e.yaml reconstruction 20
"""
HEADER = (
    "# Part {i} of 2 of queues/ablation.txt, made by `campaign split -n 2 --cost epochs`.\n"
    "# One cell per line, `<cfg_path> <task> [epochs]`; while a queue runs, only append\n"
    "# lines or comment one out in place (QUEUE004).\n"
)
# 150 epochs, no subset sums to 75: 80 + 70 is the best split. Lines keep the queue's order.
PART1 = HEADER.format(i=1) + (
    "configs/det/big.yaml detection 50\n"
    "configs/rec/b.yaml reconstruction 20\n"
    "configs/seg/d.yaml segmentation 10\n"
)
PART2 = HEADER.format(i=2) + (
    "configs/rec/a.yaml reconstruction 20\n"
    "configs/seg/c.yaml segmentation 30\n"
    "configs/rec/e.yaml reconstruction 20\n"
)


@pytest.fixture
def queues(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "queues").mkdir()
    (tmp_path / "queues/ablation.txt").write_text(QUEUE)
    return tmp_path / "queues"


def test_split_writes_balanced_parts_and_reports_makespan_and_bound(queues: Path, run) -> None:  # type: ignore[no-untyped-def]
    done: Result = run("split", "queues/ablation.txt", "-n", "2")
    assert (done.code, done.err) == (0, "")
    assert done.out == (
        "queues/ablation.txt: 6 cell(s), cost in epochs, into 2 queues\n"
        "  queues/ablation.part1of2.txt     3 cell(s)  80 epochs\n"
        "  queues/ablation.part2of2.txt     3 cell(s)  70 epochs\n"
        "makespan 80 epochs; lower bound 75 = max(total 150 / 2, largest cell 50); "
        "1.067 x the bound\n"
        "wrote queues/ablation.part1of2.txt, queues/ablation.part2of2.txt\n"
    )
    assert (queues / "ablation.part1of2.txt").read_text() == PART1
    assert (queues / "ablation.part2of2.txt").read_text() == PART2


def test_json_is_bound_makespan_and_each_queue_with_its_lines(queues: Path, run) -> None:  # type: ignore[no-untyped-def]
    done = run("split", "queues/ablation.txt", "-n", "2", "--format", "json")
    assert done.code == 0, done.err
    assert json.loads(done.out) == {
        "schema": "campaignops/split/v1",
        "bound": 75,
        "makespan": 80,
        "queues": [
            {
                "path": "queues/ablation.part1of2.txt",
                "cost": 80,
                "lines": [
                    "configs/det/big.yaml detection 50",
                    "configs/rec/b.yaml reconstruction 20",
                    "configs/seg/d.yaml segmentation 10",
                ],
            },
            {
                "path": "queues/ablation.part2of2.txt",
                "cost": 70,
                "lines": [
                    "configs/rec/a.yaml reconstruction 20",
                    "configs/seg/c.yaml segmentation 30",
                    "configs/rec/e.yaml reconstruction 20",
                ],
            },
        ],
        "dry_run": False,
        "written": ["queues/ablation.part1of2.txt", "queues/ablation.part2of2.txt"],
    }


def test_the_same_split_again_is_fine_and_writes_nothing(queues: Path, run) -> None:  # type: ignore[no-untyped-def]
    assert run("split", "queues/ablation.txt", "-n", "2").code == 0
    again = run("split", "queues/ablation.txt", "-n", "2")
    assert again.code == 0, again.err
    assert again.out.endswith("the parts already hold this split: nothing written\n")


def test_a_part_with_other_content_is_never_overwritten(queues: Path, run) -> None:  # type: ignore[no-untyped-def]
    (queues / "ablation.part2of2.txt").write_text("configs/rec/a.yaml reconstruction 20\n")
    refused = run("split", "queues/ablation.txt", "-n", "2")
    assert refused.code == 2
    assert refused.err == (
        "campaign: error: queues/ablation.part2of2.txt already exist(s) with other content: "
        "a queue an instance may be reading is never overwritten\n"
        "  hint: write elsewhere with --out-dir DIR, or delete the old parts once no instance "
        "runs them\n"
    )
    # Nothing written, not even the part that did not exist.
    assert not (queues / "ablation.part1of2.txt").exists()
    assert (
        queues / "ablation.part2of2.txt"
    ).read_text() == "configs/rec/a.yaml reconstruction 20\n"
    elsewhere = run("split", "queues/ablation.txt", "-n", "2", "--out-dir", "queues/v2")
    assert elsewhere.code == 0, elsewhere.err
    assert (queues / "v2/ablation.part1of2.txt").read_text() == PART1


def test_dry_run_prints_the_split_and_writes_nothing(queues: Path, run) -> None:  # type: ignore[no-untyped-def]
    done = run("split", "queues/ablation.txt", "-n", "3", "--dry-run")
    assert done.code == 0, done.err
    assert "makespan 50 epochs; lower bound 50" in done.out
    assert done.out.endswith("dry run: nothing written\n")
    assert sorted(p.name for p in queues.iterdir()) == ["ablation.txt"]


@pytest.mark.parametrize(
    ("args", "text", "message"),
    [
        (("-n", "0"), QUEUE, "-n 0: the number of queues must be at least 1"),
        (("-n", "7"), QUEUE, "-n 7 queues for 6 cell(s): at least one queue would be empty"),
        (
            ("-n", "2"),
            "c/a.yaml t 5\nc/b.yaml t\n",
            "line(s) 2 give no epochs, others do: a cell without epochs runs the work's own "
            "default, which campaign split cannot see",
        ),
        (
            ("-n", "2"),
            "c/a.yaml t 5\nc/b.yaml\tt\n",
            "queues/ablation.txt: line 2, column 9: a TAB in the line; fields are separated by "
            "spaces only",
        ),
        (
            ("-n", "2"),
            "c/a.yaml t 5\nd/a.yml t 6\n",
            "queues/ablation.txt: lines 1 and 2 are both cell 'a': two instances would write "
            "the same outputs",
        ),
        (
            ("-n", "2", "--cost", "history"),
            QUEUE,
            "queues/ablation.txt is in no campaign (no campaign.yaml above it): --cost "
            "history reads the campaign's ledger",
        ),
    ],
)
def test_bad_input_is_refused_with_exit_2(  # type: ignore[no-untyped-def]
    queues: Path, run, args: tuple[str, ...], text: str, message: str
) -> None:
    (queues / "ablation.txt").write_text(text)
    refused = run("split", "queues/ablation.txt", *args)
    assert refused.code == 2
    assert refused.err.startswith(f"campaign: error: {message}\n")
    assert sorted(p.name for p in queues.iterdir()) == ["ablation.txt"]


def test_a_missing_queue_file_is_exit_2(queues: Path, run) -> None:  # type: ignore[no-untyped-def]
    refused = run("split", "queues/nope.txt", "-n", "2")
    assert refused.code == 2
    assert refused.err.startswith("campaign: error: queues/nope.txt: cannot read: ")


def test_default_epochs_counts_the_lines_without_epochs(queues: Path, run) -> None:  # type: ignore[no-untyped-def]
    (queues / "ablation.txt").write_text("c/a.yaml t 5\nc/b.yaml t\nc/c.yaml t\n")
    done = run("split", "queues/ablation.txt", "-n", "2", "--default-epochs", "4")
    assert done.code == 0, done.err
    assert "  note: 2 line(s) without epochs counted as --default-epochs 4\n" in done.out
    assert "makespan 8 epochs; lower bound 6.5" in done.out
    assert "no split of these cells does better than 8 epochs" in done.out
    part = (queues / "ablation.part1of2.txt").read_text()
    assert part.startswith(
        "# Part 1 of 2 of queues/ablation.txt, made by "
        "`campaign split -n 2 --cost epochs --default-epochs 4`.\n"
    )


def test_split_has_help() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "campaignops", "split", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0
    assert "usage: campaign split" in proc.stdout
    assert "--default-epochs" in proc.stdout and "exit codes: 0 split" in proc.stdout


def test_an_out_dir_that_is_a_file_is_exit_2(queues: Path, run) -> None:  # type: ignore[no-untyped-def]
    (queues / "taken").write_text("a file\n")
    refused = run("split", "queues/ablation.txt", "-n", "2", "--out-dir", "queues/taken")
    assert refused.code == 2
    assert refused.err.startswith("campaign: error: queues/taken: cannot ")


LINES = st.sampled_from(
    [
        "c/a.yaml t 5",
        "c/b.yaml t 12",
        "c/c.yaml t",
        "d/a.yaml t 3",
        "# comment",
        "",
        "c/e.yaml\tt 1",
        "c/f.yaml t 0",
        "/abs.yaml t 1",
        "c/g.yaml t 999999999",
        "c/h.yaml",
        "c/i.yaml t 1 # note",
        "c/j.yaml  t  7",
    ]
)


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(LINES | st.text(max_size=20), max_size=14),
    k=st.integers(min_value=-1, max_value=8),
    default=st.sampled_from([None, "1", "4"]),
)
def test_any_queue_file_is_split_or_refused_never_a_traceback(
    lines: list[str], k: int, default: str | None
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        queue = Path(tmp) / "q.txt"
        queue.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogateescape")
        argv = ["split", str(queue), f"-n{k}", "--out-dir", str(Path(tmp) / "parts")]
        argv += ["--default-epochs", default] if default else []
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(argv)
        assert code in (0, 2), err.getvalue()
        if code == 2:
            assert err.getvalue().startswith("campaign: error: ")
            assert not (Path(tmp) / "parts").exists()
            return
        source = queuefile.parse(queue.read_text(encoding="utf-8", errors="surrogateescape"))
        parts = sorted((Path(tmp) / "parts").iterdir())
        assert len(parts) == k
        split = [c for p in parts for c in queuefile.parse(p.read_text()).cells]
        assert sorted(map(queueparts.cell_line, split)) == sorted(
            map(queueparts.cell_line, source.cells)
        )


def test_history_reads_the_campaign_of_the_queue_not_of_the_working_directory(
    campaign: Path, run, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    # From outside the campaign: the ledger and the header's path are the queue's campaign's.
    monkeypatch.chdir(campaign.parent)
    refused = run("split", "campaign/queues/example.txt", "-n", "2", "--cost", "history")
    assert refused.code == 2
    assert refused.err.startswith("campaign: error: none of the 2 cell(s) has a finished run")
    done = run("split", "campaign/queues/example.txt", "-n", "2", "--default-epochs", "20")
    assert done.code == 0, done.err
    part = (campaign / "queues/example.part1of2.txt").read_text()
    assert part.startswith("# Part 1 of 2 of queues/example.txt, made by ")


def test_a_file_name_cannot_break_the_report_into_lines(queues: Path, run) -> None:  # type: ignore[no-untyped-def]
    (queues / "x\n::error::forged.txt").write_text(QUEUE)
    done = run("split", "queues/x\n::error::forged.txt", "-n", "2")
    assert done.code == 0, done.err
    assert not any(line.startswith("::") for line in done.out.splitlines())
    assert done.out.startswith("queues/x\\n::error::forged.txt: 6 cell(s)")
