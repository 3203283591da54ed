"""The SSH instances' meter: hours since the first job placed, dollars, released, the 80 % warning."""

from __future__ import annotations

import datetime as dt
from typing import Any

from campaignops.backends.ssh import meter
from campaignops.backends.ssh.instances import Instance
from campaignops.model import ledger

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
