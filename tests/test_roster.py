"""The pull's verdict: expected cells against the pulled files and the box's manifest, and the
verify command that loads each cell's outputs (real files, real hashes, real processes)."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from campaignops.backends.ssh import roster
from campaignops.backends.ssh.roster import Expected, FileFact
from campaignops.core.errors import InputError, UsageError

GOOD = b'{"loss": 0.25}\n'


def fact(data: bytes) -> FileFact:
    return FileFact(len(data), hashlib.sha256(data).hexdigest())


@pytest.fixture
def pulled_root(tmp_path: Path) -> Path:
    """A campaign root after a pull: what arrived, some of it damaged."""
    files = {
        "runs/p/a/metrics.json": GOOD,
        "runs/p/a/model.pt": b"weights",
        "runs/p/b/metrics.json": b"",  # empty on the box too
        "runs/p/c/metrics.json": b'{"loss": 0.2',  # torn: the box has the whole file
        "runs/p/e/metrics.json": b"{}\n",  # not in the box's manifest
        "runs/p/f/metrics.json": b'{"loss": 0.35}\n',  # same size, other bytes
    }
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    return tmp_path


BOX = {
    "runs/p/a/metrics.json": fact(GOOD),
    "runs/p/a/model.pt": fact(b"weights"),
    "runs/p/b/metrics.json": fact(b""),
    "runs/p/c/metrics.json": fact(b'{"loss": 0.25}\n'),
    "runs/p/d/metrics.json": fact(b"{}\n"),  # on the box, never pulled
    "runs/p/f/metrics.json": fact(b'{"loss": 0.25}\n'),
    "runs/p/zz/stray.txt": fact(b"x"),  # no expected cell claims it
}
EXPECTED = [
    Expected("a", ("runs/p/a/metrics.json", "runs/p/a/model.pt")),
    Expected("b", ("runs/p/b/metrics.json",)),
    Expected("c", ("runs/p/c/metrics.json",)),
    Expected("d", ("runs/p/d/metrics.json",)),
    Expected("e", ("runs/p/e/metrics.json",)),
    Expected("f", ("runs/p/f/metrics.json",)),
    Expected("g", ("runs/p/g/metrics.json",)),
    Expected("h", ()),
]


def reconciled(root: Path, expected: list[Expected] = EXPECTED) -> roster.Roster:
    paths = [p for cell in expected for p in cell.outputs]
    return roster.reconcile(expected, roster.local_facts(root, paths), BOX)


def test_each_cell_gets_its_own_verdict(pulled_root: Path) -> None:
    result = reconciled(pulled_root)
    assert [(c.name, c.status, c.detail) for c in result.cells] == [
        ("a", "ok", "2 output(s) verified"),
        ("b", "empty", "runs/p/b/metrics.json: 0 bytes, on the box too"),
        ("c", "mismatch", "runs/p/c/metrics.json: 12 bytes pulled, 15 on the box"),
        ("d", "not_pulled", "runs/p/d/metrics.json: on the box, not pulled: run the pull again"),
        (
            "e",
            "unverified",
            "runs/p/e/metrics.json: pulled, but the box's manifest does not list it",
        ),
        ("f", "mismatch", "runs/p/f/metrics.json: sha256 differs from the box's"),
        ("g", "missing", "runs/p/g/metrics.json: not on the box: the cell did not write it"),
        ("h", "no_output", "no output_check to verify"),
    ]
    assert result.extras == ("runs/p/zz/stray.txt",)
    assert not result.ok
    assert result.failed == ("b", "c", "d", "e", "f", "g", "h")


def test_a_cell_is_as_bad_as_its_worst_output(pulled_root: Path) -> None:
    cell = Expected("a", ("runs/p/a/metrics.json", "runs/p/b/metrics.json", "runs/p/g/x"))
    (report,) = reconciled(pulled_root, [cell]).cells
    assert [o.status for o in report.outputs] == ["ok", "empty", "missing"]
    assert report.status == "missing"
    assert report.detail == (
        "runs/p/b/metrics.json: 0 bytes, on the box too; "
        "runs/p/g/x: not on the box: the cell did not write it"
    )


def test_two_cells_with_one_name_are_both_duplicates(pulled_root: Path) -> None:
    cells = [Expected("a", ("runs/p/a/metrics.json",)), Expected("a", ("runs/p/a/model.pt",))]
    result = reconciled(pulled_root, cells)
    assert [(c.name, c.status) for c in result.cells] == [("a", "duplicate"), ("a", "duplicate")]
    assert result.cells[0].detail == "2 expected cells are named 'a'"
    assert result.failed == ("a",)


def test_every_output_verified_is_a_clean_roster(pulled_root: Path) -> None:
    result = reconciled(pulled_root, EXPECTED[:1])
    assert result.ok and result.failed == ()


def test_verify_argv_appends_the_outputs_or_puts_them_at_out() -> None:
    assert roster.verify_argv("python3 load.py --strict", ["a", "b"]) == (
        "python3",
        "load.py",
        "--strict",
        "a",
        "b",
    )
    assert roster.verify_argv("python3 load.py {out} --strict", ["a b", "c"]) == (
        "python3",
        "load.py",
        "a b",
        "c",
        "--strict",
    )


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("", "--verify is empty"),
        ("python3 'load.py", '--verify "python3 \'load.py": No closing quotation'),
        ("load --file={out}", "--verify: {out} inside the argument '--file={out}'"),
    ],
)
def test_a_verify_command_that_cannot_be_run_is_a_usage_error(command: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        roster.verify_argv(command, ["x"])
    assert caught.value.message == message


LOAD = f"{sys.executable} -c 'import json, sys; [json.load(open(p)) for p in sys.argv[1:]]'"


def test_verify_loads_each_checked_cell_and_skips_the_rest(pulled_root: Path) -> None:
    # c's torn JSON would fail to load, but it is not even tried: it did not match the box.
    (pulled_root / "runs/p/ok2/metrics.json").parent.mkdir(parents=True)
    (pulled_root / "runs/p/ok2/metrics.json").write_bytes(b"not json but the box agrees\n")
    box = {**BOX, "runs/p/ok2/metrics.json": fact(b"not json but the box agrees\n")}
    cells = [
        Expected("a", ("runs/p/a/metrics.json",)),
        Expected("ok2", ("runs/p/ok2/metrics.json",)),
        Expected("c", ("runs/p/c/metrics.json",)),
    ]
    paths = [p for cell in cells for p in cell.outputs]
    checked = roster.reconcile(cells, roster.local_facts(pulled_root, paths), box)
    results = roster.verify(LOAD, checked, cwd=pulled_root)
    assert [(r.name, r.status, r.exit_code) for r in results] == [
        ("a", "passed", 0),
        ("ok2", "failed", 1),
        ("c", "skipped", None),
    ]
    assert results[1].detail.endswith(
        "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)"
    )
    assert results[2].detail == "not pulled and checked: mismatch"
    assert results[0].argv[-1] == "runs/p/a/metrics.json"


def test_a_verify_command_that_is_not_there_or_hangs_fails_the_cell(pulled_root: Path) -> None:
    checked = reconciled(pulled_root, EXPECTED[:1])
    (missing,) = roster.verify("no-such-loader-xyz {out}", checked, cwd=pulled_root)
    assert (missing.status, missing.exit_code) == ("failed", None)
    assert missing.detail == "cannot run 'no-such-loader-xyz': No such file or directory"
    # A child that keeps the pipes open is killed with its parent.
    hang = "bash -c 'sleep 60 & sleep 60; true' {out}"
    (slow,) = roster.verify(hang, checked, cwd=pulled_root, timeout=0.5)
    assert (slow.status, slow.detail) == ("failed", "timed out after 0.5 s")


def test_an_output_path_outside_the_campaign_is_refused(pulled_root: Path) -> None:
    for rel in ("/etc/passwd", "runs/../../secret"):
        with pytest.raises(InputError) as caught:
            roster.local_facts(pulled_root, [rel])
        assert caught.value.message == f"{rel}: an output path outside the campaign"


def test_one_name_at_two_stages_is_no_duplicate(pulled_root: Path) -> None:
    """A target smoked, then run in production: each stage writes under its own root
    (runs/smoke, runs/production), so a pull of every job judges both cells on their own."""
    cells = [
        Expected("a", ("runs/p/a/metrics.json",), "smoke"),
        Expected("a", ("runs/p/a/metrics.json",), "production"),
    ]
    result = reconciled(pulled_root, cells)
    assert [(c.name, c.status) for c in result.cells] == [("a", "ok"), ("a", "ok")]
    same = reconciled(pulled_root, [cells[1], cells[1]])
    assert [c.status for c in same.cells] == ["duplicate", "duplicate"]
    assert same.cells[0].detail == "2 expected cells at production are named 'a'"
