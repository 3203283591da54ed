"""campaignops.model.lessons: the lesson line, reading LESSONS.md back, where a new line goes, and
which job and catalog entry a ``--job`` names."""

from __future__ import annotations

import datetime as dt
import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from campaignops.core.errors import InputError, UsageError
from campaignops.model import lessons

DAY = dt.date(2026, 11, 24)
LINE = "- 2026-11-24 · smoke of lr-0.1 died at step 0 (job 4242_1) · halved the batch · cuda-oom"


# --- rendering ------------------------------------------------------------------------------


def test_render_is_the_documented_line() -> None:
    lesson = lessons.make(
        day=DAY,
        failed="smoke of lr-0.1 died at step 0",
        fixed="halved the batch",
        entry="cuda-oom",
        job="4242_1",
    )
    assert lesson.render() == LINE


def test_whitespace_is_normalised() -> None:
    lesson = lessons.make(day=DAY, failed="  a\t\tb  c ", fixed="\u00a0fixed  it ", entry=" new ")
    assert lesson.render() == "- 2026-11-24 · a b c · fixed it · new"


def test_the_job_is_named_once() -> None:
    assert lessons.with_job("died", "4242_1") == "died (job 4242_1)"
    assert lessons.with_job("job 4242_1 died", "4242_1") == "job 4242_1 died"
    # A longer id that merely starts with the label is not the label.
    assert lessons.with_job("job 4242_12 died", "4242_1") == "job 4242_12 died (job 4242_1)"


@pytest.mark.parametrize(
    ("failed", "why"),
    [
        ("a\nb", "spans more than one line"),
        ("a\r\nb", "spans more than one line"),
        ("a\u2028b", "spans more than one line"),
        ("a\x0bb", "spans more than one line"),
        ("a\x1b[31mb", "control character"),
        ("   ", "is empty"),
        ("a · b", "field separator"),
        ("a ·b", "field separator"),
        ("a· b", "field separator"),
        ("· a", "field separator"),
        ("a ·", "field separator"),
        ("a \t· b", "field separator"),
    ],
)
def test_fields_that_are_not_one_field_are_refused(failed: str, why: str) -> None:
    with pytest.raises(UsageError, match=why) as exc:
        lessons.make(day=DAY, failed=failed, fixed="x", entry="new")
    assert exc.value.exit_code == 2


def test_a_middle_dot_inside_a_word_is_kept() -> None:
    lesson = lessons.make(day=DAY, failed="a·b", fixed="c", entry="new")
    assert lesson.render() == "- 2026-11-24 · a·b · c · new"


@pytest.mark.parametrize("entry", ["Cuda-OOM", "(cuda-oom)", "-x", "a b", ""])
def test_an_entry_that_is_not_an_id_is_refused(entry: str) -> None:
    with pytest.raises(UsageError, match=r"not a failures\.yaml id"):
        lessons.make(day=DAY, failed="a", fixed="b", entry=entry)


def test_known_entry_names_close_ids() -> None:
    assert lessons.known_entry("new", ()) == "new"
    assert lessons.known_entry("cuda-oom", ("cuda-oom",)) == "cuda-oom"
    with pytest.raises(UsageError) as exc:
        lessons.known_entry("cuda-om", ("cuda-oom", "disk-full"))
    assert exc.value.message == "no entry 'cuda-om' in failures.yaml"
    assert exc.value.hint == (
        "did you mean cuda-oom? pass new, or one of the 2 ids in failures.yaml: cuda-oom, disk-full"
    )


def test_catalog_ids_tolerate_any_shape() -> None:
    data = {"failures": [{"id": "b"}, {"id": "a"}, {"id": 3}, "x", {"id": "b"}]}
    assert lessons.catalog_ids(data) == ("b", "a")
    assert lessons.catalog_ids(None) == ()
    assert lessons.catalog_ids({"failures": "nope"}) == ()


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ("RuntimeError: CUDA out of memory.\r\n", "RuntimeError: CUDA out of memory."),
        ("a · b\tc\x1b[0m", "a - b c [0m"),
        ("   ", "?"),
        ("word " * 40, ("word " * 23).strip() + "…"),
        ("x" * 200, "x" * 119 + "…"),
    ],
)
def test_sanitize_makes_machine_text_a_field(raw: str, field: str) -> None:
    got = lessons.sanitize(raw)
    assert got == field
    assert len(got) <= 120
    assert lessons.clean_field("what failed", got) == got


