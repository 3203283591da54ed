"""`campaign lock` and the lock file format."""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from campaignops.model import lockfile

LOCK = ".campaign/wrappers.lock"
WRAPPER = "scripts/run_one.v1.sh"


def sha(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def entry_lines(root: Path) -> list[str]:
    text = (root / LOCK).read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_lock_writes_one_exact_line_and_is_idempotent(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    expected = f"{WRAPPER} {sha(campaign / WRAPPER)} 2026-11-21"
    result = run("lock", WRAPPER, "--today", "2026-11-21")
    assert result.code == 0, result.err
    assert result.out == f"locked {expected}\n"
    text = (campaign / LOCK).read_text(encoding="utf-8")
    header = "".join(f"{line}\n" for line in lockfile.HEADER)
    assert header.startswith("# ")
    assert text == header + expected + "\n"

    again = run("lock", WRAPPER, "--today", "2027-01-01")
    assert again.code == 0
    assert again.out == f"locked {expected}\n"  # the existing entry, with its original date
    assert (campaign / LOCK).read_text(encoding="utf-8") == text


def test_lock_appends_in_argument_order_from_a_subdirectory(
    campaign: Path, run, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    run("lock", WRAPPER, "--today", "2026-11-01")
    monkeypatch.chdir(campaign / "scripts")
    result = run("lock", "run_queue.v1.sh", "run_one.v1.sh", "--today", "2026-11-21")
    assert result.code == 0, result.err
    assert entry_lines(campaign) == [
        f"{WRAPPER} {sha(campaign / WRAPPER)} 2026-11-01",
        f"scripts/run_queue.v1.sh {sha(campaign / 'scripts/run_queue.v1.sh')} 2026-11-21",
    ]
    assert [line.split()[1] for line in result.out.splitlines()] == [
        "scripts/run_queue.v1.sh",
        WRAPPER,
    ]


def test_lock_returns_entries_with_their_lock_file_lines(campaign: Path) -> None:
    today = dt.date(2026, 11, 21)
    first = lockfile.lock(root=campaign, paths=[WRAPPER], cwd=campaign, today=today)
    both = lockfile.lock(
        root=campaign, paths=["scripts/run_queue.v1.sh", WRAPPER], cwd=campaign, today=today
    )
    assert both[1] == first[0]
    lines = (campaign / LOCK).read_text(encoding="utf-8").splitlines()
    for entry in both:
        assert lines[entry.line - 1] == entry.render()


def test_unversioned_name_is_refused_with_the_rename(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    (campaign / "scripts/helper.sh").write_text("#!/bin/bash\n", encoding="utf-8")
    result = run("lock", "scripts/helper.sh", "--today", "2026-11-21")
    assert result.code == 2
    assert "scripts/helper.sh: wrapper name has no version" in result.err
    assert "scripts/helper.v1.sh" in result.err
    assert not (campaign / LOCK).exists()


def test_changed_locked_wrapper_is_a_conflict(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    run("lock", WRAPPER, "--today", "2026-11-21")
    locked = sha(campaign / WRAPPER)
    with (campaign / WRAPPER).open("a", encoding="utf-8") as fh:
        fh.write("echo edited\n")
    before = (campaign / LOCK).read_bytes()
    result = run("lock", WRAPPER, "--today", "2026-11-22")
    assert result.code == 1
    assert locked in result.err and sha(campaign / WRAPPER) in result.err
    assert "scripts/run_one.v2.sh" in result.err
    assert (campaign / LOCK).read_bytes() == before


@pytest.mark.parametrize(
    ("make", "arg", "expect"),
    [
        (None, "scripts/run_one.v9.sh", "no such file"),
        (None, "scripts", "not a regular file"),
        (None, "../outside.v1.sh", "outside the campaign root"),
        (
            "symlink",
            "scripts/escape.v1.sh",
            "outside the campaign or in a symlink loop; not followed",
        ),
    ],
)
def test_bad_paths_exit_2_and_write_nothing(
    campaign: Path,
    run,
    make: str | None,
    arg: str,
    expect: str,  # type: ignore[no-untyped-def]
) -> None:
    if make == "symlink":
        outside = campaign.parent / "elsewhere.v1.sh"
        outside.write_text("#!/bin/bash\n", encoding="utf-8")
        (campaign / arg).symlink_to(outside)
    result = run("lock", arg, "--today", "2026-11-21")
    assert result.code == 2
    assert expect in result.err
    assert not (campaign / LOCK).exists()


def test_lock_outside_a_campaign_is_a_usage_error(tmp_path: Path, run, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "run.v1.sh").write_text("#!/bin/bash\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = run("lock", "run.v1.sh")
    assert result.code == 2
    assert "campaign.yaml" in result.err
    assert not (tmp_path / ".campaign").exists()


def test_malformed_lock_refuses_to_lock(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    (campaign / ".campaign").mkdir(exist_ok=True)
    (campaign / LOCK).write_text("scripts/x.v1.sh sha256:nothex 2026-01-01\n", encoding="utf-8")
    result = run("lock", WRAPPER, "--today", "2026-11-21")
    assert result.code == 2
    assert f"{LOCK}:1" in result.err
    assert "nothex" in result.err


def test_torn_lock_line_gets_its_newline_before_the_append(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    run("lock", WRAPPER, "--today", "2026-11-21")
    text = (campaign / LOCK).read_text(encoding="utf-8")
    (campaign / LOCK).write_text(text.rstrip("\n"), encoding="utf-8")  # editor dropped the EOL
    result = run("lock", "scripts/run_queue.v1.sh", "--today", "2026-11-21")
    assert result.code == 0, result.err
    assert entry_lines(campaign) == [
        f"{WRAPPER} {sha(campaign / WRAPPER)} 2026-11-21",
        f"scripts/run_queue.v1.sh {sha(campaign / 'scripts/run_queue.v1.sh')} 2026-11-21",
    ]


HEX = "a" * 64


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("scripts/a.v1.sh", "3 fields"),
        (f"scripts/a.v1.sh  sha256:{HEX} 2026-01-01", "whitespace"),
        (f"scripts/a.v1.sh sha256:{HEX.upper()} 2026-01-01", "lowercase hex"),
        (f"scripts/a.v1.sh md5:{HEX} 2026-01-01", "sha256:"),
        (f"scripts/a.v1.sh sha256:{HEX[:-1]} 2026-01-01", "sha256:"),
        (f"scripts/a.v1.sh sha256:{HEX} 2026-13-01", "not a valid date"),
        (f"scripts/a.v1.sh sha256:{HEX} 20260101", "not a date"),
        (f"/abs/a.v1.sh sha256:{HEX} 2026-01-01", "relative POSIX"),
        (f"../a.v1.sh sha256:{HEX} 2026-01-01", "not normalised"),
    ],
)
def test_parse_reports_malformed_lines(line: str, problem: str) -> None:
    good = f"scripts/b.v1.sh sha256:{HEX} 2026-01-01"
    entries, problems = lockfile.parse(f"# header\n\n{good}\n{line}\n")
    assert [e.path for e in entries] == ["scripts/b.v1.sh"]
    assert len(problems) == 1 and problems[0][0] == 4
    assert problem in problems[0][1]


def test_parse_duplicates_same_digest_fine_different_digest_a_problem() -> None:
    one = f"s/a.v1.sh sha256:{'1' * 64} 2026-01-01"
    same = f"s/a.v1.sh sha256:{'1' * 64} 2026-02-01"
    other = f"s/a.v1.sh sha256:{'2' * 64} 2026-03-01"
    assert lockfile.parse(f"{one}\n{same}\n")[1] == []
    entries, problems = lockfile.parse(f"{one}\n{same}\n{other}\n")
    assert [line for line, _ in problems] == [3]
    assert "line 1" in problems[0][1]
    assert lockfile.by_path(entries)["s/a.v1.sh"].line == 1


def test_digest() -> None:
    assert lockfile.digest(b"") == (
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )


@pytest.mark.parametrize(
    ("basename", "suggestion"),
    [
        ("helper.sh", "helper.v1.sh"),
        ("run.one.bash", "run.one.v1.bash"),
        ("run_one.v0.sh", "run_one.v1.sh"),
        ("noext", "noext.v1.sh"),
    ],
)
def test_versioned_suggestion(basename: str, suggestion: str) -> None:
    assert lockfile.versioned_suggestion(basename) == suggestion
    assert lockfile.VERSIONED.match(suggestion)


def test_next_version_skips_taken() -> None:
    taken = {"scripts/run.v2.sh", "scripts/run.v3.sh"}
    assert lockfile.next_version("scripts/run.v1.sh", taken=taken) == "scripts/run.v4.sh"
    assert lockfile.next_version("run.v9.sh", taken=set()) == "run.v10.sh"


paths = st.lists(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cc", "Cs")), min_size=1),
    min_size=1,
    max_size=4,
).map("/".join)


@given(path=paths, data=st.binary(), day=st.dates())
def test_rendered_entries_parse_back(path: str, data: bytes, day: dt.date) -> None:
    if lockfile.path_problem(path) is not None:
        return
    entry = lockfile.LockEntry(path=path, digest=lockfile.digest(data), date=day, line=2)
    entries, problems = lockfile.parse(f"# c\n{entry.render()}\n")
    assert problems == []
    assert entries == [entry]
