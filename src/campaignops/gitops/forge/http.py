"""A small JSON-over-HTTPS client for forge APIs (stdlib only).

Why not follow redirects: urllib forwards every header, the token included, to wherever a 3xx
points; an API that moved is reported instead. Why POST is retried only when the connection was
refused: a POST whose answer was lost (timeout, 502 from a proxy, a broken answer) may have
created the comment or issue, and a retry would duplicate it; the next run finds and updates
whichever exists.

An answer is network input: every way it can be broken (no valid status line, a header line
over http.client's 64 KiB or more than 100 headers, a body cut short, a body over MAX_BODY or
dripping past DEADLINE_S, JSON nested past the parser's recursion limit) ends in ApiError, never
a traceback. The token is checked before it is sent (``check_token``) and ``redact`` takes it
out of every message an ApiError carries.
"""

from __future__ import annotations

import http.client
import json
import time
import unicodedata
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from campaignops import __version__
from campaignops.core.errors import CampaignError, UsageError

# Pause before the 2nd and 3rd attempt; tests set them to zero.
RETRY_DELAYS: tuple[float, ...] = (1.0, 3.0)
TIMEOUT = 30.0  # per socket operation
DEADLINE_S = 120.0  # for a whole answer body, however slowly it arrives
MAX_BODY = 64 * 1024 * 1024  # 100 GitLab notes of 1,000,000 characters fit, with room
_CHUNK = 1 << 16
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_MESSAGE_CHARS = 300
_DETAIL_CHARS = 120
MASK = "***"
NOT_A_TOKEN = (
    "{variable} holds a character no token has ({what}, character {at} of {length}): "
    "refused before anything was sent"
)
NOT_A_TOKEN_HINT = (
    "set the variable to the token alone, with no quotes, spaces or line breaks "
    "(tokens are printable ASCII); the token itself is never shown"
)
SHAPE_HINT = (
    "is the API URL the REST root (…/api/v3, …/api/v4)? A proxy in between, or an API "
    "change, can also answer like this; nothing more was sent, and the job can be re-run"
)


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


def check_token(token: str, *, variable: str) -> str:
    """``token`` when every character is printable ASCII (what GitHub's and GitLab's tokens are
    made of); otherwise a UsageError that says where, never what. A line break in a header value
    would end the header (http.client refuses it with the value in its message)."""
    for at, char in enumerate(token, start=1):
        if not "!" <= char <= "~":
            what = "a non-ASCII character"
            if unicodedata.category(char) in ("Cc", "Cf"):
                what = "a control character"
            elif char.isspace():
                what = "whitespace"
            raise UsageError(
                message=NOT_A_TOKEN.format(variable=variable, what=what, at=at, length=len(token)),
                hint=NOT_A_TOKEN_HINT,
            )
    return token


def redact(text: str, secret: str) -> str:
    """``text`` with ``secret`` masked in every form a message can quote it: as is, JSON- or
    URL-escaped, or as Python's repr writes it. The one redaction all publishing errors use."""
    if not secret:
        return text
    forms = {
        secret,
        json.dumps(secret)[1:-1],
        repr(secret)[1:-1],
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret),
    }
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, MASK)
    return text


def _describe(exc: BaseException) -> str:
    """An exception as a short line: its class and, cut, what it says (server text included)."""
    said = " ".join(str(exc).split())
    if len(said) > _DETAIL_CHARS:
        said = said[: _DETAIL_CHARS - 1] + "…"
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__


def _read(answer: Any) -> bytes:
    """The whole body, refused when over MAX_BODY, late past DEADLINE_S, or cut short."""
    deadline = time.monotonic() + DEADLINE_S
    chunks: list[bytes] = []
    size = 0
    # read1: at most one socket read per piece, so a body that drips a byte at a time still
    # meets the deadline check (read(n) would wait for all n bytes).
    while chunk := answer.read1(_CHUNK):
        size += len(chunk)
        if size > MAX_BODY:
            raise http.client.HTTPException(f"the body is over {MAX_BODY:,} bytes")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the body took over {DEADLINE_S:.0f} s")
        chunks.append(chunk)
    # read(n) ends quietly at a connection closed early; the length left says it was.
    left = getattr(answer, "length", None)
    if isinstance(left, int) and left > 0:
        raise http.client.IncompleteRead(b"".join(chunks), left)
    return b"".join(chunks)


def _read_error_body(exc: urllib.error.HTTPError) -> bytes:
    """An error answer's body, for its message only: a broken one is shown as nothing."""
    try:
        return _read(exc)
    except (OSError, http.client.HTTPException):
        return b""


class _Attempt(Exception):
    """One failed attempt: ``retry`` if another may follow; ``error(attempts)`` if none does."""

    def __init__(self, error: Callable[[int], ApiError], *, retry: bool) -> None:
        super().__init__("attempt failed")
        self.error = error
        self.retry = retry


