"""Story: a user arrives with the experiment-queue seed's manifest forms (issue 19, gaps 4, 5, 7).

Through the CLI in-process, with real git and the real local backend: a grid key in a
precondition path is filled per task (no "N: unbound variable"); an output written where the
user's code writes, outside ``${CAMPAIGN_OUT}``, counts for the task that wrote it and for no
other; check's findings on the seed's own manifest are one per edit; Alpine's MIG-slice smoke
stands for its production partition, and a smoke on other hardware is refused saying so.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from campaignops.model import accelerator, backendpage
from campaignops.model.jobspec import Resources
from tests import waiting
from tests.conftest import git

# Students need their teacher's checkpoint: ${N} (a grid key) is filled per task.
STUDENTS = """\
backend: local
preconditions:
  - {type: checkpoint_exists, path: "checkpoints/teacher_N${N}.pt"}
grid: {N: [64, 128]}
template:
  id: "student_N${N}"
  cmd: "mkdir -p figures && echo '{}' > figures/student_N${N}.json"
  output_check: "figures/student_N${N}.json"
"""


def commit(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", f"write {rel}")


@pytest.fixture
def camp(new_campaign: Callable[..., Path]) -> Path:
    return new_campaign("seedforms", "backends=local,alpine", "require_pushed=no")


def test_a_grid_key_in_a_precondition_is_filled_per_task_and_outputs_are_the_tasks_own(
    camp: Path, run
) -> None:  # type: ignore[no-untyped-def]
    (camp / "checkpoints").mkdir()
    (camp / "checkpoints/teacher_N64.pt").write_text("weights")  # N=128's teacher is missing
    commit(camp, "manifests/students.yaml", STUDENTS)
    assert run("check", "--select", "MAN", "manifests/students.yaml").code == 0
    assert run("submit", "manifests/students.yaml", "--stage", "smoke").code == 0, "submitted"
    job = waiting.settled(run, camp)
    n64, n128 = job.task("student_N64"), job.task("student_N128")
    assert n64 is not None and n64.succeeded  # its own teacher, its own figure
    assert n128 is not None and n128.exit_code == 96  # the precondition, not "unbound variable"
    log = "".join(p.read_text() for p in (camp / "logs").rglob("*"))
    assert "precondition failed: checkpoint_exists checkpoints/teacher_N128.pt" in log
    assert "unbound variable" not in log


def test_an_output_left_by_an_earlier_run_is_not_the_tasks_own(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    # The task writes nothing: the figure from a run before it does not make it complete.
    commit(camp, "figures/old.json", "{}")
    manifest = "backend: local\njobs: [{id: t, cmd: 'true', output_check: figures/old.json}]\n"
    commit(camp, "manifests/stale.yaml", manifest)
    assert run("check", "--select", "MAN", "manifests/stale.yaml").code == 0
    assert run("submit", "manifests/stale.yaml", "--stage", "smoke").code == 0
    task = waiting.settled(run, camp).task("t")
    assert task is not None and task.exit_code == 97  # output-missing: not written by it


SEED = (
    Path(__file__).resolve().parents[1] / "data/manifests/seed-experiment-queue.yaml"
).read_text()


def test_the_seeds_own_manifest_gets_one_finding_per_edit(
    new_campaign: Callable[..., Path], run
) -> None:  # type: ignore[no-untyped-def]
    root = new_campaign("seedbox", "backends=local,generic-ssh", "require_pushed=no")
    page = root / "backends/generic-ssh.md"
    box = "instances:\n  - {name: box1, host: SJTUServer5, workdir: /data/runs, gpus: [0, 1]}\n"
    page.write_text(page.read_text().replace("# instances:\n", box + "# instances:\n", 1))
    commit(root, "manifests/seed.yaml", SEED)
    result = run("check", "--select", "MAN", "--format", "json", "manifests/seed.yaml")
    hints = {str(f["id"]): str(f["hint"]) for f in result.json()["findings"]}
    assert sorted(hints) == ["MAN012", "MAN013", "MAN019"]  # cwd, {N}, the box keys
    assert hints["MAN019"].startswith("add `backend: generic-ssh`")
    assert "(e.g. {n_hidden})" in hints["MAN013"]
    assert hints["MAN012"].startswith("remove it")
    edited = (
        SEED.replace("project: dllm_distill\n", "project: dllm_distill\nbackend: generic-ssh\n")
        .replace("cwd: /home/rfyang/rfyang_code/dllm_experiments_torch\n", "")
        .replace("N{N}", "N{n_hidden}")
    )
    commit(root, "manifests/seed.yaml", edited)
    assert run("check", "--select", "MAN", "manifests/seed.yaml").code == 0
    dry = run("submit", "manifests/seed.yaml", "--stage", "smoke", "--dry-run")
    assert dry.code == 0, dry.err
    assert '"instance":"SJTUServer5"' in dry.out  # the box the seed names, and only it
    assert "checkpoints/transformer/pcc_softmax_L96_K500_N128_wikitext103.pt" in dry.out


def test_alpines_mig_slice_smoke_stands_for_its_production_partition(camp: Path) -> None:
    page = backendpage.front_matter((camp / "backends/alpine.md").read_text(), path="alpine.md")
    smoke = Resources(partition="aa100", qos="gpu-testing", gpus=1)
    production = Resources(partition="aa100", qos="gpu-normal", gpus=1)
    assert accelerator.of(smoke, page) == accelerator.of(production, page) == "gpu:A100"
    for partition, mig, whole in (
        ("ah200", "h200_2g.35gb", "gpu:H200"),
        ("artxpro6000", "rtx_pro_6000_1g.24gb", "gpu:RTX Pro 6000"),
    ):
        sliced = Resources(partition=partition, qos="gpu-normal", gpus=1, gpu_type=mig)
        full = Resources(partition=partition, qos="gpu-normal", gpus=1)
        assert accelerator.of(sliced, page) == accelerator.of(full, page) == whole


def test_a_smoke_on_other_hardware_is_refused_saying_so_and_naming_smoke_for(
    camp: Path, run
) -> None:  # type: ignore[no-untyped-def]
    # The smoke goes to local (CPU); production to Alpine's A100s: no smoke can unlock it.
    manifest = (
        "default_cmd: python3 train.py\n"
        "resources: {partition: aa100, qos: gpu-normal, gpus: 1, time: '02:00:00'}\n"
        "smoke: {resources: {partition: default, gpus: 0, time: '00:10:00'}}\n"
        "jobs: [{id: t1}]\n"
    )
    commit(camp, "manifests/gpu.yaml", manifest)
    dry = run(
        "submit", "manifests/gpu.yaml", "--stage", "production", "--backend", "alpine", "--dry-run"
    )
    assert dry.code == 1
    assert "the smoke asks for cpu on local, production for gpu:A100 on alpine" in dry.out
    assert "smoke_for: <production partition>" in dry.out and "backends/alpine.md" in dry.out
