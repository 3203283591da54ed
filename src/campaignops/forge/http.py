"""A small JSON-over-HTTPS client for forge APIs (stdlib only).

Why not follow redirects: urllib forwards every header, the token included, to wherever a 3xx
points; an API that moved is reported instead. Why POST is retried only when the connection was
refused: a POST whose answer was lost (timeout, 502 from a proxy) may have created the comment
or issue, and a retry would duplicate it; the next run finds and updates whichever exists.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from campaignops import __version__
from campaignops.errors import CampaignError, UsageError

# Pause before the 2nd and 3rd attempt; tests set them to zero.
RETRY_DELAYS: tuple[float, ...] = (1.0, 3.0)
TIMEOUT = 30.0
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_MESSAGE_CHARS = 300


class ApiError(CampaignError):
    """The API answered with an error status (``status``) or could not be reached (status 0)."""

    def __init__(self, *, status: int, message: str, hint: str = "", api_message: str = "") -> None:
        super().__init__(message=message, hint=hint)
        self.status = status
        self.api_message = api_message


@dataclass(frozen=True)
class Response:
    status: int
    data: Any
    headers: Mapping[str, str] = field(default_factory=dict)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> None:
        return None  # urllib then raises HTTPError with the 3xx status


def check_base_url(url: str, *, variable: str) -> str:
    """``url`` without a trailing slash; https, or http to this machine only (the token travels)."""
    parts = urllib.parse.urlsplit(url)
    local = parts.scheme == "http" and (parts.hostname or "") in LOCAL_HOSTS
    if not parts.netloc or not (parts.scheme == "https" or local):
        raise UsageError(
            message=f"{variable}={url!r} is not an https:// API URL",
            hint="the token is sent to this URL: use the https address the CI sets "
            "(plain http is accepted for 127.0.0.1 and localhost only)",
        )
    return url.rstrip("/")


def api_message(raw: bytes) -> str:
    """What an error body says, on one short line: GitHub's and GitLab's ``message``/``error``."""
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        parts = [data.get("message"), data.get("error"), data.get("errors")]
        text = "; ".join(
            p if isinstance(p, str) else json.dumps(p, ensure_ascii=False)
            for p in parts
            if p not in (None, "", [], {})
        )
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_CHARS else text[: _MESSAGE_CHARS - 1] + "…"


class Client:
    """Requests against one API root with one credential header, which no message ever shows."""

    def __init__(
        self,
        *,
        base_url: str,
        auth: tuple[str, str],
        headers: Mapping[str, str] | None = None,
        timeout: float = TIMEOUT,
        platform: str,
    ) -> None:
        self.base_url = base_url
        self._auth = auth
        self._headers = {
            "Accept": "application/json",
            "User-Agent": f"campaignops/{__version__}",
            **(headers or {}),
        }
        self._timeout = timeout
        self.platform = platform
        self._opener = urllib.request.build_opener(_NoRedirect)

    def _redact(self, text: str) -> str:
        secret = self._auth[1].split(" ")[-1]
        return text.replace(secret, "***") if secret else text

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Mapping[str, object] | None = None,
    ) -> Response:
        url = self.base_url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body, ensure_ascii=False).encode()
        headers = {**self._headers, self._auth[0]: self._auth[1]}
        if data is not None:
            headers["Content-Type"] = "application/json"
        shown = f"{method} {path}"
        attempts = len(RETRY_DELAYS) + 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            request = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                with self._opener.open(request, timeout=self._timeout) as answer:
                    raw = answer.read()
                    return Response(
                        status=answer.status,
                        data=json.loads(raw) if raw.strip() else None,
                        headers=dict(answer.headers.items()),
                    )
            except urllib.error.HTTPError as exc:
                raw = exc.read()
                if exc.code >= 500 and method != "POST" and not last:
                    time.sleep(RETRY_DELAYS[attempt])
                    continue
                raise self._status_error(shown, exc.code, raw, exc.headers) from None
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
                refused = isinstance(reason, ConnectionRefusedError)
                if (method != "POST" or refused) and not last:
                    time.sleep(RETRY_DELAYS[attempt])
                    continue
                raise ApiError(
                    status=0,
                    message=self._redact(
                        f"{self.platform} API unreachable: {shown} at {self.base_url}: {reason}"
                        f" (after {attempt + 1} attempt{'s' if attempt else ''})"
                    ),
                    hint="check the API URL and the runner's network; a retry of the job is safe",
                ) from None
            except ValueError as exc:  # a 2xx whose body is not JSON
                raise ApiError(
                    status=0,
                    message=f"{self.platform} API: {shown} answered with a body that is not "
                    f"JSON ({exc})",
                    hint="is the API URL the REST root (…/api/v3, …/api/v4)?",
                ) from None
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _status_error(self, shown: str, status: int, raw: bytes, headers: Any) -> ApiError:
        said = self._redact(api_message(raw))
        message = f"{self.platform} API: {shown} failed: HTTP {status}"
        if said:
            message += f": {said}"
        if 300 <= status < 400:
            moved = self._redact(str(headers.get("Location", "?")))
            message += f" (redirected to {moved}; not followed, so the token stays here)"
            hint = "point the API URL and the repository at their current address"
        elif status == 401:
            hint = "the token is missing, expired or revoked: renew it in the CI settings"
        elif status == 403:
            hint = "the token lacks the permission for this request (see docs/gitops.md, Tokens)"
        elif status == 404:
            hint = (
                "check the repository or project and the number; a token that cannot see "
                "a private repository also gets 404"
            )
        else:
            hint = "see the API's message above; the job can be re-run"
        return ApiError(status=status, message=message, hint=hint, api_message=said)


def pages(
    client: Client,
    path: str,
    *,
    query: Mapping[str, str] | None = None,
    per_page: int = 100,
    max_pages: int = 100,
) -> list[Any]:
    """Every item of a paginated list (``per_page``/``page``): stops at the first short page."""
    items: list[Any] = []
    for page in range(1, max_pages + 1):
        answer = client.request(
            "GET", path, query={**(query or {}), "per_page": str(per_page), "page": str(page)}
        )
        if not isinstance(answer.data, list):
            raise ApiError(
                status=answer.status,
                message=f"{client.platform} API: GET {path} answered with something "
                "that is not a list",
                hint="is the API URL the REST root (…/api/v3, …/api/v4)?",
            )
        items.extend(answer.data)
        if len(answer.data) < per_page:
            return items
    raise ApiError(
        status=0,
        message=f"GET {path}: more than {max_pages * per_page} items; stopped paging",
        hint="close or delete old items; the marker is looked up in every page",
    )
