"""Story: what `campaign submit` says about a kind: ssh page before any box is touched (no
instances, RunPod's basic proxy, a budget the boxes' prices exceed). No sshd needed: each is
refused in the preflight, and nothing is recorded."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from campaignops.model import ledger
from tests.conftest import git


@pytest.fixture
def camp(new_campaign: Callable[..., Path]) -> Path:
    return new_campaign(
        "boxes",
        "backends=generic-ssh,local",
        "smoke_backend=local",
        "require_pushed=no",
        "cloud_budget_usd=0.05",
    )


def with_instances(root: Path, instances: list[dict[str, object]]) -> None:
    page = root / "backends/generic-ssh.md"
    head, sep, rest = page.read_text().partition("\nverified:")
    page.write_text(f"{head}\ninstances: {json.dumps(instances)}{sep}{rest}")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "boxes")


def submit(run):  # type: ignore[no-untyped-def]
    return run(
        "submit", "manifests/example-queue.yaml", "--stage", "smoke", "--backend", "generic-ssh"
    )


def test_a_page_without_instances_says_where_to_list_them(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "as made", "--allow-empty")
    out = submit(run)
    assert out.code == 2
    assert "backends/generic-ssh.md: a kind: ssh page lists no instances" in out.err
    assert "add instances:" in out.err
    assert ledger.read(camp).jobs == ()


def test_runpods_basic_proxy_is_refused_before_anything_runs(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    with_instances(
        camp, [{"name": "pod", "host": "x1-64410f2c@ssh.runpod.io", "workdir": "/workspace"}]
    )
    out = submit(run)
    assert out.code == 2
    assert "is RunPod's basic SSH proxy, which has no scp, sftp or rsync" in out.err
    assert ledger.read(camp).jobs == ()
    check = run("check", "backends/generic-ssh.md")
    assert check.code == 1 and "x1-64410f2c@ssh.runpod.io" in check.out


def test_the_boxes_prices_meet_the_cloud_budget(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    boxes = [
        {"name": n, "host": f"u@10.0.0.{i}", "workdir": "/w", "usd_per_hour": 0.9}
        for i, n in enumerate(("a", "b"), start=1)
    ]
    with_instances(camp, boxes)
    out = submit(run)
    # One task alone (0.08 USD) is over the 0.05 cap: the manifest check says so first (MAN018).
    assert out.code == 2 and "MAN018" in out.err, out.err
    assert "cap 0.05 USD (budgets.cloud_usd)" in out.err
    # Each task fits, the two together do not: the budget gate refuses the job.
    page = camp / "backends/generic-ssh.md"
    page.write_text(page.read_text().replace('"usd_per_hour": 0.9', '"usd_per_hour": 0.4'))
    git(camp, "commit", "-qam", "cheaper boxes")
    out = submit(run)
    assert out.code == 1
    assert "budget: this job 0.07 USD (2 task(s) × 0.40 USD/h × 0.0833333 h)" in out.err
    assert "over the cap 0.05 USD (budgets.cloud_usd)" in out.err
    assert ledger.read(camp).jobs == ()
