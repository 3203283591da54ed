"""LESSON: lines under '## Lessons' in the format, entries known to failures.yaml, real dates."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.conftest import Result

Run = Callable[..., Result]

# Line numbers are part of the assertions below: keep them in step with this text.
LESSONS = """\
# Lessons learned

`YYYY-MM-DD · what failed · what fixed it · (failures.yaml id or "new")` is the format.
Prose above the section is free: 2026-99-99 · not · checked · here

## Lessons

- 2026-11-20 · CRLF wrapper died at once (job 12_0) · converted to LF (abc1234) · crlf-script
2026-11-20 · no bullet is fine · too · new
- 2026-11-20 | pipes | are not | the separator
- 2026-11-20 · unknown entry · in the catalog · cuda-om
- 2026-02-30 · impossible · date · new
- 2026-11-23 · two days after · --today · new

### Grouped by month

- 2026-11-22 · tomorrow · passes: a later time zone · new
```
- 2026-11-21 · a fence · is not a lesson · new
```

## Notes

anything: not checked
"""
FINDINGS = [
    ("LESSONS.md", 10, "LESSON001"),
    ("LESSONS.md", 11, "LESSON002"),
    ("LESSONS.md", 12, "LESSON003"),
    ("LESSONS.md", 13, "LESSON003"),
    ("LESSONS.md", 18, "LESSON001"),
    ("LESSONS.md", 20, "LESSON001"),
]


def lesson_check(run: Run, *args: str) -> Result:
    return run("check", "--select", "LESSON", "--format", "json", *args)


def test_each_defect_at_its_line(campaign: Path, run: Run) -> None:
    (campaign / "LESSONS.md").write_text(LESSONS, encoding="utf-8")
    result = lesson_check(run)
    assert result.code == 1
    assert result.where() == FINDINGS


def test_messages_columns_and_hints(campaign: Path, run: Run) -> None:
    (campaign / "LESSONS.md").write_text(LESSONS, encoding="utf-8")
    found = {(f["line"], f["id"]): f for f in lesson_check(run).json()["findings"]}
    assert found[10, "LESSON001"] == {
        "path": "LESSONS.md",
        "line": 10,
        "col": 1,
        "id": "LESSON001",
        "message": "not a lesson line: 1 field(s) separated by ' · ', 4 expected",
        "hint": "under '## Lessons' every line is "
        "'- YYYY-MM-DD · what failed · what fixed it · <failures.yaml id or new>' "
        "(campaign lesson add writes it)",
    }
    unknown = found[11, "LESSON002"]
    assert (unknown["col"], unknown["message"]) == (
        49,
        "entry 'cuda-om' is neither 'new' nor an id in failures.yaml",
    )
    assert str(unknown["hint"]).startswith("write an id of failures.yaml")
    assert found[12, "LESSON003"]["message"] == "date 2026-02-30 is not a calendar date"
    assert found[12, "LESSON003"]["col"] == 3
    assert found[13, "LESSON003"]["message"] == (
        "date 2026-11-23 is in the future (today is 2026-11-21)"
    )


def test_today_comes_from_the_check(campaign: Path, run: Run) -> None:
    (campaign / "LESSONS.md").write_text(LESSONS, encoding="utf-8")
    later = lesson_check(run, "--today", "2026-11-22").where()
    assert later == [f for f in FINDINGS if f[1] != 13]


def test_a_close_id_is_suggested(campaign: Path, run: Run) -> None:
    (campaign / "LESSONS.md").write_text("## Lessons\n- 2026-11-01 · a · b · crlf-scrip\n")
    hint = lesson_check(run).json()["findings"][0]["hint"]
    assert str(hint).startswith("did you mean crlf-script? write an id of failures.yaml")


def test_renaming_a_catalog_entry_is_caught_from_failures_yaml_alone(
    campaign: Path, run: Run
) -> None:
    # What pre-commit passes when only failures.yaml changed: LESSONS.md is checked too.
    (campaign / "LESSONS.md").write_text("## Lessons\n- 2026-11-01 · a · b · crlf-script\n")
    assert lesson_check(run, "failures.yaml").code == 0
    catalog = campaign / "failures.yaml"
    catalog.write_text(catalog.read_text().replace("id: crlf-script", "id: crlf-wrapper"))
    assert lesson_check(run, "failures.yaml").where() == [("LESSONS.md", 2, "LESSON002")]


def test_an_unreadable_catalog_leaves_ids_unjudged(campaign: Path, run: Run) -> None:
    (campaign / "LESSONS.md").write_text("## Lessons\n- 2026-11-01 · a · b · anything\n")
    (campaign / "failures.yaml").write_text("failures: [\n")
    result = lesson_check(run)
    assert (result.code, result.where()) == (0, [])


def test_crlf_lessons_are_read(campaign: Path, run: Run) -> None:
    text = "## Lessons\r\n\r\n- 2026-11-01 · a · b · crlf-script\r\n- 2026-11-01 · bad\r\n"
    (campaign / "LESSONS.md").write_bytes(text.encode())
    assert lesson_check(run).where() == [("LESSONS.md", 4, "LESSON001")]


def test_no_lessons_file_no_section_no_findings(campaign: Path, run: Run) -> None:
    assert lesson_check(run).code == 0
    (campaign / "LESSONS.md").write_text("# Lessons\n\n2026-99-99 · prose · only · x\n")
    assert lesson_check(run).code == 0
