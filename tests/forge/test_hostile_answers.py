"""Hostile forge answers and hostile tokens: `campaign publish` exits 2 with a message, never a
traceback, never the token; and it never edits another account's comment.

Each case here gave a traceback, printed the token, or edited another app's comment at e39aef0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from campaignops.gitops.forge import github, http, settings
from tests.forge import fakeforge
from tests.forge.fakeforge import BOT, GITLAB_BOT

MARK = "<!-- campaignops:campaign-review -->"
COMMENTS = "/repos/o/r/issues/7/comments"
NOTES = "/projects/42/merge_requests/3/notes"
WORKFLOW = ("--author", "github-actions[bot]")
OTHER_APP = {"login": "other-app[bot]", "type": "Bot", "id": 5}


def comment(run, tmp_path: Path, *extra: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "review.md"
    path.write_text("## Review\n", encoding="utf-8")
    return run(
        "publish", "comment", "--marker", "campaign-review", "--body-file", str(path), *extra
    )  # fmt: skip


def refused(result: Any, *said: str) -> None:
    """Exit 2, every ``said`` in the message, no token anywhere."""
    assert result.code == 2, (result.out, result.err)
    assert result.err.startswith("campaign: error: "), result.err
    for text in said:
        assert text in result.err, result.err
    assert fakeforge.TOKEN not in result.out + result.err
    assert "SECRET" not in result.out + result.err


# --- transport and protocol failures (item 7) ----------------------------------------------------

HEAD = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
BROKEN = {
    "bad status line": (b"HTTP/1.1 abc Created\r\n\r\n", "BadStatusLine"),
    "not HTTP at all": (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "BadStatusLine"),
    "truncated body": (HEAD + b"Content-Length: 500\r\n\r\n" + b'{"id": 1', "IncompleteRead"),
    "broken chunk": (HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n", "IncompleteRead"),
    "70 kB header": (HEAD + b"X-Big: " + b"a" * 70_000 + b"\r\n\r\n", "LineTooLong"),
    "101 headers": (HEAD + b"X-H: 1\r\n" * 101 + b"\r\n", "got more than 100 headers"),
    "closed at once": (b"", "RemoteDisconnected"),
    "JSON nested 100,000 deep": (
        HEAD + b"Content-Length: 100000\r\n\r\n" + b"[" * 100_000,
        "not JSON (nested too deeply)",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_answer_to_the_create_is_exit_2(github_env, run, tmp_path, case) -> None:  # type: ignore[no-untyped-def]
    raw, named = BROKEN[case]
    github_env.state.raw[("POST", COMMENTS)] = [raw]
    result = comment(run, tmp_path, *WORKFLOW)
    refused(result, f"GitHub API: POST {COMMENTS}", named)
    assert "(after 1 attempt)" in result.err or "not JSON" in result.err  # a POST: no retry
    assert [c.method for c in github_env.take()] == ["GET", "POST"]


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_answer_to_a_read_is_retried_then_exit_2(gitlab_env, run, tmp_path, case) -> None:  # type: ignore[no-untyped-def]
    raw, named = BROKEN[case]
    gitlab_env.state.raw[("GET", fakeforge.GITLAB_ROOT + NOTES)] = [raw] * 3
    result = comment(run, tmp_path)
    refused(result, f"GitLab API: GET {NOTES}", named)
    reads = [c.path for c in gitlab_env.take()]
    assert reads == ["/api/v4/user", *[f"/api/v4{NOTES}"] * (1 if "JSON" in case else 3)]


def test_a_broken_answer_then_a_good_one_is_published(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    github_env.state.raw[("GET", COMMENTS)] = [BROKEN["bad status line"][0]]
    result = comment(run, tmp_path, *WORKFLOW)
    assert result.code == 0, result.err
    assert [c.method for c in github_env.take()] == ["GET", "GET", "POST"]


def test_a_body_over_the_cap_is_refused(github_env, run, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(http, "MAX_BODY", 1000)
    github_env.state.raw[("POST", COMMENTS)] = [
        HEAD + b"Content-Length: 5000\r\n\r\n" + b" " * 5000
    ]
    refused(comment(run, tmp_path, *WORKFLOW), "the body is over 1,000 bytes")


def test_a_body_that_drips_is_cut_at_the_deadline(github_env, run, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(http, "DEADLINE_S", 0.3)
    github_env.state.drip_s = 0.02  # 2,000 bytes: 40 s at this pace, each byte well within TIMEOUT
    github_env.state.raw[("POST", COMMENTS)] = [
        HEAD + b"Content-Length: 2000\r\n\r\n" + b" " * 2000
    ]
    refused(comment(run, tmp_path, *WORKFLOW), "TimeoutError: the body took over 0 s")


# --- answers of the wrong shape (item 7) ---------------------------------------------------------

GITHUB_SHAPES: list[tuple[str, str, Any, str]] = [
    ("GET", COMMENTS, {"message": "ok"}, "not a list"),
    ("GET", COMMENTS, [1], "item 1 is not a JSON object"),
    ("GET", COMMENTS, [{"id": "12", "body": MARK}], "item 1 has no positive integer 'id'"),
    ("GET", COMMENTS, [{"id": True, "body": MARK}], "item 1 has no positive integer 'id'"),
    ("GET", COMMENTS, [{"id": 1, "body": ["x"]}], "item 1 has a 'body' that is not text"),
    ("GET", COMMENTS, [{"id": 1, "body": MARK, "user": "bot"}], "item 1's 'user' is not"),
    ("GET", COMMENTS, [{"id": 1, "body": MARK, "user": {"login": 7}}], "'login' that is not text"),
    ("POST", COMMENTS, [], "the answer is not a JSON object"),
    ("POST", COMMENTS, {"html_url": "x"}, "the answer has no positive integer 'id'"),
    ("GET", "/repos/o/r/issues", [1], "item 1 is not a JSON object"),
    ("GET", "/repos/o/r/issues", ["pull_request"], "item 1 is not a JSON object"),
    ("POST", "/repos/o/r/issues", {"number": 9, "labels": "audit"}, "has no 'labels' list"),
    ("POST", "/repos/o/r/issues", {"number": 9, "labels": [{"name": 1}]}, "has a label that"),
]


@pytest.mark.parametrize(("method", "path", "answer", "said"), GITHUB_SHAPES)
def test_github_answers_of_the_wrong_shape(
    github_env, run, tmp_path, method, path, answer, said
) -> None:  # type: ignore[no-untyped-def]
    github_env.state.fail[(method, path)] = [(201 if method == "POST" else 200, answer)]
    if path == COMMENTS:
        result = comment(run, tmp_path, *WORKFLOW)
    else:
        body = tmp_path / "audit.md"
        body.write_text("stale\n", encoding="utf-8")
        result = run(
            "publish", "issue", "--label", "campaign-audit", "--title", "t",
            "--body-file", str(body), "--state", "open", *WORKFLOW,
        )  # fmt: skip
    refused(result, f"GitHub API: {method} {path} answered with an unexpected shape", said)


def test_github_user_answer_of_the_wrong_shape(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    github_env.state.fail[("GET", "/user")] = [(200, {"login": ["me"]})]
    refused(comment(run, tmp_path), "GET /user answered with an unexpected shape")
    assert [c.method for c in github_env.take()] == ["GET"]


GITLAB_SHAPES: list[tuple[str, str, Any, str]] = [
    ("GET", "/user", {"id": "99"}, "the answer has no positive integer 'id'"),
    ("GET", "/user", [GITLAB_BOT], "the answer is not a JSON object"),
    ("GET", NOTES, [1], "item 1 is not a JSON object"),
    ("GET", NOTES, [{"id": 1, "system": "no", "body": MARK}], "'system' that is not true"),
    ("GET", NOTES, [{"id": 1, "body": MARK, "author": {"id": "99"}}], "item 1's author has"),
    ("GET", NOTES, [{"id": 1, "body": MARK, "author": {"id": True}}], "item 1's author has"),
    ("POST", NOTES, {"id": -3}, "the answer has no positive integer 'id'"),
]


@pytest.mark.parametrize(("method", "path", "answer", "said"), GITLAB_SHAPES)
def test_gitlab_answers_of_the_wrong_shape(
    gitlab_env, run, tmp_path, method, path, answer, said
) -> None:  # type: ignore[no-untyped-def]
    gitlab_env.state.fail[(method, "/api/v4" + path)] = [(200, answer)]
    refused(comment(run, tmp_path), f"GitLab API: {method} {path} answered", said)


# --- tokens (item 7) ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "what"),
    [
        ("tok-SECRET\nX-Evil: 1", "a control character"),
        ("tok-SECRET\r\nX-Evil: 1", "a control character"),
        ("tok SECRET", "whitespace"),
        ("tok\tSECRET", "a control character"),
        ("tok\x7fSECRET", "a control character"),
        ("tok\u202eSECRET", "a control character"),
        ("tok\x1b[2JSECRET", "a control character"),
        ("tokéSECRET", "a non-ASCII character"),
        ("tok\u2028SECRET", "whitespace"),
    ],
)
@pytest.mark.parametrize("platform", ["github", "gitlab"])
def test_a_token_that_is_not_a_token_is_refused_unechoed(  # type: ignore[no-untyped-def]
    fake, run, tmp_path, monkeypatch, platform, token, what
) -> None:
    if platform == "github":
        monkeypatch.setenv("GITHUB_API_URL", fake.url)
        monkeypatch.setenv("GITHUB_REPOSITORY", "o/r")
        monkeypatch.setenv("GITHUB_TOKEN", token)
        extra: tuple[str, ...] = ("--platform", "github", "--number", "7", *WORKFLOW)
        variable = "GITHUB_TOKEN"
    else:
        monkeypatch.setenv("CI_API_V4_URL", fake.url + fakeforge.GITLAB_ROOT)
        monkeypatch.setenv("CI_PROJECT_ID", "42")
        monkeypatch.setenv("CAMPAIGN_GITLAB_TOKEN", token)
        extra = ("--platform", "gitlab", "--number", "3")
        variable = "CAMPAIGN_GITLAB_TOKEN"
    result = comment(run, tmp_path, *extra)
    refused(result, f"{variable} holds a character no token has ({what}, character ")
    assert "X-Evil" not in result.err
    assert fake.take() == []  # refused before anything was sent


def test_the_token_is_masked_in_every_form_an_answer_echoes(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    token = fakeforge.TOKEN
    echoed = f"{token} '{token}' Bearer%20{token}"
    github_env.state.fail[("POST", COMMENTS)] = [(422, {"message": echoed})]
    result = comment(run, tmp_path, *WORKFLOW)
    refused(result, "HTTP 422: *** '***' Bearer%20***")


def test_a_link_echoing_the_token_is_printed_masked(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    url = f"https://github.test/o/r/pull/7?token={fakeforge.TOKEN}"
    github_env.state.fail[("POST", COMMENTS)] = [(201, {"id": 5, "html_url": url})]
    result = comment(run, tmp_path, *WORKFLOW)
    assert result.code == 0, result.err
    assert (
        result.out
        == "created comment 5 on pull request #7: https://github.test/o/r/pull/7?token=***\n"
    )


def test_an_api_url_with_a_password_is_refused_unshown(
    github_env, run, tmp_path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GITHUB_API_URL", github_env.url.replace("//", "//x:tok-SECRET-pw@"))
    refused(comment(run, tmp_path, *WORKFLOW), "GITHUB_API_URL holds a user name or password")
    assert github_env.take() == []


def test_settings_never_show_the_token_in_a_repr() -> None:
    env = {
        "GITHUB_API_URL": "https://api.github.test",
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_TOKEN": fakeforge.TOKEN,
    }
    where = settings.from_env(env, platform="github", number=7, for_comment=True)
    assert fakeforge.TOKEN not in repr(where)
    assert fakeforge.TOKEN not in repr(github.client(where))


# --- another bot's comment (item 8) --------------------------------------------------------------


def test_another_apps_older_marked_comment_is_never_chosen(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    fake = github_env
    fake.state.comments[7] = [
        {"id": 11, "body": f"theirs\n\n{MARK}\n", "user": dict(OTHER_APP)},
        {"id": 12, "body": f"ours\n\n{MARK}\n", "user": dict(BOT)},
    ]
    result = comment(run, tmp_path, *WORKFLOW)
    assert result.code == 0, result.err
    assert [(c.method, c.path) for c in fake.take()][-1] == (
        "PATCH",
        "/repos/o/r/issues/comments/12",
    )
    assert fake.state.comments[7][0]["body"] == f"theirs\n\n{MARK}\n"


def test_only_another_apps_marked_comment_means_a_new_one(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    fake = github_env
    fake.state.comments[7] = [{"id": 11, "body": f"theirs\n\n{MARK}\n", "user": dict(OTHER_APP)}]
    result = comment(run, tmp_path, *WORKFLOW)
    assert result.code == 0, result.err
    assert result.out.startswith("created comment ")
    assert [c["user"]["login"] for c in fake.state.comments[7]] == [
        "other-app[bot]",
        "github-actions[bot]",
    ]


def test_an_installation_token_without_author_writes_nothing(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # At e39aef0 any [bot] counted as ours: comment 11 was picked, its edit got 403, and the
    # review step exited 2 on every run.
    fake = github_env
    fake.state.comments[7] = [
        {"id": 11, "body": f"theirs\n\n{MARK}\n", "user": dict(OTHER_APP)},
        {"id": 12, "body": f"ours\n\n{MARK}\n", "user": dict(BOT)},
    ]
    result = comment(run, tmp_path)
    refused(result, "GET /user refused this token (HTTP 403)", "pass --author LOGIN")
    assert "github-actions[bot] for GITHUB_TOKEN" in result.err
    assert [(c.method, c.path) for c in fake.take()] == [("GET", "/user")]


def test_a_403_on_the_edit_says_what_to_check(github_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    fake = github_env
    fake.state.comments[7] = [{"id": 11, "body": f"x\n\n{MARK}\n", "user": dict(OTHER_APP)}]
    result = comment(run, tmp_path, "--author", "other-app[bot]")  # the wrong account named
    refused(result, "PATCH /repos/o/r/issues/comments/11 failed: HTTP 403", "--author must name")


@pytest.mark.parametrize("login", ["", "a b", "x\n::error::y", "github-actions[bot] ", "o/r"])
def test_an_author_that_is_not_a_login_is_refused(github_env, run, tmp_path, login) -> None:  # type: ignore[no-untyped-def]
    result = comment(run, tmp_path, "--author", login)
    refused(result, "is not a GitHub login")
    assert "\n::error" not in result.err
    assert github_env.take() == []


def test_gitlab_edits_only_the_tokens_own_notes(gitlab_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    fake = gitlab_env
    other = {"id": 98, "username": "project_42_bot_other"}
    fake.state.notes[3] = [
        {"id": 21, "body": f"theirs\n\n{MARK}\n", "system": False, "author": other},
        {"id": 22, "body": f"ours\n\n{MARK}\n", "system": False, "author": dict(GITLAB_BOT)},
    ]
    result = comment(run, tmp_path)
    assert result.code == 0, result.err
    assert fake.take()[-1].path == f"/api/v4{NOTES}/22"