def test_command_is_quoted_for_the_shell() -> None:
    cmd = lessons.command(failed="smoke of 'lr' died", job="4242_1", entry="cuda-oom")
    assert cmd == (
        "campaign lesson add 'smoke of '\"'\"'lr'\"'\"' died' 'WHAT FIXED IT' "
        "--job 4242_1 --entry cuda-oom"
    )
    assert shlex.split(cmd)[3:5] == ["smoke of 'lr' died", "WHAT FIXED IT"]


# --- parsing --------------------------------------------------------------------------------


def test_parse_reads_the_fields_and_their_columns() -> None:
    got = lessons.parse_line(LINE + "  ", 7)
    assert got == lessons.Entry(
        line=7,
        date="2026-11-24",
        date_col=3,
        failed="smoke of lr-0.1 died at step 0 (job 4242_1)",
        fixed="halved the batch",
        entry="cuda-oom",
        entry_col=LINE.index("cuda-oom") + 1,
    )


def test_the_bullet_is_optional() -> None:
    got = lessons.parse_line("2026-11-24 · a · b · new")
    assert isinstance(got, lessons.Entry)
    assert (got.date_col, got.entry_col) == (1, 22)


@pytest.mark.parametrize(
    ("line", "col", "problem"),
    [
        ("- 2026-11-24 - a - b - new", 1, "1 field(s) separated by ' · ', 4 expected"),
        ("- 2026-11-24 · a · b · c · new", 1, "5 field(s) separated by ' · ', 4 expected"),
        ("* 2026-11-24 · a · b · new", 1, "the date '* 2026-11-24' is not YYYY-MM-DD"),
        ("- 24.11.2026 · a · b · new", 3, "the date '24.11.2026' is not YYYY-MM-DD"),
        ("- 2026-11-24 · a · b · (new)", 24, "the entry '(new)' is not a failures.yaml id or new"),
        ("- 2026-11-24 · a · b · New", 24, "the entry 'New' is not a failures.yaml id or new"),
        ("- 2026-11-24 ·  a · b · new", 16, "what failed has extra spaces around it"),
        ("- 2026-11-24 · a ·   · new", 20, "what fixed it is empty"),
    ],
)
def test_malformed_lines(line: str, col: int, problem: str) -> None:
    assert lessons.parse_line(line, 4) == lessons.Malformed(4, col, problem)


@settings(deadline=None, database=None)
@given(
    failed=st.text(min_size=1, max_size=40),
    fixed=st.text(min_size=1, max_size=40),
    entry=st.sampled_from(["new", "cuda-oom", "a1"]),
)
def test_what_make_accepts_parses_back_to_the_same_fields(
    failed: str, fixed: str, entry: str
) -> None:
    try:
        lesson = lessons.make(day=DAY, failed=failed, fixed=fixed, entry=entry)
    except UsageError:
        return
    got = lessons.parse_line(lesson.render(), 2)
    assert isinstance(got, lessons.Entry)
    assert (got.date, got.failed, got.fixed, got.entry) == (
        "2026-11-24",
        lesson.failed,
        lesson.fixed,
        entry,
    )
    assert list(lessons.scan(f"## Lessons\n{lesson.render()}\n")) == [got]


SCANNED = """\
# Lessons learned

Format: `2026-01-01 · this line is prose · not a lesson · new`

```
## Lessons
not a heading: inside a fence
```

## Lessons

- 2026-11-20 · a · b · new
### November

2026-11-21 · c · d · disk-full
oops

## Elsewhere

free text
"""


def test_scan_reads_only_the_lessons_section() -> None:
    got = list(lessons.scan(SCANNED))
    assert [type(g).__name__ for g in got] == ["Entry", "Entry", "Malformed"]
    assert [g.line for g in got] == [12, 15, 16]


