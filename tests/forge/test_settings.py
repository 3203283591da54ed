"""Which platform, project, number and token the CI environment gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from campaignops.core.errors import UsageError
from campaignops.gitops.forge import settings

GITHUB = {
    "GITHUB_ACTIONS": "true",
    "GITHUB_API_URL": "https://api.github.com",
    "GITHUB_REPOSITORY": "o/r",
    "GITHUB_TOKEN": "t",
}
GITLAB = {
    "GITLAB_CI": "true",
    "CI_API_V4_URL": "https://gitlab.example/api/v4",
    "CI_PROJECT_ID": "42",
    "CI_MERGE_REQUEST_IID": "3",
    "CAMPAIGN_GITLAB_TOKEN": "t",
}


def event(tmp_path: Path, payload: object) -> str:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return str(path)


def test_platform_from_the_environment_or_the_option() -> None:
    assert settings.platform_of(GITHUB, None) == "github"
    assert settings.platform_of(GITLAB, None) == "gitlab"
    assert settings.platform_of(GITHUB, "gitlab") == "gitlab"
    with pytest.raises(UsageError, match="no --platform, and neither GITHUB_ACTIONS nor GITLAB_CI"):
        settings.platform_of({}, None)


def test_github_pull_request_number_and_fork(tmp_path: Path) -> None:
    pull = {
        "number": 7,
        "head": {"repo": {"full_name": "o/r"}},
        "base": {"repo": {"full_name": "o/r"}},
    }
    env = {**GITHUB, "GITHUB_EVENT_PATH": event(tmp_path, {"pull_request": pull})}
    got = settings.from_env(env, platform=None, number=None, for_comment=True)
    assert (got.number, got.fork, got.project, got.api_url) == (
        7,
        False,
        "o/r",
        "https://api.github.com",
    )
    forked = {**pull, "head": {"repo": {"full_name": "someone/r"}}}
    env["GITHUB_EVENT_PATH"] = event(tmp_path, {"pull_request": forked})
    assert settings.from_env(env, platform=None, number=None, for_comment=True).fork
    deleted_fork = {**pull, "head": {"repo": None}}
    env["GITHUB_EVENT_PATH"] = event(tmp_path, {"pull_request": deleted_fork})
    assert settings.from_env(env, platform=None, number=None, for_comment=True).fork
    env["GITHUB_EVENT_PATH"] = event(tmp_path, {"pull_request": pull})
    env["GITHUB_ACTOR"] = "dependabot[bot]"
    assert settings.from_env(env, platform=None, number=None, for_comment=True).fork
    assert settings.from_env(env, platform=None, number=12, for_comment=True).number == 12


def test_github_issue_needs_no_number() -> None:
    got = settings.from_env(GITHUB, platform=None, number=None, for_comment=False)
    assert (got.number, got.fork) == (None, False)


@pytest.mark.parametrize("repo", ["o", "o/r/x", "/r", "o/"])
def test_github_repository_must_be_owner_slash_repo(repo: str) -> None:
    with pytest.raises(UsageError, match="is not OWNER/REPO"):
        settings.from_env(
            {**GITHUB, "GITHUB_REPOSITORY": repo}, platform=None, number=1, for_comment=True
        )


def test_unreadable_event_payload(tmp_path: Path) -> None:
    env = {**GITHUB, "GITHUB_EVENT_PATH": str(tmp_path / "nope.json")}
    with pytest.raises(UsageError, match="cannot read the event payload"):
        settings.from_env(env, platform=None, number=None, for_comment=True)


def test_gitlab_merge_request() -> None:
    got = settings.from_env(GITLAB, platform=None, number=None, for_comment=True)
    assert (got.project, got.number, got.fork, got.token) == ("42", 3, False, "t")


def test_gitlab_merge_request_iid_missing_outside_mr_pipelines() -> None:
    env = {k: v for k, v in GITLAB.items() if k != "CI_MERGE_REQUEST_IID"}
    with pytest.raises(UsageError, match="CI_MERGE_REQUEST_IID is not set"):
        settings.from_env(env, platform=None, number=None, for_comment=True)
    assert settings.from_env(env, platform=None, number=None, for_comment=False).number is None


def test_gitlab_issue_always_needs_the_token_even_from_a_fork() -> None:
    env = {
        **{k: v for k, v in GITLAB.items() if k != "CAMPAIGN_GITLAB_TOKEN"},
        "CI_MERGE_REQUEST_PROJECT_ID": "42",
        "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": "77",
    }
    assert settings.from_env(env, platform=None, number=None, for_comment=True).token == ""
    with pytest.raises(UsageError, match="CAMPAIGN_GITLAB_TOKEN is not set"):
        settings.from_env(env, platform=None, number=None, for_comment=False)


def test_api_url_is_never_defaulted() -> None:
    env = {k: v for k, v in GITLAB.items() if k != "CI_API_V4_URL"}
    with pytest.raises(UsageError, match="CI_API_V4_URL is not set"):
        settings.from_env(env, platform=None, number=None, for_comment=True)
