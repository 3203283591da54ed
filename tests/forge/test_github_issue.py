"""`campaign publish issue` against a local GitHub API: one labelled issue, opened, updated, closed."""

from __future__ import annotations

from pathlib import Path

from tests.forge import fakeforge
from tests.forge.fakeforge import BOT, HUMAN, Call

AUTH = f"Authorization: Bearer {fakeforge.TOKEN}"
MARK = "<!-- campaignops:campaign-audit -->"
TITLE = "Campaign audit: stale facts and standing checks"
WORKFLOW = ("--author", "github-actions[bot]")  # as .github/workflows/audit.yml passes it
LIST = {"labels": "campaign-audit", "state": "open", "per_page": "100", "page": "1"}


def issue(run, tmp_path: Path, state: str, text: str = ""):  # type: ignore[no-untyped-def]
    path = tmp_path / "audit.md"
    path.write_text(text, encoding="utf-8")
    return run(
        "publish", "issue", "--label", "campaign-audit", "--title", TITLE,
        "--body-file", str(path), "--state", state, *WORKFLOW,
    )  # fmt: skip


def test_open_update_close_cycle(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    fake = github_env
    # A pull request with the label, and a human's issue with the label: neither is ours.
    fake.state.issues = [
        {"number": 1, "title": "PR", "body": MARK, "state": "open", "user": dict(BOT),
         "labels": [{"name": "campaign-audit"}], "pull_request": {"url": "…"}},
        {"number": 2, "title": "question", "body": f"what is {MARK}?", "state": "open",
         "user": dict(HUMAN), "labels": [{"name": "campaign-audit"}]},
    ]  # fmt: skip

    opened = issue(run, tmp_path, "open", "3 stale stamps\n")
    assert opened.code == 0, opened.err
    number = fake.state.issues[-1]["number"]
    assert opened.out == f"created issue #{number}: https://github.test/o/r/issues/{number}\n"
    assert fake.take() == [
        Call("GET", "/repos/o/r/issues", LIST, None, AUTH),
        Call(
            "POST",
            "/repos/o/r/issues",
            {},
            {"title": TITLE, "body": f"3 stale stamps\n\n{MARK}\n", "labels": ["campaign-audit"]},
            AUTH,
        ),
    ]

    updated = issue(run, tmp_path, "open", "1 stale stamp\n")
    assert updated.out == f"updated issue #{number}: https://github.test/o/r/issues/{number}\n"
    assert fake.take() == [
        Call("GET", "/repos/o/r/issues", LIST, None, AUTH),
        Call(
            "PATCH",
            f"/repos/o/r/issues/{number}",
            {},
            {"title": TITLE, "body": f"1 stale stamp\n\n{MARK}\n"},
            AUTH,
        ),
    ]

    same = issue(run, tmp_path, "open", "1 stale stamp\n")
    assert same.out.startswith(f"unchanged issue #{number}")
    assert [c.method for c in fake.take()] == ["GET"]

    closed = issue(run, tmp_path, "closed")
    assert closed.code == 0, closed.err
    assert closed.out == f"closed issue #{number}: https://github.test/o/r/issues/{number}\n"
    assert fake.take() == [
        Call("GET", "/repos/o/r/issues", LIST, None, AUTH),
        Call(
            "PATCH",
            f"/repos/o/r/issues/{number}",
            {},
            {"state": "closed", "state_reason": "completed"},
            AUTH,
        ),
    ]
    ours = fake.state.issues[-1]
    assert (ours["state"], ours["body"]) == ("closed", f"1 stale stamp\n\n{MARK}\n")
    assert [i["state"] for i in fake.state.issues[:2]] == ["open", "open"]

    again = issue(run, tmp_path, "closed")
    assert again.out == "no open issue labelled campaign-audit of ours: nothing to close\n"
    assert [c.method for c in fake.take()] == ["GET"]

    reopened = issue(run, tmp_path, "open", "2 stale stamps\n")
    assert reopened.out.startswith("created issue #")  # a new issue: the closed one stays history
    assert len([i for i in fake.state.issues if i["user"] == BOT]) == 3


def test_closing_does_not_read_the_body_file(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = run(
        "publish", "issue", "--label", "campaign-audit", "--title", TITLE,
        "--body-file", str(tmp_path / "absent.md"), "--state", "closed", *WORKFLOW,
    )  # fmt: skip
    assert result.code == 0, result.err


def test_open_needs_a_body(github_env, run) -> None:  # type: ignore[no-untyped-def]
    result = run("publish", "issue", "--label", "a", "--title", "t", "--state", "open")
    assert result.code == 2
    assert "--state open needs --body-file F" in result.err
    assert github_env.take() == []


def test_unreadable_body_is_exit_2(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = run(
        "publish", "issue", "--label", "a", "--title", "t",
        "--body-file", str(tmp_path / "absent.md"), "--state", "open",
    )  # fmt: skip
    assert result.code == 2
    assert (
        f"{tmp_path / 'absent.md'}: cannot read the body (No such file or directory)" in result.err
    )


def test_a_label_dropped_on_create_is_an_error_not_a_weekly_duplicate(
    github_env, run, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    github_env.state.drop_labels = True
    result = issue(run, tmp_path, "open", "1 stale\n")
    assert result.code == 2
    number = github_env.state.issues[0]["number"]
    assert result.err.splitlines()[0] == (
        f"campaign: error: GitHub created issue https://github.test/o/r/issues/{number} without "
        "the label 'campaign-audit': the next run would not find it and would open another"
    )


def test_a_label_that_cannot_be_a_marker_asks_for_one(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = run(
        "publish", "issue", "--label", "campaign audit", "--title", "t",
        "--body-file", str(tmp_path / "x.md"), "--state", "closed",
    )  # fmt: skip
    assert result.code == 2
    assert (
        "--label (the marker by default; or pass --marker) 'campaign audit' is not a marker name"
        in result.err
    )
    with_marker = run(
        "publish", "issue", "--label", "campaign audit", "--marker", "audit", "--title", "t",
        "--state", "closed", *WORKFLOW,
    )  # fmt: skip
    assert with_marker.code == 0, with_marker.err
    assert github_env.take()[-1].query["labels"] == "campaign audit"
