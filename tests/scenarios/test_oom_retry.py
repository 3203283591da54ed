"""A task runs out of memory; the manifest's oom_retry submits it again after its delay.

On the local backend, whose executor enforces resources.mem as Slurm does without cgroups (the
task's resident memory, read once a second): a task over its limit is killed and ends
OUT_OF_MEMORY.
"""

from __future__ import annotations

import time

from tests import waiting
from tests.scenarios.conftest import Life

# The first attempt grabs 300 MiB against a 100 MiB limit; a retry (the marker is there) needs
# little. ALWAYS grabs it on every attempt.
HUNGRY = """\
resources: {time: "00:05:00", mem: 100M}
oom_retry: {delay: 1, max_attempts: MAX}
jobs:
  - id: hungry
    cmd: >-
      mkdir -p "$CAMPAIGN_OUT" && python3 -c "import os, sys, time;
      seen = os.path.exists(sys.argv[1]); open(sys.argv[1], 'a').close();
      big = b'x' * (300 << 20) if ALWAYS or not seen else b'';
      time.sleep(30 if big else 0); open(sys.argv[2], 'w').write('done')"
      "$CAMPAIGN_OUT/marker" "$CAMPAIGN_OUT/out.txt"
    output: "${CAMPAIGN_OUT}/out.txt"
"""


def _settled(life: Life, *, jobs: int, timeout: float = 90) -> None:
    """Refresh until ``jobs`` jobs are recorded and every one has ended (the retry included)."""

    def ended() -> bool:
        life.run("status", "--refresh")
        found = life.jobs()
        return len(found) == jobs and all(
            j.state and j.state != "RUNNING" and j.state != "PENDING" for j in found
        )

    waiting.until(lambda: str([dict(j.record) for j in life.jobs()]), ended, timeout=timeout)


def test_an_oom_task_is_retried_after_its_delay_and_then_completes(camp, run) -> None:  # type: ignore[no-untyped-def]
    life = Life(root=camp, backend="local", run=run)
    life.write("manifests/hungry.yaml", HUNGRY.replace("MAX", "2").replace("ALWAYS", "False"))
    assert life.submit("manifests/hungry.yaml", "smoke").code == 0
    # Wait for THIS job: the refresh that records its OUT_OF_MEMORY may submit the retry at
    # once (delay 1 s, a loaded machine), and the newest job is then the retry.
    first = life.wait(life.jobs()[-1].ledger_id)
    task = first.task("hungry")
    assert task is not None and (task.state, task.exit_code) == ("OUT_OF_MEMORY", 137)
    assert (
        "over its memory limit"
        in (camp / ".campaign/local").joinpath(str(first.job_id), "executor.log").read_text()
    )
    _settled(life, jobs=2)
    again = life.jobs()[-1]
    assert (again.state, again.exit_code) == ("COMPLETED", 0)
    assert again.record["attempt"] == 2 and again.record["retry_of"] == [first.ledger_id]
    assert again.targets == ("hungry",) and again.stage == "smoke"
    assert (camp / "runs/smoke/out.txt").read_text() == "done"
    # Nothing left to retry: the chain ended in a success.
    refreshed = life.run("status", "--refresh")
    assert "retried (oom_retry" not in refreshed.err and len(life.jobs()) == 2


def test_retries_stop_at_max_attempts(camp, run) -> None:  # type: ignore[no-untyped-def]
    life = Life(root=camp, backend="local", run=run)
    life.write("manifests/hungry.yaml", HUNGRY.replace("MAX", "2").replace("ALWAYS", "True"))
    assert life.submit("manifests/hungry.yaml", "smoke").code == 0
    life.wait()
    _settled(life, jobs=2)
    states = [(j.state, j.record.get("attempt", 1)) for j in life.jobs()]
    assert states == [("OUT_OF_MEMORY", 1), ("OUT_OF_MEMORY", 2)]
    time.sleep(1.5)  # past the delay: a third attempt would be due now, were one allowed
    refreshed = life.run("status", "--refresh")
    assert len(life.jobs()) == 2 and "retried" not in refreshed.err  # the second was the last


# A task that needs about 130 MiB resident: over a 100M limit, under the 160M a ×1.6 retry asks.
NEEDY = """\
resources: {time: "00:05:00", mem: 100M}
oom_retry: {delay: 1, max_attempts: 2, memory_factor: 1.6}
jobs:
  - id: needy
    cmd: >-
      mkdir -p "$CAMPAIGN_OUT" && python3 -c "import sys, time;
      big = b'x' * (120 << 20); time.sleep(3); open(sys.argv[1], 'w').write('done')"
      "$CAMPAIGN_OUT/needy.txt"
    output: "${CAMPAIGN_OUT}/needy.txt"
"""

# A training run whose first attempt hits a CUDA out-of-memory and exits 1 (a FAILED task that
# status --refresh diagnoses oom-gpu from its log); the retry finds the marker and completes.
CUDA = """\
resources: {time: "00:05:00"}
oom_retry: {delay: 1, max_attempts: 2}
jobs:
  - id: cuda
    cmd: >-
      mkdir -p "$CAMPAIGN_OUT" && if [ -e "$CAMPAIGN_OUT/tried" ]; then echo done >
      "$CAMPAIGN_OUT/cuda.txt"; else touch "$CAMPAIGN_OUT/tried"; echo "torch.OutOfMemoryError:
      CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.77 GiB total capacity)" >&2;
      exit 1; fi
    output: "${CAMPAIGN_OUT}/cuda.txt"
"""


def test_a_host_oom_is_retried_with_the_memory_raised_by_the_factor(camp, run) -> None:  # type: ignore[no-untyped-def]
    life = Life(root=camp, backend="local", run=run)
    life.write("manifests/needy.yaml", NEEDY)
    assert life.submit("manifests/needy.yaml", "smoke").code == 0
    first = life.wait(life.jobs()[-1].ledger_id)
    assert first.state == "OUT_OF_MEMORY"
    _settled(life, jobs=2)
    again = life.jobs()[-1]
    # The retry asked for 1.6 × 100M, in its script and in the ledger, and that was enough.
    assert again.record["resources"] == {"mem": "160M"}
    script = (camp / ".campaign/jobs" / f"{again.ledger_id}.sh").read_text()
    assert "--mem=160M" in script and "--mem=100M" not in script
    assert (again.state, again.record["attempt"]) == ("COMPLETED", 2)
    assert again.record["retry_of"] == [first.ledger_id]


def test_a_cuda_oom_in_the_log_is_retried_on_plain_local(camp, run) -> None:  # type: ignore[no-untyped-def]
    life = Life(root=camp, backend="local", run=run)
    life.write("manifests/cuda.yaml", CUDA)
    assert life.submit("manifests/cuda.yaml", "smoke").code == 0
    first = life.wait(life.jobs()[-1].ledger_id)
    task = first.task("cuda")
    assert task is not None and (task.state, task.category) == ("FAILED", "oom-gpu")
    _settled(life, jobs=2)
    again = life.jobs()[-1]
    assert (again.state, again.record["attempt"]) == ("COMPLETED", 2)
    assert again.record["retry_of"] == [first.ledger_id]
    assert "resources" not in again.record  # no mem asked: nothing to raise or record
    assert (camp / "runs/smoke/cuda.txt").read_text().strip() == "done"
