"""Planning: a manifest and a stage become array JobSpecs, smoke replacing run-length args."""

from __future__ import annotations

import json

import pytest

from campaignops.core import yamldoc
from campaignops.core.errors import UsageError
from campaignops.model import queuefile, walltime
from campaignops.model.jobspec import Resources
from campaignops.model.policy import Policy
from campaignops.runner import plan

GRID = """\
project: demo
max_parallel: 2
resources: {partition: debug, time: "01:00:00", mem: 4G}
smoke:
  args: {epochs: 2}
  resources: {time: "00:05:00"}
grid:
  lr: [0.1, 0.01]
template:
  id: "lr${lr}"
  cmd: python3 train.py --lr ${lr}
  args: {epochs: 50, seed: 1}
"""
PHASES = """\
phases:
  - name: teach
    grid: {N: [1, 2]}
    template: {cmd: "python3 teach.py --n ${N}"}
  - name: learn
    depends_on: teach
    jobs: [{id: s1, cmd: "python3 learn.py"}]
"""
POLICY = Policy(
    name="demo-campaign",
    notify_email="ada@example.org",
    max_parallel=8,
    requeue=True,
    warning_seconds=360,
)


def doc(text: str):  # type: ignore[no-untyped-def]
    return yamldoc.load(text, path="m.yaml")


def test_smoke_replaces_run_length_args_and_resources() -> None:
    (job,) = plan.plan(
        doc=doc(GRID),
        manifest_path="manifests/grid.yaml",
        stage="smoke",
        policy=POLICY,
        workdir="/c",
    )
    assert job.targets == ("lr0.1", "lr0.01")
    assert job.spec.tasks == (
        "python3 train.py --lr 0.1 --epochs 2 --seed 1",
        "python3 train.py --lr 0.01 --epochs 2 --seed 1",
    )
    assert job.spec.name == "demo-campaign.grid.smoke"
    assert job.spec.resources == Resources(partition="debug", time="00:05:00", mem="4G")
    assert (job.spec.max_parallel, job.spec.mail_user) == (2, "ada@example.org")
    # 360 s of warning would fire at once in a 5-minute smoke: left out there.
    assert (job.spec.requeue, job.spec.warning_seconds) == (True, None)


def test_warning_kept_inside_longer_limits() -> None:
    (job,) = plan.plan(
        doc=doc(GRID),
        manifest_path="manifests/grid.yaml",
        stage="production",
        policy=POLICY,
        workdir="/c",
    )
    assert (job.spec.warning_seconds, job.spec.time_s) == (360, 3600)


@pytest.mark.parametrize(("limit", "kept"), [("00:07", 360), ("00:06", None), ("7", 360)])
def test_warning_needs_a_limit_longer_than_itself(limit: str, kept: int | None) -> None:
    """HH:MM is hours:minutes here too: 00:06 is 360 s, no room for a 360 s warning."""
    assert plan.warning(360, limit) == kept


def test_a_bad_time_is_refused_at_planning() -> None:
    with pytest.raises(walltime.WalltimeError, match="minutes 60 is over 59") as info:
        plan.plan(
            doc=doc(GRID.replace('"01:00:00"', '"00:60"')),
            manifest_path="manifests/grid.yaml",
            stage="production",
            policy=POLICY,
            workdir="/c",
        )
    assert info.value.exit_code == 2


def test_production_keeps_the_manifest_values() -> None:
    (job,) = plan.plan(
        doc=doc(GRID),
        manifest_path="manifests/grid.yaml",
        stage="production",
        policy=POLICY,
        workdir="/c",
    )
    assert job.spec.tasks[0] == "python3 train.py --lr 0.1 --epochs 50 --seed 1"
    assert job.spec.resources.time == "01:00:00"


def test_one_target_is_named_after_it() -> None:
    (job,) = plan.plan(
        doc=doc(GRID),
        manifest_path="manifests/grid.yaml",
        stage="single",
        policy=POLICY,
        workdir="/c",
        only=["lr0.01"],
    )
    assert (job.spec.name, job.targets, job.spec.is_array) == (
        "demo-campaign.lr0.01.single",
        ("lr0.01",),
        False,
    )


def test_phases_become_jobs_chained_in_order() -> None:
    jobs = plan.plan(
        doc=doc(PHASES),
        manifest_path="manifests/p.yaml",
        stage="production",
        policy=POLICY,
        workdir="/c",
    )
    assert [(j.group, j.targets, j.after_groups) for j in jobs] == [
        ("teach", ("teach_N1", "teach_N2"), ()),
        ("learn", ("s1",), ("teach",)),
    ]


def test_arguments_are_shell_quoted() -> None:
    text = 'jobs: [{id: a, cmd: "python3 x.py", args: {note: "$(rm -rf ~); `id`"}}]\n'
    (job,) = plan.plan(
        doc=doc(text), manifest_path="m.yaml", stage="production", policy=POLICY, workdir="/c"
    )
    assert job.spec.tasks == ("python3 x.py --note '$(rm -rf ~); `id`'",)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"stage": "prod"}, "unknown stage"),
        ({"only": ["nope"]}, "no target 'nope'"),
        ({"stage": "single"}, "stage single runs one target; 2 selected"),
    ],
)
def test_refusals(kwargs, message: str) -> None:  # type: ignore[no-untyped-def]
    args = {
        "doc": doc(GRID),
        "manifest_path": "m.yaml",
        "stage": "smoke",
        "policy": POLICY,
        "workdir": "/c",
        **kwargs,
    }
    with pytest.raises(UsageError) as info:
        plan.plan(**args)
    assert message in info.value.message


