"""Story: the budget gate, on the local backend given a price.

The campaign's local page gets a charging model (3 USD per node-hour) and campaign.yaml a cloud
budget of 2.50 USD. Every task holds one node for at most 30 minutes: 1.50 USD each. A running
smoke reserves its 1.50 USD, so a second smoke is refused by `budget` with both numbers; with
`--override "reason"` it passes and the reason is in its intent record; `campaign status` shows
spent against budget. The jobs are real detached executors running real bash, cancelled at the
end.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from campaignops.backends.local import machine as local
from campaignops.backends.local import state as localstate
from campaignops.model import ledger
from tests.conftest import git

NAPS = """\
backend: local
resources: {time: "00:30:00"}
smoke:
  args: {seconds: 300}
jobs:
  - id: a
    cmd: bash -c 'echo nap a; sleep "$2"' nap
    args: {seconds: 600}
  - id: b
    cmd: bash -c 'echo nap b; sleep "$2"' nap
    args: {seconds: 600}
"""

PRICE = """\
charging:
  unit: usd
  per: node
  per_hour: 3
  source: "the story: a local machine billed like a rented one"
  verified: 2026-11
"""


@pytest.fixture
def camp(new_campaign: Callable[..., Path]) -> Iterator[Path]:
    root = new_campaign("priced", "require_pushed=no", "cloud_budget_usd=2.5")
    page = root / "backends/local.md"
    text = page.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    page.write_text("---\n" + PRICE + text[4:], encoding="utf-8")
    (root / "manifests/naps.yaml").write_text(NAPS, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a priced local machine, two naps")
    yield root
    state = root / ".campaign/local"
    for job_id in localstate.list_jobs(state):
        subprocess.run(local.cancel_argv([job_id], state_root=str(state)), check=False)


def test_a_job_over_the_budget_is_refused_overridden_and_shown(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    dry = run("submit", "manifests/naps.yaml", "--stage", "smoke", "--dry-run")
    assert dry.code == 1, dry.err  # both naps: 3.00 USD
    assert (
        "  gate budget       REFUSE this job 3.00 USD (2 task(s) × 3.00 USD/h × 0.5 h) + "
        "already spent or reserved 0.00 USD = 3.00 USD, over the cap 2.50 USD "
        "(budgets.cloud_usd)\n" in dry.out
    )
    assert "a submit would be refused by budget" in dry.out

    first = run("submit", "manifests/naps.yaml", "--stage", "smoke", "--targets", "a")
    assert first.code == 0, first.err
    assert "gate budget       pass   this job 1.50 USD (1 task(s) × 3.00 USD/h × 0.5 h) + " in (
        first.out
    )
    intent = ledger.read(camp).jobs[-1]
    assert dict(intent.record["charge"]) == {"unit": "usd", "rate": 3.0, "time_s": 1800}
    assert intent.record.get("override") is None

    # a is running (or queued): its 30 minutes are reserved, so b does not fit.
    refused = run("submit", "manifests/naps.yaml", "--stage", "smoke", "--targets", "b")
    assert refused.code == 1
    assert (
        "budget: this job 1.50 USD (1 task(s) × 3.00 USD/h × 0.5 h) + already spent or "
        "reserved 1.50 USD = 3.00 USD, over the cap 2.50 USD (budgets.cloud_usd)" in refused.err
    )
    assert '--override "why this is worth it" (recorded in the ledger)' in refused.err
    assert len(ledger.read(camp).jobs) == 1  # nothing recorded, nothing submitted

    why = "a's nap ends early; PI approved"
    passed = run(
        "submit", "manifests/naps.yaml", "--stage", "smoke", "--targets", "b", "--override", why
    )
    assert passed.code == 0, passed.err
    assert "gate budget       pass   overridden: this job 1.50 USD" in passed.out
    # Both were submitted within a second: find b's job by its target, not by its place.
    second = next(j for j in ledger.read(camp).jobs if j.targets == ("b",))
    assert second.record["override"] == why
    assert second.job_id is not None

    status = run("status")
    assert status.code == 0, status.err
    lines = status.out.splitlines()
    at = lines.index("spent against budget:")
    assert lines[at + 1].split() == ["backend", "spent", "reserved", "cap", "of", "cap"]
    row = lines[at + 2].split()
    # spent + reserved is 3.00 USD whatever the split between them: 120% of 2.50
    assert row[0] == "local" and row[-1] == "120%"
    assert "2.50 USD (budgets.cloud_usd, every USD backend)" in lines[at + 2]
    assert lines[at + 3].strip() == (
        "reserved: what queued and running tasks may still use, up to their time limit"
    )


PHASES = """\
backend: local
resources: {time: "00:30:00"}
phases:
  - name: first
    jobs: [{id: one, cmd: "true"}]
  - name: second
    depends_on: first
    jobs: [{id: two, cmd: "true"}]
"""


def test_the_phases_of_one_submission_share_the_budget(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    (camp / "manifests/phases.yaml").write_text(PHASES, encoding="utf-8")
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "two phases")
    # Each phase alone (1.50 USD) fits 2.50 USD; both do not, so nothing is submitted.
    refused = run("submit", "manifests/phases.yaml", "--stage", "smoke")
    assert refused.code == 1
    assert (
        "budget: this job 1.50 USD (1 task(s) × 3.00 USD/h × 0.5 h) + its submission's earlier "
        "phases 1.50 USD + already spent or reserved 0.00 USD = 3.00 USD, over the cap 2.50 USD "
        "(budgets.cloud_usd)" in refused.err
    )
    assert ledger.read(camp).jobs == ()
    dry = run("submit", "manifests/phases.yaml", "--stage", "smoke", "--dry-run")
    budget_lines = [line for line in dry.out.splitlines() if line.startswith("  gate budget")]
    assert [line.split()[2] for line in budget_lines] == ["pass", "REFUSE"]
