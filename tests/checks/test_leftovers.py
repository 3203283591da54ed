"""EOL005 and EOL006: what a merge or an update leaves behind."""

from __future__ import annotations

from pathlib import Path

from campaignops.checks import leftovers

CONFLICT = (
    "# Page\n\nTitle\n=======\n\nbefore\n<<<<<<< before updating\nours\n=======\ntheirs\n"
    ">>>>>>> after updating\nmiddle\n<<<<<<<\na\n=======\nb\n>>>>>>>\n"
)


def test_opening_markers_are_found_and_a_setext_underline_is_not() -> None:
    assert leftovers.conflicts(CONFLICT.encode()) == [7, 13]
    assert leftovers.conflicts(b"Title\n=======\n<<<<<<<< eight\n") == []


def test_check_reports_markers_and_rej_files(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    (campaign / "NOTES.md").write_text(CONFLICT, encoding="utf-8")
    (campaign / "failures.yaml.rej").write_text("@@ -1 +1 @@\n", encoding="utf-8")
    result = run("check", "--select", "EOL005,EOL006")
    assert result.code == 1
    assert (
        "NOTES.md:7:1: EOL005 unresolved merge conflict at line 7 (2 conflict(s) in the file)"
        in result.out
    )
    assert (
        "failures.yaml.rej:1:1: EOL006 a rejected hunk of an update (failures.yaml did not take it)"
        in result.out
    )
    # pre-commit passes the files of the commit: the markers are still found there.
    staged = run("check", "--select", "EOL", "NOTES.md")
    assert staged.code == 1 and "EOL005" in staged.out and "EOL006" not in staged.out
