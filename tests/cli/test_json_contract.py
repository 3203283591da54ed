"""One JSON contract (issue 21): each command's --format json in a generated campaign, in its
success, refusal and error cases. ``run`` (tests/conftest.py) checks every document against the
command's shipped schema (tests/jsoncontract.py); these tests add what each case must say.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import waiting
from tests.conftest import Result, git

J = ("--format", "json")


def _doc(result: Result) -> dict[str, object]:
    doc: dict[str, object] = json.loads(result.out)
    return doc


def _error(result: Result) -> dict[str, str]:
    error = _doc(result)["error"]
    assert isinstance(error, dict)
    return error


def test_reading_commands_print_one_document(demo: Path, run: Callable[..., Result]) -> None:
    for argv, key in (
        (("check",), "findings"),
        (("checks",), "families"),
        (("status",), "jobs"),
        (("status", "--format", "table"), None),  # the old name: text, no JSON
        (("render", "--check"), "files"),
        (("audit", "--today", "2026-11-21"), "stale"),
        (("audit", "resources"), "stages"),
        (("review", "--base", "HEAD"), "findings"),
        (("pull",), "cells"),
    ):
        result = run(*argv, *J) if key else run(*argv)
        assert result.code == 0, (argv, result.err)
        if key is None:
            assert not result.out.startswith("{")
            continue
        doc = _doc(result)
        words = [a for a in argv if a.isalpha() and a.islower()]  # the command, not HEAD
        assert doc["schema"] == f"campaignops/{'-'.join(words)}/v1"
        assert key in doc


def test_findings_and_refusals(demo: Path, run: Callable[..., Result]) -> None:
    (demo / "manifests" / "broken.yaml").write_text("jobs: 3\n", encoding="utf-8")
    found = run("check", *J)
    assert found.code == 1 and _doc(found)["findings"]
    (demo / "manifests" / "broken.yaml").unlink()
    # A refused gate: the error names the gate, with the reason and the next step.
    refused = run("submit", "manifests/example.yaml", "--stage", "production", *J)
    assert refused.code == 1
    assert _error(refused)["kind"] == "refused"
    assert _error(refused)["gate"] == "smoke_first"
    assert "campaign submit" in _error(refused)["hint"]
    # A dry run that a gate would refuse is a result (every verdict), exit 1.
    dry = run("submit", "manifests/example.yaml", "--stage", "production", "--dry-run", *J)
    assert dry.code == 1 and _doc(dry)["refused"] == ["smoke_first"]
    passing = run("submit", "manifests/example.yaml", "--stage", "smoke", "--dry-run", *J)
    assert passing.code == 0 and _doc(passing)["refused"] == []
    jobs = _doc(passing)["jobs"]
    assert isinstance(jobs, list) and "#!" in jobs[0]["script"]
    assert git(demo, "status", "--porcelain") == ""  # nothing was written by a dry run


def test_errors_are_error_documents(
    demo: Path, run: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for argv in (
        ("cancel", "4242"),
        ("diagnose", "4242"),
        ("release", "box-1", "--dry-run"),
        ("release", "box-1", "--dry-run", "--yes"),
        ("lesson", "add", "two\nlines", "fixed"),
        ("split", "queues/example.txt", "-n", "2"),  # a line without epochs
        ("lock", "scripts/nope.v1.sh"),
        ("audit", "resources", "--manifest", "manifests/nope.yaml"),
        ("review", "--base", "no-such-ref"),
    ):
        result = run(*argv, *J)
        assert result.code == 2, (argv, result.out)
        assert _error(result)["message"], argv
    (demo / "notes.txt").write_text("uncommitted\n", encoding="utf-8")
    dirty = run("update", "--dry-run", *J)
    assert dirty.code == 2 and "uncommitted" in _error(dirty)["message"]
    monkeypatch.chdir(tmp_path)
    for argv in (("status",), ("render",), ("audit",), ("cancel", "1"), ("submit", "m.yaml")):
        outside = run(*argv, *(("--stage", "smoke") if argv[0] == "submit" else ()), *J)
        assert outside.code == 2 and _error(outside)["kind"] == "usage", argv


def test_commands_that_write(demo: Path, run: Callable[..., Result]) -> None:
    added = run("lesson", "add", "smoke OOM", "mem 2G", "--today", "2026-11-21", *J)
    assert added.code == 0 and _doc(added)["text"] == "- 2026-11-21 · smoke OOM · mem 2G · new"
    split = run("split", "queues/example.txt", "-n", "2", "--default-epochs", "3", *J)
    assert split.code == 0 and len(_doc(split)["written"]) == 2  # type: ignore[arg-type]
    (demo / "scripts" / "extra.v1.sh").write_text("#!/bin/sh\necho hi\n", encoding="utf-8")
    locked = run("lock", "scripts/extra.v1.sh", "--today", "2026-11-21", *J)
    assert locked.code == 0
    [entry] = _doc(locked)["locked"]  # type: ignore[misc]
    assert (entry["path"], entry["date"]) == ("scripts/extra.v1.sh", "2026-11-21")
    assert entry["digest"]
    rendered = run("render", *J)
    assert rendered.code == 0 and _doc(rendered)["check"] is False


def test_submit_cancel_and_diagnose_a_local_job(demo: Path, run: Callable[..., Result]) -> None:
    submitted = run("submit", "manifests/example.yaml", "--stage", "smoke", *J)
    assert submitted.code == 0, submitted.out
    job = _doc(submitted)["submitted"][0]  # type: ignore[index]
    assert job["job_id"] and job["ledger_id"]
    preview = run("cancel", job["ledger_id"], "--dry-run", *J)
    if preview.code == 0:  # still running: the preview cancels nothing
        assert _doc(preview)["cancelled"] is False and _doc(preview)["by"] is None
    waiting.settled(run, demo, ledger_id=job["ledger_id"], timeout=120)
    ended = run("cancel", job["ledger_id"], *J)
    assert ended.code == 2 and _error(ended)["kind"] == "usage"
    status = run("status", *J)
    assert [j["ledger_id"] for j in _doc(status)["jobs"]] == [job["ledger_id"]]  # type: ignore[union-attr]
    diagnosed = run("diagnose", f"{job['job_id']}_0", *J)
    assert diagnosed.code == 0 and _doc(diagnosed)["completed"] in (True, False)
    resources = run("audit", "resources", *J)
    assert resources.code == 0 and _doc(resources)["stages"]


def test_new_and_publish_preview(
    tmp_path: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    preview = run("new", "camp", "--defaults", "--dry-run", *J)
    assert preview.code == 0 and _doc(preview)["answers"]["campaign_slug"] == "camp"  # type: ignore[index]
    assert not (tmp_path / "camp").exists()
    asked = run("new", "camp", *J)  # a question would print on stdout: refused
    assert asked.code == 2 and "--defaults" in _error(asked)["hint"]
    body = tmp_path / "body.md"
    body.write_text("review\n", encoding="utf-8")
    (tmp_path / "event.json").write_text("{}", encoding="utf-8")
    for name, value in {
        "GITHUB_API_URL": "https://api.github.invalid",
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_TOKEN": "t0ken",
        "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
    }.items():
        monkeypatch.setenv(name, value)
    comment = ("publish", "comment", "--marker", "m", "--body-file", str(body), "--number", "7")
    done = run(*comment, "--platform", "github", "--dry-run", *J)
    assert done.code == 0 and _doc(done)["number"] == 7 and _doc(done)["body_chars"] == 7
    issue = ("publish", "issue", "--label", "l", "--title", "t", "--state", "closed")
    closed = run(*issue, "--platform", "github", "--dry-run", *J)
    assert closed.code == 0 and _doc(closed)["issues"] == []
    monkeypatch.delenv("GITHUB_REPOSITORY")
    missing = run(*comment, "--platform", "github", "--dry-run", *J)
    assert missing.code == 2 and "GITHUB_REPOSITORY" in _error(missing)["message"]
