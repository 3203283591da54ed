"""A campaign's life through the CLI: smoke, production, a failing cell, the fix, the re-smoke.

Each story runs on the local backend and on the real Slurm cluster. The task is the template's
example task (scripts/smoke_task.py): ``fail_at_step: K`` in its config makes it fail.
"""

from __future__ import annotations

import json

from tests.scenarios.conftest import Life

CELLS = """\
# Three cells of the example task; "bad" fails at its first step until its config is fixed.
max_parallel: 3
resources: {time: "00:05:00", mem: 200M}
smoke:
  args: {epochs: 2}
grid:
  cell: [good1, good2, bad]
template:
  id: "${cell}"
  cmd: python3 scripts/smoke_task.py --config configs/cells/${cell}.yaml --task t --out ${CAMPAIGN_OUT}/cells/${cell}
  args: {epochs: 4}
  output: "${CAMPAIGN_OUT}/cells/${cell}/metrics.json"
"""


def _cells(life: Life, *, bad: str = "fail_at_step: 1\n") -> None:
    life.write("configs/cells/good1.yaml", "lr: 0.1\n", commit=False)
    life.write("configs/cells/good2.yaml", "lr: 0.2\n", commit=False)
    life.write("configs/cells/bad.yaml", bad, commit=False)
    life.write("manifests/cells.yaml", CELLS)


def _metrics(life: Life, stage: str) -> dict[str, int]:
    found = (life.root / "runs" / stage / "cells").glob("*/metrics.json")
    return {p.parent.name: json.loads(p.read_text())["epochs"] for p in found}


def test_production_runs_its_own_cells_never_the_smokes_outputs(life: Life) -> None:
    _cells(life, bad="lr: 0.3\n")
    refused = life.submit("manifests/cells.yaml", "production")
    assert refused.code == 1 and "smoke_first" in refused.err
    assert life.submit("manifests/cells.yaml", "smoke").code == 0
    smoke = life.wait()
    assert (smoke.state, smoke.exit_code) == ("COMPLETED", 0)
    assert _metrics(life, "smoke") == {"good1": 2, "good2": 2, "bad": 2}
    life.commit("smoke done")
    assert life.submit("manifests/cells.yaml", "production").code == 0
    production = life.wait()
    assert (production.state, production.exit_code) == ("COMPLETED", 0)
    # Production ran every cell at its own length, in its own root; the smoke's are untouched.
    assert _metrics(life, "production") == {"good1": 4, "good2": 4, "bad": 4}
    assert _metrics(life, "smoke") == {"good1": 2, "good2": 2, "bad": 2}
    assert production.text("stage_root") == "runs/production"


def test_one_failing_cell_fails_alone_and_failed_resubmits_only_it(life: Life) -> None:
    _cells(life)
    assert life.submit("manifests/cells.yaml", "smoke").code == 0
    smoke = life.wait()
    outcomes = {t: (task.state, task.exit_code) for t in smoke.targets if (task := smoke.task(t))}
    assert outcomes == {
        "good1": ("COMPLETED", 0),
        "good2": ("COMPLETED", 0),
        "bad": ("FAILED", 1),
    }
    status = (life.root / "STATUS.md").read_text()
    assert "| bad | FAILED exit 1, unknown (" in status and "| good1 | COMPLETED (" in status
    life.commit("smoke done")
    # The good cells may go on; the bad one may not.
    good = life.submit("manifests/cells.yaml", "production", "--targets", "good1", "good2")
    assert good.code == 0, good.err
    life.wait()
    bad = life.submit("manifests/cells.yaml", "production", "--targets", "bad")
    assert bad.code == 1 and "smoke_first" in bad.err and "bad" in bad.err
    # Fix, commit, re-smoke only what failed: one array job of one target.
    life.write("configs/cells/bad.yaml", "lr: 0.3\n")
    resmoke = life.submit("manifests/cells.yaml", "smoke", "--failed")
    assert resmoke.code == 0, resmoke.err
    again = life.wait()
    assert again.targets == ("bad",) and (again.state, again.exit_code) == ("COMPLETED", 0)
    life.commit("re-smoke done")
    nothing = life.submit("manifests/cells.yaml", "smoke", "--failed")
    assert nothing.code == 0 and "nothing to resubmit" in nothing.out
    assert life.submit("manifests/cells.yaml", "production", "--targets", "bad").code == 0
    assert life.wait().state == "COMPLETED"


