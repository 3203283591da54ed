"""The budget gate (runner/budget.py): what the ledger spent or reserves, the caps, the
verdict and its override, the phases of one submission, the summary status prints."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

import pytest

from campaignops.backends import spending
from campaignops.backends.spending import Spent
from campaignops.model import ledger, policy
from campaignops.model.jobspec import Resources
from campaignops.runner import budget
from campaignops.runner.gates import Request
from tests.runner.test_charging import CLOUD, POLARIS

NOW = dt.datetime(2026, 11, 24, 12, 0, tzinfo=dt.timezone.utc)


# ------------------------------------------------------------------------------- the ledger


def charged(
    lid: str, targets: list[str], *, rate: float, time_s: int, backend: str = "polaris", **more: Any
) -> dict[str, Any]:
    return {
        "v": 1, "kind": "intent", "ledger_id": lid, "time": "2026-11-24T10:00:00Z",
        "backend": backend, "stage": "production", "targets": targets,
        "charge": {"unit": "node-hours", "rate": rate, "time_s": time_s}, **more,
    }  # fmt: skip


def state(lid: str, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "kind": "state", "ledger_id": lid, "time": "2026-11-24T11:00:00Z", **fields}


def jobs(*records: Mapping[str, Any]) -> tuple[ledger.Job, ...]:
    return ledger.parse("".join(json.dumps(r) + "\n" for r in records)).jobs


LEDGER = jobs(
    # finished: 30 min at 2 node-hours per task-hour = 1
    charged("L-done", ["a"], rate=2, time_s=3600, job_id="1"),
    state("L-done", state="COMPLETED", exit_code=0, run_time_s=1800),
    # an array: task 0 ran 1 h (4); task 1 has run 30 min of its 2 h (2 used, 6 reserved)
    charged("L-array", ["b", "c"], rate=4, time_s=7200, job_id="2"),
    state(
        "L-array",
        state="RUNNING",
        tasks={
            "0": {"state": "COMPLETED", "exit_code": 0, "run_time_s": 3600},
            "1": {"state": "RUNNING", "started": "2026-11-24T11:30:00Z"},
        },
    ),
    # queued: its whole limit is reserved (1 h x 1)
    charged("L-queued", ["d"], rate=1, time_s=3600, job_id="3"),
    state("L-queued", state="PENDING"),
    # refused by the scheduler: nothing
    charged("L-refused", ["e"], rate=100, time_s=3600, error="sbatch: invalid account"),
    # the outcome unknown (timed out): reserved like a queued job (0.5 h x 2)
    charged("L-unknown", ["f"], rate=2, time_s=1800, outcome="unknown"),
    # cancelled before it started: nothing
    charged("L-cancelled", ["g"], rate=50, time_s=3600, job_id="4"),
    state("L-cancelled", state="CANCELLED"),
    # another machine: not this allocation
    charged("L-elsewhere", ["h"], rate=9, time_s=3600, backend="crux", job_id="5"),
    state("L-elsewhere", state="COMPLETED", run_time_s=3600),
    # submitted before the page had a charging model
    {**charged("L-old", ["i"], rate=0, time_s=0, job_id="6"), "charge": None},
)


def test_spent_counts_run_time_elapsed_time_and_reservations() -> None:
    found = spending.spent(LEDGER, unit="node-hours", backend="polaris", now=NOW)
    assert found == Spent(unit="node-hours", used=1 + 4 + 2, reserved=6 + 1 + 1, uncounted=1)
    assert found.total == 15


def test_without_a_clock_a_running_task_is_all_reservation() -> None:
    found = spending.spent(LEDGER, unit="node-hours", backend="polaris")
    assert (found.used, found.reserved, found.total) == (5, 10, 15)


def test_usd_is_spent_on_every_backend_and_other_units_are_not_counted() -> None:
    cloud = [
        {**charged("L-vast", ["a"], rate=3, time_s=3600, backend="vast-ai", job_id="v1"),
         "charge": {"unit": "usd", "rate": 3, "time_s": 3600}},
        state("L-vast", state="COMPLETED", run_time_s=3600),
        {**charged("L-pod", ["b"], rate=2, time_s=3600, backend="runpod", job_id="r1"),
         "charge": {"unit": "usd", "rate": 2, "time_s": 3600}},
        state("L-pod", state="FAILED", started="2026-11-24T10:00:00Z", ended="2026-11-24T10:30:00Z"),
    ]  # fmt: skip
    everywhere = spending.spent(jobs(*cloud) + LEDGER, unit="usd", backend=None, now=NOW)
    assert everywhere == Spent(unit="usd", used=3 + 1, reserved=0, uncounted=0)


def test_a_finished_task_without_a_run_time_counts_its_whole_limit() -> None:
    lost = jobs(
        charged("L-x", ["a"], rate=1, time_s=5400, job_id="7"),
        state("L-x", state="TIMEOUT", started="2026-11-24T10:00:00Z"),
        charged("L-y", ["b", "c"], rate=1, time_s=3600, job_id="8"),
        state("L-y", state="FAILED", tasks={"0": {"state": "FAILED", "run_time_s": 60}}),
    )
    # L-x: 1.5 h; L-y: task 0 ran 1 min, task 1's end was never read (UNKNOWN): its 1 h
    found = spending.spent(lost, unit="node-hours", backend="polaris", now=NOW)
    assert found.used == pytest.approx(1.5 + 1 / 60 + 1) and found.reserved == 0


# -------------------------------------------------------------------------------- the gate


def request(targets: int = 2, *, time_s: int | None = 3600, override: str | None = None,
            gpus: int | None = 1, backend: str = "polaris") -> Request:  # fmt: skip
    return Request(
        campaign="demo",
        manifest="manifests/m.yaml",
        stage="production",
        backend=backend,
        targets=tuple(f"t{i}" for i in range(targets)),
        paths=(),
        override=override,
        time_s=time_s,
        resources=Resources(queue="debug", gpus=gpus),
    )


HPC = policy.Policy(
    backends=("polaris", "local"),
    hpc_allocation_cap_percent=80,
    allocations={"polaris": 25.0},
    cloud_usd=100,
)


def test_within_the_cap_passes_and_says_every_number() -> None:
    verdict = budget.budget(request(2), policy=HPC, page=POLARIS, jobs=LEDGER)
    assert verdict.passed and verdict.override is None
    assert verdict.reason == (
        "this job 2 node-hours (2 task(s) × 1 node-hours/h × 1 h) + already spent or reserved "
        "15 node-hours (1 earlier job(s) carry no charge and are not counted) = 17 node-hours "
        "of the cap 20 node-hours (80% of the 25 node-hours allocation "
        "(budgets.allocations.polaris))"
    )


def test_over_the_cap_is_refused_with_both_numbers_and_the_cap() -> None:
    verdict = budget.budget(request(6), policy=HPC, page=POLARIS, jobs=LEDGER)
    assert not verdict.passed
    assert verdict.reason.startswith("this job 6 node-hours (6 task(s) × 1 node-hours/h × 1 h)")
    assert "already spent or reserved 15 node-hours" in verdict.reason
    assert verdict.reason.endswith(
        "= 21 node-hours, over the cap 20 node-hours (80% of the 25 node-hours allocation "
        "(budgets.allocations.polaris))"
    )
    assert verdict.hint == (
        "shrink the job (fewer targets, a shorter resources.time, fewer nodes or GPUs), or raise "
        'the budget in campaign.yaml and commit, or pass --override "why this is worth it" '
        "(recorded in the ledger)"
    )


def test_override_passes_and_carries_the_reason() -> None:
    verdict = budget.budget(
        request(6, override="  deadline run, PI approved "), policy=HPC, page=POLARIS, jobs=LEDGER
    )
    assert verdict.passed and verdict.override == "deadline run, PI approved"
    assert verdict.reason.startswith("overridden: this job 6 node-hours")


def test_a_page_without_a_charging_model_is_not_estimated() -> None:
    verdict = budget.budget(
        request(backend="local"), policy=HPC, page={"platform": "local"}, jobs=LEDGER
    )
    assert verdict.passed
    assert verdict.reason == "no charging model on backends/local.md: cost not estimated"


def test_the_allocation_comes_from_the_policy_else_the_page_else_refuses() -> None:
    sized = {**POLARIS, "charging": {**POLARIS["charging"], "allocation": 1000}}  # type: ignore[dict-item]
    no_size = policy.Policy(backends=("polaris",), hpc_allocation_cap_percent=50)
    from_page = budget.budget(request(6), policy=no_size, page=sized, jobs=LEDGER)
    assert from_page.passed
    assert "of the cap 500 node-hours (50% of the 1,000 node-hours allocation " in from_page.reason
    assert "(backends/polaris.md charging.allocation))" in from_page.reason
    wins = budget.budget(request(6), policy=HPC, page=sized, jobs=LEDGER)
    assert not wins.passed and "(budgets.allocations.polaris)" in wins.reason
    unknown = budget.budget(request(1), policy=no_size, page=POLARIS, jobs=())
    assert not unknown.passed
    assert unknown.reason == (
        "this job 1 node-hours (1 task(s) × 1 node-hours/h × 1 h); the allocation "
        "hpc_allocation_cap_percent is a share of is not known"
    )
    assert unknown.hint.startswith("set budgets.allocations.polaris in campaign.yaml")


def test_no_cap_set_passes_with_the_estimate() -> None:
    uncapped = policy.Policy(backends=("polaris",))
    verdict = budget.budget(request(3), policy=uncapped, page=POLARIS, jobs=LEDGER)
    assert verdict.passed
    assert verdict.reason == (
        "this job 3 node-hours (3 task(s) × 1 node-hours/h × 1 h); not capped: "
        "budgets.hpc_allocation_cap_percent is not set in campaign.yaml"
    )


def test_no_time_limit_anywhere_is_refused_under_a_cap() -> None:
    page_ = {"charging": POLARIS["charging"]}
    verdict = budget.budget(request(time_s=None), policy=HPC, page=page_, jobs=())
    assert not verdict.passed
    assert verdict.reason == "no time limit: the cost on backends/polaris.md cannot be estimated"
    assert verdict.hint.startswith("set resources.time in the manifest")


def test_cloud_usd_caps_every_usd_backend_together() -> None:
    def spent_on_runpod(usd: float) -> tuple[ledger.Job, ...]:
        return jobs(
            {**charged("L-pod", ["a"], rate=2, time_s=3600, backend="runpod", job_id="r1"),
             "charge": {"unit": "usd", "rate": usd, "time_s": 3600}},
            state("L-pod", state="COMPLETED", run_time_s=3600),
        )  # fmt: skip

    cloud = policy.Policy(backends=("vast-ai", "runpod"), cloud_usd=100)
    ok = budget.budget(request(1, backend="vast-ai", gpus=2), policy=cloud, page=CLOUD, jobs=())
    assert ok.passed and "this job 5.00 USD" in ok.reason and "cap 100.00 USD" in ok.reason
    vast = request(2, backend="vast-ai", gpus=2)
    at_cap = budget.budget(vast, policy=cloud, page=CLOUD, jobs=spent_on_runpod(90))
    assert at_cap.passed and "= 100.00 USD of the cap 100.00 USD" in at_cap.reason
    over = budget.budget(vast, policy=cloud, page=CLOUD, jobs=spent_on_runpod(90.5))
    assert not over.passed
    assert (
        "this job 10.00 USD" in over.reason and "already spent or reserved 90.50 USD" in over.reason
    )
    assert "over the cap 100.00 USD (budgets.cloud_usd)" in over.reason
    zero = policy.Policy(backends=("vast-ai",), cloud_usd=0)
    assert not budget.budget(request(1, backend="vast-ai"), policy=zero, page=CLOUD, jobs=()).passed


# --------------------------------------------------------------------- policy and summary


def test_policy_reads_budgets_and_ignores_unusable_values() -> None:
    read = policy.from_data(
        {"budgets": {"cloud_usd": 250.5, "hpc_allocation_cap_percent": 80,
                     "allocations": {"polaris": 5000, "crux": 0, "alpine": "lots"}}}
    )  # fmt: skip
    assert (read.cloud_usd, read.hpc_allocation_cap_percent) == (250.5, 80.0)
    assert dict(read.allocations) == {"polaris": 5000.0}
    bad = policy.from_data({"budgets": {"cloud_usd": -1, "hpc_allocation_cap_percent": 101}})
    assert (bad.cloud_usd, bad.hpc_allocation_cap_percent, dict(bad.allocations)) == (
        None,
        None,
        {},
    )
    assert policy.from_data({"budgets": "none"}).cloud_usd is None


def test_summary_shows_spent_reserved_and_cap_per_backend() -> None:
    pages = {"polaris": POLARIS, "local": {"platform": "local"}}
    assert spending.summary(HPC, pages, LEDGER, NOW) == "\n".join(
        [
            "| backend | spent | reserved | cap | of cap |",
            "| --- | --- | --- | --- | --- |",
            "| polaris | 7 node-hours | 8 node-hours | 20 node-hours (80% of the 25 node-hours "
            "allocation (budgets.allocations.polaris)) | 75% |",
            "1 job(s) on polaris carry no charge (submitted before its page had a charging "
            "model): not counted",
            "not charged (no charging model on their page): local",
            "reserved: what queued and running tasks may still use, up to their time limit",
        ]
    )
    assert spending.summary(HPC, {"local": {"platform": "local"}}, LEDGER, NOW) == ""


def test_earlier_phases_of_the_same_submission_count() -> None:
    at_cap = budget.budget(
        dataclasses.replace(request(2), earlier_cost=3.0), policy=HPC, page=POLARIS, jobs=LEDGER
    )
    assert at_cap.passed and "= 20 node-hours of the cap 20 node-hours" in at_cap.reason
    over = budget.budget(
        dataclasses.replace(request(2), earlier_cost=4.0), policy=HPC, page=POLARIS, jobs=LEDGER
    )
    assert not over.passed
    assert over.reason.startswith(
        "this job 2 node-hours (2 task(s) × 1 node-hours/h × 1 h) + its submission's earlier "
        "phases 4 node-hours + already spent or reserved 15 node-hours"
    )
    assert "= 21 node-hours, over the cap 20 node-hours" in over.reason


def test_summary_says_which_cap_is_missing_and_shares_the_usd_total() -> None:
    usd = [
        {**charged("L-v", ["a"], rate=0, time_s=3600, backend="vast-ai", job_id="v1"),
         "charge": {"unit": "usd", "rate": 4, "time_s": 3600}},
        state("L-v", state="COMPLETED", run_time_s=1800),
        {**charged("L-r", ["b"], rate=0, time_s=3600, backend="runpod", job_id="r1"),
         "charge": {"unit": "usd", "rate": 6, "time_s": 3600}},
        state("L-r", state="COMPLETED", run_time_s=1800),
    ]  # fmt: skip
    mixed = policy.Policy(
        backends=("polaris", "vast-ai", "runpod"), hpc_allocation_cap_percent=50, cloud_usd=10
    )
    pages = {"polaris": POLARIS, "vast-ai": CLOUD, "runpod": CLOUD}
    rows = spending.summary(mixed, pages, jobs(*usd) + LEDGER, NOW).splitlines()
    assert rows[2:5] == [
        "| polaris | 7 node-hours | 8 node-hours | allocation size not set | - |",
        "| vast-ai | 2.00 USD | 0.00 USD | 10.00 USD (budgets.cloud_usd, every USD backend) | 50% |",
        "| runpod | 3.00 USD | 0.00 USD | 10.00 USD (budgets.cloud_usd, every USD backend) | 50% |",
    ]
    uncapped = policy.Policy(backends=("polaris",))
    assert spending.summary(uncapped, pages, LEDGER, NOW).splitlines()[2] == (
        "| polaris | 7 node-hours | 8 node-hours | not set | - |"
    )


def test_each_task_reads_every_task_as_job_task_does() -> None:
    more = jobs(
        charged("L-y", ["b", "c", "d"], rate=1, time_s=3600, job_id="8"),
        state("L-y", state="FAILED", tasks={"0": {"state": "FAILED", "run_time_s": 60}}),
        charged("L-z", ["e", "f"], rate=1, time_s=3600, job_id="9"),
        state("L-z", state="COMPLETED", run_time_s=10),
    )
    for job in LEDGER + more:
        read = [ledger.Task.of(i, f) for i, f in enumerate(spending._each_task(job))]
        assert read == [job.task(t) for t in job.targets]
    states = [f.get("state") for j in more for f in spending._each_task(j)]
    assert states == ["FAILED", "UNKNOWN", "UNKNOWN", "COMPLETED", "COMPLETED"]


@pytest.mark.parametrize("hours", [1, 20, 21, 48])
def test_one_task_over_the_cap_is_what_check_reports_and_the_gate_refuses(hours: int) -> None:
    # campaign check's MAN018 asks spending.over_alone; the gate refuses the smallest
    # submission (one target, nothing spent yet) exactly when it answers.
    alone = request(1, time_s=hours * 3600)
    found = spending.over_alone(
        "polaris", POLARIS, HPC, Resources(queue="debug", gpus=1), hours * 3600
    )
    refused = not budget.budget(alone, policy=HPC, page=POLARIS, jobs=()).passed
    assert refused == (found is not None) == (hours > 20)  # 80% of 25 node-hours
    if found is not None:
        why, fix = found
        assert f"costs {hours} node-hours, over the cap 20 node-hours" in why
        assert "one task may cost 20 node-hours at most" in fix
    uncapped = policy.Policy(backends=("polaris",))
    assert (
        spending.over_alone("polaris", POLARIS, uncapped, Resources(queue="debug"), 10**6) is None
    )
