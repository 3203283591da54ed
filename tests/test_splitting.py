"""Splitting a queue's cells by cost: the assignment, its bounds, the costs, the part files."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from campaignops.core.errors import UsageError
from campaignops.model import ledger, queuefile, queueparts, splitting


def brute_force(costs: list[float], k: int) -> float:
    best = float("inf")
    for places in itertools.product(range(k), repeat=len(costs)):
        loads = [0.0] * k
        for cost, q in zip(costs, places, strict=True):
            loads[q] += cost
        best = min(best, max(loads))
    return best


def test_bound_is_the_larger_of_the_mean_load_and_the_largest_cell() -> None:
    assert splitting.bound([5, 3], 2) == 5
    assert splitting.bound([4, 4, 4, 4], 2) == 8
    assert splitting.bound([1, 1, 1], 2) == 1.5


def test_pigeonhole_bound_sees_that_some_queue_takes_two_of_the_k_plus_1_largest() -> None:
    assert splitting.pigeonhole_bound([1, 1, 1], 2) == 2
    assert splitting.pigeonhole_bound([10, 10, 10, 1, 1], 2) == 20
    # 50 equal cells on 4 queues: one queue holds 13 of them.
    assert splitting.pigeonhole_bound([1] * 50, 4) == 13
    assert splitting.pigeonhole_bound([5, 3], 2) == 5


def test_lpt_alone_misses_grahams_case_and_the_split_finds_the_optimum() -> None:
    costs = [3.0, 3.0, 2.0, 2.0, 2.0]
    assert splitting.lpt(costs, 2) == ((0, 2, 4), (1, 3))  # 7 against 6
    result = splitting.split(costs, 2)
    assert result.queues == ((2, 3, 4), (0, 1))
    assert result.loads == (6.0, 6.0)
    assert (result.makespan, result.bound, result.method) == (6.0, 6.0, "lpt")


def test_the_local_search_swaps_between_the_heaviest_and_a_lighter_queue() -> None:
    costs = [3.0, 3.0, 2.0, 2.0, 2.0]
    assert splitting.improve(costs, ((0, 2, 4), (1, 3))) == ((2, 3, 4), (0, 1))
    # A move: nothing to swap with in an empty queue.
    assert splitting.improve([5.0, 3.0], ((0, 1), ())) == ((1,), (0,))


def test_karmarkar_karp_pairs_the_largest_differences() -> None:
    # The textbook case: differences 8-7, 6-5, then 4-1, 3-1 leave 2 (16 against 14).
    costs = [8.0, 7.0, 6.0, 5.0, 4.0]
    assert splitting.karmarkar_karp(costs, 2) == ((1, 3, 4), (0, 2))
    assert splitting.split(costs, 2).makespan == 15


def test_the_exact_search_beats_both_heuristics_on_few_cells() -> None:
    costs = [7.0, 11.0, 19.0, 5.0, 11.0, 14.0, 7.0]
    heuristic = min(
        max(splitting.loads_of(costs, splitting.improve(costs, start)))
        for start in (splitting.lpt(costs, 3), splitting.karmarkar_karp(costs, 3))
    )
    assert heuristic == 26
    result = splitting.split(costs, 3)
    assert (result.makespan, result.method) == (25, "exact")
    assert brute_force(costs, 3) == 25


def test_round_robin_deals_by_count() -> None:
    assert splitting.round_robin([1.0] * 5, 2) == ((0, 2, 4), (1, 3))


@pytest.mark.parametrize(
    ("count", "k", "message"),
    [
        (3, 0, "-n 0: the number of queues must be at least 1"),
        (2, 3, "-n 3 queues for 2 cell(s): at least one queue would be empty"),
        (0, 1, "-n 1 queues for 0 cell(s): at least one queue would be empty"),
    ],
)
def test_k_below_one_or_above_the_cells_is_refused(count: int, k: int, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        splitting.split([1.0] * count, k)
    assert caught.value.message == message
    assert caught.value.exit_code == 2


costs_strategy = st.lists(
    st.one_of(
        st.integers(min_value=0, max_value=200).map(float),
        st.floats(0.1, 5000.0),
        st.just(0.0),  # a history cost of a run that took no time
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(costs=costs_strategy, data=st.data())
def test_every_cell_lands_in_exactly_one_queue_and_no_worse_than_lpt(
    costs: list[float], data: st.DataObject
) -> None:
    k = data.draw(st.integers(min_value=1, max_value=min(len(costs), 9)))
    result = splitting.split(costs, k)
    placed = sorted(i for q in result.queues for i in q)
    assert placed == list(range(len(costs)))
    assert len(result.queues) == k
    assert all(result.queues)  # no empty part, even with cells of cost 0
    assert all(list(q) == sorted(q) for q in result.queues)
    assert result.loads == splitting.loads_of(costs, result.queues)
    assert result.makespan == max(result.loads)
    tol = 1e-9 * sum(costs)
    assert result.bound <= splitting.pigeonhole_bound(costs, k) <= result.makespan + tol + 1e-9
    lpt = max(splitting.loads_of(costs, splitting.lpt(costs, k)))
    assert result.makespan <= lpt + tol
    # Any list schedule's guarantee; the exchanges only lower the maximum.
    assert result.makespan <= sum(costs) / k + (1 - 1 / k) * max(costs) + tol
    assert splitting.split(costs, k) == result  # deterministic


@settings(max_examples=120, deadline=None)
@given(
    costs=st.lists(st.integers(min_value=1, max_value=30).map(float), min_size=1, max_size=7),
    data=st.data(),
)
def test_on_few_cells_the_split_is_optimal(costs: list[float], data: st.DataObject) -> None:
    k = data.draw(st.integers(min_value=1, max_value=min(len(costs), 3)))
    assert splitting.split(costs, k).makespan == brute_force(costs, k)


def cells(text: str) -> list[queuefile.Cell]:
    parsed = queuefile.parse(text)
    assert parsed.problems == ()
    return list(parsed.cells)


def test_epoch_costs_are_the_lines_epochs() -> None:
    costs = splitting.epoch_costs(cells("c/a.yaml t 5\nc/b.yaml t 20\n"), None)
    assert costs == splitting.Costs((5.0, 20.0), "epochs")


def test_a_line_without_epochs_costs_the_default_given() -> None:
    costs = splitting.epoch_costs(cells("c/a.yaml t 5\nc/b.yaml t\n"), 3)
    assert costs == splitting.Costs(
        (5.0, 3.0), "epochs", ("b",), "1 line(s) without epochs counted as --default-epochs 3"
    )


def test_a_queue_without_any_epochs_is_split_by_count() -> None:
    costs = splitting.epoch_costs(cells("c/a.yaml t\nc/b.yaml t\nc/c.yaml t\n"), None)
    assert costs.values == (1.0, 1.0, 1.0)
    assert costs.unit == "cells"


def test_mixed_epochs_without_a_default_is_refused_naming_the_lines() -> None:
    with pytest.raises(UsageError) as caught:
        splitting.epoch_costs(cells("# q\nc/a.yaml t 5\nc/b.yaml t\nc/c.yaml t\n"), None)
    assert caught.value.message.startswith("line(s) 3, 4 give no epochs, others do")
    assert "--default-epochs N" in caught.value.hint


def record(**fields: object) -> str:
    return json.dumps({"v": 1, **fields})


def job_lines(
    ledger_id: str, stage: str, when: str, targets: list[str], tasks: dict[str, object]
) -> list[str]:
    return [
        record(kind="intent", ledger_id=ledger_id, time=when, stage=stage, targets=targets),
        record(kind="state", ledger_id=ledger_id, time=when, state="COMPLETED", tasks=tasks),
    ]


LEDGER = "\n".join(
    [
        # A smoke of a and b: 1 epoch each, says nothing of their cost.
        *job_lines(
            "L-1",
            "smoke",
            "2026-11-01T10:00:00Z",
            ["a", "b"],
            {
                "0": {"state": "COMPLETED", "exit_code": 0, "run_time_s": 1.0},
                "1": {"state": "COMPLETED", "exit_code": 0, "run_time_s": 1.0},
            },
        ),
        *job_lines(
            "L-2",
            "production",
            "2026-11-02T10:00:00Z",
            ["a", "b", "c"],
            {
                "0": {"state": "COMPLETED", "exit_code": 0, "run_time_s": 100.0},
                "1": {
                    "state": "COMPLETED",
                    "exit_code": 0,
                    "started": "2026-11-02T10:00:00Z",
                    "ended": "2026-11-02T10:05:00Z",
                },
                "2": {"state": "FAILED", "exit_code": 1, "run_time_s": 7.0},
            },
        ),
        # a again, later: its latest successful run counts.
        *job_lines(
            "L-3",
            "single",
            "2026-11-03T10:00:00Z",
            ["a"],
            {"0": {"state": "COMPLETED", "exit_code": 0, "run_time_s": 120.0}},
        ),
    ]
)


def test_elapsed_by_cell_is_the_latest_successful_run_outside_smoke() -> None:
    jobs = ledger.parse(LEDGER + "\n").jobs
    assert splitting.elapsed_by_cell(jobs) == {"a": 120.0, "b": 300.0}


def test_history_costs_estimate_a_cell_never_run_from_its_epochs() -> None:
    queue = cells("c/a.yaml t 10\nc/b.yaml t 10\nc/c.yaml t 40\n")
    costs = splitting.history_costs(queue, {"a": 120.0, "b": 300.0}, None)
    # 420 s over 20 epochs: 21 s per epoch, so c's 40 epochs cost 840 s.
    assert costs.values == (120.0, 300.0, 840.0)
    assert costs.unit == "seconds"
    assert costs.estimated == ("c",)
    assert costs.note == (
        "1 cell(s) without a finished run in the ledger: estimated from their epochs at "
        "21.0 s per epoch (the run cells' rate)"
    )


def test_history_costs_give_the_mean_when_some_epochs_are_unknown() -> None:
    queue = cells("c/a.yaml t 10\nc/b.yaml t\nc/c.yaml t\n")
    costs = splitting.history_costs(queue, {"a": 120.0, "b": 300.0}, None)
    assert costs.values == (120.0, 300.0, 210.0)
    assert costs.note.endswith("given the mean of the run cells, 210.0 s")


def test_history_without_any_run_cell_is_refused() -> None:
    with pytest.raises(UsageError) as caught:
        splitting.history_costs(cells("c/x.yaml t 5\n"), {"a": 1.0}, None)
    assert "none of the 1 cell(s) has a finished run" in caught.value.message
    assert "--cost epochs" in caught.value.hint


def test_a_part_file_says_where_it_came_from_then_lists_its_lines() -> None:
    (cell,) = cells("  configs/x/a.yaml   seg   7\n")
    assert queueparts.cell_line(cell) == "configs/x/a.yaml seg 7"
    assert queueparts.part_name("example", 2, 3) == "example.part2of3.txt"
    text = queueparts.part_text(
        source="queues/q.txt", part=2, k=3, cost="epochs", lines=["c/a.yaml t 7", "c/b.yaml t"]
    )
    assert text == (
        "# Part 2 of 3 of queues/q.txt, made by `campaign split -n 3 --cost epochs`.\n"
        "# One cell per line, `<cfg_path> <task> [epochs]`; while a queue runs, only append\n"
        "# lines or comment one out in place (QUEUE004).\n"
        "c/a.yaml t 7\n"
        "c/b.yaml t\n"
    )
    assert [c.cfg for c in queuefile.parse(text).cells] == ["c/a.yaml", "c/b.yaml"]


def test_cells_of_cost_0_still_fill_every_queue() -> None:
    result = splitting.split([0.0, 0.0, 5.0, 0.0], 3)
    assert result.queues == ((2,), (0, 3), (1,))
    assert splitting.fill_empty([0.0, 0.0, 0.0], ((0, 1, 2), (), ())) == ((0,), (2,), (1,))


def test_an_improvement_of_one_epoch_counts_at_any_total() -> None:
    # Loads near 10**12 epochs: a tolerance relative to the total must stay below one epoch.
    big = 10.0**12
    costs = [big, big, 3.0, 3.0, 2.0, 2.0, 2.0]
    assert max(splitting.loads_of(costs, splitting.lpt(costs, 2))) == big + 7
    assert splitting.split(costs, 2).makespan == big + 6
