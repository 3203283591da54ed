"""A local stand-in for the few GitHub and GitLab REST endpoints `campaign publish` uses.

One ThreadingHTTPServer on 127.0.0.1 serves both platforms (GitLab under /api/v4), keeps the
comments, notes and issues in memory, pages lists as the real APIs do (``per_page``/``page``;
GitHub 30 and GitLab 20 a page by default, GitLab's notes newest first unless ``sort=asc``),
checks the credential header, and records every request. ``fail`` queues answers for a
(method, path) to exercise 403s, 5xx and wrong shapes; ``raw`` queues bytes written as the whole
answer (a bad status line, a truncated body, a 70 kB header). Like the real APIs, an edit of a
comment or note by another account gets 403.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOKEN = "tok-SECRET-0123456789"
GITLAB_ROOT = "/api/v4"
BOT = {"login": "github-actions[bot]", "type": "Bot", "id": 41898282}
HUMAN = {"login": "alice", "type": "User", "id": 7}
GITLAB_BOT = {"id": 99, "username": "project_42_bot_abc"}
GITLAB_HUMAN = {"id": 5, "username": "bob"}
INTEGRATION = {
    "message": "Resource not accessible by integration",
    "documentation_url": "https://docs.github.com/rest/users/users#get-the-authenticated-user",
    "status": "403",
}


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    auth: str  # "Authorization: Bearer …" or "PRIVATE-TOKEN: …", as sent


@dataclass
class State:
    calls: list[Call] = field(default_factory=list)
    # GitHub: the authenticated user, or None for an installation token (GET /user → 403).
    github_user: dict[str, Any] | None = None
    installation: str = BOT["login"]  # who an installation token posts as (GitHub App: APP[bot])
    gitlab_user: dict[str, Any] = field(default_factory=lambda: dict(GITLAB_BOT))
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # PR → comments
    issues: list[dict[str, Any]] = field(default_factory=list)  # GitHub issues and PRs
    notes: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # MR iid → notes
    gl_issues: list[dict[str, Any]] = field(default_factory=list)
    fail: dict[tuple[str, str], list[tuple[int, Any]]] = field(default_factory=dict)
    raw: dict[tuple[str, str], list[bytes]] = field(default_factory=dict)
    drip_s: float = 0.0  # > 0: a raw answer is written a byte at a time, this far apart
    drop_labels: bool = False  # GitHub, for a token without push access: labels silently dropped
    next_id: int = 1000

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def github_login(self) -> str:
        """Who the token is: its user, or the workflow's bot for an installation token."""
        return str(self.github_user["login"]) if self.github_user else self.installation

    def github_author(self) -> dict[str, Any]:
        if self.github_user:
            return dict(self.github_user)
        return (
            dict(BOT)
            if self.installation == BOT["login"]
            else {"login": self.installation, "type": "Bot"}
        )


def _page(items: list[Any], query: dict[str, str], default: int) -> list[Any]:
    per_page = int(query.get("per_page", default))
    page = int(query.get("page", "1"))
    return items[(page - 1) * per_page : page * per_page]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, status: int, data: Any) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _write_raw(self, raw: bytes, drip_s: float) -> None:
        if not drip_s:
            self.wfile.write(raw)
            return
        stop = threading.Event()  # never set: its wait is the pause between two bytes
        try:
            for at in range(len(raw)):
                self.wfile.write(raw[at : at + 1])
                self.wfile.flush()
                stop.wait(drip_s)
        except OSError:  # the client gave up: what the drip is for
            return

    def _handle(self) -> None:
        state = self.server.state
        split = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(split.query))
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        gitlab = split.path.startswith(GITLAB_ROOT + "/")
        if gitlab:
            auth = f"PRIVATE-TOKEN: {self.headers.get('PRIVATE-TOKEN', '')}"
        else:
            auth = f"Authorization: {self.headers.get('Authorization', '')}"
        state.calls.append(Call(self.command, split.path, query, body, auth))
        hostile = state.raw.get((self.command, split.path))
        if hostile:
            self.close_connection = True
            self._write_raw(hostile.pop(0), state.drip_s)
            return
        queued = state.fail.get((self.command, split.path))
        if queued:
            self._answer(*queued.pop(0))
            return
        expected = f"PRIVATE-TOKEN: {TOKEN}" if gitlab else f"Authorization: Bearer {TOKEN}"
        if auth != expected:
            self._answer(401, {"message": "401 Unauthorized" if gitlab else "Bad credentials"})
            return
        route = _gitlab if gitlab else _github
        status, data = route(state, self.command, split.path.removeprefix(GITLAB_ROOT), query, body)
        self._answer(status, data)

    do_GET = do_POST = do_PATCH = do_PUT = _handle


