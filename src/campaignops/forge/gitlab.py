"""GitLab's REST endpoints for a merge request's notes and a project's issues.

Notes lists include system notes ("added 1 commit"), which are skipped; they come 20 a page,
newest first, by default, so the list asks for 100 a page, oldest first (doc/api/notes.md in
gitlabhq/gitlabhq, verified 2026-11). The token's own user is ``GET /user`` (a project access
token is a bot user of its own), compared by id.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from campaignops.forge.http import ApiError, Client, pages
from campaignops.forge.publish import Issue, Note, Posted
from campaignops.forge.settings import Settings

BODY_LIMIT = 1_000_000  # notes: "limited to 1,000,000 characters"


def client(settings: Settings) -> Client:
    return Client(
        base_url=settings.api_url, auth=("PRIVATE-TOKEN", settings.token), platform="GitLab"
    )


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _id(item: Any, key: str) -> int:
    value = item.get(key) if isinstance(item, dict) else None
    if not isinstance(value, int):
        raise ApiError(status=0, message=f"GitLab API: an item without a numeric {key!r}")
    return value


class GitLab:
    platform = "GitLab"
    body_limit = BODY_LIMIT

    def __init__(self, settings: Settings) -> None:
        self._client = client(settings)
        self._project = f"/projects/{urllib.parse.quote(settings.project, safe='')}"
        self._me: int | None = None

    def _whoami(self) -> None:
        if self._me is None:
            self._me = _id(self._client.request("GET", "/user").data, "id")

    def _mine(self, item: Any) -> bool:
        author = item.get("author") if isinstance(item, dict) else None
        return isinstance(author, dict) and author.get("id") == self._me

    def notes(self, number: int) -> list[Note]:
        self._whoami()
        items = pages(
            self._client,
            f"{self._project}/merge_requests/{number}/notes",
            query={"sort": "asc", "order_by": "created_at"},
        )
        return [
            Note(id=_id(n, "id"), body=_text(n.get("body")), mine=self._mine(n))
            for n in items
            if not n.get("system")
        ]

    def create_note(self, number: int, body: str) -> Posted:
        answer = self._client.request(
            "POST", f"{self._project}/merge_requests/{number}/notes", body={"body": body}
        )
        return Posted(id=_id(answer.data, "id"))

    def update_note(self, number: int, note_id: int, body: str) -> Posted:
        answer = self._client.request(
            "PUT", f"{self._project}/merge_requests/{number}/notes/{note_id}", body={"body": body}
        )
        return Posted(id=_id(answer.data, "id"))

    def issues(self, label: str) -> list[Issue]:
        self._whoami()
        items = pages(
            self._client, f"{self._project}/issues", query={"labels": label, "state": "opened"}
        )
        return [
            Issue(
                number=_id(i, "iid"),
                title=_text(i.get("title")),
                body=_text(i.get("description")),
                mine=self._mine(i),
                url=_text(i.get("web_url")),
            )
            for i in items
        ]

    def create_issue(self, *, title: str, body: str, label: str) -> Posted:
        answer = self._client.request(
            "POST",
            f"{self._project}/issues",
            body={"title": title, "description": body, "labels": label},
        )
        labels = answer.data.get("labels") if isinstance(answer.data, dict) else None
        names = tuple(_text(n) for n in (labels if isinstance(labels, list) else []))
        return Posted(
            id=_id(answer.data, "iid"), url=_text(answer.data.get("web_url")), labels=names
        )

    def update_issue(self, number: int, *, title: str, body: str) -> Posted:
        self._client.request(
            "PUT", f"{self._project}/issues/{number}", body={"title": title, "description": body}
        )
        return Posted(id=number)

    def close_issue(self, number: int) -> Posted:
        self._client.request(
            "PUT", f"{self._project}/issues/{number}", body={"state_event": "close"}
        )
        return Posted(id=number)
