"""A year on: `campaign audit` lists what expired and what is about to, with the sources to
re-check, and the standing checks; commits stay green for facts they never touched.

Every stamp of a new campaign is from one month (2026-11), so on 2027-06-01 all of them are
stale at once: the case the scheduled audit and the --base scope exist for (issue 10).
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from campaignops.backends.local import machine as local
from campaignops.backends.local import state as localstate
from tests import waiting
from tests.conftest import Result, git

Run = Callable[..., Result]
LATER = ("--today", "2027-06-01")


def _audit(run: Run, *args: str) -> tuple[int, dict[str, list[dict[str, object]]]]:
    result = run("audit", "--format", "json", *args)
    assert not result.err, result.err
    return result.code, json.loads(result.out)


def _stale_findings(run: Run, *args: str) -> list[tuple[str, int]]:
    result = run("check", "--select", "STALE001", "--format", "json", *LATER, *args)
    return [(path, line) for path, line, _ in result.where()]


def test_audit_lists_every_expired_stamp_with_the_source_to_recheck(demo: Path, run: Run) -> None:
    code, report = _audit(run, *LATER)
    assert code == 1
    assert list(report) == ["schema", "stale", "due", "standing", "problems"]
    assert report["due"] == [] and report["standing"] == []
    stale = report["stale"]
    assert all(list(entry) == ["path", "line", "stamp", "source"] for entry in stale)
    # The audit lists exactly what campaign check calls stale, at the same places.
    listed = [(str(e["path"]), int(str(e["line"]))) for e in stale]
    assert sorted(listed) == sorted(_stale_findings(run))
    assert len(listed) > 50
    # A catalog entry's stamp names no source; its entry's `source` is the one to re-check.
    catalog = yaml.safe_load((demo / "failures.yaml").read_text(encoding="utf-8"))["failures"]
    entries = [e for e in stale if e["path"] == "failures.yaml"]
    assert [e["source"] for e in entries] == [f["source"] for f in catalog]
    assert all(e["stamp"] == "verified: 2026-11" for e in entries)
    # A prose stamp's own source is kept as written.
    page = [
        e for e in stale if e["path"] == "backends/local.md" and e["stamp"] != "verified: 2026-11"
    ]
    assert page and all(str(e["stamp"]).split()[1] == e["source"] for e in page)


def test_stamps_about_to_expire_are_due_and_do_not_fail(demo: Path, run: Run) -> None:
    _, now = _audit(run, *LATER)
    code, before = _audit(run, "--today", "2027-05-10")
    assert code == 0
    assert before["stale"] == [] and before["standing"] == []
    assert before["due"] == now["stale"]
    code, narrow = _audit(run, "--today", "2027-05-10", "--due-within", "21")
    assert (code, narrow["due"]) == (0, [])
    code, fresh = _audit(run, "--today", "2026-12-01")
    empty = {"stale": [], "due": [], "standing": [], "problems": []}
    assert (code, fresh) == (0, {"schema": "campaignops/audit/v1", **empty})


def test_markdown_is_an_issue_body_found_by_its_marker(demo: Path, run: Run) -> None:
    result = run("audit", "--format", "markdown", *LATER)
    assert result.code == 1
    lines = result.out.splitlines()
    assert lines[:2] == ["<!-- campaign-audit -->", "## Campaign audit, 2027-06-01"]
    _, report = _audit(run, *LATER)
    assert (
        lines[3]
        == f"{len(report['stale'])} stale stamps, 0 stamps due within 30 days, 0 standing findings."
    )
    assert "**`backends/local.md`**" in lines and "**`failures.yaml`**" in lines
    assert sum(1 for line in lines if line.startswith("- line ")) == len(report["stale"])


LEDGER_LINES = [
    {
        "v": 1,
        "kind": "intent",
        "ledger_id": "L20261130T100000Z-000000000001",
        "time": "2026-11-30T10:00:00Z",
        "stage": "production",
        "backend": "local",
        "targets": ["a"],
        "charge": {"unit": "node-hours", "rate": 1.0, "time_s": 7200},
    },
    {
        "v": 1,
        "kind": "state",
        "ledger_id": "L20261130T100000Z-000000000001",
        "time": "2026-11-30T10:05:00Z",
        "job_id": "4242",
        "state": "RUNNING",
        "started": "2026-11-30T10:01:00Z",
    },
]


def test_standing_checks_fail_the_audit_when_no_stamp_is_stale(demo: Path, run: Run) -> None:
    ledger = demo / ".campaign" / "ledger.jsonl"
    ledger.parent.mkdir(exist_ok=True)
    text = "".join(json.dumps(r) + "\n" for r in LEDGER_LINES) + '{"v": 1, "kind": "sta'
    ledger.write_text(text, encoding="utf-8")
    (demo / "scripts" / "helper.sh").write_text("#!/bin/bash\necho hi\n", encoding="utf-8")
    code, report = _audit(run, "--today", "2026-12-01")
    assert code == 1
    assert report["stale"] == [] and report["due"] == []
    assert [(f["path"], f["line"], f["id"]) for f in report["standing"]] == [
        (".campaign/ledger.jsonl", 1, "AUDIT003"),
        (".campaign/ledger.jsonl", 3, "AUDIT001"),
        ("scripts/helper.sh", 1, "WRAP001"),
    ]
    assert report["standing"][0]["message"] == (
        "job 4242 is RUNNING in the ledger 14.0 h after it started, past its time limit of 02:00:00"
    )


def test_commits_fail_only_on_stale_stamps_in_files_they_touch(demo: Path, run: Run) -> None:
    everything = _stale_findings(run)
    assert len({path for path, _ in everything}) >= 2
    assert _stale_findings(run, "--base", "HEAD") == []
    page = demo / "backends" / "local.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nA new note.\n", encoding="utf-8")
    assert _stale_findings(run, "--base", "HEAD") == [
        f for f in everything if f[0] == "backends/local.md"
    ]
    git(demo, "add", "-A")
    git(demo, "commit", "-qm", "note")
    # Pushed: CI compares with the push's before-SHA, and the page is still what changed.
    assert _stale_findings(run, "--base", "HEAD~1") == [
        f for f in everything if f[0] == "backends/local.md"
    ]
    assert _stale_findings(run, "--base", "HEAD") == []


def test_bad_input_exits_2_and_audit_resources_still_answers(
    demo: Path, run: Run, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    resources = run("audit", "resources")
    assert (resources.code, resources.out) == (
        0,
        "no finished task in the ledger matches: nothing to audit\n",
    )
    for bad in (("--today", "2027-13-01"), ("--due-within", "many"), ("--format", "html")):
        try:
            code = run("audit", *bad).code
        except SystemExit as exc:  # argparse refuses the value
            code = int(str(exc.code))
        assert code == 2, bad
    monkeypatch.chdir(tmp_path)
    outside = run("audit")
    assert outside.code == 2
    assert "campaign.yaml" in outside.err


NAP = """\
backend: local
resources: {time: "00:10:00"}
jobs:
  - id: nap
    cmd: bash -c 'echo napping; sleep 600'
