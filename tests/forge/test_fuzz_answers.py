"""Fuzzing what a forge answers: any JSON, any status, any bytes, to any request that
`campaign publish` makes, ends in exit 0 or 2 with the token nowhere in the output, never a
traceback (an exception out of cli.main fails the example).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.forge import fakeforge

FUZZ = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
MARK = "<!-- campaignops:campaign-review -->"
AUDIT = "<!-- campaignops:campaign-audit -->"
GL = fakeforge.GITLAB_ROOT

# Keys the publishing code reads, so that the generated objects reach past the first check.
KEYS = st.sampled_from(
    ["id", "iid", "number", "body", "description", "title", "user", "author", "login", "type",
     "system", "labels", "name", "html_url", "web_url", "pull_request", "message"]
)  # fmt: skip
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True)
    | st.sampled_from([MARK, AUDIT, "github-actions[bot]", "campaign-audit", 1, 99, 7])
    | st.text(max_size=8)
)
JSON = st.recursive(
    SCALARS,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(KEYS | st.text(max_size=4), kids),
    max_leaves=20,
)

# (platform, command, method, path): every request the four flows make.
REQUESTS = [
    ("github", "comment", "GET", "/user"),
    ("github", "comment", "GET", "/repos/o/r/issues/7/comments"),
    ("github", "comment", "POST", "/repos/o/r/issues/7/comments"),
    ("github", "comment", "PATCH", "/repos/o/r/issues/comments/12"),
    ("github", "issue", "GET", "/repos/o/r/issues"),
    ("github", "issue", "POST", "/repos/o/r/issues"),
    ("github", "issue", "PATCH", "/repos/o/r/issues/5"),
    ("gitlab", "comment", "GET", f"{GL}/user"),
    ("gitlab", "comment", "GET", f"{GL}/projects/42/merge_requests/3/notes"),
    ("gitlab", "comment", "POST", f"{GL}/projects/42/merge_requests/3/notes"),
    ("gitlab", "comment", "PUT", f"{GL}/projects/42/merge_requests/3/notes/22"),
    ("gitlab", "issue", "GET", f"{GL}/projects/42/issues"),
    ("gitlab", "issue", "POST", f"{GL}/projects/42/issues"),
]
# Mostly a success, so the answer is read; sometimes an error status with any body.
STATUSES = st.just(200) | st.just(201) | st.sampled_from([204, 301, 401, 403, 404, 422, 500, 502])

# Fragments of HTTP answers, good and broken, for the raw-bytes fuzzer.
RAW = [
    b"HTTP/1.1 200 OK\r\n", b"HTTP/1.1 201 Created\r\n", b"HTTP/1.0 500 x\r\n", b"HTTP/1.1 abc\r\n",
    b"HTTP/9 200 OK\r\n", b"HTTP/1.1 100 Continue\r\n\r\n", b"Content-Type: application/json\r\n",
    b"Content-Length: 2\r\n", b"Content-Length: 999\r\n", b"Content-Length: -1\r\n",
    b"Transfer-Encoding: chunked\r\n", b"Location: https://elsewhere.test/\r\n", b"X: y\r\n",
    b"\r\n", b"[]", b"{}", b'{"id": 12}', b'[{"id": 12, "body": "' + MARK.encode() + b'"}]',
    b"2\r\n[]\r\n0\r\n\r\n", b"zz\r\n", b"\xff\xfe", b"\x00", b"[" * 50, b"\n", b"X-Big: " + b"a" * 70_000,
]  # fmt: skip


def _environment(fake: fakeforge.Fake, monkeypatch: Any, platform: str) -> None:
    if platform == "github":
        monkeypatch.setenv("GITHUB_API_URL", fake.url)
        monkeypatch.setenv("GITHUB_REPOSITORY", "o/r")
        monkeypatch.setenv("GITHUB_TOKEN", fakeforge.TOKEN)
    else:
        monkeypatch.setenv("CI_API_V4_URL", fake.url + GL)
        monkeypatch.setenv("CI_PROJECT_ID", "42")
        monkeypatch.setenv("CAMPAIGN_GITLAB_TOKEN", fakeforge.TOKEN)


def _seed(state: fakeforge.State) -> None:
    """A fresh forge holding one comment, note and issue of ours to update."""
    state.__dict__.update(fakeforge.State().__dict__)
    state.comments[7] = [{"id": 12, "body": f"old\n\n{MARK}\n", "user": dict(fakeforge.BOT)}]
    state.notes[3] = [
        {
            "id": 22,
            "body": f"old\n\n{MARK}\n",
            "system": False,
            "author": dict(fakeforge.GITLAB_BOT),
        }
    ]
    state.issues = [
        {"number": 5, "title": "t", "body": AUDIT, "state": "open", "user": dict(fakeforge.BOT),
         "labels": [{"name": "campaign-audit"}]}
    ]  # fmt: skip
    state.gl_issues = []


def _publish(run: Any, body: Path, platform: str, command: str, path: str) -> Any:
    args = ["publish", command, "--platform", platform, "--body-file", str(body)]
    if command == "comment":
        args += ["--marker", "campaign-review", "--number", "7" if platform == "github" else "3"]
    else:
        args += ["--label", "campaign-audit", "--title", "t", "--state", "open"]
    if platform == "github" and path != "/user":
        args += ["--author", "github-actions[bot]"]
    return run(*args)


def _held(result: Any) -> None:
    assert result.code in (0, 2), (result.code, result.out, result.err)
    assert fakeforge.TOKEN not in result.out + result.err
    if result.code == 2:
        assert result.err.startswith("campaign: error: "), result.err


@FUZZ
@given(request=st.sampled_from(REQUESTS), status=STATUSES, answer=JSON)
def test_any_json_answer_to_any_request(
    fake, run, monkeypatch, tmp_path, request, status, answer
) -> None:  # type: ignore[no-untyped-def]
    platform, command, method, path = request
    _environment(fake, monkeypatch, platform)
    _seed(fake.state)
    fake.state.fail[(method, path)] = [(status, answer)] * 3
    body = tmp_path / "body.md"
    body.write_text("report\n", encoding="utf-8")
    _held(_publish(run, body, platform, command, path))


@FUZZ
@given(
    request=st.sampled_from(REQUESTS),
    parts=st.lists(st.sampled_from(RAW) | st.binary(max_size=16), max_size=8),
)
def test_any_bytes_as_the_answer_to_any_request(
    fake, run, monkeypatch, tmp_path, request, parts
) -> None:  # type: ignore[no-untyped-def]
    platform, command, method, path = request
    _environment(fake, monkeypatch, platform)
    _seed(fake.state)
    fake.state.raw[(method, path)] = [b"".join(parts)] * 3
    body = tmp_path / "body.md"
    body.write_text("report\n", encoding="utf-8")
    _held(_publish(run, body, platform, command, path))