def test_scan_reads_crlf_files_by_lf_line_numbers() -> None:
    got = list(lessons.scan(SCANNED.replace("\n", "\r\n")))
    assert [g.line for g in got] == [12, 15, 16]
    assert isinstance(got[0], lessons.Entry) and got[0].entry == "new"


def test_entry_day_is_none_for_impossible_dates() -> None:
    got = lessons.parse_line("- 2026-02-30 · a · b · new")
    assert isinstance(got, lessons.Entry) and got.day() is None


# --- the append plan -----------------------------------------------------------------------

TEMPLATE_END = "Intro.\n\n## Lessons\n"
NEW = "- 2026-11-24 · x · y · new"


def inserted(old: str, new: str) -> list[str]:
    """The lines of ``new`` not in ``old``, checking every old line is kept in order."""
    new_lines = new.splitlines()
    rest = list(new_lines)
    for line in old.splitlines():
        assert line in rest, f"old line {line!r} lost"
        rest = rest[rest.index(line) + 1 :]
    added = list(new_lines)
    for line in old.splitlines():
        added.remove(line)
    return added


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        # The template's file: a blank line after the heading, then the lesson.
        (TEMPLATE_END, f"{TEMPLATE_END}\n{NEW}\n", 5),
        # Newest last, after the last lesson; trailing blank lines stay after it.
        (
            "## Lessons\n\n- 2026-01-01 · a · b · new\n\n\n",
            f"## Lessons\n\n- 2026-01-01 · a · b · new\n{NEW}\n\n\n",
            4,
        ),
        # No final newline: the last line gets one, and so does the lesson.
        (
            "## Lessons\n- 2026-01-01 · a · b · new",
            f"## Lessons\n- 2026-01-01 · a · b · new\n{NEW}\n",
            3,
        ),
        # A section that is not the last: inserted at its end, a blank line kept before the next.
        (
            "## Lessons\n- 2026-01-01 · a · b · new\n## Notes\nx\n",
            f"## Lessons\n- 2026-01-01 · a · b · new\n{NEW}\n\n## Notes\nx\n",
            3,
        ),
        (
            "## Lessons\n\n- 2026-01-01 · a · b · new\n\n## Notes\n",
            f"## Lessons\n\n- 2026-01-01 · a · b · new\n{NEW}\n\n## Notes\n",
            4,
        ),
        # No section: made at the end.
        ("# Lessons\n\nSome prose.", f"# Lessons\n\nSome prose.\n\n## Lessons\n\n{NEW}\n", 7),
        ("# Lessons\n\n", f"# Lessons\n\n## Lessons\n\n{NEW}\n", 5),
        ("", f"## Lessons\n\n{NEW}\n", 3),
        # CRLF stays CRLF.
        (
            "## Lessons\r\n\r\n- 2026-01-01 · a · b · new\r\n",
            f"## Lessons\r\n\r\n- 2026-01-01 · a · b · new\r\n{NEW}\r\n",
            4,
        ),
    ],
)
def test_plan_append(old: str, new: str, line: int) -> None:
    plan = lessons.plan_append(old, NEW)
    assert plan.text == new
    assert plan.line == line
    assert new.splitlines()[line - 1] == NEW
    assert NEW in inserted(old, new)


def test_plan_makes_a_missing_file() -> None:
    plan = lessons.plan_append(None, NEW)
    assert plan.text == lessons.NEW_FILE_HEAD + f"## Lessons\n\n{NEW}\n"
    assert (plan.created_file, plan.created_section) == (True, True)
    assert plan.text.splitlines()[plan.line - 1] == NEW
    assert [type(g) for g in lessons.scan(plan.text)] == [lessons.Entry]


@pytest.mark.parametrize("old", ["a\r\nb\n", "a\rb\r", "## Lessons\r\n- x\n"])
def test_mixed_line_endings_are_refused(old: str) -> None:
    with pytest.raises(InputError, match="mixed line endings") as exc:
        lessons.plan_append(old, NEW)
    assert exc.value.exit_code == 2


def test_plan_refuses_a_line_with_a_break() -> None:
    with pytest.raises(ValueError, match="line break"):
        lessons.plan_append("", "a\nb")
