"""GitHub's REST endpoints for a pull request's comments and a repository's issues.

A pull request is an issue, so its conversation comments are issue comments
(https://docs.github.com/en/rest/issues/comments, verified 2026-11). The token's own user comes
from ``GET /user``; an installation token (GITHUB_TOKEN, a GitHub App's) gets 403 "Resource not
accessible by integration" there, and then "mine" means an author of type Bot whose login ends
in ``[bot]`` (GITHUB_TOKEN comments as ``github-actions[bot]``), or the ``--author`` given.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from campaignops.forge.http import ApiError, Client, pages
from campaignops.forge.publish import Issue, Note, Posted
from campaignops.forge.settings import Settings

BODY_LIMIT = 65_536  # "Body is too long (maximum is 65536 characters)"
API_VERSION = "2022-11-28"


def client(settings: Settings) -> Client:
    return Client(
        base_url=settings.api_url,
        auth=("Authorization", f"Bearer {settings.token}"),
        headers={"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION},
        platform="GitHub",
    )


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _id(item: Any, key: str) -> int:
    value = item.get(key) if isinstance(item, dict) else None
    if not isinstance(value, int):
        raise ApiError(status=0, message=f"GitHub API: an item without a numeric {key!r}")
    return value


class GitHub:
    platform = "GitHub"
    body_limit = BODY_LIMIT

    def __init__(self, settings: Settings, *, author: str | None = None) -> None:
        self._client = client(settings)
        owner, repo = settings.project.split("/")
        self._repo = f"/repos/{urllib.parse.quote(owner)}/{urllib.parse.quote(repo)}"
        self._author = author
        self._checked = author is not None

    def _whoami(self) -> None:
        if self._checked:
            return
        try:
            answer = self._client.request("GET", "/user")
        except ApiError as exc:
            if exc.status != 403:
                raise
        else:
            login = answer.data.get("login") if isinstance(answer.data, dict) else None
            self._author = login if isinstance(login, str) else None
        self._checked = True

    def _mine(self, item: Any) -> bool:
        user = item.get("user") if isinstance(item, dict) else None
        if not isinstance(user, dict):
            return False
        login = _text(user.get("login"))
        if self._author is not None:
            return login == self._author
        return user.get("type") == "Bot" and login.endswith("[bot]")

    def notes(self, number: int) -> list[Note]:
        self._whoami()
        items = pages(self._client, f"{self._repo}/issues/{number}/comments")
        return [
            Note(
                id=_id(c, "id"),
                body=_text(c.get("body")),
                mine=self._mine(c),
                url=_text(c.get("html_url")),
            )
            for c in items
        ]

    def _posted(self, data: Any) -> Posted:
        return Posted(id=_id(data, "id"), url=_text(data.get("html_url")))

    def create_note(self, number: int, body: str) -> Posted:
        answer = self._client.request(
            "POST", f"{self._repo}/issues/{number}/comments", body={"body": body}
        )
        return self._posted(answer.data)

    def update_note(self, number: int, note_id: int, body: str) -> Posted:
        answer = self._client.request(
            "PATCH", f"{self._repo}/issues/comments/{note_id}", body={"body": body}
        )
        return self._posted(answer.data)

    def issues(self, label: str) -> list[Issue]:
        self._whoami()
        items = pages(
            self._client, f"{self._repo}/issues", query={"labels": label, "state": "open"}
        )
        return [
            Issue(
                number=_id(i, "number"),
                title=_text(i.get("title")),
                body=_text(i.get("body")),
                mine=self._mine(i),
                url=_text(i.get("html_url")),
            )
            for i in items
            if "pull_request" not in i  # the issues list returns pull requests too
        ]

    def create_issue(self, *, title: str, body: str, label: str) -> Posted:
        answer = self._client.request(
            "POST", f"{self._repo}/issues", body={"title": title, "body": body, "labels": [label]}
        )
        labels = answer.data.get("labels") if isinstance(answer.data, dict) else None
        names = tuple(
            _text(label.get("name")) if isinstance(label, dict) else _text(label)
            for label in (labels if isinstance(labels, list) else [])
        )
        return Posted(
            id=_id(answer.data, "number"), url=_text(answer.data.get("html_url")), labels=names
        )

    def update_issue(self, number: int, *, title: str, body: str) -> Posted:
        self._client.request(
            "PATCH", f"{self._repo}/issues/{number}", body={"title": title, "body": body}
        )
        return Posted(id=number)

    def close_issue(self, number: int) -> Posted:
        # state_reason only takes effect together with the state change (github/docs#22914).
        self._client.request(
            "PATCH",
            f"{self._repo}/issues/{number}",
            body={"state": "closed", "state_reason": "completed"},
        )
        return Posted(id=number)
