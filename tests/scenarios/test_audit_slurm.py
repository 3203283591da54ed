"""Right-sizing on the real Slurm cluster: three tasks hold about 40 MiB against a 512M request;
once sacct has measured them (jobacct_gather/linux, a sample a second), `campaign audit
resources` recommends a smaller mem, names the peak it saw, and reports queue wait and run time
apart. The rules themselves are tested in full in tests/test_rightsizing.py.
"""

from __future__ import annotations

import json
import re

import pytest

from campaignops.learn import rightsizing
from campaignops.model import ledger
from tests.scenarios.conftest import Life

pytestmark = pytest.mark.slurm

# Each task writes 40 MiB (b"x" * n touches every page, unlike a calloc'd bytearray) and holds
# it for the smoke's seconds: several of the cluster's one-second accounting samples.
HOLD_CMD = (
    """python3 -c "import sys, time; held = b'x' * (40 << 20); time.sleep(float(sys.argv[-1]))\""""
)
HOLD = 'resources: {time: "00:30:00", mem: 512M}\nsmoke:\n  args: {seconds: 6}\njobs:\n' + "".join(
    f"  - {{id: {t}, cmd: {json.dumps(HOLD_CMD)}, args: {{seconds: 60}}}}\n" for t in "abc"
)


def test_audit_recommends_a_smaller_mem_for_tasks_that_used_a_tenth(
    camp, run, slurm_cluster
) -> None:  # type: ignore[no-untyped-def]
    life = Life(root=camp, backend="generic-slurm", run=run)
    life.write("manifests/hold.yaml", HOLD)
    submitted = life.submit("manifests/hold.yaml", "smoke")
    assert submitted.code == 0, submitted.err
    job = life.wait(timeout=240)
    assert job.state == "COMPLETED", dict(job.record)
    tasks = [job.task(t) for t in ("a", "b", "c")]
    rss = [rightsizing.size_kib(t.max_rss) for t in tasks if t is not None]
    assert len(rss) == 3 and all(r is not None and r > 40 * 1024 for r in rss), job.record
    peak = max(r for r in rss if r is not None)

    shown = life.run("audit", "resources", "--format", "json")
    assert shown.code == 0, shown.err
    report = json.loads(shown.out)
    (mem,) = [r for r in report["recommendations"] if r["resource"] == "mem"]
    assert (mem["manifest"], mem["stage"], mem["current"]) == (
        "manifests/hold.yaml",
        "smoke",
        "512M",
    )
    # 1.5 × a peak of 40-85 MiB rounds up to the first 128M step.
    assert mem["recommended"] == "128M", mem
    assert mem["evidence"].startswith(f"max RSS {rightsizing.show_size(peak)} over 3 tasks ("), mem
    assert mem["evidence"].endswith("of 512M), +50 % headroom"), mem
    (time_rec,) = [r for r in report["recommendations"] if r["resource"] == "time"]
    assert (time_rec["current"], time_rec["recommended"]) == ("00:30:00", "00:10:00")

    (stage,) = report["stages"]
    assert (stage["manifest"], stage["stage"], stage["tasks"]) == (
        "manifests/hold.yaml",
        "smoke",
        3,
    )
    assert stage["failures"] == {}
    waits, runs = stage["queue_wait_s"], stage["run_time_s"]
    assert waits["count"] == 3 and runs["count"] == 3
    # Run time is the tasks' own Elapsed (each slept 6 s), queue wait the time before each start.
    recorded = sorted(t.run_time_s for t in tasks if t is not None and t.run_time_s is not None)
    assert runs["max"] == recorded[-1] and runs["median"] == recorded[1]
    assert recorded[0] >= 6
    starts = sorted(
        (ledger.parse_time(t.started) - ledger.parse_time(job.text("submitted"))).total_seconds()  # type: ignore[operator]
        for t in tasks
        if t is not None
    )
    assert waits["max"] == starts[-1] and waits["median"] == starts[1]

    # The cluster-optimise figures from sacct's TotalCPU and AllocCPUS, recorded per task: the
    # tasks mostly slept on their one CPU; all three completed between the first start and the
    # last end.
    usage = [(t.alloc_cpus, t.cpu_time_s) for x in job.targets if (t := job.task(x))]
    assert all(cpus == 1 and used is not None and used < 6 for cpus, used in usage), usage
    (found,) = report["efficiency"]
    assert found["cpu_tasks"] == 3 and 0 <= found["cpu_efficiency"] < 0.5, found
    assert found["failure_rate"] == 0.0 and found["gpu_hours"] is None
    begun = [ledger.parse_time(t.started) for t in tasks if t is not None]
    ended = [ledger.parse_time(t.ended) for t in tasks if t is not None]
    span = (max(e for e in ended if e) - min(b for b in begun if b)).total_seconds()
    assert found["throughput_per_hour"] == round(3 / (span / 3600), 1)

    text = life.run("audit", "resources")
    assert text.code == 0
    assert "(low: ask for fewer CPUs)" in text.out
    assert re.search(r"manifests/hold\.yaml\s+smoke\s+mem\s+512M → 128M\s+max RSS", text.out)
    assert "Queue wait (median / max)" in text.out and "Run time (median / max)" in text.out
