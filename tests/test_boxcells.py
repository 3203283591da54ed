"""Where an ssh job's cell ran and what it cost (STATUS.md's stages table)."""

from __future__ import annotations

from campaignops.backends.ssh import cells as boxcells
from campaignops.model import ledger

PAGE = {
    "instances": [
        {"name": "a", "host": "u@a", "workdir": "/w", "usd_per_hour": 2.0, "gpus": [0, 1]},
        {"name": "b", "host": "u@b", "workdir": "/w"},
    ]
}


def job(tasks: dict[str, dict[str, object]]) -> ledger.Job:
    placement = [
        {"instance": {"name": "a"}, "indices": [0, 2]},
        {"instance": {"name": "b"}, "indices": [1]},
    ]
    record = {
        "job_id": "ssh-1-abcdef",
        "targets": ["x", "y", "z"],
        "placement": placement,
        "tasks": tasks,
    }
    return ledger.Job(ledger_id="L1", record=record, first_line=1, first_time=None)


def test_a_cell_shows_its_instance_and_its_slot_of_the_price() -> None:
    j = job(
        {
            "0": {"state": "COMPLETED", "run_time_s": 1800},
            "1": {"state": "COMPLETED", "run_time_s": 60},
        }
    )
    assert boxcells.where(j, "x", PAGE) == "on a, $0.5000"  # half an hour × $2/h ÷ 2 GPUs
    assert boxcells.where(j, "y", PAGE) == "on b"  # no price on the page for b
    assert boxcells.where(j, "z", PAGE) == "on a"  # not run yet
    plain = ledger.Job(ledger_id="L2", record={"targets": ["x"]}, first_line=1, first_time=None)
    assert boxcells.where(plain, "x", PAGE) is None  # not an ssh job: nothing added


def test_without_an_elapsed_figure_the_times_give_the_run_time() -> None:
    j = job(
        {
            "0": {
                "state": "COMPLETED",
                "started": "2026-11-24T10:00:00Z",
                "ended": "2026-11-24T11:00:00Z",
            }
        }
    )
    assert boxcells.where(j, "x", PAGE) == "on a, $1.0000"