PHASES = """\
resources: {time: "00:05:00", mem: 100M}
phases:
  - name: a
    jobs: [{id: a1, cmd: "mkdir -p $CAMPAIGN_OUT && sleep 2 && echo a >> $CAMPAIGN_OUT/order"}]
  - name: b
    jobs: [{id: b1, cmd: "mkdir -p $CAMPAIGN_OUT && sleep 4 && echo b >> $CAMPAIGN_OUT/order"}]
  - name: c
    depends_on: [a, b]
    jobs: [{id: c1, cmd: "echo c >> $CAMPAIGN_OUT/order"}]
"""


def test_a_phase_waits_for_every_phase_it_depends_on(life: Life) -> None:
    life.write("manifests/phases.yaml", PHASES)
    result = life.submit("manifests/phases.yaml", "smoke")
    assert result.code == 0, result.err
    by_target = {j.targets[0]: j for j in life.jobs()}
    a, b, c = by_target["a1"], by_target["b1"], by_target["c1"]
    assert c.record["after"] == [a.job_id, b.job_id]
    for job in (a, b, c):
        assert life.wait(job.ledger_id).state == "COMPLETED"
    assert (life.root / "runs/smoke/order").read_text().split() == ["a", "b", "c"]


MULTILINE = """\
resources: {time: "00:05:00", mem: 100M}
jobs:
  - id: two
    cmd: |
      mkdir -p "$CAMPAIGN_OUT"
      printf '%s\\n' 'two  spaces' > "$CAMPAIGN_OUT/two.txt"
      echo second line ran >> "$CAMPAIGN_OUT/two.txt"
    output: "${CAMPAIGN_OUT}/two.txt"
"""


def test_a_multi_line_command_runs_as_written(life: Life) -> None:
    life.write("manifests/multi.yaml", MULTILINE)
    assert life.submit("manifests/multi.yaml", "smoke").code == 0
    assert life.wait().state == "COMPLETED"
    text = (life.root / "runs/smoke/two.txt").read_text()
    assert text == "two  spaces\nsecond line ran\n"


def test_a_lost_result_is_found_after_the_job_ended(life: Life) -> None:
    _cells(life, bad="lr: 0.3\n")
    assert life.submit("manifests/cells.yaml", "smoke").code == 0
    ended = life.wait()
    # A crash between the scheduler call and the result record: only the intent survives.
    path = life.root / ".campaign/ledger.jsonl"
    intent = [line for line in path.read_text().splitlines() if '"kind": "intent"' in line]
    path.write_text("\n".join(intent) + "\n")
    (lost,) = life.jobs()
    assert lost.job_id is None and lost.state is None
    refreshed = life.run("status", "--refresh")
    assert refreshed.code == 0 and "1 lost result(s) found" in refreshed.err
    (found,) = life.jobs()
    assert found.job_id == ended.job_id
    assert (found.state, found.exit_code) == ("COMPLETED", 0)
    assert all(found.task(t).succeeded for t in found.targets)  # type: ignore[union-attr]
    # Nothing is left for status --watch to wait for.
    assert life.run("status", "--refresh").err.startswith("refreshed: 0 scheduler call(s)")


def test_editing_a_config_the_command_names_forces_a_new_smoke(life: Life) -> None:
    _cells(life, bad="lr: 0.3\n")
    assert life.submit("manifests/cells.yaml", "smoke").code == 0
    assert life.wait().state == "COMPLETED"
    life.commit("smoke done")
    assert life.submit("manifests/cells.yaml", "production", "--dry-run").code == 0
    # Only the file changes (the manifest does not): that cell needs a new smoke, the others not.
    life.write("configs/cells/good2.yaml", "lr: 0.9\n")
    edited = life.submit("manifests/cells.yaml", "production")
    assert edited.code == 1 and "smoke_first" in edited.err
    assert "for good2 (smokes of good2 ran an older config)" in edited.err
    others = life.submit("manifests/cells.yaml", "production", "--targets", "good1", "bad")
    assert others.code == 0, others.err
    life.wait()
    assert life.submit("manifests/cells.yaml", "smoke", "--targets", "good2").code == 0
    assert life.wait().state == "COMPLETED"
    life.commit("re-smoked good2")
    assert life.submit("manifests/cells.yaml", "production", "--targets", "good2").code == 0


GPU_ROWS = """\
partitions:
  - {name: debug, purpose: smoke, notes: "CPU only"}
  - {name: mig, purpose: smoke, gpus: 1, gpu_type: "A100 MIG 3g.20gb", smoke_for: a100}
  - {name: a100, purpose: production, gpus: 4, gpu_type: A100}
  - {name: h200, purpose: production, gpus: 4, gpu_type: H200}
"""

GPU = """\
resources: {time: "00:05:00", partition: a100, gpus: 1}
smoke:
  args: {epochs: 1}
  resources: {partition: SMOKE, gpus: GPUS}
jobs:
  - {id: train, cmd: "echo training", args: {epochs: 10}}
"""


