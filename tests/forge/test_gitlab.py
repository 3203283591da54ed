"""`campaign publish` against a local GitLab API: merge request notes and the audit issue."""

from __future__ import annotations

from pathlib import Path

from tests.forge import fakeforge
from tests.forge.fakeforge import GITLAB_BOT, GITLAB_HUMAN, Call

AUTH = f"PRIVATE-TOKEN: {fakeforge.TOKEN}"
MARK = "<!-- campaignops:campaign-review -->"
AUDIT = "<!-- campaignops:campaign-audit -->"
ROOT = fakeforge.GITLAB_ROOT
NOTES = f"{ROOT}/projects/42/merge_requests/3/notes"
NOTES_Q = {"sort": "asc", "order_by": "created_at", "per_page": "100", "page": "1"}
ISSUES_Q = {"labels": "campaign-audit", "state": "opened", "per_page": "100", "page": "1"}


def note(run, tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "review.md"
    path.write_text(text, encoding="utf-8")
    return run("publish", "comment", "--marker", "campaign-review", "--body-file", str(path))


def issue(run, tmp_path: Path, state: str, text: str = ""):  # type: ignore[no-untyped-def]
    path = tmp_path / "audit.md"
    path.write_text(text, encoding="utf-8")
    return run(
        "publish", "issue", "--label", "campaign-audit", "--title", "Audit",
        "--body-file", str(path), "--state", state,
    )  # fmt: skip


def test_note_created_then_updated_system_and_human_notes_skipped(
    gitlab_env, run, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    fake = gitlab_env
    # A system note by the bot user that mentions the marker, and a human's quote of it.
    fake.state.notes[3] = [
        {"id": 1, "body": f"changed the description {MARK}", "system": True,
         "author": dict(GITLAB_BOT)},
        {"id": 2, "body": f"quoting {MARK}", "system": False, "author": dict(GITLAB_HUMAN)},
    ]  # fmt: skip
    first = note(run, tmp_path, "## Review\n")
    assert first.code == 0, first.err
    made = fake.state.notes[3][-1]["id"]
    assert first.out == f"created note {made} on merge request !3\n"
    assert fake.take() == [
        Call("GET", f"{ROOT}/user", {}, None, AUTH),
        Call("GET", NOTES, NOTES_Q, None, AUTH),
        Call("POST", NOTES, {}, {"body": f"## Review\n\n{MARK}\n"}, AUTH),
    ]

    second = note(run, tmp_path, "## Review v2\n")
    assert second.out == f"updated note {made} on merge request !3\n"
    assert fake.take() == [
        Call("GET", f"{ROOT}/user", {}, None, AUTH),
        Call("GET", NOTES, NOTES_Q, None, AUTH),
        Call("PUT", f"{NOTES}/{made}", {}, {"body": f"## Review v2\n\n{MARK}\n"}, AUTH),
    ]
    assert [n["body"] for n in fake.state.notes[3]] == [
        f"changed the description {MARK}",
        f"quoting {MARK}",
        f"## Review v2\n\n{MARK}\n",
    ]


def test_notes_are_paged(gitlab_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    fake = gitlab_env
    thread = [
        {"id": i, "body": "hi", "system": False, "author": dict(GITLAB_HUMAN)}
        for i in range(1, 131)
    ]
    thread[110]["body"], thread[110]["author"] = f"old\n\n{MARK}\n", dict(GITLAB_BOT)
    fake.state.notes[3] = thread
    assert note(run, tmp_path, "new").code == 0
    assert [(c.method, c.path, c.query.get("page")) for c in fake.take()] == [
        ("GET", f"{ROOT}/user", None),
        ("GET", NOTES, "1"),
        ("GET", NOTES, "2"),
        ("PUT", f"{NOTES}/111", None),
    ]


def test_issue_open_update_close(gitlab_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    fake = gitlab_env
    opened = issue(run, tmp_path, "open", "2 stale\n")
    assert opened.code == 0, opened.err
    iid = fake.state.gl_issues[0]["iid"]
    assert opened.out == f"created issue #{iid}: https://gitlab.test/g/p/-/issues/{iid}\n"
    assert fake.take() == [
        Call("GET", f"{ROOT}/user", {}, None, AUTH),
        Call("GET", f"{ROOT}/projects/42/issues", ISSUES_Q, None, AUTH),
        Call(
            "POST",
            f"{ROOT}/projects/42/issues",
            {},
            {"title": "Audit", "description": f"2 stale\n\n{AUDIT}\n", "labels": "campaign-audit"},
            AUTH,
        ),
    ]
    assert issue(run, tmp_path, "open", "1 stale\n").out.startswith(f"updated issue #{iid}")
    assert fake.take()[-1] == Call(
        "PUT",
        f"{ROOT}/projects/42/issues/{iid}",
        {},
        {"title": "Audit", "description": f"1 stale\n\n{AUDIT}\n"},
        AUTH,
    )
    assert issue(run, tmp_path, "closed").out.startswith(f"closed issue #{iid}")
    assert fake.take()[-1] == Call(
        "PUT", f"{ROOT}/projects/42/issues/{iid}", {}, {"state_event": "close"}, AUTH
    )
    assert fake.state.gl_issues[0]["state"] == "closed"
    nothing = issue(run, tmp_path, "closed")
    assert nothing.out == "no open issue labelled campaign-audit of ours: nothing to close\n"


def test_missing_token_says_the_job_token_cannot_write(
    gitlab_env, run, tmp_path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("CAMPAIGN_GITLAB_TOKEN")
    monkeypatch.setenv("CI_JOB_TOKEN", "job-token")
    result = note(run, tmp_path, "x")
    assert result.code == 2
    assert result.err.splitlines() == [
        "campaign: error: CAMPAIGN_GITLAB_TOKEN is not set: GitLab's CI_JOB_TOKEN cannot write "
        "merge request notes or issues",
        "  hint: create a project access token (scope api, role Reporter) and store it as a "
        "masked CI/CD variable CAMPAIGN_GITLAB_TOKEN (docs/gitops.md, Tokens)",
    ]
    assert gitlab_env.take() == []


def test_fork_merge_request_without_token_leaves_the_review_in_the_log(  # type: ignore[no-untyped-def]
    gitlab_env, run, tmp_path, monkeypatch
) -> None:
    monkeypatch.delenv("CAMPAIGN_GITLAB_TOKEN")
    monkeypatch.setenv("CI_PROJECT_ID", "77")  # the fork runs the pipeline
    monkeypatch.setenv("CI_MERGE_REQUEST_PROJECT_ID", "42")
    monkeypatch.setenv("CI_MERGE_REQUEST_SOURCE_PROJECT_ID", "77")
    result = note(run, tmp_path, "## Review\n::add-mask::x\n")
    assert result.code == 0
    assert result.out == "## Review\n\\::add-mask::x\n"  # never a workflow command
    assert "warning: no CAMPAIGN_GITLAB_TOKEN in this pipeline of a merge request from a fork" in (
        result.err
    )
    assert gitlab_env.take() == []


def test_fork_merge_request_notes_go_to_the_target_project(
    gitlab_env, run, tmp_path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CI_PROJECT_ID", "77")
    monkeypatch.setenv("CI_MERGE_REQUEST_PROJECT_ID", "42")
    assert note(run, tmp_path, "x").code == 0
    assert gitlab_env.take()[-1].path == NOTES


def test_author_option_is_github_only(gitlab_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "r.md"
    path.write_text("x", encoding="utf-8")
    result = run(
        "publish", "comment", "--marker", "m", "--body-file", str(path), "--author", "me"
    )  # fmt: skip
    assert result.code == 2
    assert "--author applies to GitHub only" in result.err


def test_a_rejected_token_is_exit_2_and_never_shown(gitlab_env, run, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CAMPAIGN_GITLAB_TOKEN", "glpat-expired-secret")
    result = note(run, tmp_path, "x")
    assert result.code == 2
    assert result.err.splitlines() == [
        "campaign: error: GitLab API: GET /user failed: HTTP 401: 401 Unauthorized",
        "  hint: the token is missing, expired or revoked: renew it in the CI settings",
    ]
    assert gitlab_env.take()[0].auth == "PRIVATE-TOKEN: glpat-expired-secret"
    assert "glpat-expired-secret" not in result.out + result.err


def test_403_without_a_fork_is_exit_2(gitlab_env, run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    gitlab_env.state.fail[("POST", NOTES)] = [(403, {"message": "403 Forbidden"})]
    result = note(run, tmp_path, "x")
    assert result.code == 2
    assert f"POST {NOTES.removeprefix(ROOT)} failed: HTTP 403: 403 Forbidden" in result.err
