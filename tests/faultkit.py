"""What the fault suite (tests/test_faults.py, tests/test_faults_scheduler.py) shares: its
campaign, and what must hold after any fault (docs/robustness.md, "Fuzz and fault suites")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from campaignops.model import ledger
from tests.conftest import git

SEED = int(os.environ.get("CAMPAIGN_FAULT_SEED", "20261124"))
LEDGER = ".campaign/ledger.jsonl"


def quick_manifest(n: int) -> str:
    """A manifest of n one-line targets: each smoke is its own target, so no kill's leftover
    job blocks the next submit through no_sibling."""
    jobs = "".join(
        f"  - id: t{i:03d}\n"
        f"    cmd: sh -c 'mkdir -p $CAMPAIGN_OUT/q && echo $$ >> $CAMPAIGN_OUT/q/t{i:03d}'\n"
        f"    output: ${{CAMPAIGN_OUT}}/q/t{i:03d}\n"
        for i in range(n)
    )
    return f'backend: local\nresources: {{time: "00:05:00", cpus: 1, mem: 100M}}\njobs:\n{jobs}'


def quick_campaign(copy: Callable[..., Path], *, targets: int = 150) -> Path:
    """A campaign (local and generic-slurm) with manifests/quick.yaml (``targets`` one-line
    targets t000, t001, …), committed, as the current directory. ``copy`` is the
    ``new_campaign`` fixture (tests/conftest.py): this test's copy of the session's
    generated campaign."""
    root: Path = copy(
        "faults", "backends=generic-slurm,local", "smoke_backend=local", "require_pushed=no"
    )
    (root / "manifests/quick.yaml").write_text(quick_manifest(targets), encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "quick targets")
    return root


def campaign_cmd(root: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "campaignops", *args],
        cwd=root,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        check=False,
    )


# --- what must hold after any fault -------------------------------------------------------------


def ledger_records(root: Path) -> list[dict[str, object]]:
    """Every line of the ledger as JSON (a torn last line is the only one allowed to fail)."""
    lines = (root / LEDGER).read_bytes().split(b"\n")
    records = []
    for i, line in enumerate(lines):
        if not line:
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            assert i == len(lines) - 1, f"line {i + 1} of the ledger is not JSON: {line[:200]!r}"
    ledger.read(root)  # the product's own reader accepts it
    return records


def assert_nothing_duplicated(records: list[dict[str, object]]) -> None:
    intents = Counter(r["ledger_id"] for r in records if r.get("kind") == "intent")
    assert [k for k, n in intents.items() if n > 1] == [], "an intent recorded twice"
    results = Counter(r["ledger_id"] for r in records if r.get("kind") == "result")
    assert [k for k, n in results.items() if n > 1] == [], "a submission's result recorded twice"
    owners: dict[object, set[object]] = {}
    for r in records:
        if r.get("job_id"):
            owners.setdefault(r["job_id"], set()).add(r["ledger_id"])
    assert {j: o for j, o in owners.items() if len(o) > 1} == {}, "one job under two entries"
    lines = Counter(json.dumps(r, sort_keys=True) for r in records)
    assert [line for line, n in lines.items() if n > 1] == [], "an identical record twice"


def started_jobs(root: Path) -> dict[str, str]:
    """job id -> ledger id of every job the local backend started (its job.json's comment)."""
    started = {}
    for job in sorted((root / ".campaign/local").glob("local-*/job.json")):
        data = json.loads(job.read_text(encoding="utf-8"))
        started[str(data["job_id"])] = str(data["comment"]).split()[0]
    return started


def stray_dirs(root: Path) -> list[str]:
    return sorted(
        d.name
        for d in (root / ".campaign/local").glob("local-*")
        if d.is_dir() and not (d / "job.json").is_file()
    )


def assert_every_started_job_recorded(root: Path, records: list[dict[str, object]]) -> None:
    recorded = {(r.get("job_id"), r.get("ledger_id")) for r in records if r.get("job_id")}
    missing = {j: lid for j, lid in started_jobs(root).items() if (j, lid) not in recorded}
    assert missing == {}, f"jobs started but not in the ledger after a refresh: {missing}"


# Tracebacks another change removes: noted, and the test an expected failure while they are all
# it finds. Empty: the issue 12 fixes are merged, so every traceback fails the test.
KNOWN: tuple[tuple[tuple[str, ...], str], ...] = ()


def _known(text: str) -> str | None:
    return next((why for signs, why in KNOWN if all(s in text for s in signs)), None)


class Breaches:
    """What broke the contract in one test; ``verdict`` fails on anything not in KNOWN."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def check(self, what: str, code: int, err: str) -> None:
        if code not in (0, 1, 2) or "Traceback" in err:
            self.found.append(f"{what}: exit {code}\n{err[-2000:]}")

    def verdict(self) -> None:
        unknown = [f for f in self.found if _known(f) is None]
        assert unknown == [], "\n\n".join(unknown[:3])
        if self.found:
            pytest.xfail(f"known issues: {sorted({str(_known(f)) for f in self.found})}")
