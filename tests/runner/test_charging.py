"""What a job costs (backends/charging.py): what one task holds (whole nodes, GPU shares,
GPU-hours, USD), the charging model a page gives, a job's estimate at its time limit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from campaignops.backends import charging as cost
from campaignops.backends.charging import Charge, Charging, charging, held, job_charge
from campaignops.model.jobspec import Resources

POLARIS = {
    "charging": {
        "unit": "node-hours",
        "whole_nodes": True,
        "gpus_per_node": 4,
        "source": "https://www.alcf.anl.gov/managing-your-award/managing-your-allocation",
        "verified": "2026-11",
    },
    "queues": [{"name": "debug", "purpose": "smoke", "max_walltime": "01:00:00"}],
}
CLOUD = {
    "charging": {"unit": "usd", "per": "gpu", "per_hour": 2.5, "source": "s", "verified": "2026-11"}
}


def page(**charge: Any) -> dict[str, Any]:
    return {"charging": {"source": "s", "verified": "2026-11", **charge}}


def model(page_: Mapping[str, Any]) -> Charging:
    found = charging(page_)
    assert found is not None
    return found


# ---------------------------------------------------------------------- what one task holds


def test_whole_nodes_charge_a_one_gpu_task_the_whole_node() -> None:
    polaris = model(POLARIS)
    assert held(Resources(gpus=1), polaris) == 1.0
    assert held(Resources(nodes=2, gpus=4), polaris) == 2.0
    assert held(Resources(), polaris) == 1.0  # a CPU task on a GPU node: the node


def test_shared_nodes_charge_node_hours_by_gpu_share() -> None:
    shared = model(page(unit="node-hours", gpus_per_node=4))
    assert held(Resources(gpus=1), shared) == 0.25
    assert held(Resources(nodes=3, gpus=2), shared) == 1.5
    assert held(Resources(nodes=3), shared) == 3.0  # no GPUs asked: whole nodes


def test_gpu_hours_count_the_gpus_asked_or_every_gpu_of_a_whole_node() -> None:
    assert held(Resources(nodes=2, gpus=3), model(page(unit="gpu-hours"))) == 6.0
    assert held(Resources(gpus=0), model(page(unit="gpu-hours"))) == 0.0
    whole = model(page(unit="gpu-hours", whole_nodes=True, gpus_per_node=4))
    assert held(Resources(gpus=1), whole) == 4.0
    assert held(Resources(nodes=2, gpus=1), whole) == 8.0


def test_charging_model_defaults_and_what_is_not_one() -> None:
    assert charging(page(unit="gpu-hours")) == Charging(unit="gpu-hours", per="gpu")
    assert charging(POLARIS) == Charging(
        unit="node-hours", per="node", whole_nodes=True, gpus_per_node=4
    )
    assert charging(page(unit="node-hours", allocation=5000)) == Charging(
        unit="node-hours", per="node", allocation=5000.0
    )
    assert charging(None) is None
    assert charging({"platform": "local"}) is None
    assert charging(page(unit="usd", per="gpu")) is None  # a price is required
    assert charging(page(unit="core-hours")) is None


# ---------------------------------------------------------------------------- the estimate


def test_usd_estimate_is_tasks_times_gpus_times_price_times_hours() -> None:
    # 3 tasks x 2 GPUs x 2.5 USD/GPU-hour x 2 h
    assert cost.estimate(Resources(gpus=2), 3, 7200, CLOUD) == 30.0
    assert cost.estimate(Resources(gpus=2), 3, 7200, {"platform": "local"}) is None


def test_a_job_without_its_own_limit_is_charged_at_its_queue_max_walltime() -> None:
    assert job_charge(Resources(queue="debug", gpus=4), None, POLARIS) == Charge(
        unit="node-hours", rate=1.0, time_s=3600
    )
    assert job_charge(Resources(queue="prod"), None, POLARIS) == Charge(
        unit="node-hours", rate=1.0, time_s=None
    )
    assert job_charge(Resources(), 600, {"platform": "local"}) is None
