"""review.compare: two campaign trees (copies of the clean fixture, one edited) → a Review."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from campaignops.gitops.review.files import EntryChange, FactChange, PolicyChange, WrapperChange
from campaignops.gitops.review.run import (
    FieldChange,
    Resmoke,
    Review,
    TargetChange,
    TargetRef,
    compare,
)
from campaignops.gitops.review.targets import Cost
from tests.conftest import FIXTURES, TODAY

SMOKE = "manifests/smoke.yaml"


@pytest.fixture
def sides(tmp_path: Path) -> tuple[Path, Path]:
    base, head = tmp_path / "base", tmp_path / "head"
    shutil.copytree(FIXTURES / "clean", base, symlinks=True)
    shutil.copytree(FIXTURES / "clean", head, symlinks=True)
    return base, head


def _review(sides: tuple[Path, Path]) -> Review:
    return compare(base=sides[0], head=sides[1], today=TODAY, base_name="main")


def _edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_the_same_tree_twice_is_an_empty_review(sides: tuple[Path, Path]) -> None:
    review = _review(sides)
    assert review == Review(
        base="",
        head="",
        ref="main",
        cost_before=review.cost_after,
        cost_after=review.cost_after,
    )
    # No time limit in the fixture's manifest: hours cannot be counted, and it says so.
    assert review.cost_after == (
        Cost(SMOKE, "smoke", "local", 4, None, None),
        Cost(SMOKE, "production", "local", 4, None, None),
    )


def test_a_grid_value_dropped_removes_its_targets(sides: tuple[Path, Path]) -> None:
    _edit(sides[1], SMOKE, "lr: [0.1, 0.01]", "lr: [0.1]")
    review = _review(sides)
    assert review.removed == (
        TargetRef(SMOKE, "lr0.01_s1", None),
        TargetRef(SMOKE, "lr0.01_s2", None),
    )
    assert review.added == review.changed == review.resmoke == ()
    assert [c.tasks for c in review.cost_after] == [2, 2]


def test_a_time_limit_alone_changes_targets_but_needs_no_new_smoke(
    sides: tuple[Path, Path],
) -> None:
    for root, limit in zip(sides, ("00:30:00", "02:00:00"), strict=True):
        _edit(
            root, SMOKE, "max_parallel: 2\n", f'max_parallel: 2\nresources: {{time: "{limit}"}}\n'
        )
    review = _review(sides)
    assert [t.id for t in review.changed] == ["lr0.01_s1", "lr0.01_s2", "lr0.1_s1", "lr0.1_s2"]
    assert review.changed[0].changes == (
        FieldChange("resources.production.time", "00:30:00", "02:00:00"),
        FieldChange("resources.smoke.time", "00:30:00", "02:00:00"),
    )
    assert review.resmoke == ()
    assert [(c.stage, c.node_hours) for c in review.cost_before] == [
        ("smoke", 2.0),
        ("production", 2.0),
    ]
    assert [(c.stage, c.node_hours) for c in review.cost_after] == [
        ("smoke", 8.0),
        ("production", 8.0),
    ]


def test_an_arg_and_a_manifest_setting_each_need_a_new_smoke(sides: tuple[Path, Path]) -> None:
    _edit(sides[1], SMOKE, "steps: 1000", "steps: 1000, warmup: 5")
    _edit(sides[1], SMOKE, "cwd: .", "cwd: work")
    # The smoke's own resources are not the production fingerprint's: never a reason.
    _edit(sides[1], SMOKE, "args: {steps: 2}", "args: {steps: 2}\n  resources: {mem: 2G}")
    review = _review(sides)
    assert review.changed[0] == TargetChange(
        SMOKE,
        "lr0.01_s1",
        None,
        (FieldChange("args.warmup", None, 5), FieldChange("resources.smoke.mem", None, "2G")),
    )
    assert review.resmoke[0] == Resmoke(SMOKE, "lr0.01_s1", None, ("args.warmup",))
    # The run length (steps, a smoke.args key) is masked: changing it alone needs no smoke.
    _edit(sides[1], SMOKE, "steps: 1000, warmup: 5", "steps: 5000")
    review = _review(sides)
    assert review.changed[0].changes == (
        FieldChange("args.steps", 1000, 5000),
        FieldChange("resources.smoke.mem", None, "2G"),
    )
    assert review.resmoke[0] == Resmoke(SMOKE, "lr0.01_s1", None, ("manifest settings",))


GPU_PAGE_CHARGING = """\
charging:
  unit: gpu-hours
  per: gpu
  allocation: 100000  # without a size, every submission here is refused (MAN018, budget)
  source: https://example.org/charging
  verified: 2026-10
"""

GPU_MANIFEST = """\
project: train
backend: generic-slurm
default_cmd: python3 configs/task.py
resources: {partition: compute, time: "02:00:00", nodes: 2, gpus: 4}
smoke:
  args: {steps: 2}
  resources: {partition: debug, time: "00:10:00", nodes: 1}
phases:
  - name: pretrain
    jobs:
      - {id: pre, args: {steps: 100}}
  - name: finetune
    depends_on: pretrain
    resources: {time: "01:00:00"}
    grid:
      lr: [0.1, 0.2]
    template:
      id: "ft${lr}"
      args: {lr: "${lr}", steps: 10}
