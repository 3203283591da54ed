"""Stories on the real Grid Engine cell (dev/gridengine_cell.py): a campaign from
``campaign new … backends=generic-gridengine,local smoke_backend=generic-gridengine`` submits
with real qsub, learns each task's end from real qstat -xml and qacct, cancels with real qdel.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from campaignops.model import ledger
from tests.scenarios.conftest import Life

pytestmark = pytest.mark.gridengine

BACKEND = "generic-gridengine"

FAILING = """\
backend: generic-gridengine
resources: {time: "00:05:00", mem: 200M}
jobs:
  - {id: good, cmd: "true"}
  - {id: bad, cmd: "python3 -c 'import campaignops_no_such_module'"}
"""

PHASES = """\
backend: generic-gridengine
resources: {{time: "00:05:00", mem: 200M}}
phases:
  - name: a
    jobs:
      - {{id: a1, cmd: "true"}}
      - {{id: a2, cmd: {a2}}}
  - name: b
    depends_on: a
    jobs:
      - id: b1
        cmd: mkdir -p "$CAMPAIGN_OUT" && touch "$CAMPAIGN_OUT/b1-ran"
"""

PAIR = """\
backend: generic-gridengine
resources: {time: "00:10:00", mem: 200M}
max_parallel: 2
jobs:
  - {id: slow, cmd: "sleep 300"}
  - {id: other, cmd: "sleep 300"}
  - {id: third, cmd: "sleep 300"}
  - {id: waiting, cmd: "sleep 300"}
"""

# Each task holds 300 MiB for 8 s: the execd samples its vmem (maxvmem) while it runs. A 4 s
# hold once left one task's maxvmem at 286159 KiB, below the array, on a loaded machine.
HEAVY = """\
backend: generic-gridengine
resources: {time: "00:05:00", mem: 4G}
max_parallel: 3
jobs:
  - {id: h1, cmd: "python3 -c 'import time; b = bytearray(300 << 20); time.sleep(8)'"}
  - {id: h2, cmd: "python3 -c 'import time; b = bytearray(300 << 20); time.sleep(8)'"}
  - {id: h3, cmd: "python3 -c 'import time; b = bytearray(300 << 20); time.sleep(8)'"}
