"""EOL: CR/CRLF and BOMs in scripts, queues, YAML, lock and ledger; .gitattributes rules; --fix."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from campaignops.checks import eol
from tests.conftest import Result

SELECT = ("check", "--select", "EOL", "--format", "json")
FIX = ("check", "--select", "EOL", "--fix", "--format", "json")


def findings(result: Result) -> list[dict[str, object]]:
    return result.json()["findings"]


def test_clean_fixture_is_silent(campaign: Path, run) -> None:
    result = run(*SELECT)
    assert result.code == 0
    assert result.json() == {"schema": "campaignops/check/v1", "findings": [], "errors": []}


def test_crlf_throughout_is_caught(campaign: Path, run) -> None:
    script = campaign / "scripts/run_one.v1.sh"
    script.write_bytes(script.read_bytes().replace(b"\n", b"\r\n"))
    result = run(*SELECT)
    assert result.code == 1
    assert result.where() == [("scripts/run_one.v1.sh", 1, "EOL001")]
    (f,) = findings(result)
    assert f["col"] == len("#!/usr/bin/env bash") + 1
    assert f["message"] == "CRLF line ending at line 1; 3 of 3 lines end in CRLF"


def test_one_crlf_line_in_the_middle_is_located(campaign: Path, run) -> None:
    queue = campaign / "queues/example.txt"
    queue.write_bytes(b"# header\ncfg/a.yaml t1\ncfg/\xc3\xa9.yaml t2\r\ncfg/c.yaml t3\n")
    result = run(*SELECT)
    assert result.where() == [("queues/example.txt", 3, "EOL001")]
    (f,) = findings(result)
    # Columns count characters: the two-byte é is one column.
    assert f["col"] == len("cfg/é.yaml t2") + 1
    assert f["message"] == "CRLF line ending at line 3; 1 of 4 lines end in CRLF"


def test_lone_cr_is_reported_as_cr(campaign: Path, run) -> None:
    (campaign / "queues/example.txt").write_bytes(b"a t\nb t\rc t\n")
    result = run(*SELECT)
    assert result.where() == [("queues/example.txt", 2, "EOL001")]
    assert findings(result)[0]["message"] == "CR line ending at line 2; 1 of 3 lines end in CR"


def test_mixed_cr_and_crlf(campaign: Path, run) -> None:
    (campaign / "queues/example.txt").write_bytes(b"a\r\nb\rc\n")
    (f,) = findings(run(*SELECT))
    assert f["message"] == "CRLF line ending at line 1; 2 of 3 lines end in CR or CRLF"


def test_bom_is_reported_at_line_one(campaign: Path, run) -> None:
    policy = campaign / "campaign.yaml"
    policy.write_bytes(b"\xef\xbb\xbf" + policy.read_bytes())
    result = run(*SELECT)
    assert result.where() == [("campaign.yaml", 1, "EOL002")]
    assert findings(result)[0]["col"] == 1


def test_crlf_queue_and_manifest(campaign: Path, run) -> None:
    for rel in ("queues/example.txt", "manifests/smoke.yaml"):
        path = campaign / rel
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    result = run(*SELECT)
    assert result.where() == [
        ("manifests/smoke.yaml", 1, "EOL001"),
        ("queues/example.txt", 1, "EOL001"),
    ]


def test_lock_and_ledger_are_checked(campaign: Path, run) -> None:
    (campaign / ".campaign/ledger.jsonl").write_bytes(b'{"a": 1}\n{"b": 2}\r\n')
    (campaign / ".campaign/wrappers.lock").write_bytes(b"\xef\xbb\xbfscripts/x.sh sha256:00\n")
    result = run(*SELECT)
    assert result.where() == [
        (".campaign/ledger.jsonl", 2, "EOL001"),
        (".campaign/wrappers.lock", 1, "EOL002"),
    ]


def test_script_without_extension_passed_as_path(campaign: Path, run) -> None:
    (campaign / "tools").mkdir()
    (campaign / "tools/myscript").write_bytes(b"#!/bin/sh\r\necho hi\r\n")
    # Without a shebang and an extension, a file is no kind at all: not checked.
    (campaign / "tools/notes").write_bytes(b"plain\r\n")
    result = run("check", "--select", "EOL", "tools/myscript", "tools/notes", "--format", "json")
    assert result.where() == [("tools/myscript", 1, "EOL001")]


def test_binary_file_is_skipped_silently(campaign: Path, run) -> None:
    blob = b"\x00\x01\r\n\x02\r\n"
    (campaign / "queues/blob.txt").write_bytes(blob)
    assert run(*FIX).where() == []
    assert (campaign / "queues/blob.txt").read_bytes() == blob


def test_one_megabyte_all_crlf_file(campaign: Path, run) -> None:
    line = b"configs/baseline.yaml reconstruction 20\r\n"
    count = (1 << 20) // len(line) + 1
    (campaign / "queues/big.txt").write_bytes(line * count)
    result = run(*SELECT)
    assert result.where() == [("queues/big.txt", 1, "EOL001")]
    assert f"{count} of {count} lines end in CRLF" in str(findings(result)[0]["message"])


def test_missing_gitattributes(campaign: Path, run) -> None:
    (campaign / ".gitattributes").unlink()
    result = run(*SELECT)
    assert result.where() == [(".gitattributes", 1, "EOL003")] * 4
    messages = sorted(str(f["message"]) for f in findings(result))
    assert messages == [
        f"no eol=lf rule for {p} in .gitattributes (the file is missing)"
        for p in ("*.sh", "*.txt", "*.yaml", "*.yml")
    ]


def test_partial_gitattributes(campaign: Path, run) -> None:
    (campaign / ".gitattributes").write_text("*.sh text eol=lf\n*.yaml eol=lf\n*.yaml -text\n")
    result = run(*SELECT)
    missing = sorted(str(f["message"]).split()[4] for f in findings(result))
    assert missing == ["*.txt", "*.yaml", "*.yml"]
    assert {f["path"] for f in findings(result)} == {".gitattributes"}


def test_gitattributes_not_required_outside_a_campaign(
    tmp_path: Path, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.sh").write_bytes(b"echo\r\n")
    result = run("check", "--select", "EOL", "job.sh", "--format", "json")
    assert result.where() == [("job.sh", 1, "EOL001")]


@pytest.mark.parametrize(
    ("text", "covered"),
    [
        ("*.sh text eol=lf\n", True),
        ("*.sh eol=lf\n", True),
        ("* text=auto eol=lf\n", True),
        ("*.sh crlf=input\n", True),
        ("  *.sh\ttext   eol=lf  \r\n", True),
        ("# *.sh text eol=lf\n", False),
        ("*.sh text\n", False),
        ("*.sh -crlf\n", False),
        ("*.sh binary eol=lf\n", False),
        ("*.sh text eol=lf\n* -text\n", False),
        ("*.sh text eol=lf\n*.sh eol=crlf\n", False),
        ("*.sh eol=crlf\n*.sh eol=lf\n", True),
        ("*.sh text eol=lf\n*.sh -eol\n", False),
        ("scripts/*.sh text eol=lf\n", False),
        ("[attr]lf text eol=lf\n*.sh lf\n", False),
    ],
)
def test_has_lf_rule(text: str, covered: bool) -> None:
    assert eol.has_lf_rule(text, "*.sh") is covered


def test_fix_rewrites_keeps_mode_and_second_run_is_clean(repo: Path, run) -> None:
    campaign = repo  # --fix rewrites only files git tracks
    script = campaign / "scripts/run_one.v1.sh"
    original = script.read_bytes()
    script.write_bytes(b"\xef\xbb\xbf" + original.replace(b"\n", b"\r\n"))
    script.chmod(0o755)
    queue = campaign / "queues/example.txt"
    queue.write_bytes(b"a t\r\nb t\r\r\nc t\r\n")  # CR CR LF: a CRLF file converted twice
    attributes = campaign / ".gitattributes"
    attributes.write_bytes(b"*.sh text eol=lf")

    result = run(*FIX)
    assert result.code == 1
    assert sorted(result.where()) == [
        (".gitattributes", 1, "EOL003"),
        (".gitattributes", 1, "EOL003"),
        (".gitattributes", 1, "EOL003"),
        ("queues/example.txt", 1, "EOL001"),
        ("scripts/run_one.v1.sh", 1, "EOL001"),
        ("scripts/run_one.v1.sh", 1, "EOL002"),
    ]
    hints = {(f["path"], f["id"]): str(f["hint"]) for f in findings(result)}
    assert hints[("queues/example.txt", "EOL001")].startswith(
        "fixed in place: 3 line endings converted to LF"
    )
    assert hints[("scripts/run_one.v1.sh", "EOL002")].startswith("fixed in place")
    assert hints[(".gitattributes", "EOL003")].startswith("fixed:")

    assert script.read_bytes() == original
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert queue.read_bytes() == b"a t\nb t\nc t\n"
    assert attributes.read_bytes() == (
        b"*.sh text eol=lf\n" + eol.FIX_COMMENT.encode() + b"\n"
        b"*.yaml text eol=lf\n*.yml text eol=lf\n*.txt text eol=lf\n"
    )
    assert sorted(p.name for p in campaign.rglob(".*.tmp")) == []
    second = run(*FIX)
    assert (second.code, second.where()) == (0, [])


def test_fix_creates_gitattributes(campaign: Path, run) -> None:
    (campaign / ".gitattributes").unlink()
    assert run(*FIX).code == 1
    text = (campaign / ".gitattributes").read_text()
    assert text.splitlines()[1:] == [f"{p} text eol=lf" for p in eol.REQUIRED_PATTERNS]
    assert run(*SELECT).code == 0


def test_without_fix_nothing_is_written(campaign: Path, run) -> None:
    queue = campaign / "queues/example.txt"
    queue.write_bytes(b"a t\r\n")
    (campaign / ".gitattributes").unlink()
    result = run(*SELECT)
    assert "convert to LF" in str(findings(result)[-1]["hint"])
    assert queue.read_bytes() == b"a t\r\n"
    assert not (campaign / ".gitattributes").exists()


def test_fix_does_not_follow_symlink_out_of_the_campaign(
    campaign: Path, run, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"a t\r\nb t\r\n")
    link = campaign / "queues/linked.txt"
    link.symlink_to(outside)
    result = run(*FIX)
    assert result.code == 2
    assert [e["path"] for e in result.json()["errors"]] == ["queues/linked.txt"]
    assert result.where() == []
    assert outside.read_bytes() == b"a t\r\nb t\r\n"
    assert link.is_symlink()


def test_fix_follows_symlink_inside_the_campaign(repo: Path, run) -> None:
    campaign = repo  # --fix rewrites only files git tracks
    queue = campaign / "queues/example.txt"
    queue.write_bytes(b"a t\r\n")
    link = campaign / "queues/alias.txt"
    link.symlink_to("example.txt")
    run(*FIX)
    assert link.is_symlink()
    assert queue.read_bytes() == b"a t\n"


def test_fix_leaves_a_locked_wrapper_alone(campaign: Path, run) -> None:
    wrapper = campaign / "scripts/run_queue.v1.sh"
    content = wrapper.read_bytes().replace(b"\n", b"\r\n")
    wrapper.write_bytes(content)
    digest = hashlib.sha256(content).hexdigest()
    (campaign / ".campaign/wrappers.lock").write_text(
        f"scripts/run_queue.v1.sh sha256:{digest} 2026-11-01\n"
    )
    result = run(*FIX)
    assert result.where() == [("scripts/run_queue.v1.sh", 1, "EOL001")]
    assert str(findings(result)[0]["hint"]).startswith("not fixed: this exact content is locked")
    assert wrapper.read_bytes() == content


def test_text_output_names_the_fix(repo: Path, run) -> None:
    campaign = repo  # --fix rewrites only files git tracks
    (campaign / "queues/example.txt").write_bytes(b"a t\r\n")
    result = run("check", "--select", "EOL", "--fix")
    assert "queues/example.txt:1:4: EOL001 CRLF line ending at line 1" in result.out
    assert "hint: fixed in place" in result.out


@given(st.binary(max_size=300).filter(lambda b: b"\x00" not in b))
def test_normalize_removes_every_finding_and_keeps_lines(data: bytes) -> None:
    fixed = eol.normalize(data)
    assert eol.file_findings("f", fixed) == []
    assert eol.normalize(fixed) == fixed
    before = eol.census(data)
    assert fixed.count(b"\n") == before.crlf + before.cr + data.count(b"\n") - before.crlf
    found = eol.file_findings("f", data)
    assert any(f.id == "EOL001" for f in found) is (b"\r" in data)
    assert any(f.id == "EOL002" for f in found) is data.startswith(eol.BOM)


@given(st.lists(st.sampled_from([b"x", b"yz", b"\n", b"\r\n", b"\r"]), max_size=40))
def test_first_cr_line_matches_git_line_numbering(parts: list[bytes]) -> None:
    data = b"".join(parts)
    found = [f for f in eol.file_findings("f", data) if f.id == "EOL001"]
    if b"\r" not in data:
        assert found == []
        return
    (f,) = found
    head = data[: data.index(b"\r")]
    assert (f.line, f.col) == (head.count(b"\n") + 1, len(head.rsplit(b"\n", 1)[-1]) + 1)