def test_a_gpu_production_is_refused_after_a_cpu_smoke(camp, run) -> None:  # type: ignore[no-untyped-def]
    """The hardware class is the gate's to judge: on the local backend (which runs any
    request), with partitions on its page standing for a GPU site's."""
    life = Life(root=camp, backend="local", run=run)
    page = camp / "backends/local.md"
    text = page.read_text()
    start, end = text.index("partitions:"), text.index("accounts:")
    life.write("backends/local.md", text[:start] + GPU_ROWS + text[end:], commit=False)
    life.write("manifests/gpu.yaml", GPU.replace("SMOKE", "debug").replace("GPUS", "0"))
    assert life.submit("manifests/gpu.yaml", "smoke").code == 0
    assert life.wait().state == "COMPLETED"
    life.commit("cpu smoke done")
    cpu_smoked = life.submit("manifests/gpu.yaml", "production", "--dry-run")
    assert cpu_smoked.code == 1 and "gate smoke_first  REFUSE" in cpu_smoked.out
    # A GPU smoke on the MIG partition that stands in for the A100 one: production may go.
    life.write("manifests/gpu.yaml", GPU.replace("SMOKE", "mig").replace("GPUS", "1"))
    assert life.submit("manifests/gpu.yaml", "smoke").code == 0
    assert life.wait().state == "COMPLETED"
    life.commit("gpu smoke done")
    a100 = life.submit("manifests/gpu.yaml", "production", "--dry-run")
    assert a100.code == 0 and "gate smoke_first  pass" in a100.out, a100.out
    # The same smoke says nothing of an H200 production.
    life.write(
        "manifests/gpu.yaml",
        GPU.replace("a100", "h200").replace("SMOKE", "mig").replace("GPUS", "1"),
    )
    h200 = life.submit("manifests/gpu.yaml", "production", "--dry-run")
    assert h200.code == 1 and "gate smoke_first  REFUSE" in h200.out


OUTPUTS = """\
resources: {time: "00:05:00", mem: 100M}
jobs:
  - id: writes
    cmd: mkdir -p "$CAMPAIGN_OUT/w" && echo done > "$CAMPAIGN_OUT/w/out.txt"
    output: "${CAMPAIGN_OUT}/w/out.txt"
  - id: forgets
    cmd: mkdir -p "$CAMPAIGN_OUT/f" && echo said done but wrote nothing
    output: "${CAMPAIGN_OUT}/f/out.txt"
"""


def test_a_task_that_exits_0_without_its_output_is_failed_output_missing(life: Life) -> None:
    life.write("manifests/outputs.yaml", OUTPUTS)
    assert life.submit("manifests/outputs.yaml", "smoke").code == 0
    job = life.wait()
    writes, forgets = job.task("writes"), job.task("forgets")
    assert writes is not None and (writes.state, writes.exit_code) == ("COMPLETED", 0)
    assert forgets is not None
    assert (forgets.state, forgets.exit_code, forgets.reason) == ("FAILED", 97, "output-missing")
    assert (
        "| forgets | FAILED exit 97, output-missing, other (task-output-missing) ("
        in (life.root / "STATUS.md").read_text()
    )
    life.commit("smoke done")
    refused = life.submit("manifests/outputs.yaml", "production", "--targets", "forgets")
    assert refused.code == 1 and "smoke_first" in refused.err


LONG_SMOKE = """\
resources: {time: "10:00:00", mem: 100M}
smoke:
  args: {epochs: 1}
  resources: {time: "SMOKE"}
jobs:
  - {id: long, cmd: "echo run", args: {epochs: 100}}
"""


def test_a_smoke_longer_than_smoke_max_minutes_is_refused(camp, run) -> None:  # type: ignore[no-untyped-def]
    life = Life(root=camp, backend="local", run=run)
    life.write("manifests/long.yaml", LONG_SMOKE.replace("SMOKE", "05:00:00"))
    refused = life.submit("manifests/long.yaml", "smoke")
    # The files decide it, so check says it first (MAN018; smoke_first applies the same rule).
    assert refused.code == 2 and "MAN018" in refused.err
    assert run("check", "--select", "MAN", "manifests/long.yaml").code == 1
    # Both numbers: the smoke's limit and the policy's cap (campaign.yaml: 30 minutes).
    assert "300 min (18000 s), over stages.smoke_max_minutes 30" in refused.err
    assert life.jobs() == ()
    life.write("manifests/long.yaml", LONG_SMOKE.replace("SMOKE", "00:20"))
    assert life.submit("manifests/long.yaml", "smoke").code == 0