"""


@pytest.fixture
def napping(demo: Path, run: Run) -> Iterator[Path]:
    (demo / "manifests" / "nap.yaml").write_text(NAP, encoding="utf-8")
    git(demo, "add", "-A")
    git(demo, "commit", "-qm", "nap")
    yield demo
    state = demo / ".campaign" / "local"  # leave nothing running, whatever the test did
    for job_id in localstate.list_jobs(state):
        subprocess.run(local.cancel_argv([job_id], state_root=str(state)), check=False)


def test_a_real_job_the_ledger_shows_running_past_its_limit(napping: Path, run: Run) -> None:
    assert run("submit", "manifests/nap.yaml", "--stage", "smoke").code == 0
    job = waiting.settled(run, napping, want={"RUNNING"}, timeout=60)
    assert job.record["time_s"] == 600  # the intent records the limit it was submitted with
    _, today = _audit(run)
    assert today["standing"] == []
    # Two days on (a scheduler would have ended it long ago), with no refresh since.
    later = (dt.date.today() + dt.timedelta(days=2)).isoformat()
    code, report = _audit(run, "--today", later)
    assert code == 1
    (finding,) = report["standing"]
    assert (finding["path"], finding["line"], finding["id"]) == (
        ".campaign/ledger.jsonl",
        job.first_line,
        "AUDIT003",
    )
    assert str(finding["message"]).startswith(f"job {job.job_id} is RUNNING in the ledger ")
    assert str(finding["message"]).endswith("after it started, past its time limit of 00:10:00")
