"""Where to publish, read from the CI environment (the table is in docs/gitops.md).

The API URL is never defaulted: a token must only travel to the server the CI names. GitLab's
CI_JOB_TOKEN is not used because it cannot write notes or issues (GitLab's job-token allowlist);
a project access token in CAMPAIGN_GITLAB_TOKEN is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from campaignops.core.errors import UsageError
from campaignops.gitops.forge.http import check_base_url, check_token

PLATFORMS = ("github", "gitlab")
GITLAB_TOKEN = "CAMPAIGN_GITLAB_TOKEN"


@dataclass(frozen=True)
class Settings:
    platform: str  # "github" or "gitlab"
    api_url: str
    project: str  # "owner/repo" (GitHub) or the project id or path (GitLab)
    # Empty only when ``fork`` and no token reached the job; never in a repr.
    token: str = field(repr=False)
    number: int | None  # the pull request / merge request, when the command needs one
    fork: bool  # the change comes from a fork: its job's token cannot write here
    summary: Path | None  # GITHUB_STEP_SUMMARY, where an unpublished review is left


def _need(env: Mapping[str, str], name: str, why: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise UsageError(message=f"{name} is not set: {why}", hint=_HINTS.get(name, ""))
    return value


_HINTS = {
    "GITHUB_API_URL": "GitHub Actions sets it; outside Actions export it (https://api.github.com)",
    "GITHUB_REPOSITORY": "GitHub Actions sets it; outside Actions export OWNER/REPO",
    "CI_API_V4_URL": "GitLab CI sets it; outside GitLab CI export https://HOST/api/v4",
    "CI_PROJECT_ID": "GitLab CI sets it; outside GitLab CI export the project's numeric id",
}


def platform_of(env: Mapping[str, str], chosen: str | None) -> str:
    if chosen:
        return chosen
    if env.get("GITHUB_ACTIONS") == "true":
        return "github"
    if env.get("GITLAB_CI") == "true":
        return "gitlab"
    raise UsageError(
        message="no --platform, and neither GITHUB_ACTIONS nor GITLAB_CI is 'true'",
        hint="pass --platform github or --platform gitlab",
    )


def _number(raw: str, *, source: str) -> int:
    if not raw.isdigit() or int(raw) < 1:
        raise UsageError(message=f"{source} {raw!r} is not a positive number")
    return int(raw)


def _event(env: Mapping[str, str]) -> dict[str, object]:
    path = env.get("GITHUB_EVENT_PATH", "")
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(
            message=f"GITHUB_EVENT_PATH {path}: cannot read the event payload ({exc})",
            hint="pass --number N",
        ) from None
    return data if isinstance(data, dict) else {}


def _repo_name(side: object) -> str:
    repo = side.get("repo") if isinstance(side, dict) else None
    name = repo.get("full_name") if isinstance(repo, dict) else None
    return name if isinstance(name, str) else ""


def github(env: Mapping[str, str], *, number: int | None, for_comment: bool) -> Settings:
    api = check_base_url(
        _need(env, "GITHUB_API_URL", "the REST API root"), variable="GITHUB_API_URL"
    )
    repo = _need(env, "GITHUB_REPOSITORY", "the OWNER/REPO to publish to")
    if repo.count("/") != 1 or "" in repo.split("/"):
        raise UsageError(message=f"GITHUB_REPOSITORY {repo!r} is not OWNER/REPO")
    variable = "GITHUB_TOKEN" if env.get("GITHUB_TOKEN", "").strip() else "GH_TOKEN"
    token = check_token(env.get(variable, "").strip(), variable=variable)
    if not token:
        raise UsageError(
            message="neither GITHUB_TOKEN nor GH_TOKEN is set: the token to publish with",
            hint="in the workflow step: env: GITHUB_TOKEN: ${{ github.token }}",
        )
    event = _event(env)
    pull = event.get("pull_request")
    pull = pull if isinstance(pull, dict) else {}
    if number is None and for_comment:
        raw = pull.get("number", event.get("number"))
        if not isinstance(raw, int):
            raise UsageError(
                message="no --number, and GITHUB_EVENT_PATH holds no pull_request.number",
                hint="run on a pull_request event or pass --number N",
            )
        number = _number(str(raw), source="pull_request.number")
    head, base = _repo_name(pull.get("head")), _repo_name(pull.get("base"))
    # GitHub caps GITHUB_TOKEN at read for fork pull requests and for Dependabot's.
    fork = bool(pull) and (head != base or env.get("GITHUB_ACTOR") == "dependabot[bot]")
    summary = env.get("GITHUB_STEP_SUMMARY", "")
    return Settings(
        platform="github",
        api_url=api,
        project=repo,
        token=token,
        number=number,
        fork=fork,
        summary=Path(summary) if summary else None,
    )


def gitlab(env: Mapping[str, str], *, number: int | None, for_comment: bool) -> Settings:
    api = check_base_url(_need(env, "CI_API_V4_URL", "the REST API root"), variable="CI_API_V4_URL")
    # In a merge request pipeline the MR belongs to the target project, which a fork's
    # pipeline is not; CI_MERGE_REQUEST_PROJECT_ID names it.
    project = env.get("CI_MERGE_REQUEST_PROJECT_ID", "").strip() or _need(
        env, "CI_PROJECT_ID", "the project to publish to"
    )
    source = env.get("CI_MERGE_REQUEST_SOURCE_PROJECT_ID", "").strip()
    fork = bool(source) and source != project
    if number is None and for_comment:
        raw = _need(env, "CI_MERGE_REQUEST_IID", "the merge request (set in MR pipelines only)")
        number = _number(raw, source="CI_MERGE_REQUEST_IID")
    token = check_token(env.get(GITLAB_TOKEN, "").strip(), variable=GITLAB_TOKEN)
    if not token and not (fork and for_comment):
        raise UsageError(
            message=f"{GITLAB_TOKEN} is not set: GitLab's CI_JOB_TOKEN cannot write "
            "merge request notes or issues",
            hint="create a project access token (scope api, role Reporter) and store it as "
            f"a masked CI/CD variable {GITLAB_TOKEN} (docs/gitops.md, Tokens)",
        )
    return Settings(
        platform="gitlab",
        api_url=api,
        project=project,
        token=token,
        number=number,
        fork=fork,
        summary=None,
    )


def from_env(
    env: Mapping[str, str], *, platform: str | None, number: int | None, for_comment: bool
) -> Settings:
    chosen = platform_of(env, platform)
    read = github if chosen == "github" else gitlab
    return read(env, number=number, for_comment=for_comment)