def _github(
    state: State, method: str, path: str, query: dict[str, str], body: Any
) -> tuple[int, Any]:
    if path == "/user" and method == "GET":
        return (200, state.github_user) if state.github_user else (403, INTEGRATION)
    if m := re.fullmatch(r"/repos/o/r/issues/(\d+)/comments", path):
        thread = state.comments.setdefault(int(m[1]), [])
        if method == "GET":
            return 200, _page(thread, query, 30)
        if method == "POST":
            item = {"id": state.new_id(), "body": body["body"], "user": state.github_author()}
            item["html_url"] = f"https://github.test/o/r/pull/{m[1]}#issuecomment-{item['id']}"
            thread.append(item)
            return 201, item
    if (m := re.fullmatch(r"/repos/o/r/issues/comments/(\d+)", path)) and method == "PATCH":
        for thread in state.comments.values():
            for item in thread:
                if item["id"] == int(m[1]):
                    if item["user"]["login"] != state.github_login():
                        return 403, INTEGRATION
                    item["body"] = body["body"]
                    return 200, item
        return 404, {"message": "Not Found"}
    if path == "/repos/o/r/issues":
        if method == "GET":
            found = [
                i
                for i in state.issues
                if i["state"] == query.get("state", "open")
                and query.get("labels", "") in [label["name"] for label in i["labels"]]
            ]
            return 200, _page(found, query, 30)
        if method == "POST":
            number = state.new_id()
            item = {
                "number": number,
                "title": body["title"],
                "body": body["body"],
                "state": "open",
                "labels": [] if state.drop_labels else [{"name": n} for n in body["labels"]],
                "user": state.github_author(),
                "html_url": f"https://github.test/o/r/issues/{number}",
            }
            state.issues.append(item)
            return 201, item
    if (m := re.fullmatch(r"/repos/o/r/issues/(\d+)", path)) and method == "PATCH":
        for item in state.issues:
            if item["number"] == int(m[1]):
                item.update(body)
                return 200, item
        return 404, {"message": "Not Found"}
    return 404, {"message": "Not Found"}


def _gitlab(
    state: State, method: str, path: str, query: dict[str, str], body: Any
) -> tuple[int, Any]:
    if path == "/user" and method == "GET":
        return 200, state.gitlab_user
    if m := re.fullmatch(r"/projects/42/merge_requests/(\d+)/notes", path):
        thread = state.notes.setdefault(int(m[1]), [])
        if method == "GET":
            ordered = thread if query.get("sort") == "asc" else thread[::-1]
            return 200, _page(ordered, query, 20)
        if method == "POST":
            item = {
                "id": state.new_id(),
                "body": body["body"],
                "system": False,
                "author": dict(state.gitlab_user),
            }
            thread.append(item)
            return 201, item
    if (
        m := re.fullmatch(r"/projects/42/merge_requests/(\d+)/notes/(\d+)", path)
    ) and method == "PUT":
        for item in state.notes.get(int(m[1]), []):
            if item["id"] == int(m[2]):
                if item["author"]["id"] != state.gitlab_user["id"]:
                    return 403, {"message": "403 Forbidden"}
                item["body"] = body["body"]
                return 200, item
        return 404, {"message": "404 Not found"}
    if path == "/projects/42/issues":
        if method == "GET":
            found = [
                i
                for i in state.gl_issues
                if i["state"] == query.get("state") and query.get("labels", "") in i["labels"]
            ]
            return 200, _page(found, query, 20)
        if method == "POST":
            iid = state.new_id()
            item = {
                "iid": iid,
                "title": body["title"],
                "description": body["description"],
                "state": "opened",
                "labels": body["labels"].split(","),
                "author": dict(state.gitlab_user),
                "web_url": f"https://gitlab.test/g/p/-/issues/{iid}",
            }
            state.gl_issues.append(item)
            return 201, item
    if (m := re.fullmatch(r"/projects/42/issues/(\d+)", path)) and method == "PUT":
        for item in state.gl_issues:
            if item["iid"] == int(m[1]):
                if body.get("state_event") == "close":
                    item["state"] = "closed"
                item.update({k: v for k, v in body.items() if k != "state_event"})
                return 200, item
        return 404, {"message": "404 Not found"}
    return 404, {"message": "404 Not found"}


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: State) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


@dataclass
class Fake:
    url: str
    state: State

    def sequence(self) -> list[tuple[str, str]]:
        """(method, path?query) of every request, in order."""
        out = []
        for call in self.state.calls:
            q = urllib.parse.urlencode(call.query)
            out.append((call.method, call.path + (f"?{q}" if q else "")))
        return out

    def take(self) -> list[Call]:
        """The calls so far, forgotten: each run's requests are asserted on their own."""
        calls, self.state.calls = self.state.calls, []
        return calls


def serve() -> Iterator[Fake]:
    state = State()
    server = _Server(state)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield Fake(url=f"http://127.0.0.1:{server.server_address[1]}", state=state)
    finally:
        server.shutdown()
        server.server_close()
