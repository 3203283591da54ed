"""oom_retry: which OUT_OF_MEMORY targets are due for another attempt (runner.retry)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any

import pytest

from campaignops.core import schema
from campaignops.model import ledger
from campaignops.model.jobspec import JobSpec, Resources
from campaignops.runner import dispatch, plan, retry, retry_mem

T0 = dt.datetime(2026, 11, 21, 10, 0, tzinfo=dt.timezone.utc)
MANIFEST = {"oom_retry": {"delay": 120, "max_attempts": 3}, "jobs": [{"id": "a"}, {"id": "b"}]}


def _job(
    lid: str, targets: list[str], tasks: dict[str, Any], *, attempt: int | None = None, **more: Any
) -> list[dict[str, Any]]:
    intent: dict[str, Any] = {
        "v": 1,
        "kind": "intent",
        "ledger_id": lid,
        "time": "2026-11-21T09:00:00Z",
        "backend": "local",
        "stage": "production",
        "targets": targets,
        "manifest": "manifests/m.yaml",
    }
    if attempt is not None:
        intent["attempt"] = attempt
    state = {"v": 1, "kind": "state", "ledger_id": lid, "time": "2026-11-21T09:59:00Z"}
    state |= {"job_id": f"j-{lid}", "tasks": tasks, **more}
    return [intent, state]


def _ledger(*records: list[dict[str, Any]]) -> ledger.Ledger:
    return ledger.parse("\n".join(json.dumps(r) for rs in records for r in rs) + "\n")


def _pending(book: ledger.Ledger, now: dt.datetime, doc: Any = MANIFEST) -> Any:
    return retry.pending(book.jobs, manifest=lambda rel: doc, now=now)


OOM = {"state": "OUT_OF_MEMORY", "exit_code": 137, "ended": "2026-11-21T09:58:00Z"}
DONE = {"state": "COMPLETED", "exit_code": 0, "ended": "2026-11-21T09:58:00Z"}


def test_an_oom_target_is_due_after_the_delay_and_its_sibling_is_not() -> None:
    book = _ledger(_job("L1", ["a", "b"], {"0": OOM, "1": DONE}, state="OUT_OF_MEMORY"))
    waiting_due, waiting = _pending(book, T0.replace(hour=9, minute=59))
    assert waiting_due == [] and [w.targets for w in waiting] == [("a",)]
    (due,), later = _pending(book, T0)
    assert later == []
    assert (due.targets, due.attempt, due.of, due.stage) == (("a",), 2, ("L1",), "production")
    assert due.at == T0  # ended 09:58 + 120 s


def test_max_attempts_counts_the_first_attempt() -> None:
    first = _job("L1", ["a"], {"0": OOM}, state="OUT_OF_MEMORY")
    second = _job("L2", ["a"], {"0": OOM}, attempt=2, state="OUT_OF_MEMORY")
    third = _job("L3", ["a"], {"0": OOM}, attempt=3, state="OUT_OF_MEMORY")
    assert [d.attempt for d in _pending(_ledger(first, second), T0)[0]] == [3]
    assert _pending(_ledger(first, second, third), T0) == ([], [])


def test_a_retry_within_the_second_of_its_original_is_its_latest_attempt() -> None:
    # Both submitted in one second (the scheduler's stamps have whole seconds), the retry's
    # random ledger id before the original's: the done retry is still the latest attempt, so
    # nothing is submitted again (it was, about one run in two, by the PBS contract replay).
    original = _job("L9", ["a"], {"0": OOM}, state="OUT_OF_MEMORY")
    retried = _job("L0", ["a"], {"0": DONE}, attempt=2, state="COMPLETED")
    retried[0]["retry_of"] = ["L9"]
    book = _ledger(original, retried)
    assert _pending(book, T0) == ([], [])
    assert ledger.latest_attempts(book.jobs, "production")["a"].state == "COMPLETED"


def test_a_later_submission_of_the_target_ends_the_chain() -> None:
    oom = _job("L1", ["a"], {"0": OOM}, state="OUT_OF_MEMORY")
    again = _job("L2", ["a"], {"0": DONE}, state="COMPLETED")
    again[0]["time"] = "2026-11-21T09:30:00Z"  # submitted after the OOM attempt
    assert _pending(_ledger(oom, again), T0) == ([], [])


def test_no_retry_without_oom_retry_or_for_other_failures() -> None:
    oom = _job("L1", ["a"], {"0": OOM}, state="OUT_OF_MEMORY")
    assert _pending(_ledger(oom), T0, doc={"jobs": [{"id": "a"}]}) == ([], [])
    assert _pending(_ledger(oom), T0, doc={"oom_retry": {"max_attempts": 1}}) == ([], [])
    failed = {"state": "FAILED", "exit_code": 1, "ended": "2026-11-21T09:58:00Z"}
    assert _pending(_ledger(_job("L1", ["a"], {"0": failed}, state="FAILED")), T0) == ([], [])


def test_policy_reads_only_what_asks_for_a_retry() -> None:
    assert retry.policy_of({"oom_retry": {"max_attempts": 3}}) == retry.Policy(3, 0.0)
    assert retry.policy_of({"oom_retry": {"delay": 5, "max_attempts": 2}}) == retry.Policy(2, 5.0)
    for doc in ({}, {"oom_retry": {"delay": 5}}, {"oom_retry": {"max_attempts": True}}, None):
        assert retry.policy_of(doc) is None


def test_an_oom_on_a_box_that_retries_by_itself_is_final() -> None:
    # An ssh box's executor already retried the task (manifest oom_retry): no second round.
    book = _ledger(_job("L1", ["a"], {"0": OOM}, state="OUT_OF_MEMORY"))
    assert retry.pending(
        book.jobs, manifest=lambda rel: MANIFEST, now=T0, retried_itself=lambda job: True
    ) == (
        [],
        [],
    )
    assert len(retry.pending(book.jobs, manifest=lambda rel: MANIFEST, now=T0)[0]) == 1


GPU_OOM = {
    "state": "FAILED",
    "exit_code": 1,
    "ended": "2026-11-21T09:58:00Z",
    "diagnosis": {"entry": "cuda-oom", "category": "oom-gpu"},
}
PREEMPTED = {"state": "PREEMPTED", "exit_code": None, "ended": "2026-11-21T09:58:00Z"}


def test_a_gpu_oom_diagnosed_from_the_log_is_retried_with_the_same_memory() -> None:
    book = _ledger(_job("L1", ["a", "b"], {"0": GPU_OOM, "1": DONE}, state="FAILED"))
    (due,), waiting = _pending(book, T0)
    assert waiting == [] and (due.targets, due.attempt, due.of) == (("a",), 2, ("L1",))
    assert due.mem_factor is None  # a GPU's memory is not the job's request
    # Any other failure is not retried: the rule is the category the diagnosis recorded.
    other = {**GPU_OOM, "diagnosis": {"entry": "python-error", "category": "code-bug"}}
    assert _pending(_ledger(_job("L1", ["a"], {"0": other}, state="FAILED")), T0) == ([], [])


def test_a_preemption_is_requeued_per_oom_retry() -> None:
    book = _ledger(_job("L1", ["a"], {"0": PREEMPTED}, state="PREEMPTED"))
    (due,), _ = _pending(book, T0)
    assert (due.targets, due.attempt, due.mem_factor) == (("a",), 2, None)


def test_a_host_oom_is_retried_with_the_policy_factor_of_the_memory_it_had() -> None:
    oom = {**OOM, "req_mem": "2Gc"}  # ReqMem may be per CPU: the manifest's mem is the base
    book = _ledger(_job("L1", ["a"], {"0": oom}, state="OUT_OF_MEMORY"))
    (due,), _ = _pending(book, T0)
    assert (due.mem_factor, due.had_mem) == (1.5, None)  # the default factor, as planned
    doc = {**MANIFEST, "oom_retry": {"max_attempts": 3, "memory_factor": 2}}
    assert _pending(book, T0, doc=doc)[0][0].mem_factor == 2.0
    # A retry's own recorded memory is what the next retry multiplies.
    again = _job("L2", ["a"], {"0": oom}, attempt=2, state="OUT_OF_MEMORY")
    again[0]["resources"] = {"mem": "150M"}
    (third,), _ = _pending(_ledger(_job("L1", ["a"], {"0": oom}, state="OUT_OF_MEMORY"), again), T0)
    assert (third.attempt, third.had_mem) == (3, "150M")


def test_raised_mem_multiplies_rounds_up_and_stops_at_the_cap() -> None:
    assert retry.raised_mem("100M", 1.5) == "150M"
    assert retry.raised_mem("4G", 1.5) == "6G"
    assert retry.raised_mem("4000", 1.5) == "6000M"  # a bare number is MiB, as --mem reads it
    assert retry.raised_mem("100M", 1.33) == "133M"
    assert retry.raised_mem("64G", 1.5, "80G") == "80G"
    assert retry.raised_mem("32G", 1.5, "80G") == "48G"
    assert retry.raised_mem(None, 1.5) is None and retry.raised_mem("lots", 1.5) is None


def test_mem_cap_is_the_partitions_or_queues_mem_per_node() -> None:
    page = {
        "partitions": [{"name": "amilan", "mem_per_node": "250G"}, {"name": "atesting"}],
        "queues": [{"name": "workq", "mem_per_node": "500G"}],
    }
    assert retry.mem_cap(page, Resources(partition="amilan")) == "250G"
    assert retry.mem_cap(page, Resources(queue="workq")) == "500G"
    assert retry.mem_cap(page, Resources(partition="atesting")) is None
    assert retry.mem_cap(page, Resources()) is None and retry.mem_cap(None, Resources()) is None


def test_policy_reads_memory_factor() -> None:
    doc = {"oom_retry": {"max_attempts": 2, "memory_factor": 2}}
    assert retry.policy_of(doc) == retry.Policy(2, 0.0, 2.0)
    for bad in (0.5, True, "2", float("inf"), float("nan"), 101):  # .inf crashed math.ceil
        doc = {"oom_retry": {"max_attempts": 2, "memory_factor": bad}}
        assert retry.policy_of(doc) == retry.Policy(2, 0.0, 1.5)


def test_a_retry_plans_the_raised_memory_capped_by_its_partition() -> None:
    page = {"partitions": [{"name": "amilan", "mem_per_node": "240G"}]}

    def planned(mem: str | None) -> plan.PlannedJob:
        spec = JobSpec(name="c.a.production", workdir="/c", tasks=("true",))
        spec = dataclasses.replace(spec, resources=Resources(partition="amilan", mem=mem))
        return plan.PlannedJob(spec=spec, group="m", targets=("a",))

    def mem(job: plan.PlannedJob, asked: dispatch.Retry | None) -> str | None:
        (out,) = retry_mem.for_retry([job], asked, page=page)
        return out.spec.resources.mem

    host = dispatch.Retry(attempt=2, of=("L1",), mem_factor=1.5)
    assert mem(planned("100G"), host) == "150G"
    assert mem(planned("200G"), host) == "240G"  # 300G is over the partition's nodes
    third = dispatch.Retry(attempt=3, of=("L2",), mem_factor=1.5, had_mem="150G")
    assert mem(planned("100G"), third) == "225G"  # the second attempt's memory, raised again
    assert mem(planned(None), host) is None  # nothing asked, nothing to multiply
    gpu = dispatch.Retry(attempt=2, of=("L1",))
    assert mem(planned("100G"), gpu) == "100G" and mem(planned("100G"), None) == "100G"


@pytest.mark.parametrize("key", ["memory_factor", "delay"])
@pytest.mark.parametrize("bad", [float("inf"), float("nan"), float("-inf")])
def test_the_manifest_schema_refuses_a_non_finite_number(key: str, bad: float) -> None:
    # `memory_factor: .inf` passed campaign check, then crashed the retry at status --refresh;
    # `.nan` passed it too (NaN is neither below 1 nor above 100), as did `delay: .inf`.
    doc = {"jobs": [{"id": "a", "cmd": "true"}], "oom_retry": {key: bad}}
    found = list(schema.validate("manifest", doc))
    assert [e.where for e in found] == [("oom_retry", key)], found
    assert "is not a finite number" in found[0].message


def test_a_delay_no_clock_can_add_is_read_as_none() -> None:
    # delay: .inf (or 1e300) crashed status --refresh: datetime cannot add it.
    book = _ledger(_job("L1", ["a"], {"0": OOM}, state="OUT_OF_MEMORY"))
    for bad in (float("inf"), float("nan"), 1e300, retry.MAX_DELAY_S + 1):
        doc = {"oom_retry": {"delay": bad, "max_attempts": 2}}
        assert retry.policy_of(doc) == retry.Policy(2, 0.0)
        assert [d.targets for d in _pending(book, T0, doc=doc)[0]] == [("a",)]
    doc = {"oom_retry": {"delay": 1e300, "max_attempts": 2}}
    assert list(schema.validate("manifest", {"jobs": [], **doc})) != []  # and check says so
