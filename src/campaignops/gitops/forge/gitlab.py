"""GitLab's REST endpoints for a merge request's notes and a project's issues.

Notes lists include system notes ("added 1 commit"), which are skipped; they come 20 a page,
newest first, by default, so the list asks for 100 a page, oldest first (doc/api/notes.md in
gitlabhq/gitlabhq, verified 2026-11). The token's own user is ``GET /user`` (a project access
token is a bot user of its own), compared by id.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from campaignops.gitops.forge.http import Client, pages
from campaignops.gitops.forge.publish import Issue, Note, Posted
from campaignops.gitops.forge.settings import Settings
from campaignops.gitops.forge.shape import Shape

BODY_LIMIT = 1_000_000  # notes: "limited to 1,000,000 characters"


def client(settings: Settings) -> Client:
    return Client(
        base_url=settings.api_url, auth=("PRIVATE-TOKEN", settings.token), platform="GitLab"
    )


class GitLab:
    platform = "GitLab"
    body_limit = BODY_LIMIT

    def __init__(self, settings: Settings) -> None:
        self._client = client(settings)
        self._project = f"/projects/{urllib.parse.quote(settings.project, safe='')}"
        self._me: int | None = None

    def _whoami(self) -> int:
        if self._me is None:
            shape = Shape(self._client, "GET /user")
            self._me = shape.ident(shape.record(self._client.request("GET", "/user").data), "id")
        return self._me

    def _mine(self, shape: Shape, item: dict[str, Any], where: str) -> bool:
        author = shape.inner(item, "author", where)
        return author is not None and shape.ident(author, "id", f"{where}'s author") == (
            self._whoami()
        )

    def notes(self, number: int) -> list[Note]:
        self._whoami()
        path = f"{self._project}/merge_requests/{number}/notes"
        shape = Shape(self._client, f"GET {path}")
        items = pages(self._client, path, query={"sort": "asc", "order_by": "created_at"})
        return [
            Note(
                id=shape.ident(n, "id", where),
                body=shape.text(n, "body", where),
                mine=self._mine(shape, n, where),
            )
            for where, n in shape.records(items)
            if not shape.flag(n, "system", where)
        ]

    def _posted(self, shown: str, data: Any) -> Posted:
        shape = Shape(self._client, shown)
        return Posted(id=shape.ident(shape.record(data), "id"))

    def create_note(self, number: int, body: str) -> Posted:
        path = f"{self._project}/merge_requests/{number}/notes"
        answer = self._client.request("POST", path, body={"body": body})
        return self._posted(f"POST {path}", answer.data)

    def update_note(self, number: int, note_id: int, body: str) -> Posted:
        path = f"{self._project}/merge_requests/{number}/notes/{note_id}"
        answer = self._client.request("PUT", path, body={"body": body})
        return self._posted(f"PUT {path}", answer.data)

    def issues(self, label: str) -> list[Issue]:
        self._whoami()
        path = f"{self._project}/issues"
        shape = Shape(self._client, f"GET {path}")
        items = pages(self._client, path, query={"labels": label, "state": "opened"})
        return [
            Issue(
                number=shape.ident(i, "iid", where),
                title=shape.text(i, "title", where),
                body=shape.text(i, "description", where),
                mine=self._mine(shape, i, where),
                url=shape.url(i, "web_url", where),
            )
            for where, i in shape.records(items)
        ]

    def create_issue(self, *, title: str, body: str, label: str) -> Posted:
        path = f"{self._project}/issues"
        answer = self._client.request(
            "POST", path, body={"title": title, "description": body, "labels": label}
        )
        shape = Shape(self._client, f"POST {path}")
        item = shape.record(answer.data)
        return Posted(
            id=shape.ident(item, "iid"), url=shape.url(item, "web_url"), labels=shape.labels(item)
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
