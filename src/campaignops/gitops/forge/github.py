"""GitHub's REST endpoints for a pull request's comments and a repository's issues.

A pull request is an issue, so its conversation comments are issue comments
(https://docs.github.com/en/rest/issues/comments, verified 2026-11). Ours are the items of ONE
login: ``--author``, else the token's own user from ``GET /user``. An installation token
(GITHUB_TOKEN, a GitHub App's) gets 403 "Resource not accessible by integration" there and
cannot say who it is, so without ``--author`` the run stops before any write: taking any
``[bot]`` account as ours picked another app's older comment, whose edit then got 403 on every
run. The generated workflows pass ``--author github-actions[bot]`` (who GITHUB_TOKEN posts as).
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from campaignops.core.errors import UsageError
from campaignops.gitops.forge.http import ApiError, Client, pages
from campaignops.gitops.forge.publish import Issue, Note, Posted
from campaignops.gitops.forge.settings import Settings
from campaignops.gitops.forge.shape import Shape

BODY_LIMIT = 65_536  # "Body is too long (maximum is 65536 characters)"
API_VERSION = "2022-11-28"
# A user login (39 characters of letters, digits, hyphens) or an app's bot account, APP[bot].
_LOGIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}(\[bot\])?")
NO_AUTHOR = (
    "GET /user refused this token (HTTP 403): it is an installation token (the workflow's "
    "GITHUB_TOKEN or a GitHub App's), which cannot say whose comments and issues are ours; "
    "nothing was changed"
)
NO_AUTHOR_HINT = (
    "pass --author LOGIN, the account the token posts as: github-actions[bot] for "
    "GITHUB_TOKEN (the generated workflows do), APP-SLUG[bot] for a GitHub App's token"
)


def client(settings: Settings) -> Client:
    return Client(
        base_url=settings.api_url,
        auth=("Authorization", f"Bearer {settings.token}"),
        headers={"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION},
        platform="GitHub",
    )


def check_author(login: str) -> str:
    if not _LOGIN.fullmatch(login):
        raise UsageError(
            message=f"--author {login!r} is not a GitHub login",
            hint="a user's login, or an app's bot account such as github-actions[bot]",
        )
    return login


class GitHub:
    platform = "GitHub"
    body_limit = BODY_LIMIT

    def __init__(self, settings: Settings, *, author: str | None = None) -> None:
        self._client = client(settings)
        owner, repo = settings.project.split("/")
        self._repo = f"/repos/{urllib.parse.quote(owner)}/{urllib.parse.quote(repo)}"
        self._author = None if author is None else check_author(author)

    def _whoami(self) -> str:
        if self._author is None:
            try:
                answer = self._client.request("GET", "/user")
            except ApiError as exc:
                if exc.status == 403:
                    raise UsageError(message=NO_AUTHOR, hint=NO_AUTHOR_HINT) from None
                raise
            shape = Shape(self._client, "GET /user")
            login = shape.text(shape.record(answer.data), "login")
            if not login:
                raise shape.wrong("the answer", "has no 'login'")
            self._author = login
        return self._author

    def _mine(self, shape: Shape, item: dict[str, Any], where: str) -> bool:
        """Written by the one author: a login compared as GitHub does, ignoring case."""
        user = shape.inner(item, "user", where)  # null for a deleted account
        login = "" if user is None else shape.text(user, "login", f"{where}'s user")
        return login.casefold() == self._whoami().casefold()

    def notes(self, number: int) -> list[Note]:
        self._whoami()
        path = f"{self._repo}/issues/{number}/comments"
        shape = Shape(self._client, f"GET {path}")
        return [
            Note(
                id=shape.ident(c, "id", where),
                body=shape.text(c, "body", where),
                mine=self._mine(shape, c, where),
                url=shape.url(c, "html_url", where),
            )
            for where, c in shape.records(pages(self._client, path))
        ]

    def _posted(self, shown: str, data: Any) -> Posted:
        shape = Shape(self._client, shown)
        item = shape.record(data)
        return Posted(id=shape.ident(item, "id"), url=shape.url(item, "html_url"))

    def create_note(self, number: int, body: str) -> Posted:
        path = f"{self._repo}/issues/{number}/comments"
        answer = self._client.request("POST", path, body={"body": body})
        return self._posted(f"POST {path}", answer.data)

    def update_note(self, number: int, note_id: int, body: str) -> Posted:
        path = f"{self._repo}/issues/comments/{note_id}"
        answer = self._client.request("PATCH", path, body={"body": body})
        return self._posted(f"PATCH {path}", answer.data)

    def issues(self, label: str) -> list[Issue]:
        self._whoami()
        path = f"{self._repo}/issues"
        shape = Shape(self._client, f"GET {path}")
        items = pages(self._client, path, query={"labels": label, "state": "open"})
        return [
            Issue(
                number=shape.ident(i, "number", where),
                title=shape.text(i, "title", where),
                body=shape.text(i, "body", where),
                mine=self._mine(shape, i, where),
                url=shape.url(i, "html_url", where),
            )
            for where, i in shape.records(items)
            if "pull_request" not in i  # the issues list returns pull requests too
        ]

    def create_issue(self, *, title: str, body: str, label: str) -> Posted:
        path = f"{self._repo}/issues"
        answer = self._client.request(
            "POST", path, body={"title": title, "body": body, "labels": [label]}
        )
        shape = Shape(self._client, f"POST {path}")
        item = shape.record(answer.data)
        return Posted(
            id=shape.ident(item, "number"),
            url=shape.url(item, "html_url"),
            labels=shape.labels(item),
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
