"""The client's refusals: where a token may travel, redirects, unreachable servers."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from campaignops.core.errors import UsageError
from campaignops.gitops.forge import http

SECRET = "tok-SECRET-42"


@pytest.fixture(autouse=True)
def no_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http, "RETRY_DELAYS", (0.0, 0.0))


class _Answers(BaseHTTPRequestHandler):
    """Redirects /moved elsewhere; echoes the token back in an error on /echo; 503 on /down."""

    hits: list[str] = []  # noqa: RUF012 - one server per test, reset by the fixture

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        _Answers.hits.append(self.path)
        if self.path == "/moved":
            self.send_response(301)
            self.send_header("Location", "https://elsewhere.example/x")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        status, raw = {
            "/echo": (422, b'{"message": "bad token tok-SECRET-42"}'),
            "/down": (503, b"<html>down</html>"),
            "/plain": (200, b"not json"),
        }[self.path]
        self.send_response(status)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def server() -> Iterator[str]:
    _Answers.hits = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    thread = threading.Thread(target=srv.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def client(url: str) -> http.Client:
    return http.Client(base_url=url, auth=("Authorization", f"Bearer {SECRET}"), platform="Test")


@pytest.mark.parametrize(
    "url", ["http://api.example.org", "ftp://127.0.0.1", "api.github.com", "http://10.0.0.1/api"]
)
def test_a_token_only_travels_over_https_or_to_this_machine(url: str) -> None:
    with pytest.raises(UsageError, match="is not an https:// API URL"):
        http.check_base_url(url, variable="GITHUB_API_URL")


def test_accepted_urls_lose_the_trailing_slash() -> None:
    assert http.check_base_url("https://h/api/v4/", variable="X") == "https://h/api/v4"
    assert http.check_base_url("http://127.0.0.1:8/", variable="X") == "http://127.0.0.1:8"


def test_redirect_is_reported_not_followed(server: str) -> None:
    with pytest.raises(http.ApiError) as caught:
        client(server).request("GET", "/moved")
    assert caught.value.status == 301
    assert "redirected to https://elsewhere.example/x; not followed" in caught.value.message
    assert _Answers.hits == ["/moved"]


def test_token_echoed_by_the_api_is_redacted(server: str) -> None:
    with pytest.raises(http.ApiError) as caught:
        client(server).request("GET", "/echo")
    assert caught.value.message == "Test API: GET /echo failed: HTTP 422: bad token ***"
    assert _Answers.hits == ["/echo"]  # a 4xx is not retried


def test_5xx_on_a_read_is_retried_a_bounded_number_of_times(server: str) -> None:
    with pytest.raises(http.ApiError) as caught:
        client(server).request("GET", "/down")
    assert caught.value.status == 503
    assert _Answers.hits == ["/down"] * 3
    assert caught.value.message == "Test API: GET /down failed: HTTP 503: <html>down</html>"


def test_a_2xx_that_is_not_json_is_an_error(server: str) -> None:
    with pytest.raises(http.ApiError, match="answered with a body that is not JSON"):
        client(server).request("GET", "/plain")


def test_unreachable_server_is_retried_then_reported() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(http.ApiError) as caught:
        client(f"http://127.0.0.1:{port}").request("POST", "/x", body={"a": 1})
    assert caught.value.status == 0
    assert caught.value.message.startswith(
        f"Test API unreachable: POST /x at http://127.0.0.1:{port}"
    )
    assert caught.value.message.endswith("(after 3 attempts)")  # refused: nothing was sent
    assert SECRET not in caught.value.message


def test_api_message_reads_both_platforms_shapes() -> None:
    assert http.api_message(b'{"message": "Not Found", "documentation_url": "u"}') == "Not Found"
    assert (
        http.api_message(b'{"message": {"body": ["is too long"]}}') == '{"body": ["is too long"]}'
    )
    assert http.api_message(b'{"error": "insufficient_scope"}') == "insufficient_scope"
    assert http.api_message(b"x" * 500) == "x" * 299 + "…"
