"""The SSH instances' meter: hours since the first job placed, dollars, released, the 80 % warning."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from campaignops.backends.ssh import meter
from campaignops.backends.ssh.instances import Instance
from campaignops.model import ledger, policy

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def job(
    lid: str, submitted: str, shares: dict[str, list[int]], released: dict[int, str]
) -> ledger.Job:
    placement = [
        {
            "instance": {"name": n, "host": f"u@{n}", "workdir": "/w"},
            "executor": "/w/.campaignops/boxexec-x.py",
            "job_dir": f"/w/.campaignops/jobs/{lid}",
            "dir": "/w/c/abc",
            "commit": "abc",
            "indices": idx,
        }
        for n, idx in shares.items()
    ]
    tasks: dict[str, Any] = {str(i): {"released": t} for i, t in released.items()}
    record = {
        "job_id": f"ssh-{lid}",
        "targets": [f"t{i}" for i in range(1 + max(i for idx in shares.values() for i in idx))],
        "backend": "vast-ai",
        "submitted": submitted,
        "placement": placement,
        "tasks": tasks,
    }
    return ledger.Job(ledger_id=lid, record=record, first_line=1, first_time=submitted)


PRICES = {
    "vast-ai": (
        Instance(name="a", host="u@a", workdir="/w", usd_per_hour=2.0),
        Instance(name="b", host="u@b", workdir="/w"),
    )
}


def test_hours_run_from_the_first_job_until_release_and_price_them() -> None:
    jobs = [
        job("L1", "2026-11-24T08:00:00Z", {"a": [0], "b": [1]}, {0: "2026-11-24T10:30:00Z"}),
        job("L2", "2026-11-24T09:00:00Z", {"a": [0]}, {0: "2026-11-24T11:00:00Z"}),
    ]
    found = meter.meters(jobs, PRICES)
    assert [(m.instance, m.hours(NOW), m.usd(NOW), m.until is not None) for m in found] == [
        ("a", 3.0, 6.0, True),  # 08:00 → the later release at 11:00
        ("b", 4.0, None, False),  # never released, no price on the page
    ]
    assert meter.lines(found, NOW) == [
        "| instance | backend | since | hours | USD/h | USD | held |",
        "| --- |",
        "| a | vast-ai | 2026-11-24 08:00 | 3.00 | 2 | 6.00 | released |",
        "| b | vast-ai | 2026-11-24 08:00 | 4.00 | ? | ? | yes |",
    ]


def test_a_job_placed_after_a_release_holds_the_instance_again() -> None:
    jobs = [
        job("L1", "2026-11-24T08:00:00Z", {"a": [0]}, {0: "2026-11-24T09:00:00Z"}),
        job("L2", "2026-11-24T10:00:00Z", {"a": [0]}, {}),
    ]
    (a,) = meter.meters(jobs, PRICES)
    assert a.until is None and a.hours(NOW) == 4.0


def test_warning_at_eighty_percent_of_the_cloud_budget() -> None:
    found = meter.meters([job("L1", "2026-11-24T08:00:00Z", {"a": [0]}, {})], PRICES)  # $8
    assert meter.warning(found, NOW, 10.0) == (
        "warning: SSH instances have cost $8.00 of budgets.cloud_usd $10 (80 %); still held: a: "
        "pull, verify and campaign release what is done"
    )
    assert meter.warning(found, NOW, 10.001) is None  # $8 is just under 80 % of it
    assert meter.warning(found, NOW, None) is None


def ended_job(lid: str, name: str, tasks: dict[str, Any]) -> ledger.Job:
    """A job on instance ``name`` whose tasks' fields are ``tasks`` (state, ended, released)."""
    base = job(lid, "2026-11-24T08:00:00Z", {name: [int(i) for i in tasks]}, {})
    record = {**base.record, "tasks": tasks}
    return ledger.Job(ledger_id=lid, record=record, first_line=1, first_time=base.first_time)


DONE = {"state": "COMPLETED", "exit_code": 0, "ended": "2026-11-24T11:00:00Z"}


