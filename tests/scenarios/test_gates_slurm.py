"""The budget gate and the hardware class on the real Slurm cluster (the local versions:
test_budget.py, test_campaign_life.py). The jobs are real sbatch jobs, their states from sacct.
"""

from __future__ import annotations

import subprocess

import pytest

from campaignops.model import ledger
from tests import waiting
from tests.scenarios.conftest import Life

pytestmark = pytest.mark.slurm

NAP = """\
resources: {time: "00:30:00", mem: 100M}
smoke:
  args: {seconds: 120}
jobs:
  - {id: a, cmd: "bash -c 'sleep \\"$2\\"' nap", args: {seconds: 600}}
  - {id: b, cmd: "bash -c 'sleep \\"$2\\"' nap", args: {seconds: 600}}
"""

PRICE = """\
charging:
  unit: usd
  per: node
  per_hour: 3
  source: "the story: a cluster billed like a rented machine"
  verified: 2026-11
"""


def _priced(life: Life, budget: str) -> None:
    page = life.root / "backends/generic-slurm.md"
    text = page.read_text()
    life.write("backends/generic-slurm.md", "---\n" + PRICE + text[4:], commit=False)
    policy = life.root / "campaign.yaml"
    lines = [
        f"  cloud_usd: {budget}" if line.startswith("  cloud_usd:") else line
        for line in policy.read_text().splitlines()
    ]
    life.write("campaign.yaml", "\n".join(lines) + "\n", commit=False)
    life.write("manifests/nap.yaml", NAP)


def test_the_budget_gate_on_slurm(camp, run, slurm_cluster) -> None:  # type: ignore[no-untyped-def]
    life = Life(root=camp, backend="generic-slurm", run=run)
    _priced(life, "2.5")
    first = life.submit("manifests/nap.yaml", "smoke", "--targets", "a")
    assert first.code == 0, first.err  # 1.50 USD reserved while it runs
    job = life.jobs()[-1]
    try:
        second = life.submit("manifests/nap.yaml", "smoke", "--targets", "b")
        assert second.code == 1 and "budget:" in second.err
        assert "already spent or reserved 1.50 USD" in second.err and "2.50 USD" in second.err
        forced = life.submit(
            "manifests/nap.yaml", "smoke", "--targets", "b", "--override", "deadline"
        )
        assert forced.code == 0, forced.err
        (b,) = [j for j in ledger.read(life.root).jobs if j.targets == ("b",)]
        assert b.record["override"] == "deadline"
        shown = life.run("status")
        assert "spent against budget" in shown.out
    finally:
        for j in ledger.read(life.root).jobs:
            if j.job_id:
                subprocess.run(["scancel", j.job_id], check=False)
    assert job.job_id and job.job_id.isdigit()


def test_a_gpu_production_is_refused_after_a_cpu_smoke_on_slurm(camp, run, slurm_cluster) -> None:  # type: ignore[no-untyped-def]
    life = Life(root=camp, backend="generic-slurm", run=run)
    page = life.root / "backends/generic-slurm.md"
    text = page.read_text()
    rows = (
        "partitions:\n"
        "  - {name: debug, purpose: smoke}\n"
        "  - {name: a100, purpose: production, gpus: 4, gpu_type: A100}\n"
    )
    start, end = text.index("partitions:"), text.index("accounts:")
    life.write("backends/generic-slurm.md", text[:start] + rows + text[end:], commit=False)
    life.write(
        "manifests/gpu.yaml",
        "resources: {time: '00:05:00', partition: a100, gpus: 1, mem: 100M}\n"
        "smoke:\n  args: {epochs: 1}\n  resources: {partition: debug, gpus: 0}\n"
        "jobs:\n  - {id: train, cmd: 'echo training', args: {epochs: 10}}\n",
    )
    assert life.submit("manifests/gpu.yaml", "smoke").code == 0
    waiting.settled(life.run, life.root, want={"COMPLETED"}, timeout=120)
    life.commit("cpu smoke done")
    refused = life.submit("manifests/gpu.yaml", "production", "--dry-run")
    assert refused.code == 1 and "gate smoke_first  REFUSE" in refused.out
