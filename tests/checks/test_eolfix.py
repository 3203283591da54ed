"""`--fix` touches only tracked UTF-8 text, in place, and never inside a quoted YAML string.

Each test plants one thing --fix used to damage, runs the real CLI, and compares bytes (and the
inode's owner, xattrs and links) before and after.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
import yaml

from campaignops.checks import eolfix
from tests.conftest import Result, git

FIX = ("check", "--select", "EOL", "--fix", "--format", "json")


def hints(result: Result) -> dict[tuple[str, str], str]:
    return {(str(f["path"]), str(f["id"])): str(f["hint"]) for f in result.json()["findings"]}


def track(root: Path, rel: str, data: bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    git(root, "add", "--", rel)
    return path


@pytest.mark.parametrize(
    "data",
    [
        b"caf\xe9 t\r\nna\xefve t\r\n",  # Latin-1 text
        b"\x89PNG\r\n\x1a\n\xff\xd8\xff\xe0\r\n\x10JFIF\r\n",  # binary without a NUL
    ],
)
def test_fix_leaves_files_that_are_not_utf8_alone(repo: Path, run, data: bytes) -> None:  # type: ignore[no-untyped-def]
    path = track(repo, "queues/blob.txt", data)
    result = run(*FIX)
    assert result.code == 1
    assert path.read_bytes() == data
    assert hints(result)[("queues/blob.txt", "EOL001")] == eolfix.Refusal.NOT_TEXT.value


def test_fix_leaves_gitignored_job_outputs_alone(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    output = demo / "runs/out/result.yaml"
    output.parent.mkdir(parents=True)
    data = b"loss: 0.5\r\nstatus: done\r\n"
    output.write_bytes(data)
    assert git(demo, "check-ignore", "runs/out/result.yaml").strip() == "runs/out/result.yaml"
    result = run(*FIX)
    assert output.read_bytes() == data
    assert hints(result)[("runs/out/result.yaml", "EOL001")] == eolfix.Refusal.UNTRACKED.value


def test_fix_outside_a_git_repository_touches_nothing(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    queue = campaign / "queues/example.txt"
    queue.write_bytes(b"a t\r\n")
    result = run(*FIX)
    assert queue.read_bytes() == b"a t\r\n"
    assert hints(result)[("queues/example.txt", "EOL001")] == eolfix.Refusal.NO_GIT.value


QUOTED = (
    b'project: "p\rq"\r\n'
    b"jobs:\r\n"
    b"  - id: a\r\n"
    b"    note: 'single\rquoted'\r\n"
    b'    multi: "one\r\n      two"\r\n'
    b"    plain: x\r\n"
)


def test_fix_never_changes_bytes_inside_a_quoted_yaml_string(repo: Path, run) -> None:  # type: ignore[no-untyped-def]
    path = track(repo, "manifests/quoted.yaml", QUOTED)
    before = yaml.safe_load(QUOTED)
    result = run(*FIX)
    assert path.read_bytes() == (
        b'project: "p\rq"\n'
        b"jobs:\n"
        b"  - id: a\n"
        b"    note: 'single\rquoted'\n"
        b'    multi: "one\r\n      two"\n'
        b"    plain: x\n"
    )
    assert yaml.safe_load(path.read_bytes()) == before
    found = {f["id"]: f for f in result.json()["findings"] if f["path"] == "manifests/quoted.yaml"}
    assert str(found["EOL001"]["hint"]).startswith(
        "partly fixed in place: 6 line endings converted to LF; 3 CR inside quoted YAML strings"
    )
    assert (found["EOL004"]["line"], found["EOL004"]["col"]) == (1, len('project: "p') + 1)
    assert found["EOL004"]["message"] == (
        "CR inside a quoted YAML string at line 1 (3 such CR in the file); "
        "--fix leaves quoted strings byte for byte"
    )
    # A second run converts nothing more and still says why.
    again = run(*FIX)
    assert path.read_bytes().count(b"\r") == 3
    assert [f["id"] for f in again.json()["findings"]] == ["EOL001", "EOL004"]


def test_quoted_spans_of_unparsable_yaml_refuse_only_when_quotes_are_there() -> None:
    assert eolfix.quoted_spans("a: [\r\n") == []
    assert eolfix.quoted_spans("a: ['x\r\n") is None
    assert eolfix.quoted_spans("a: 'x'\nb: \"y\"\n") == [(3, 6), (10, 13)]


def test_fix_keeps_the_owner(repo: Path, run) -> None:  # type: ignore[no-untyped-def]
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    queue = repo / "queues/example.txt"
    queue.write_bytes(b"a t\r\n")
    os.chown(queue, 4321, 8765)
    run(*FIX)
    assert queue.read_bytes() == b"a t\n"
    st = queue.stat()
    assert (st.st_uid, st.st_gid) == (4321, 8765)


def test_fix_keeps_extended_attributes(repo: Path, run) -> None:  # type: ignore[no-untyped-def]
    queue = repo / "queues/example.txt"
    queue.write_bytes(b"a t\r\n")
    try:
        os.setxattr(queue, "user.campaign.origin", b"site-42")
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, errno.EPERM, getattr(errno, "EOPNOTSUPP", errno.ENOTSUP)):
            pytest.skip(f"this filesystem refuses user.* xattrs ({exc.strerror})")
        raise
    run(*FIX)
    assert queue.read_bytes() == b"a t\n"
    assert os.getxattr(queue, "user.campaign.origin") == b"site-42"


def test_fix_keeps_hard_links(repo: Path, run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    queue = repo / "queues/example.txt"
    queue.write_bytes(b"a t\r\n")
    twin = tmp_path / "twin.txt"
    os.link(queue, twin)
    inode = queue.stat().st_ino
    run(*FIX)
    assert queue.stat().st_ino == inode and queue.stat().st_nlink == 2
    assert twin.read_bytes() == b"a t\n"


def test_fix_keeps_mode(repo: Path, run) -> None:  # type: ignore[no-untyped-def]
    script = repo / "scripts/run_one.v1.sh"
    script.write_bytes(script.read_bytes().replace(b"\n", b"\r\n"))
    script.chmod(0o750)
    run(*FIX)
    assert b"\r" not in script.read_bytes()
    assert script.stat().st_mode & 0o7777 == 0o750


def test_fix_leaves_an_untracked_gitattributes_alone(repo: Path, run) -> None:  # type: ignore[no-untyped-def]
    git(repo, "rm", "-q", "--cached", ".gitattributes")
    attributes = repo / ".gitattributes"
    attributes.write_bytes(b"*.sh text eol=lf\n")
    result = run(*FIX)
    assert attributes.read_bytes() == b"*.sh text eol=lf\n"
    assert hints(result)[(".gitattributes", "EOL003")] == eolfix.Refusal.UNTRACKED.value


def test_normalize_keeps_spans_and_counts() -> None:
    text = '\ufeffa: 1\r\nb: "x\ry"\rc: 2\r\n'
    spans = eolfix.quoted_spans(text)
    assert spans is not None
    fixed = eolfix.normalize(text, spans)
    assert fixed.data == b'a: 1\nb: "x\ry"\rc: 2\n'
    assert fixed.converted == 2
    assert (fixed.kept, fixed.lone) == ((len('a: 1\nb: "x'),), (len('a: 1\nb: "x\ry"'),))


# A CRLF script whose quoted string holds a raw CR (a progress line that returns the cursor).
SCRIPT_WITH_CR = b'#!/usr/bin/env bash\r\nprintf "50%%\r100%%\\n"\r\nmsg="two\r\nlines"\r\n'


def test_fix_keeps_a_lone_cr_inside_a_shell_string_and_says_so(repo: Path, run) -> None:  # type: ignore[no-untyped-def]
    path = track(repo, "scripts/progress.v1.sh", SCRIPT_WITH_CR)
    result = run(*FIX)
    # The CRLF line endings become LF (the one inside the quoted string too: it ends a line);
    # the CR inside the line is data and stays byte for byte.
    assert path.read_bytes() == (
        b'#!/usr/bin/env bash\nprintf "50%%\r100%%\\n"\nmsg="two\nlines"\n'
    )
    found = {f["id"]: f for f in result.json()["findings"] if f["path"] == "scripts/progress.v1.sh"}
    assert str(found["EOL001"]["hint"]).startswith(
        "partly fixed in place: 4 line endings converted to LF; 1 lone CR (no LF after it) "
        "left as written (EOL007)"
    )
    assert (found["EOL007"]["line"], found["EOL007"]["col"]) == (2, len('printf "50%%') + 1)
    assert "printf '\\r'" in str(found["EOL007"]["hint"])
    # Nothing more to convert on a second run, and the CR is still named.
    again = run(*FIX)
    assert path.read_bytes().count(b"\r") == 1
    assert [f["id"] for f in again.json()["findings"]] == ["EOL001", "EOL007"]


@pytest.mark.parametrize(
    ("data", "fixed"),
    [
        (b"a t\rb t\n", b"a t\rb t\n"),  # mid-line: data
        (b"a t\r\r\nb t\r\n", b"a t\nb t\n"),  # CRs before an LF: one line ending
        (b"a t\rb t\r", b"a t\rb t\r"),  # CR alone as line ends: by hand (tr), not guessed
    ],
)
def test_fix_converts_only_crs_that_end_a_line(repo: Path, run, data: bytes, fixed: bytes) -> None:  # type: ignore[no-untyped-def]
    queue = track(repo, "queues/example.txt", data)
    run(*FIX)
    assert queue.read_bytes() == fixed
    assert eolfix.normalize(fixed.decode()).data == fixed  # a second fix changes nothing