QUEUE_DOC = """\
project: q
queue: queues/q.txt
default_cmd: bash scripts/run_one.v1.sh
max_parallel: 3
smoke:
  args: {epochs: 1}
"""
QUEUE_TEXT = """\
# comment lines are not cells
configs/a.yaml train 5
configs/dir/b.yaml seg$(id)
#configs/old.yaml train 9
configs/c.yaml detect 40
"""


def queue_plan(stage: str, **kwargs):  # type: ignore[no-untyped-def]
    return plan.plan(
        doc=doc(QUEUE_DOC),
        manifest_path="manifests/q.yaml",
        stage=stage,
        policy=POLICY,
        workdir="/c",
        cells=queuefile.parse(QUEUE_TEXT).cells,
        **kwargs,
    )


def test_a_queue_fans_out_as_one_array_with_the_line_fields_in_order() -> None:
    (job,) = queue_plan("production")
    assert job.targets == ("a", "b", "c")
    assert job.spec.tasks == (
        "bash scripts/run_one.v1.sh configs/a.yaml train 5",
        "bash scripts/run_one.v1.sh configs/dir/b.yaml 'seg$(id)'",
        "bash scripts/run_one.v1.sh configs/c.yaml detect 40",
    )
    assert (job.spec.name, job.spec.max_parallel, job.spec.is_array) == (
        "demo-campaign.q.production",
        3,
        True,
    )


def test_a_queue_smoke_sets_epochs_and_writes_apart_from_production() -> None:
    (job,) = queue_plan("smoke")
    assert job.spec.tasks == (
        "bash scripts/run_one.v1.sh configs/a.yaml train 1",
        "bash scripts/run_one.v1.sh configs/dir/b.yaml 'seg$(id)' 1",
        "bash scripts/run_one.v1.sh configs/c.yaml detect 1",
    )
    assert dict(job.spec.env) == {"CAMPAIGN_STAGE": "smoke", "CAMPAIGN_OUT": "runs/smoke"}
    (prod,) = queue_plan("production")
    assert dict(prod.spec.env) == {
        "CAMPAIGN_STAGE": "production",
        "CAMPAIGN_OUT": "runs/production",
    }


def test_one_queue_cell_alone() -> None:
    (job,) = queue_plan("single", only=["c"])
    assert (job.spec.name, job.spec.tasks, job.spec.is_array) == (
        "demo-campaign.c.single",
        ("bash scripts/run_one.v1.sh configs/c.yaml detect 40",),
        False,
    )


def test_a_queue_smoke_arg_that_is_not_a_line_field_is_refused() -> None:
    text = QUEUE_DOC.replace("{epochs: 1}", "{epochs: 1, steps: 5}")
    with pytest.raises(UsageError) as info:
        plan.plan(
            doc=doc(text),
            manifest_path="manifests/q.yaml",
            stage="smoke",
            policy=POLICY,
            workdir="/c",
            cells=queuefile.parse(QUEUE_TEXT).cells,
        )
    assert "smoke.args may only set epochs, not 'steps'" in info.value.message


def test_the_experiment_queue_gpu_list_is_one_gpu_per_task_and_caps_the_array() -> None:
    text = 'gpus: [0, 1, 2]\nmax_parallel: 8\ngrid: {s: [1, 2, 3, 4, 5]}\ntemplate: {id: "s${s}", cmd: "true"}\n'
    (job,) = plan.plan(
        doc=doc(text), manifest_path="m.yaml", stage="production", policy=POLICY, workdir="/c"
    )
    assert (job.spec.resources.gpus, job.spec.max_parallel, job.spec.array) == (1, 3, "0-4%3")
    # A resources layer that names gpus wins: here the smoke runs on the CPU.
    smoke = text + "smoke: {resources: {gpus: 0}}\n"
    (cpu,) = plan.plan(
        doc=doc(smoke), manifest_path="m.yaml", stage="smoke", policy=POLICY, workdir="/c"
    )
    assert cpu.spec.resources.gpus == 0


@pytest.mark.parametrize(
    "key", ["epochs; touch runs/X; echo", "epochs\n", "-rf", "a b", "é", "x\u2028y"]
)
def test_an_args_key_that_is_no_option_name_never_reaches_the_command(key: str) -> None:
    # The schema refuses such keys in a checked manifest; the planner is the last door.
    text = GRID.replace("args: {epochs: 2}", "args: {" + json.dumps(key) + ": 1}")
    with pytest.raises(UsageError) as info:
        plan.plan(doc=doc(text), manifest_path="m.yaml", stage="smoke", policy=POLICY, workdir="/c")
    assert str(info.value) == (
        f"target 'lr0.1': args key {key!r} is not an option name "
        "(letters, digits and _ . -, starting with a letter or _)\n"
        "  hint: each key becomes --key on the command line: rename it"
    )