def check_base_url(url: str, *, variable: str) -> str:
    """``url`` without a trailing slash; https, or http to this machine only (the token travels).
    A user name or password in it is refused without showing it: messages quote the URL."""
    parts = urllib.parse.urlsplit(url)
    if "@" in parts.netloc:
        raise UsageError(
            message=f"{variable} holds a user name or password (USER:PASSWORD@HOST): refused, "
            "and not shown",
            hint="set the API URL alone; the token goes in its own variable (docs/gitops.md)",
        )
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
        self._secret = auth[1].split(" ")[-1]  # "Bearer TOKEN" or "TOKEN"
        self._headers = {
            "Accept": "application/json",
            "User-Agent": f"campaignops/{__version__}",
            **(headers or {}),
        }
        self._timeout = timeout
        self.platform = platform
        self._opener = urllib.request.build_opener(_NoRedirect)

    def __repr__(self) -> str:
        return f"Client(platform={self.platform!r}, base_url={self.base_url!r})"

    def redact(self, text: str) -> str:
        """``text`` (an answer's URL, a message) with this client's token masked."""
        return redact(text, self._secret)

    def error(self, *, status: int, message: str, hint: str = "", api_said: str = "") -> ApiError:
        """Every ApiError of this client is made here: no field of it can carry the token."""
        return ApiError(
            status=status,
            message=self.redact(message),
            hint=self.redact(hint),
            api_message=self.redact(api_said),
        )

    def shape_error(self, shown: str, what: str) -> ApiError:
        """An answer that is JSON but not the shape the endpoint documents."""
        return self.error(
            status=0,
            message=f"{self.platform} API: {shown} answered with an unexpected shape: {what}",
            hint=SHAPE_HINT,
        )

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
            request = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                status, raw, got = self._exchange(request, shown)
            except _Attempt as failed:
                if failed.retry and attempt < attempts - 1:
                    time.sleep(RETRY_DELAYS[attempt])
                    continue
                raise failed.error(attempt + 1) from None
            return Response(status=status, data=self._decode(shown, raw), headers=got)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _exchange(
        self, request: urllib.request.Request, shown: str
    ) -> tuple[int, bytes, dict[str, str]]:
        """One request and its whole answer: (status, body, headers), or _Attempt."""
        post = request.get_method() == "POST"
        try:
            with self._opener.open(request, timeout=self._timeout) as answer:
                return answer.status, _read(answer), dict(answer.headers.items())
        except urllib.error.HTTPError as exc:
            raw = _read_error_body(exc)
            error = self._status_error(shown, exc.code, raw, exc.headers)
            raise _Attempt(lambda _n: error, retry=exc.code >= 500 and not post) from None
        except urllib.error.URLError as exc:  # not connected, or the request not sent
            refused = isinstance(exc.reason, ConnectionRefusedError)
            why = _describe(exc.reason) if isinstance(exc.reason, BaseException) else exc.reason
            unreachable = f"{self.platform} API unreachable: {shown} at {self.base_url}: {why}"
            raise self._lost(unreachable, retry=refused or not post) from None
        except (OSError, http.client.HTTPException) as exc:  # sent; the answer lost or broken
            broken = f"{self.platform} API: {shown} at {self.base_url}: no valid answer"
            raise self._lost(f"{broken} ({_describe(exc)})", retry=not post) from None
        except ValueError:  # http.client refused to send a header (its text would echo it)
            unsent = f"{self.platform} API: {shown}: not sent, a request header is invalid"
            raise self._lost(unsent, retry=False) from None

    def _lost(self, message: str, *, retry: bool) -> _Attempt:
        def error(attempts: int) -> ApiError:
            return self.error(
                status=0,
                message=f"{message} (after {attempts} attempt{'s' if attempts > 1 else ''})",
                hint="check the API URL and the runner's network; a retry of the job is safe",
            )

        return _Attempt(error, retry=retry)

    def _decode(self, shown: str, raw: bytes) -> Any:
        """A 2xx body as JSON (empty: None); anything else is an ApiError."""
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            why = "nested too deeply" if isinstance(exc, RecursionError) else _describe(exc)
            raise self.error(
                status=0,
                message=f"{self.platform} API: {shown} answered with a body that is not "
                f"JSON ({why})",
                hint="is the API URL the REST root (…/api/v3, …/api/v4)?",
            ) from None

    def _status_error(self, shown: str, status: int, raw: bytes, headers: Any) -> ApiError:
        said = api_message(raw)
        message = f"{self.platform} API: {shown} failed: HTTP {status}"
        if said:
            message += f": {said}"
        if 300 <= status < 400:
            moved = str(headers.get("Location", "?"))
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
        return self.error(status=status, message=message, hint=hint, api_said=said)


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
            raise client.shape_error(f"GET {path}", "not a list")
        items.extend(answer.data)
        if len(answer.data) < per_page:
            return items
    raise ApiError(
        status=0,
        message=f"GET {path}: more than {max_pages * per_page} items; stopped paging",
        hint="close or delete old items; the marker is looked up in every page",
    )
