"""The fake forge server and a CI environment pointing `campaign publish` at it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from campaignops.gitops.forge import http
from tests.forge import fakeforge

CI_VARIABLES = [
    "GITHUB_ACTIONS",
    "GITHUB_API_URL",
    "GITHUB_REPOSITORY",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GITHUB_EVENT_PATH",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_ACTOR",
    "GITLAB_CI",
    "CI_API_V4_URL",
    "CI_PROJECT_ID",
    "CI_MERGE_REQUEST_IID",
    "CI_MERGE_REQUEST_PROJECT_ID",
    "CI_MERGE_REQUEST_SOURCE_PROJECT_ID",
    "CAMPAIGN_GITLAB_TOKEN",
]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[fakeforge.Fake]:
    monkeypatch.setattr(http, "RETRY_DELAYS", (0.0, 0.0))
    for name in CI_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    yield from fakeforge.serve()


def pull_request_event(tmp_path: Path, *, number: int, head: str = "o/r") -> Path:
    """A pull_request event payload as GITHUB_EVENT_PATH holds it (the fields read)."""
    path = tmp_path / "event.json"
    event = {
        "number": number,
        "pull_request": {
            "number": number,
            "head": {"repo": {"full_name": head}},
            "base": {"repo": {"full_name": "o/r"}},
        },
    }
    path.write_text(json.dumps(event), encoding="utf-8")
    return path


@pytest.fixture
def github_env(
    fake: fakeforge.Fake, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> fakeforge.Fake:
    """GitHub Actions on pull request #7 of o/r, with GITHUB_TOKEN."""
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_API_URL", fake.url)
    monkeypatch.setenv("GITHUB_REPOSITORY", "o/r")
    monkeypatch.setenv("GITHUB_TOKEN", fakeforge.TOKEN)
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(pull_request_event(tmp_path, number=7)))
    return fake


@pytest.fixture
def gitlab_env(fake: fakeforge.Fake, monkeypatch: pytest.MonkeyPatch) -> fakeforge.Fake:
    """GitLab CI in merge request !3 of project 42, with a project access token."""
    monkeypatch.setenv("GITLAB_CI", "true")
    monkeypatch.setenv("CI_API_V4_URL", fake.url + fakeforge.GITLAB_ROOT)
    monkeypatch.setenv("CI_PROJECT_ID", "42")
    monkeypatch.setenv("CI_MERGE_REQUEST_IID", "3")
    monkeypatch.setenv("CAMPAIGN_GITLAB_TOKEN", fakeforge.TOKEN)
    return fake
