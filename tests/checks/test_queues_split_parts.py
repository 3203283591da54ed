"""QUEUE003 and the parts `campaign split` writes: a part's copy of its queue's cell is that
cell, not a second one with its name; anything else with the name still collides."""

from __future__ import annotations

from pathlib import Path

from campaignops.model import queuefile, queueparts

EXAMPLE = "queues/example.txt"  # the clean fixture's: cells 'baseline' (line 2), 'no_aug' (3)


def split_example(run) -> None:  # type: ignore[no-untyped-def]
    done = run("split", EXAMPLE, "-n", "2", "--default-epochs", "20")
    assert done.code == 0, done.err


def test_the_parts_of_a_split_queue_are_silent(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    split_example(run)
    result = run("check", "--select", "QUEUE", "--format", "json")
    assert result.code == 0, result.out
    # Passed alone, as pre-commit passes a new file, too.
    alone = run("check", "--select", "QUEUE", "--format", "json", "queues/example.part1of2.txt")
    assert alone.code == 0, alone.out


def test_a_cell_appended_to_a_part_with_a_taken_name_collides(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    split_example(run)
    part = campaign / "queues/example.part2of2.txt"
    part.write_text(part.read_text() + "configs/no_aug.yaml detection 5\n")
    result = run("check", "--select", "QUEUE", "--format", "json")
    # Reported at the later use in path order (example.part2of2.txt sorts first), naming it.
    assert result.where() == [("queues/example.txt", 3, "QUEUE003")]
    assert "queues/example.part2of2.txt:5" in result.out


def test_one_cell_in_two_parts_collides(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    split_example(run)
    first = (campaign / "queues/example.part1of2.txt").read_text()
    (cell,) = queuefile.parse(first).cells
    other = campaign / "queues/example.part2of2.txt"
    other.write_text(other.read_text() + queueparts.cell_line(cell) + "\n")
    result = run("check", "--select", "QUEUE", "--format", "json")
    # Two instances would run it: neither part's copy is the queue's cell any more.
    assert result.where() == [
        ("queues/example.part2of2.txt", 5, "QUEUE003"),
        ("queues/example.txt", 2, "QUEUE003"),
    ]


def test_a_header_naming_another_queue_carries_nothing(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    header = "# Part 1 of 2 of queues/other.txt, made by `campaign split -n 2 --cost epochs`.\n"
    (campaign / "queues/fake.txt").write_text(header + "configs/no_aug.yaml segmentation\n")
    result = run("check", "--select", "QUEUE", "--format", "json")
    assert result.where() == [("queues/fake.txt", 2, "QUEUE003")]


def test_part_source_reads_only_the_first_line() -> None:
    text = queueparts.part_text(source="queues/a, b.txt", part=1, k=2, cost="epochs", lines=[])
    assert queueparts.part_source(text) == "queues/a, b.txt"
    assert queueparts.part_source("# a note\n" + text) is None
    assert queueparts.part_source("") is None
