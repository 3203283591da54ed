"""The one retry rule on the real Slurm cluster (the local version: test_oom_retry.py).

One submission of three targets, each of which fails its first attempt(s) in a way oom_retry
retries; `campaign status --refresh` (sacct for the states, the task's own log for the
diagnosis) submits the retries through every gate:

- ``host`` grabs 300 MiB against ``mem: 100M``. With cgroup v1 on the test machine (slurmd's
  task/cgroup) the kernel's OOM killer ends it and sacct says OUT_OF_MEMORY, as on a real
  cluster. Without it (proctrack/linuxproc) Slurm's own kill would read as FAILED 137, so the
  task prints slurmstepd's line instead (the one the diagnosis catalog's ``slurm-oom-kill``
  reads, tests/data/diagnose/errors_scheduler.yaml) and exits 1. Its retry asks
  ``memory_factor`` (3) × 100M = 300M, capped by the page's ``mem_per_node`` for the partition
  (250M): the intent, the script and sacct's ReqMem all say 250M.
- ``gpu`` prints a CUDA out-of-memory error and exits 1 (no GPU here): diagnosed ``oom-gpu``,
  retried with the same memory.
- ``preempted``: the test cluster has one node and no PreemptType, so nothing can really preempt
  a job; the task prints slurmstepd's PREEMPTION banner (what a preempted job's log ends with,
  failures.yaml ``slurm-preempted``) and exits 1, three times. Each is requeued; the fourth
  attempt passes the breaker (three failures with one signature would trip it) and completes.

Five sbatch submissions in all (the first, two at attempt 2, then attempts 3 and 4).
"""

from __future__ import annotations

import subprocess

import pytest

from tests import waiting
from tests.scenarios.conftest import Life

pytestmark = pytest.mark.slurm

MANIFEST = """\
resources: {time: "00:05:00", mem: 100M, partition: debug}
oom_retry: {delay: 0, max_attempts: 4, memory_factor: 3}
jobs:
  - {id: host, cmd: "bash scripts/flaky.v1.sh host"}
  - {id: gpu, cmd: "bash scripts/flaky.v1.sh gpu"}
  - {id: preempted, cmd: "bash scripts/flaky.v1.sh preempted"}
"""

# Per target, a file counts its attempts (the campaign's directory is the cluster's shared
# filesystem here); each kind fails until its attempt is past FAILS.
FLAKY = """\
set -u
kind=$1
mkdir -p "$CAMPAIGN_OUT"
count="$CAMPAIGN_OUT/$kind.attempts"
echo x >>"$count"
tried=$(wc -l <"$count")
case $kind in
  host) fails=1 ;;
  gpu) fails=1 ;;
  preempted) fails=3 ;;
esac
if [ "$tried" -gt "$fails" ]; then echo done >"$CAMPAIGN_OUT/$kind.txt"; exit 0; fi
case $kind in
  host) HOST_OOM ;;
  gpu)
    echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0;" \\
      "15.77 GiB total capacity)" >&2
    exit 1 ;;
  preempted)
    echo "slurmstepd: error: *** JOB ${SLURM_JOB_ID} ON $(hostname)" \\
      "CANCELLED AT $(date +%Y-%m-%dT%H:%M:%S) DUE TO PREEMPTION ***" >&2
    exit 1 ;;
esac
"""
REAL_OOM = "python3 -c \"import time; big = b'x' * (300 << 20); time.sleep(30)\""
PRINTED_OOM = (
    'echo "slurmstepd: error: Detected 1 oom-kill event(s) in step ${SLURM_JOB_ID}.batch'
    ' cgroup." >&2; exit 1'
)


def _page_caps_debug(life: Life, mem: str) -> None:
    page = life.root / "backends/generic-slurm.md"
    text = page.read_text()
    row = "  - {name: debug, purpose: smoke}"
    assert row in text
    life.write(
        "backends/generic-slurm.md",
        text.replace(row, "  - {name: debug, purpose: smoke, mem_per_node: " + mem + "}"),
        commit=False,
    )


def _attempts(life: Life, target: str) -> list[tuple[int, str | None]]:
    """(attempt, the target's task state) of each job that ran ``target``, oldest first."""
    out = []
    for job in life.jobs():
        task = job.task(target) if target in job.targets else None
        if task is not None:
            out.append((int(job.record.get("attempt", 1)), task.state))
    return out


def test_the_retry_rule_on_slurm(camp, run, slurm_cluster) -> None:  # type: ignore[no-untyped-def]
    life = Life(root=camp, backend="generic-slurm", run=run)
    _page_caps_debug(life, "250M")
    oom = REAL_OOM if slurm_cluster.cgroups else PRINTED_OOM
    life.write("scripts/flaky.v1.sh", FLAKY.replace("HOST_OOM", oom), commit=False)
    life.write("manifests/flaky.yaml", MANIFEST)
    said: list[str] = []  # every refresh's stderr: the retries and any gate's refusal
    try:
        first = life.submit("manifests/flaky.yaml", "smoke")
        assert first.code == 0, first.err
        first_id = life.jobs()[-1].ledger_id

        def done() -> bool:
            said.append(life.run("status", "--refresh").err)
            return all(
                (life.root / "runs/smoke" / f"{t}.txt").exists()
                and _attempts(life, t)[-1][1] == "COMPLETED"
                for t in ("host", "gpu", "preempted")
            )

        waiting.until(lambda: str([dict(j.record) for j in life.jobs()]), done, timeout=240)
    finally:
        for j in life.jobs():
            if j.job_id:
                subprocess.run(["scancel", j.job_id], check=False)
    jobs = life.jobs()
    (host1,) = [j for j in jobs if j.ledger_id == first_id]
    host_task = host1.task("host")
    assert host_task is not None
    if slurm_cluster.cgroups:
        assert host_task.state == "OUT_OF_MEMORY"
    assert host_task.category == "oom-host"
    # (a) host OOM: attempt 2 asked memory_factor × 100M, capped by the page at 250M.
    (host2,) = [j for j in jobs if "host" in j.targets and j.record.get("attempt") == 2]
    assert host2.record["retry_of"] == [first_id]
    assert host2.record["resources"] == {"mem": "250M"}
    script = (life.root / ".campaign/jobs" / f"{host2.ledger_id}.sh").read_text()
    assert "--mem=250M" in script and "--mem=100M" not in script
    req = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-j", str(host2.job_id), "--format=ReqMem"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert req and req[0].startswith("250M"), req
    # (b) GPU OOM: diagnosed from the log, attempt 2 with the same memory.
    gpu_task = host1.task("gpu")
    assert gpu_task is not None and gpu_task.category == "oom-gpu"
    (gpu2,) = [j for j in jobs if "gpu" in j.targets and j.record.get("attempt") == 2]
    assert gpu2.record["resources"] == {"mem": "100M"} and gpu2.record["retry_of"] == [first_id]
    # (c) preemption: requeued three times; the breaker never counted them, so attempt 4 ran.
    assert [a for a, _ in _attempts(life, "preempted")] == [1, 2, 3, 4]
    assert _attempts(life, "preempted")[-1][1] == "COMPLETED"
    for j in jobs:
        task = j.task("preempted")
        if task is not None and task.state != "COMPLETED":
            assert task.category == "preempted"
    # No gate refused a retry on the way (the breaker included), and nothing is left to retry.
    assert not [line for err in said for line in err.splitlines() if "refused" in line], said
    assert sum("memory ×3" in err for err in said) == 1  # the host OOM's retry, said once
    again = life.run("status", "--refresh")
    assert "retried" not in again.err and len(life.jobs()) == len(jobs)