def test_a_held_box_idle_past_the_policy_minutes_is_warned_with_its_cost() -> None:
    found = meter.meters([ended_job("L1", "a", {"0": DONE, "1": DONE})], PRICES)
    assert found[0].idle_since == dt.datetime(2026, 11, 24, 11, 0, tzinfo=UTC)
    (warned,) = meter.idle(found, NOW, 30)
    assert "SSH instance a (vast-ai) is held but has run no task for 60 min" in warned
    assert "since 2026-11-24 11:00 UTC, $2.00 at $2/h since then" in warned
    assert "campaign release" in warned
    assert meter.idle(found, NOW, 61) == []  # not idle long enough yet


def test_a_box_with_a_task_still_running_or_released_is_not_idle() -> None:
    running = {"0": DONE, "1": {"state": "RUNNING"}}
    assert meter.idle(meter.meters([ended_job("L1", "a", running)], PRICES), NOW, 1) == []
    released = {"0": {**DONE, "released": "2026-11-24T11:05:00Z"}}
    assert meter.idle(meter.meters([ended_job("L2", "a", released)], PRICES), NOW, 1) == []
    never_ended = {"0": {"state": "PENDING"}}
    assert meter.idle(meter.meters([ended_job("L3", "b", never_ended)], PRICES), NOW, 1) == []


def test_the_idle_minutes_come_from_the_policy_with_a_default() -> None:
    assert policy.from_data({}).idle_warn_minutes == 30
    assert policy.from_data({"budgets": {"idle_warn_minutes": 90}}).idle_warn_minutes == 90
    assert policy.from_data({"budgets": {"idle_warn_minutes": 0}}).idle_warn_minutes == 30


def test_the_idle_stop_is_off_by_default_and_takes_a_fraction() -> None:
    assert policy.from_data({}).idle_stop_minutes is None
    assert policy.from_data({"budgets": {"idle_stop_minutes": 0.02}}).idle_stop_minutes == 0.02
    for unusable in (0, -5, True, "30", float("inf"), float("nan"), 10081):
        assert (
            policy.from_data({"budgets": {"idle_stop_minutes": unusable}}).idle_stop_minutes is None
        )


def test_status_says_when_a_box_whose_page_gives_a_self_stop_stops_itself() -> None:
    idle = {"0": DONE}  # ended 11:00; now is 12:00
    found = [
        dataclasses.replace(m, self_stop=m.instance == "a")
        for m in meter.meters([ended_job("L1", "a", idle), ended_job("L2", "b", idle)], PRICES)
    ]
    assert meter.stops(found, NOW, 90) == [
        "SSH instance a (vast-ai) stops itself at 12:30 UTC if still idle "
        "(budgets.idle_stop_minutes 90 after its last task ended at 11:00 UTC)"
    ]
    (past,) = meter.stops(found, NOW, 30)
    assert past.startswith("SSH instance a (vast-ai) was due to stop itself at 11:30 UTC")
    assert "idle-stop.log" in past
    assert meter.stops(found, NOW, None) == []  # the setting is off
    busy = [
        dataclasses.replace(m, self_stop=True)
        for m in meter.meters([ended_job("L3", "a", {"0": {"state": "RUNNING"}})], PRICES)
    ]
    assert meter.stops(busy, NOW, 30) == []  # a task still runs there: no countdown


def test_a_job_of_one_cell_is_idle_by_its_own_end() -> None:
    # The ledger keeps a one-target job's state and end on the job itself: no tasks map.
    base = job("L1", "2026-11-24T08:00:00Z", {"a": [0]}, {})
    record = {**base.record, "state": "COMPLETED", "exit_code": 0, "ended": "2026-11-24T11:00:00Z"}
    record.pop("tasks")
    one = ledger.Job(ledger_id="L1", record=record, first_line=1, first_time=base.first_time)
    (found,) = meter.meters([one], PRICES)
    assert found.idle_since == dt.datetime(2026, 11, 24, 11, 0, tzinfo=UTC)
    assert meter.idle([found], NOW, 30) != []
