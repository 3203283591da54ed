"""Right-sizing's rules on hand-made ledgers: every figure and recommendation compared in full."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from campaignops.learn import rightsizing_render
from campaignops.learn.rightsizing import (
    Audit,
    Recommendation,
    Request,
    Sample,
    Spread,
    StageReport,
    audit,
    clean_size,
    clean_time,
    samples,
    show_size,
    size_kib,
)
from campaignops.model import ledger

G = 1024.0**2
M = 1024.0


@pytest.mark.parametrize(
    ("text", "bare", "cpus", "kib"),
    [
        ("4194304K", "K", None, 4194304.0),
        ("1.5G", "K", None, 1.5 * G),
        ("52000", "K", None, 52000.0),  # sacct's bare MaxRSS: KiB
        ("16G", "M", None, 16 * G),
        ("4000M", "M", None, 4000 * M),
        ("4000", "M", None, 4000 * M),  # --mem=4000: megabytes
        ("2Gn", "M", None, 2 * G),  # Slurm before 21.08: per node
        ("2Gc", "M", 4, 8 * G),  # per CPU, times the CPUs asked for
        ("2Gc", "M", None, 2 * G),
        ("123kb", "K", None, 123.0),  # PBS
        ("16GB", "M", None, 16 * G),
        ("1GiB", "M", None, 1 * G),
        (" 512M ", "M", None, 512 * M),
        ("2048B", "M", None, 2.0),
        ("0", "K", None, None),  # no measurement
        ("0K", "K", None, None),
        ("16?", "M", None, None),  # sacct's allocation row before the start record
        ("", "K", None, None),
        ("abc", "K", None, None),
        ("1e9", "K", None, None),
        ("-4G", "K", None, None),
        ("9" * 40, "K", None, None),
        (None, "K", None, None),
        (4096, "K", None, None),
    ],
)
def test_sizes_in_slurm_and_pbs_forms_are_read_and_the_rest_ignored(
    text: object, bare: str, cpus: int | None, kib: float | None
) -> None:
    assert size_kib(text, bare=bare, cpus=cpus) == kib


def test_sizes_are_shown_in_the_largest_binary_unit() -> None:
    shown = [show_size(k) for k in (512.0, 52000.0, 4 * G, 4.1 * G, 1536 * G)]
    assert shown == ["512K", "50.8M", "4G", "4.1G", "1.5T"]


def test_sizes_round_up_to_clean_steps() -> None:
    got = [clean_size(k)[1] for k in (1.0, 77 * M, 128 * M, 129 * M, 1000 * M, 1025 * M)]
    assert got == ["128M", "128M", "128M", "256M", "1G", "2G"]
    got = [clean_size(k * G)[1] for k in (6.15, 30.0, 30.5, 99.0, 101.0, 1001.0)]
    assert got == ["7G", "30G", "35G", "100G", "110G", "1100G"]
    assert clean_size(6.15 * G)[0] == 7 * G


def test_time_limits_round_up_to_clean_steps_above_a_floor() -> None:
    got = [clean_time(s) for s in (1, 601, 3600, 3601, 6 * 3600 + 1, 10**9)]
    assert got == [600, 1200, 3600, 5400, 7 * 3600, 365 * 86400]


# -- ledgers ------------------------------------------------------------------------------


def _ledger(*jobs: Mapping[str, Any]) -> tuple[ledger.Job, ...]:
    lines = []
    for n, job in enumerate(jobs):
        lines.append(
            {
                "v": 1,
                "kind": "intent",
                "ledger_id": f"L{n}",
                "time": f"2026-11-20T10:{n:02d}:00Z",
                "manifest": "manifests/m.yaml",
                "stage": "production",
                "submitted": f"2026-11-20T10:{n:02d}:00Z",
            }
            | dict(job)
        )
    return ledger.parse("\n".join(json.dumps(x) for x in lines)).jobs


def _task(state: str = "COMPLETED", **fields: Any) -> dict[str, Any]:
    exit_code = 0 if state == "COMPLETED" else 1
    return {"state": state, "exit_code": exit_code} | fields


def _array(*tasks: Mapping[str, Any], **job: Any) -> dict[str, Any]:
    targets = [f"t{i}" for i in range(len(tasks))]
    return {"targets": targets, "tasks": {str(i): dict(t) for i, t in enumerate(tasks)}} | job


def test_samples_are_each_finished_task_with_its_own_wait_and_failure_category() -> None:
    (job,) = _ledger(
        _array(
            _task(started="2026-11-20T10:00:30Z", run_time_s=100, max_rss="1G", req_mem="4G"),
            _task(
                "FAILED",
                started="2026-11-20T10:02:00Z",
                diagnosis={"entry": "x", "category": "nccl"},
            ),
            _task("OUT_OF_MEMORY", started="2026-11-20T10:03:00Z"),
            _task("TIMEOUT"),
            _task("FAILED"),
            _task("CANCELLED"),
            _task("NODE_FAIL"),
            _task("RUNNING", started="2026-11-20T10:04:00Z"),
            _task("UNKNOWN"),
            started="2026-11-20T10:00:10Z",
        )
    )
    got = samples(job)
    # A task without its own start waited as long as its job (the array's first start).
    assert got == [
        Sample("COMPLETED", None, 30.0, 100.0, "1G", "4G"),
        Sample("FAILED", "nccl", 120.0),
        Sample("OUT_OF_MEMORY", "oom-host", 180.0),
        Sample("TIMEOUT", "timeout", 10.0),
        Sample("FAILED", "FAILED", 10.0),
        Sample("CANCELLED", "CANCELLED", 10.0),
        Sample("NODE_FAIL", "node-failure", 10.0),
    ]


def test_a_single_task_job_uses_its_recorded_queue_wait_and_a_repeated_target_counts_once() -> None:
    (job,) = _ledger(
        {"targets": ["a", "a"], "state": "COMPLETED", "exit_code": 0, "queue_wait_s": 42}
    )
    assert samples(job) == [Sample("COMPLETED", None, 42.0)]


def _group(job: Mapping[str, Any]) -> list[Sample]:
    return [s for j in _ledger(job) for s in samples(j)]


KEY = ("manifests/m.yaml", "production")


def _used(*rss: str, run: float = 600.0, req: str = "16G") -> list[dict[str, Any]]:
    return [
        _task(started="2026-11-20T10:00:00Z", run_time_s=run + i, max_rss=r, req_mem=req)
        for i, r in enumerate(rss)
    ]


def test_a_tenth_used_gives_a_smaller_mem_and_time_with_their_evidence() -> None:
    group = _group(
        _array(*_used("4194304K", "4.1G", "3G"), _task("FAILED", run_time_s=2, max_rss="15G"))
    )
    report = audit({KEY: group}, {KEY: Request(mem="16G", time="24:00:00")})
    assert report == Audit(
        recommendations=(
            Recommendation(
                *KEY,
                resource="mem",
                current="16G",
                recommended="7G",
                evidence="max RSS 4.1G over 3 tasks (26 % of 16G), +50 % headroom",
            ),
            Recommendation(
                *KEY,
                resource="time",
                current="24:00:00",
                recommended="00:20:00",
                evidence="longest run 00:10:02 over 3 tasks (<1 % of 1-00:00:00), +50 % headroom",
            ),
        ),
        stages=(
            StageReport(
                *KEY,
                tasks=4,
                # The failed task has no start: no queue wait of its own.
                queue_wait=Spread(median=0.0, max=0.0, count=3),
                run_time=Spread(median=601.0, max=602.0, count=3),
                failures={"FAILED": 1},
                peak_kib=4.1 * G,
                mem_request="16G",
                time_limit="24:00:00",
            ),
        ),
    )


def test_requests_that_fit_get_no_recommendation() -> None:
    # 12G of 16G is 75 % (jobstats flags under 70 %); 600 s of 00:15:00 is 67 % (under 60 %).
    group = _group(_array(*_used("12G", "11G", "10G", run=600)))
    report = audit({KEY: group}, {KEY: Request(mem="16G", time="00:15:00")})
    assert report.recommendations == ()
    # A cut that would not go below the request is no cut: 1.5 × 2.9G is 5G, the request.
    group = _group(_array(*_used("2.9G", "1G", "1G")))
    assert audit({KEY: group}, {KEY: Request(mem="5G")}).recommendations == ()


def test_a_request_that_fits_is_kept_with_its_evidence_beside_the_other_row() -> None:
    """Issue 20: a group with a mem row showed no time row when its time stayed; the kept
    resource now says why it stays. A group whose requests all fit still shows none."""
    # A cut of mem (4.1G of 16G); the time used 600 s of 00:15:00 (67 %, over 60 %): it fits.
    group = _group(_array(*_used("4.1G", "4G", "4G", run=600)))
    report = audit({KEY: group}, {KEY: Request(mem="16G", time="00:15:00")})
    assert [(r.resource, r.recommended) for r in report.recommendations] == [
        ("mem", "7G"),
        ("time", None),
    ]
    assert report.recommendations[1].evidence == (
        "longest run 00:10:02 over 3 tasks (67 % of 00:15:00): the request fits"
    )
    # No MaxRSS (a local backend): mem too few to judge; the time is at the floor already.
    group = _group(_array(*_used("0", "0", "0", run=1)))
    report = audit({KEY: group}, {KEY: Request(mem="1G", time="00:10:00")})
    assert [(r.resource, r.recommended) for r in report.recommendations] == [
        ("mem", None),
        ("time", None),
    ]
    assert report.recommendations[1].evidence == (
        "longest run 00:00:03 over 3 tasks (<1 % of 00:10:00); with +50 % headroom and the "
        "00:10:00 floor, no shorter limit: the request fits"
    )


def test_too_few_completed_tasks_recommend_nothing_and_say_so() -> None:
    # Two completed tasks with a MaxRSS (a third has none: "0"), and one failure: no mem advice.
    # Three completed runs are enough for time.
    group = _group(_array(*_used("1G", "1G"), _used("0")[0], _task("FAILED", max_rss="1G")))
    report = audit({KEY: group}, {KEY: Request(mem="16G", time="10:00:00")})
    assert report.recommendations == (
        Recommendation(
            *KEY,
            resource="mem",
            current="16G",
            recommended=None,
            evidence="2 tasks completed with a MaxRSS: too few to recommend (needs 3)",
        ),
        Recommendation(
            *KEY,
            resource="time",
            current="10:00:00",
            recommended="00:20:00",
            evidence="longest run 00:10:01 over 3 tasks (2 % of 10:00:00), +50 % headroom",
        ),
    )
    group = _group(_array(*_used("1G", "1G", run=60)))
    report = audit({KEY: group}, {KEY: Request(time="10:00:00")})
    assert report.recommendations[1] == Recommendation(
        *KEY,
        resource="time",
        current="10:00:00",
        recommended=None,
        evidence="2 tasks completed with a run time: too few to recommend (needs 3)",
    )


def test_an_out_of_memory_task_raises_the_request_it_had() -> None:
    group = _group(
        _array(*_used("7G", "7.5G", "7G", req="8G"), _task("OUT_OF_MEMORY", req_mem="8G"))
    )
    report = audit({KEY: group}, {KEY: Request(mem="8G")})
    assert report.recommendations == (
        Recommendation(
            *KEY,
            resource="mem",
            current="8G",
            recommended="12G",
            evidence="1 task ran out of memory at 8G: ×1.5 the request",
        ),
    )
    assert report.stages[0].failures == {"oom-host": 1}


def test_a_diagnosed_oom_counts_and_an_unknown_request_is_taken_from_the_manifest() -> None:
    failed = _task("FAILED", diagnosis={"entry": "python-memoryerror", "category": "oom-host"})
    report = audit({KEY: _group(_array(failed))}, {KEY: Request(mem="6G")})
    assert [(r.current, r.recommended, r.evidence) for r in report.recommendations] == [
        ("6G", "9G", "1 task ran out of memory at 6G: ×1.5 the request"),
    ]


def test_after_a_raise_the_cut_never_goes_back_below_it() -> None:
    # OOM at 8G; raised to 16G since; the completed peak 6G alone would give 9G.
    group = _group(_array(_task("OUT_OF_MEMORY", req_mem="8G"), *_used("6G", "5G", "5G")))
    report = audit({KEY: group}, {KEY: Request(mem="16G")})
    assert report.recommendations == (
        Recommendation(
            *KEY,
            resource="mem",
            current="16G",
            recommended="12G",
            evidence="max RSS 6G over 3 tasks (38 % of 16G), +50 % headroom, "
            "not below ×1.5 a request that ran out of memory",
        ),
    )


def test_a_cut_that_lands_on_the_raise_by_itself_does_not_blame_the_raise() -> None:
    # OOM at 4G: never below 6G; the peak 3.9G gives 6G on its own.
    group = _group(_array(_task("OUT_OF_MEMORY", req_mem="4G"), *_used("3.9G", "3G", "3G")))
    report = audit({KEY: group}, {KEY: Request(mem="16G")})
    assert [(r.recommended, r.evidence) for r in report.recommendations] == [
        ("6G", "max RSS 3.9G over 3 tasks (24 % of 16G), +50 % headroom"),
    ]


def test_a_timeout_raises_the_limit_and_the_cut_stays_above_it() -> None:
    group = _group(_array(_task("TIMEOUT", run_time_s=3600), _task("TIMEOUT", run_time_s=3540)))
    report = audit({KEY: group}, {KEY: Request(time="01:00:00")})
    assert [(r.resource, r.current, r.recommended, r.evidence) for r in report.recommendations] == [
        ("mem", None, None, "0 tasks completed with a MaxRSS: too few to recommend (needs 3)"),
        (
            "time",
            "01:00:00",
            "01:30:00",
            "2 tasks hit the time limit after 01:00:00: ×1.5 the longest",
        ),
    ]
    # Raised to 10 h since, three runs of 10 min: not back below 1.5 × the timed-out hour.
    group += _group(_array(*_used("1G", "1G", "1G", run=600)))
    report = audit({KEY: group}, {KEY: Request(time="10:00:00", mem="1G")})
    (time_rec,) = [r for r in report.recommendations if r.resource == "time"]
    assert (time_rec.recommended, time_rec.evidence) == (
        "01:30:00",
        "longest run 00:10:02 over 3 tasks (2 % of 10:00:00), +50 % headroom, "
        "not below ×1.5 a run that hit the limit",
    )


def test_without_a_manifest_mem_the_recorded_request_is_held_to_per_cpu_too() -> None:
    group = _group(_array(*_used("1G", "0.9G", "1G", req="2Gc")))
    report = audit({KEY: group}, {KEY: Request(cpus=4)})
    assert [(r.current, r.recommended, r.evidence) for r in report.recommendations] == [
        ("2Gc", "2G", "max RSS 1G over 3 tasks (12 % of 8G), +50 % headroom"),
    ]
    # No time in the manifest: the partition's default applies, nothing to compare.
    assert [r.resource for r in report.recommendations] == ["mem"]


def test_unreadable_figures_are_ignored() -> None:
    group = _group(_array(*_used("abc", "16?", "-1", req="lots")))
    report = audit({KEY: group}, {KEY: Request(mem="huge", time="forever")})
    assert [(r.resource, r.current, r.recommended) for r in report.recommendations] == [
        ("mem", "huge", None)
    ]
    assert report.stages[0].peak_kib is None


def _render_fixture() -> Audit:
    smoke = ("manifests/m.yaml", "smoke")
    prod = ("manifests/m.yaml#train", "production")
    groups: dict[tuple[str, str], Sequence[Sample]] = {
        prod: _group(_array(*_used("4G", "3G", "1G", run=3000), _task("OUT_OF_MEMORY"))),
        smoke: _group(_array(*_used("50M", "52000K", "40M", run=6))),
    }
    requests = {prod: Request(mem="16G", time="12:00:00"), smoke: Request(mem="512M")}
    return audit(groups, requests)


def test_the_json_contract() -> None:
    assert rightsizing_render.to_json(_render_fixture()) == {
        "recommendations": [
            {
                "manifest": "manifests/m.yaml",
                "stage": "smoke",
                "resource": "mem",
                "current": "512M",
                "recommended": "128M",
                "evidence": "max RSS 50.8M over 3 tasks (10 % of 512M), +50 % headroom",
            },
            {
                "manifest": "manifests/m.yaml#train",
                "stage": "production",
                "resource": "mem",
                "current": "16G",
                "recommended": "24G",
                "evidence": "1 task ran out of memory at 16G: ×1.5 the request",
            },
            {
                "manifest": "manifests/m.yaml#train",
                "stage": "production",
                "resource": "time",
                "current": "12:00:00",
                "recommended": "01:30:00",
                "evidence": "longest run 00:50:02 over 3 tasks (7 % of 12:00:00), +50 % headroom",
            },
        ],
        "stages": [
            {
                "manifest": "manifests/m.yaml",
                "stage": "smoke",
                "tasks": 3,
                "queue_wait_s": {"median": 0.0, "max": 0.0, "count": 3},
                "run_time_s": {"median": 7.0, "max": 8.0, "count": 3},
                "failures": {},
            },
            {
                "manifest": "manifests/m.yaml#train",
                "stage": "production",
                "tasks": 4,
                "queue_wait_s": {"median": 0.0, "max": 0.0, "count": 3},
                "run_time_s": {"median": 3001.0, "max": 3002.0, "count": 3},
                "failures": {"oom-host": 1},
            },
        ],
        "efficiency": [],  # audit() alone: learn/resources.py adds the accounting's
    }


def test_the_markdown_report() -> None:
    assert rightsizing_render.markdown(_render_fixture()) == (
        "### Resource audit\n\n"
        "| Manifest | Stage | Tasks | Queue wait (median / max) | Run time (median / max) "
        "| Time limit | Peak RSS / mem | Failures |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- |\n"
        "| manifests/m.yaml | smoke | 3 | 0s / 0s | 7s / 8s | — | 50.8M / 512M | — |\n"
        "| manifests/m.yaml#train | production | 4 | 0s / 0s | 50m 01s / 50m 02s | 12:00:00 "
        "| 4G / 16G | oom-host 1 |\n\n"
        "#### Recommendations\n\n"
        "| Manifest | Stage | Resource | Change | Evidence |\n"
        "| --- | --- | --- | --- | --- |\n"
        "| manifests/m.yaml | smoke | mem | 512M → 128M "
        "| max RSS 50.8M over 3 tasks (10 % of 512M), +50 % headroom |\n"
        "| manifests/m.yaml#train | production | mem | 16G → 24G "
        "| 1 task ran out of memory at 16G: ×1.5 the request |\n"
        "| manifests/m.yaml#train | production | time | 12:00:00 → 01:30:00 "
        "| longest run 00:50:02 over 3 tasks (7 % of 12:00:00), +50 % headroom |\n\n"
        'Peak RSS: the largest MaxRSS of a completed task. Rules: docs/runner.md, "Right-sizing".'
    )
    assert rightsizing_render.markdown(Audit()) == (
        "### Resource audit\n\nNo finished task in the ledger matches: nothing to audit."
    )
