"""Hostile input across families: a clear message and exit 2 naming the file, never a traceback.

A few cases drive the real CLI in a subprocess, so a traceback on stderr (or an exit code that
only an uncaught exception produces) is visible; the rest run in-process through ``run``.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from campaignops.core import files
from tests.conftest import TODAY

CLEAN_DEFECT = "jobs:\n  - id: ok\n  - id: ok\ndefault_cmd: python3 run.py\n"  # MAN002 at line 3


def cli(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m campaignops check ARGS…` in a subprocess, stamps aged against TODAY."""
    proc = subprocess.run(
        [sys.executable, "-m", "campaignops", "check", "--today", TODAY.isoformat(), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        errors="replace",
        env={**os.environ, **(env or {})},
        timeout=120,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def write(campaign: Path, rel: str, data: str | bytes) -> Path:
    path = campaign / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)
    return path


# --- unreadable as text -------------------------------------------------------------------------


def test_invalid_utf8_names_file_and_line(campaign: Path) -> None:
    write(campaign, "manifests/bad.yaml", b"project: demo\njobs:\n  - id: caf\xe9\n")
    proc = cli(campaign)
    assert proc.returncode == 2
    assert "manifests/bad.yaml" in proc.stderr
    assert "invalid UTF-8 at line 3" in proc.stderr


def test_binary_file_is_refused_by_name(campaign: Path) -> None:
    noise = random.Random(20261121).randbytes(8192) + b"\x00\x00"
    write(campaign, "manifests/x.yaml", noise)
    proc = cli(campaign)
    assert proc.returncode == 2
    assert "manifests/x.yaml: binary file" in proc.stderr


def test_huge_file_is_refused_without_parsing(campaign: Path) -> None:
    line = b"# a comment line repeated until this manifest is far too big to be a manifest\n"
    with (campaign / "manifests/huge.yaml").open("wb") as fh:
        fh.write(line * (50 * 2**20 // len(line) + 1))
    proc = cli(campaign)
    assert proc.returncode == 2
    assert "manifests/huge.yaml" in proc.stderr
    assert f"limited to {files.MAX_BYTES // 2**20} MiB" in proc.stderr


# --- YAML built to exhaust the parser or the validators -----------------------------------------


def billion_laughs(levels: int = 9, width: int = 9) -> str:
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def test_alias_bomb(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    write(campaign, "manifests/bomb.yaml", billion_laughs())
    r = run("check")
    assert r.code == 2
    assert (
        "manifests/bomb.yaml: YAML aliases add 490,328,964 nodes to the document; the limit is "
        in r.err
    )
    assert "200,000 nodes added by aliases (an alias bomb?)" in r.err


def test_many_written_nodes_are_no_alias_bomb(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    # A manifest of 51,000 explicit jobs was refused as an alias bomb: nodes were counted, not
    # what aliases add. 210,000 written-out values (an x- key holds anything) are no bomb.
    text = (campaign / "manifests/smoke.yaml").read_text()
    write(campaign, "manifests/smoke.yaml", text + "x-data: [" + "0, " * 210_000 + "0]\n")
    r = run("check", "--format", "json", "manifests/smoke.yaml")
    assert (r.code, r.err) == (0, "")
    assert r.json() == {"schema": "campaignops/check/v1", "findings": [], "errors": []}


@pytest.mark.parametrize("text", ["&a [*a]\n", "jobs: &a [*a]\n"])
def test_recursive_alias(campaign: Path, run, text: str) -> None:  # type: ignore[no-untyped-def]
    write(campaign, "manifests/loop.yaml", text)
    r = run("check")
    assert r.code == 2
    assert "manifests/loop.yaml" in r.err
    assert "recursive alias" in r.err


def test_deep_flow_sequence_in_subprocess(campaign: Path) -> None:
    write(campaign, "manifests/deep.yaml", "[" * 10000 + "]" * 10000 + "\n")
    proc = cli(campaign)
    assert proc.returncode == 2
    assert "manifests/deep.yaml:1:65: YAML nests deeper than 64 levels" in proc.stderr
    assert "RecursionError" not in proc.stderr


def test_deep_block_mapping(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    text = "".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "v: 1\n"
    write(campaign, "manifests/deep.yaml", text)
    r = run("check")
    assert r.code == 2
    assert "manifests/deep.yaml:65:" in r.err
    assert ": YAML nests deeper than 64 levels" in r.err


@pytest.mark.parametrize(
    "value", ["!!int abc", "!!float abc", "!!timestamp 2026-13-45", "!!bool maybe"]
)
def test_explicit_tag_with_bad_value(campaign: Path, value: str) -> None:
    # PyYAML's constructors raise ValueError/KeyError here, not a YAMLError.
    write(campaign, "manifests/tag.yaml", f"jobs:\n  - id: {value}\n")
    proc = cli(campaign)
    assert proc.returncode in (1, 2)
    assert "manifests/tag.yaml" in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("rel", "text"),
    [
        ("manifests/k.yaml", "on: push\njobs: []\n"),  # YAML 1.1: the key is True
        ("manifests/k.yaml", "jobs:\n  - id: a\n    1: x\n"),
        ("manifests/k.yaml", "{!!binary aGk=: 1, jobs: []}\n"),
        ("campaign.yaml", "name: x\nnull: y\n"),
    ],
)
def test_non_string_mapping_key(campaign: Path, rel: str, text: str) -> None:
    # jsonschema's patternProperties runs re.search on every key and fails on non-strings.
    write(campaign, rel, text)
    proc = cli(campaign)
    assert proc.returncode in (1, 2)
    assert f"{rel}:" in proc.stdout + proc.stderr


def test_duplicate_key_is_a_finding_at_its_line(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    write(campaign, "manifests/dup.yaml", "project: a\njobs:\n  - id: x\nproject: b\n")
    r = run("check", "--format", "json")
    assert r.code == 1
    assert r.where() == [("manifests/dup.yaml", 4, "MAN008")]


# --- paths that are not plain files inside the campaign -----------------------------------------


def test_symlink_out_of_campaign_is_not_followed(campaign: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.yaml"
    secret.write_bytes(b"jobs:\r\n  - id: SECRET-TOKEN-4711\r\n")
    (campaign / "manifests/evil.yaml").symlink_to("/etc/passwd")
    (campaign / "manifests/leak.yaml").symlink_to(secret)
    passwd = Path("/etc/passwd").read_text(errors="replace").splitlines()
    for fmt in ("text", "json", "github"):
        proc = cli(campaign, "--fix", "--format", fmt)
        assert proc.returncode == 2
        if fmt == "json":
            messages = [str(e["message"]) for e in json.loads(proc.stdout)["errors"]]
        else:
            messages = proc.stderr.splitlines()
        for name in ("manifests/evil.yaml", "manifests/leak.yaml"):
            line = next(m for m in messages if name in m)
            assert "outside the campaign" in line
            assert "not followed" in line
        shown = proc.stdout + proc.stderr
        assert "SECRET-TOKEN" not in shown
        assert not any(entry and entry in shown for entry in passwd)
    assert secret.read_bytes() == b"jobs:\r\n  - id: SECRET-TOKEN-4711\r\n"


def test_symlink_inside_campaign_is_fine(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    (campaign / "manifests/alias.yaml").symlink_to("smoke.yaml")
    r = run("check", "--format", "json")
    assert (r.code, r.err) == (0, "")
    assert r.json() == {"schema": "campaignops/check/v1", "findings": [], "errors": []}


def test_symlink_loop_is_refused(campaign: Path) -> None:
    (campaign / "manifests/loop.yaml").symlink_to("loop.yaml")
    proc = cli(campaign)
    assert proc.returncode == 2
    assert "manifests/loop.yaml" in proc.stderr


def test_dangling_symlink_is_refused(campaign: Path) -> None:
    (campaign / "manifests/gone.yaml").symlink_to("nowhere.yaml")
    proc = cli(campaign)
    assert proc.returncode == 2
    assert "manifests/gone.yaml" in proc.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_fifo_is_refused_not_read(campaign: Path) -> None:
    # Opening a FIFO for reading blocks until a writer appears: the run would hang.
    os.mkfifo(campaign / "manifests/pipe.yaml")
    proc = cli(campaign)
    assert proc.returncode == 2
    assert "manifests/pipe.yaml: not a regular file" in proc.stderr


def test_directory_named_like_a_manifest(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    write(campaign, "manifests/dir.yaml/inner.yaml", CLEAN_DEFECT)
    (campaign / "manifests/empty.yaml").mkdir()
    expected = [("manifests/dir.yaml/inner.yaml", 3, "MAN002")]
    discovered = run("check", "--format", "json")
    assert (discovered.code, discovered.err) == (1, "")
    assert discovered.where() == expected
    explicit = run("check", "--format", "json", "manifests/dir.yaml")
    assert (explicit.code, explicit.err) == (1, "")
    assert explicit.where() == expected


@pytest.mark.parametrize(
    "text", ["", "# only a comment\n", "null\n", "[1, 2]\n", "just a string\n"]
)
def test_manifest_that_is_not_a_mapping(campaign: Path, run, text: str) -> None:  # type: ignore[no-untyped-def]
    write(campaign, "manifests/odd.yaml", text)
    r = run("check", "--format", "json")
    assert (r.code, r.err) == (1, "")
    assert r.where() == [("manifests/odd.yaml", 1, "MAN001")]


def test_non_utf8_file_name_with_strict_stdout(campaign: Path) -> None:
    try:
        write(campaign, os.fsdecode(b"manifests/\xff.yaml"), "[1, 2]\n")
    except (OSError, UnicodeError):
        pytest.skip("this filesystem refuses non-UTF-8 names")
    proc = cli(campaign, env={"PYTHONIOENCODING": "utf-8:strict"})
    assert proc.returncode == 1
    assert "MAN001" in proc.stdout


def test_fix_leaves_refused_files_byte_identical(campaign: Path) -> None:
    binary = b"jobs:\r\n\x00\x01\r\n"
    write(campaign, "manifests/blob.yaml", binary)
    proc = cli(campaign, "--fix")
    assert proc.returncode == 2
    assert (campaign / "manifests/blob.yaml").read_bytes() == binary


# --- command-line mistakes ----------------------------------------------------------------------


def test_path_outside_the_campaign(campaign: Path, tmp_path: Path, run) -> None:  # type: ignore[no-untyped-def]
    outside = write(tmp_path, "elsewhere.yaml", "jobs: []\n")
    r = run("check", str(outside))
    assert r.code == 2
    assert str(outside) in r.err
    assert "outside the campaign root" in r.err


def test_nonexistent_path(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    r = run("check", "manifests/nope.yaml")
    assert r.code == 2
    assert "manifests/nope.yaml" in r.err
    assert "no such file" in r.err


def test_bad_date_is_a_usage_error(campaign: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "campaignops", "check", "--today", "not-a-date"],
        cwd=campaign,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "usage:" in proc.stderr
    assert "'not-a-date' is not a date (YYYY-MM-DD)" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_select_is_a_usage_error(campaign: Path) -> None:
    proc = cli(campaign, "--select", "NOPE")
    assert proc.returncode == 2
    assert "--select NOPE: no such check family or ID" in proc.stderr


def test_no_campaign_and_no_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    r = run("check")
    assert r.code == 2
    assert "no campaign.yaml" in r.err
    assert "hint: run inside a campaign repository" in r.err


# --- one bad file does not hide the others ------------------------------------------------------


def test_unreadable_file_and_findings_in_one_run(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    write(campaign, "manifests/a_bad.yaml", b"jobs:\n  - id: \xff\n")
    write(campaign, "manifests/z_defect.yaml", CLEAN_DEFECT)
    r = run("check")
    assert r.code == 2
    assert "manifests/a_bad.yaml: invalid UTF-8 at line 2" in r.err
    assert "manifests/z_defect.yaml:3:" in r.out
    as_json = run("check", "--format", "json")
    assert as_json.code == 2
    assert as_json.where() == [("manifests/z_defect.yaml", 3, "MAN002")]
    assert [e["path"] for e in as_json.json()["errors"]] == ["manifests/a_bad.yaml"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads anything")
def test_permission_denied_and_findings_in_one_run(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    locked = write(campaign, "manifests/a_locked.yaml", "jobs: []\n")
    locked.chmod(0)
    write(campaign, "manifests/z_defect.yaml", CLEAN_DEFECT)
    r = run("check")
    assert r.code == 2
    assert "manifests/a_locked.yaml: cannot read" in r.err
    assert "manifests/z_defect.yaml:3:" in r.out
