"""The pure decisions: the marker, fitting a body into a limit, which item is ours."""

from __future__ import annotations

import pytest

from campaignops.core.errors import UsageError
from campaignops.gitops.forge import publish
from campaignops.gitops.forge.publish import Issue, Note

MARK = "<!-- campaignops:r -->"


def test_fit_appends_the_marker() -> None:
    assert publish.fit("body\n\n\n", name="r", limit=100) == f"body\n\n{MARK}\n"


def test_fit_at_the_limit_is_not_cut() -> None:
    body = "x" * (100 - len(f"\n\n{MARK}\n"))
    assert publish.fit(body, name="r", limit=100) == f"{body}\n\n{MARK}\n"
    cut = publish.fit(body + "y", name="r", limit=400)
    assert cut == f"{body}y\n\n{MARK}\n"


def test_fit_over_the_limit_cuts_at_a_line_and_keeps_the_marker() -> None:
    body = "\n".join(f"line {i:04d}" for i in range(100))  # 999 characters
    fitted = publish.fit(body, name="r", limit=500)
    note = publish.truncation_note(999, 500)
    assert len(fitted) <= 500
    assert fitted.endswith(note + f"\n\n{MARK}\n")
    kept = fitted.removesuffix(note + f"\n\n{MARK}\n")
    assert body.startswith(kept + "\n")
    assert kept.endswith("\nline 0032")  # whole lines only, as many as fit: exactly 500
    assert len(fitted) == 500


def test_fit_without_a_line_break_cuts_mid_text() -> None:
    fitted = publish.fit("x" * 5000, name="r", limit=1000)
    assert len(fitted) == 1000
    assert fitted.startswith("x" * 100)


def test_pick_note_is_the_oldest_of_ours_with_the_marker() -> None:
    notes = [
        Note(id=9, body=f"b {MARK}", mine=True),
        Note(id=3, body=f"a {MARK}", mine=False),  # a human quoting it
        Note(id=5, body=f"c {MARK}", mine=True),
        Note(id=1, body="no marker", mine=True),
        Note(id=2, body="<!-- campaignops:other -->", mine=True),
    ]
    assert publish.pick_note(notes, name="r") == notes[2]
    assert publish.pick_note(notes[1:2], name="r") is None


def test_plan_issue() -> None:
    ours_old = Issue(number=4, title="t", body=MARK, mine=True)
    ours_new = Issue(number=8, title="t", body=MARK, mine=True)
    human = Issue(number=2, title="t", body=MARK, mine=False)
    plain = Issue(number=3, title="t", body="", mine=True)
    listed = [ours_new, human, plain, ours_old]
    assert publish.plan_issue(listed, name="r", state="open") == publish.IssuePlan(update=ours_old)
    assert publish.plan_issue(listed, name="r", state="closed") == publish.IssuePlan(
        close=(ours_old, ours_new)
    )
    assert publish.plan_issue([human, plain], name="r", state="open") == publish.IssuePlan(
        create=True
    )
    assert publish.plan_issue([human], name="r", state="closed") == publish.IssuePlan()


@pytest.mark.parametrize("name", ["", "a b", "x-->", "-lead", "é", "a" * 101])
def test_marker_names_that_could_break_the_html_comment_are_refused(name: str) -> None:
    with pytest.raises(UsageError, match="is not a marker name"):
        publish.check_name(name, option="--marker")


def test_marker_name_accepted() -> None:
    assert publish.check_name("campaign-review.v1_2", option="--marker") == "campaign-review.v1_2"