"""


@pytest.fixture
def sge(new_campaign: Callable[..., Path], run: Any, gridengine_cell: Any) -> Life:
    root = new_campaign(
        "sge", f"backends={BACKEND},local", f"smoke_backend={BACKEND}", "require_pushed=no"
    )
    return Life(root=root, backend=BACKEND, run=run)


def _until(
    life: Life, ok: Callable[[ledger.Job], bool], what: str, timeout: float = 90
) -> ledger.Job:
    deadline = time.monotonic() + timeout
    while True:
        assert life.run("status", "--refresh").code == 0
        job = life.jobs()[-1]
        if ok(job):
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not seen within {timeout} s: {dict(job.record)}")
        time.sleep(0.5)


def test_the_example_smoke_completes_with_its_own_ids_then_production_is_allowed(
    sge: Life,
) -> None:
    early = sge.submit("manifests/example.yaml", "production")
    assert early.code == 1 and "smoke_first" in early.out + early.err
    assert sge.submit("manifests/example.yaml", "smoke").code == 0
    job = sge.wait(timeout=90)
    assert job.state == "COMPLETED" and job.job_id and job.job_id.isdigit()
    status = (sge.root / "STATUS.md").read_text()
    for index in range(4):
        assert f"COMPLETED ({job.job_id} task {index})" in status
        log = sge.root / "logs" / f"sge.example.smoke.o{job.job_id}.{index + 1}"
        assert log.is_file()
    later = sge.submit("manifests/example.yaml", "production")
    assert later.code == 0, later.err
    prod = sge.wait(timeout=120)
    assert prod.state == "COMPLETED" and prod.job_id != job.job_id


def test_a_failing_cell_is_failed_with_its_diagnosis(sge: Life) -> None:
    sge.write("manifests/failing.yaml", FAILING)
    assert sge.submit("manifests/failing.yaml", "smoke").code == 0
    job = sge.wait(timeout=90)
    good, bad = job.task("good"), job.task("bad")
    assert good is not None and good.state == "COMPLETED"
    assert bad is not None and bad.state == "FAILED" and bad.exit_code == 1
    entry = job.record["tasks"]["1"]["diagnosis"]["entry"]
    assert entry == "python-module-not-found", job.record["tasks"]["1"]
    shown = sge.run("diagnose", f"{job.job_id}_1")
    assert entry in shown.out + shown.err, shown


@pytest.mark.parametrize("parent_ok", [True, False], ids=["parent-ok", "parent-failed"])
def test_the_child_phase_starts_only_after_a_successful_parent(sge: Life, parent_ok: bool) -> None:
    sge.write("manifests/phases.yaml", PHASES.format(a2=repr("true" if parent_ok else "exit 3")))
    sub = sge.run("submit", "manifests/phases.yaml", "--stage", "smoke")
    assert sub.code == 0, sub.err
    # Both submitted within a second: the ledger ids' order is not the phases' order.
    named = {j.text("name"): j for j in sge.jobs()}
    a, b = named["sge.a.smoke"], named["sge.b1.smoke"]
    assert b.record["after"] == [a.job_id]
    child = sge.wait(b.ledger_id, timeout=120)
    parent = ledger.read(sge.root).by_id[a.ledger_id]
    ran = sge.root / "runs" / "smoke" / "b1-ran"
    if parent_ok:
        assert parent.state == "COMPLETED" and child.state == "COMPLETED" and ran.exists()
        return
    assert parent.state == "FAILED"
    assert child.state == "FAILED" and child.record["exit_code"] == 95
    assert not ran.exists()  # the child's task never started
    log = (sge.root / "logs" / f"sge.b1.smoke.o{child.job_id}").read_text()
    assert f"campaign: afterok: parent job {a.job_id} task 2 ended with 3" in log
    assert child.record["diagnosis"]["entry"] == "gridengine-afterok-parent-failed"


def test_cancel_one_target_then_the_whole_job(sge: Life) -> None:
    sge.write("manifests/pair.yaml", PAIR)
    assert sge.submit("manifests/pair.yaml", "smoke").code == 0
    job = _until(
        sge,
        lambda j: all(
            (t := j.task(x)) is not None and t.state == "RUNNING" for x in ("slow", "other")
        ),
        "both tasks running",
    )
    one = sge.run("cancel", str(job.job_id), "--targets", "other")
    assert one.code == 0, one.err
    job = _until(
        sge,
        lambda j: (t := j.task("other")) is not None and t.state == "CANCELLED",
        "other cancelled",
    )
    assert job.record["cancel_ids"] == [f"{job.job_id}.2"]
    slow = job.task("slow")
    assert slow is not None and slow.state == "RUNNING"
    waiting = job.task("waiting")
    # -tc 2: third took other's place, waiting never started
    assert waiting is not None and waiting.state == "PENDING"
    assert sge.run("cancel", str(job.job_id)).code == 0
    job = _until(sge, lambda j: j.state == "CANCELLED", "the job cancelled")
    # qdel of a waiting task leaves no qacct record: qstat -s z and its missing log say so
    waiting = job.task("waiting")
    assert waiting is not None and waiting.state == "CANCELLED"


def test_audit_resources_recommends_memory_from_maxvmem(sge: Life) -> None:
    sge.write("manifests/heavy.yaml", HEAVY)
    assert sge.submit("manifests/heavy.yaml", "smoke").code == 0
    job = sge.wait(timeout=120)
    assert job.state == "COMPLETED"
    peaks = [int(str(t["max_rss"])[:-1]) for t in job.record["tasks"].values()]
    assert all(p > 300 * 1024 for p in peaks), peaks  # maxvmem, in KiB
    audit = sge.run("audit", "resources")
    assert audit.code in (0, 1), audit.err
    line = next(x for x in audit.out.splitlines() if "heavy" in x and " mem " in x)
    # maxvmem ~311M over 3 tasks, +50 % headroom: seen as "4G → 512M"
    assert "4G → " in line and "over 3 tasks" in line, audit.out


def test_a_dry_run_without_a_reachable_qmaster_says_no_sibling_was_not_checked(
    sge: Life, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("SGE_ROOT", "SGE_CELL", "SGE_QMASTER_PORT", "SGE_EXECD_PORT"):
        monkeypatch.delenv(name, raising=False)
    dry = sge.submit("manifests/example.yaml", "smoke", "--dry-run")
    # The script is shown; the exit says a real submit from here would fail to reach qsub.
    assert dry.code == 2 and "nothing submitted" in dry.out, dry.out + dry.err
    assert "no_sibling   pass   not checked" in dry.out
    assert "#$ -t 1-4" in dry.out


# slowpoke outlives h_rt; hog's four processes of 150 MB pass h_vmem=400M together (the execd
# kills the job: failed 37), while each alone stays under the address-space limit.
KILLED = """\
backend: generic-gridengine
resources: {time: "00:00:05", mem: 400M}
jobs:
  - {id: slowpoke, cmd: "sleep 60"}
  - id: hog
    cmd: >-
      bash -c 'for i in 1 2 3 4; do python3 -c "import time; b = bytearray(150 << 20);
      time.sleep(20)" & done; wait'
"""


def test_h_rt_and_h_vmem_kills_are_timeout_and_out_of_memory(sge: Life) -> None:
    sge.write("manifests/killed.yaml", KILLED)
    assert sge.submit("manifests/killed.yaml", "smoke").code == 0
    job = sge.wait(timeout=90)
    slowpoke, hog = job.record["tasks"]["0"], job.record["tasks"]["1"]
    assert (slowpoke["state"], slowpoke["exit_code"]) == ("TIMEOUT", 137), slowpoke
    assert slowpoke["diagnosis"]["category"] == "timeout"
    assert (hog["state"], hog["exit_code"]) == ("OUT_OF_MEMORY", 137), hog
    assert hog["diagnosis"]["category"] == "oom-host"
    assert job.state == "TIMEOUT"  # the worse of the two (spec.WORST_FIRST)
