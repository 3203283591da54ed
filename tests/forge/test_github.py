"""`campaign publish` against a local GitHub API: the exact requests of each run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.forge import fakeforge
from tests.forge.conftest import pull_request_event
from tests.forge.fakeforge import BOT, HUMAN, Call

AUTH = f"Authorization: Bearer {fakeforge.TOKEN}"
MARK = "<!-- campaignops:campaign-review -->"


def body_file(tmp_path: Path, text: str, name: str = "review.md") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


WORKFLOW = ("--author", "github-actions[bot]")  # as .github/workflows/checks.yml passes it


def comment(run, path: str, *extra: str, author: tuple[str, ...] = WORKFLOW):  # type: ignore[no-untyped-def]
    return run(
        "publish", "comment", "--marker", "campaign-review", "--body-file", path, *author, *extra
    )  # fmt: skip


def page(n: int) -> dict[str, str]:
    return {"per_page": "100", "page": str(n)}


def get(path: str, query: dict[str, str] | None = None) -> Call:
    return Call("GET", path, query or {}, None, AUTH)


def test_first_run_creates_later_runs_update_that_comment(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    fake = github_env
    first = comment(run, body_file(tmp_path, "## Review\n\n2 targets added\n"))
    assert first.code == 0, first.err
    made = fake.state.comments[7][0]
    assert first.out == f"created comment {made['id']} on pull request #7: {made['html_url']}\n"
    assert fake.take() == [
        get("/repos/o/r/issues/7/comments", page(1)),
        Call(
            "POST",
            "/repos/o/r/issues/7/comments",
            {},
            {"body": f"## Review\n\n2 targets added\n\n{MARK}\n"},
            AUTH,
        ),
    ]

    second = comment(run, body_file(tmp_path, "## Review\n\n3 targets added\n"))
    assert second.code == 0, second.err
    assert second.out.startswith(f"updated comment {made['id']} on pull request #7")
    assert fake.take() == [
        get("/repos/o/r/issues/7/comments", page(1)),
        Call(
            "PATCH",
            f"/repos/o/r/issues/comments/{made['id']}",
            {},
            {"body": f"## Review\n\n3 targets added\n\n{MARK}\n"},
            AUTH,
        ),
    ]

    third = comment(run, body_file(tmp_path, "## Review\n\n3 targets added\n"))
    assert third.out.startswith(f"unchanged comment {made['id']}")
    assert [c.method for c in fake.take()] == ["GET"]  # nothing to write
    assert [c["body"] for c in fake.state.comments[7]] == [
        f"## Review\n\n3 targets added\n\n{MARK}\n"
    ]


def test_a_humans_comment_quoting_the_marker_is_not_taken_over(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    fake = github_env
    quoted = f"why does the bot write {MARK} ?"
    fake.state.comments[7] = [
        {"id": 11, "body": quoted, "user": dict(HUMAN)},
        {"id": 12, "body": "unrelated bot note", "user": dict(BOT)},
    ]
    result = comment(run, body_file(tmp_path, "review"))
    assert result.code == 0, result.err
    calls = fake.take()
    assert [(c.method, c.path) for c in calls][-1] == ("POST", "/repos/o/r/issues/7/comments")
    assert [c["body"] for c in fake.state.comments[7]] == [
        quoted,
        "unrelated bot note",
        f"review\n\n{MARK}\n",
    ]


def test_own_login_from_get_user_excludes_other_bots(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    fake = github_env
    fake.state.github_user = {"login": "campaign-bot", "type": "User", "id": 3}
    fake.state.comments[7] = [
        {"id": 11, "body": f"old\n\n{MARK}\n", "user": dict(BOT)},
        {"id": 12, "body": f"mine\n\n{MARK}\n", "user": {"login": "campaign-bot", "type": "User"}},
    ]
    result = comment(run, body_file(tmp_path, "new"), author=())  # a personal token: GET /user
    assert result.code == 0, result.err
    assert fake.take()[-1] == Call(
        "PATCH", "/repos/o/r/issues/comments/12", {}, {"body": f"new\n\n{MARK}\n"}, AUTH
    )


def test_author_option_names_the_account(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    fake = github_env
    fake.state.installation = "my-app[bot]"  # a GitHub App's installation token
    fake.state.comments[7] = [
        {"id": 11, "body": f"x\n\n{MARK}\n", "user": dict(BOT)},
        {"id": 12, "body": f"y\n\n{MARK}\n", "user": {"login": "my-app[bot]", "type": "Bot"}},
    ]
    result = comment(run, body_file(tmp_path, "z"), author=("--author", "my-app[bot]"))
    assert result.code == 0, result.err
    calls = fake.take()
    assert [c.path for c in calls] == [  # no GET /user: the author is given
        "/repos/o/r/issues/7/comments",
        "/repos/o/r/issues/comments/12",
    ]


def test_pages_through_more_than_100_comments(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    fake = github_env
    thread = [{"id": i, "body": f"chatter {i}", "user": dict(HUMAN)} for i in range(1, 151)]
    thread[119] = {"id": 120, "body": f"old\n\n{MARK}\n", "user": dict(BOT)}
    fake.state.comments[7] = thread
    result = comment(run, body_file(tmp_path, "new"))
    assert result.code == 0, result.err
    assert fake.take() == [
        get("/repos/o/r/issues/7/comments", page(1)),
        get("/repos/o/r/issues/7/comments", page(2)),
        Call("PATCH", "/repos/o/r/issues/comments/120", {}, {"body": f"new\n\n{MARK}\n"}, AUTH),
    ]
    assert len(fake.state.comments[7]) == 150


def test_number_option_and_no_event(github_env, run, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("GITHUB_EVENT_PATH")
    result = comment(run, body_file(tmp_path, "x"), "--number", "9")
    assert result.code == 0, result.err
    assert github_env.take()[-1].path == "/repos/o/r/issues/9/comments"

    missing = comment(run, body_file(tmp_path, "x"))
    assert missing.code == 2
    assert "no --number, and GITHUB_EVENT_PATH holds no pull_request.number" in missing.err


def test_body_over_the_limit_is_cut_with_a_note(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    lines = "".join(f"| row {i:06d} | {'x' * 40} |\n" for i in range(3000))  # 174,000 characters
    result = comment(run, body_file(tmp_path, lines))
    assert result.code == 0, result.err
    sent = github_env.take()[-1].body["body"]
    assert len(sent) <= 65_536
    assert sent.endswith(f"\n\n{MARK}\n")
    assert (
        "> **Truncated**: the report has 173,999 characters and this platform accepts 65,536: the rest is cut."
        in sent
    )
    kept = sent[: sent.index("\n\n> **Truncated**")]
    assert lines.startswith(kept + "\n")  # cut at a row's end


def test_fork_pull_request_403_leaves_the_review_in_the_job_summary(  # type: ignore[no-untyped-def]
    github_env, run, tmp_path, monkeypatch
) -> None:
    fake = github_env
    event = pull_request_event(tmp_path, number=7, head="someone/r")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    fake.state.fail[("POST", "/repos/o/r/issues/7/comments")] = [(403, fakeforge.INTEGRATION)]
    result = comment(run, body_file(tmp_path, "## Review\n"))
    assert result.code == 0
    assert result.err == (
        "::warning::campaign: token cannot write to pull request #7 from a fork (HTTP 403: "
        "Resource not accessible by integration): a fork's job gets a read-only token; "
        "review left in the job summary\n"
    )
    assert summary.read_text(encoding="utf-8") == "## Review\n"
    assert fake.state.comments[7] == []


def test_403_on_a_same_repository_pull_request_is_an_error(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    fake = github_env
    fake.state.fail[("POST", "/repos/o/r/issues/7/comments")] = [(403, fakeforge.INTEGRATION)]
    result = comment(run, body_file(tmp_path, "x"))
    assert result.code == 2
    assert result.err.splitlines() == [
        "campaign: error: GitHub API: POST /repos/o/r/issues/7/comments failed: HTTP 403: "
        "Resource not accessible by integration",
        "  hint: the token lacks the permission for this request (see docs/gitops.md, Tokens)",
    ]
    assert fakeforge.TOKEN not in result.out + result.err


@pytest.mark.parametrize(
    ("unset", "named"),
    [
        ("GITHUB_API_URL", "GITHUB_API_URL is not set"),
        ("GITHUB_REPOSITORY", "GITHUB_REPOSITORY is not set"),
        ("GITHUB_TOKEN", "neither GITHUB_TOKEN nor GH_TOKEN is set"),
    ],
)
def test_missing_setting_names_the_variable(
    github_env, run, tmp_path, monkeypatch, unset, named
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv(unset)
    result = comment(run, body_file(tmp_path, "x"))
    assert result.code == 2
    assert named in result.err
    assert github_env.take() == []


def test_gh_token_is_accepted(github_env, run, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("GITHUB_TOKEN")
    monkeypatch.setenv("GH_TOKEN", fakeforge.TOKEN)
    assert comment(run, body_file(tmp_path, "x")).code == 0
    assert {c.auth for c in github_env.take()} == {AUTH}


def test_server_error_on_a_read_is_retried_then_succeeds(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    fake = github_env
    fake.state.fail[("GET", "/repos/o/r/issues/7/comments")] = [(502, {"message": "Bad gateway"})]
    assert comment(run, body_file(tmp_path, "x")).code == 0
    assert [(c.method, c.path) for c in fake.take()] == [
        ("GET", "/repos/o/r/issues/7/comments"),
        ("GET", "/repos/o/r/issues/7/comments"),
        ("POST", "/repos/o/r/issues/7/comments"),
    ]


def test_server_error_on_create_is_not_retried(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    fake = github_env
    fake.state.fail[("POST", "/repos/o/r/issues/7/comments")] = [(502, {"message": "Bad gateway"})]
    result = comment(run, body_file(tmp_path, "x"))
    assert result.code == 2
    assert "POST /repos/o/r/issues/7/comments failed: HTTP 502: Bad gateway" in result.err
    assert [c.method for c in fake.take()] == ["GET", "POST"]
