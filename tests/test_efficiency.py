"""audit resources' cluster-optimise figures on recorded accounting (tests/backends/recorded/):
what real sacct, ssh boxes and the local GPU executor printed goes through the refresh's own
judging and state records into a ledger, and the figures are read back from it (issue 19,
gap 9). The rules' edges are on hand-made usages below."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from campaignops.backends.slurm import accounting as sacct
from campaignops.backends.ssh import backend as sshbox
from campaignops.learn import efficiency, rightsizing, rightsizing_render
from campaignops.learn.efficiency import Usage
from campaignops.model import ledger
from campaignops.model import ledger_writer as lw
from campaignops.model.jobspec import JobState
from campaignops.runner import answered

RECORDED = Path(__file__).parent / "backends" / "recorded"
WHEN = dt.datetime(2026, 11, 27, 21, tzinfo=dt.timezone.utc)


def _ledger(
    kind: str, files: list[str], parse: Callable[[list[str]], Mapping[str, JobState]]
) -> tuple[ledger.Job, ...]:
    """The recorded jobs of ``kind`` (cases.json: the single job, then the array of three at
    most two at a time) as status --refresh records what ``files`` answered."""
    cases = json.loads((RECORDED / kind / "cases.json").read_text())
    ids = [s["job_id"] for s in cases["submits"]]
    records: list[dict[str, Any]] = []
    for n, (job_id, targets) in enumerate(zip(ids, (["one"], ["a", "b", "c"]), strict=True)):
        lid = f"L{n}"
        records += [
            {"ledger_id": lid, "kind": "intent", "manifest": "manifests/m.yaml"},
            {"ledger_id": lid, "stage": "smoke", "targets": targets, "backend": kind},
            {"ledger_id": lid, "job_id": job_id, "array": "0-2%2" if n else None},
        ]
    jobs = ledger.parse("\n".join(json.dumps(r) for r in records)).jobs
    states = parse([(RECORDED / kind / f).read_text() for f in files])
    for job in jobs:
        state, tasks = answered.judge(job, states[str(job.job_id)])
        records.append(
            lw.state_record(ledger_id=job.ledger_id, time=WHEN, state=state, tasks=tasks)
        )
    return ledger.parse("\n".join(json.dumps(r) for r in records)).jobs


def _usage(jobs: tuple[ledger.Job, ...]) -> list[Usage]:
    return [u for job in jobs for u in efficiency.usages(job)]


def test_sacct_cpu_time_cpus_and_concurrency_reach_the_audit() -> None:
    jobs = _ledger("slurm", ["finished-0.txt", "finished-1.txt"], sacct.parse_states)
    array = jobs[1]
    cpus = [(t.alloc_cpus, t.cpu_time_s) for x in array.targets if (t := array.task(x))]
    assert cpus == [(1, 0.004), (1, 0.005), (1, 0.004)]  # sacct TotalCPU 00:00.004 ...
    assert (jobs[0].task("one") or ledger.Task(index=0, state=None)).cpu_time_s == 0.003
    found = efficiency.efficiency("manifests/m.yaml", "smoke", _usage(jobs))
    # Completed tasks with a run: the array's 0 and 2, 2 s on one CPU each (the single job
    # ran for 0 s: no run to compare with).
    assert (found.cpu_efficiency, found.cpu_tasks) == (0.002, 2)
    assert found.gpu_hours is None  # AllocTRES has no gres/gpu on this cluster
    assert found.failure_rate == 0.25  # task 1 of the array of 4 finished tasks
    # 3 completed tasks between the first start and the last end, 5 s apart.
    assert found.throughput_per_hour == 2160.0
    assert found.concurrency == efficiency.Concurrency(
        cap=2,
        peak=2,
        suggested=None,
        evidence="25% of tasks failed: fix them before running more at once",
    )
    row = rightsizing_render.efficiency_table(rightsizing.Audit(efficiency=(found,))).splitlines()[
        -1
    ]
    assert row.startswith("| manifests/m.yaml | smoke | 0 % of 2 (low: ask for fewer CPUs) |")


def test_box_tasks_record_their_run_times() -> None:
    for kind, files, ran in (
        ("ssh", ["finished-0.txt"], [0.0, 3.0, 2.0, 2.0]),
        ("local", ["gpu-finished-0.txt"], [1.0, 4.0, 3.0, 3.0]),
    ):
        # The local backend's GPU jobs have no cases.json of their own: ids from the answer.
        jobs = _gpu_ledger(files) if kind == "local" else _ledger(kind, files, sshbox.parse_states)
        samples = [s for job in jobs for s in rightsizing.samples(job)]
        assert [s.run_time_s for s in samples] == ran, kind
        audit = rightsizing.audit({("m", "smoke"): samples}, {})
        assert "—" not in rightsizing_render.stages_table(audit).split("\n")[2].split("|")[5]


def _gpu_ledger(files: list[str]) -> tuple[ledger.Job, ...]:
    doc = json.loads((RECORDED / "local" / files[0]).read_text())
    ids = [j["job_id"] for j in doc["jobs"]]
    records: list[dict[str, Any]] = []
    for n, (job_id, targets) in enumerate(zip(ids, (["one"], ["a", "b", "c"]), strict=True)):
        records.append(
            {"ledger_id": f"L{n}", "manifest": "m", "stage": "smoke", "targets": targets}
            | {"job_id": job_id}
        )
    jobs = ledger.parse("\n".join(json.dumps(r) for r in records)).jobs
    states = sshbox.parse_states([json.dumps(doc)])
    for job in jobs:
        state, tasks = answered.judge(job, states[str(job.job_id)])
        records.append(
            lw.state_record(ledger_id=job.ledger_id, time=WHEN, state=state, tasks=tasks)
        )
    return ledger.parse("\n".join(json.dumps(r) for r in records)).jobs


def _u(job: str, start: float, end: float, ok: bool = True, **more: Any) -> Usage:
    fields: dict[str, Any] = {
        "job": job,
        "array_cap": 2,
        "array_size": 4,
        "succeeded": ok,
        "failed": not ok,
        "started": start,
        "ended": end,
        "run_time_s": end - start,
        "cpu_time_s": None,
        "alloc_cpus": None,
        "alloc_gpus": None,
    }
    return Usage(**(fields | more))


def test_the_cap_is_raised_only_when_it_held_a_healthy_array_back() -> None:
    waves = [_u("J", 0, 10), _u("J", 0, 10), _u("J", 10, 20), _u("J", 10, 20)]
    held = efficiency.efficiency("m", "production", waves).concurrency
    assert held is not None and (held.cap, held.peak, held.suggested) == (2, 2, 4)
    loose = [_u("J", 0, 10, array_cap=8), _u("J", 10, 20, array_cap=8)] * 2
    free = efficiency.efficiency("m", "production", loose).concurrency
    assert free is not None and (free.peak, free.suggested) == (2, None)
    assert "under the cap of 8" in free.evidence
    small = efficiency.efficiency("m", "smoke", [_u("J", 0, 1, array_size=2)])
    assert small.concurrency is None  # an array of two says nothing of its cap
    gpus = efficiency.efficiency("m", "smoke", [_u("J", 0, 3600, alloc_gpus=4)])
    assert gpus.gpu_hours == 4.0
    busy = [_u("J", 0, 100, cpu_time_s=350.0, alloc_cpus=4)]
    assert efficiency.efficiency("m", "smoke", busy).cpu_efficiency == 0.875