"""


def test_a_new_gpu_manifest_is_priced_in_gpu_hours(sides: tuple[Path, Path]) -> None:
    _edit(
        sides[1],
        "backends/generic-slurm.md",
        "verified: 2026-10\n---",
        GPU_PAGE_CHARGING + "verified: 2026-10\n---",
    )
    (sides[1] / "manifests/train.yaml").write_text(GPU_MANIFEST, encoding="utf-8")
    review = _review(sides)
    assert review.added == (
        TargetRef("manifests/train.yaml", "ft0.1", "finetune"),
        TargetRef("manifests/train.yaml", "ft0.2", "finetune"),
        TargetRef("manifests/train.yaml", "pre", "pretrain"),
    )
    train = [c for c in review.cost_after if c.manifest == "manifests/train.yaml"]
    # The manifest names its backend, so its smoke runs there too (before smoke_backend): 3
    # tasks x 1 node x 4 GPUs x 10 min; production: pre 2 h + two finetunes 1 h, 2 nodes x 4
    # GPUs each. Charged per GPU-hour at a factor of 1.
    assert train == [
        Cost("manifests/train.yaml", "smoke", "generic-slurm", 3, 0.5, 2.0, 2.0, "gpu-hours"),
        Cost(
            "manifests/train.yaml", "production", "generic-slurm", 3, 8.0, 32.0, 32.0, "gpu-hours"
        ),
    ]
    assert review.introduced == ()


def test_knowledge_policy_and_wrappers_are_read_from_their_files(
    sides: tuple[Path, Path],
) -> None:
    head = sides[1]
    _edit(
        head,
        "backends/local.md",
        "this machine (verified 2026-11)",
        "this machine (verified 2026-12)",
    )
    _edit(head, "failures.yaml", "verified: 2026-10", "verified: 2026-11")
    _edit(head, "campaign.yaml", "cloud_usd: 200", "cloud_usd: 300")
    shutil.copy(head / "scripts/run_one.v1.sh", head / "scripts/run_one.v2.sh")
    review = _review(sides)
    assert review.facts == (
        FactChange(
            "backends/local.md",
            19,
            "re-verified",
            "Runs jobs as detached process groups on this machine (verified 2026-12).",
            None,
            "verified 2026-11",
            "verified 2026-12",
        ),
    )
    assert review.entries == (
        EntryChange("failures.yaml", "crlf-script", "re-verified", "2026-10", "2026-11"),
    )
    assert review.policy == (PolicyChange("budgets.cloud_usd", 200, 300),)
    assert review.wrappers == (
        WrapperChange("scripts/run_one.v2.sh", "added", "scripts/run_one.v1.sh"),
    )


def test_findings_introduced_and_fixed_and_an_unread_manifest(sides: tuple[Path, Path]) -> None:
    base, head = sides
    (base / "manifests/broken.yaml").write_text("project: x\njobs: 3\n", encoding="utf-8")
    (head / "manifests/other.yaml").write_text("project: y\ngrid: []\n", encoding="utf-8")
    review = _review(sides)
    assert {f.path for f in review.fixed} == {"manifests/broken.yaml"}
    assert {f.path for f in review.introduced} == {"manifests/other.yaml"}
    assert all(f.id.startswith("MAN") for f in (*review.fixed, *review.introduced))
    assert review.unread == {
        "manifests/other.yaml": "not a valid manifest (campaign check --select MAN says why)"
    }


def test_a_grid_too_large_to_expand_is_unread_not_built(sides: tuple[Path, Path]) -> None:
    values = ", ".join(str(i) for i in range(400))
    _edit(sides[1], SMOKE, "lr: [0.1, 0.01]\n  seed: [1, 2]", f"lr: [{values}]\n  seed: [{values}]")
    review = _review(sides)
    assert review.unread == {SMOKE: "expands to more than 100000 targets"}
    # Its four targets are not known to be gone: unread, not removed.
    assert review.removed == ()


def test_a_queue_manifest_whose_queue_became_unreadable_removes_no_cell(
    sides: tuple[Path, Path],
) -> None:
    head = sides[1]
    for root in sides:
        (root / "queues").mkdir(exist_ok=True)
        (root / "queues/cells.txt").write_text("configs/baseline.yaml t1\n", encoding="utf-8")
        (root / "manifests/cells.yaml").write_text(
            "queue: queues/cells.txt\ndefault_cmd: bash scripts/run_one.v1.sh\n", encoding="utf-8"
        )
    (head / "queues/cells.txt").unlink()
    review = _review(sides)
    assert set(review.unread) == {"manifests/cells.yaml"}, review.unread
    assert review.removed == ()


def test_a_config_reached_through_a_glob_needs_a_new_smoke_when_it_changes(
    sides: tuple[Path, Path],
) -> None:
    """The fingerprint covers the committed files under a directory a command reaches through a
    glob (issue 16, item 5): the review says which targets need a new smoke, and why."""
    for root in sides:
        _edit(
            root, SMOKE, "default_cmd: python3 configs/task.py", "default_cmd: cat configs/*.yaml"
        )
    assert _review(sides).resmoke == ()
    (sides[1] / "configs/extra.yaml").write_text("width: 4096\n")
    review = _review(sides)
    assert len(review.resmoke) == 4
    assert review.resmoke[0] == Resmoke(SMOKE, "lr0.01_s1", None, ("file configs/",))
