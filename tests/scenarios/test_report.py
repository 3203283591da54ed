"""`campaign report`: the experiment-queue's summary matches the ledger, for a campaign with a
completed, a failed, an OOM-retried and a stuck task (issue 19, gap 3), on the local backend.

The local executor enforces resources.mem (a task over it ends OUT_OF_MEMORY, as in
test_oom_retry.py); a CUDA OOM message is the catalog's cuda-oom (test_diagnose.py), which
oom_retry retries like a host OOM, so a GPU OOM twice is stuck (its attempts spent); a missing
module is a diagnosed failure (failed); an error no catalog entry knows is the seed's
failed_other, so the target is stuck.
"""

from __future__ import annotations

import json
from importlib import resources

import jsonschema

from tests import waiting
from tests.scenarios.conftest import Life

MANIFEST = """\
resources: {time: "00:05:00", mem: 100M}
oom_retry: {delay: 1, max_attempts: 2}
jobs:
  - id: fine
    cmd: mkdir -p "$CAMPAIGN_OUT" && echo done > "$CAMPAIGN_OUT/fine.txt"
    output: "${CAMPAIGN_OUT}/fine.txt"
  - id: hungry
    cmd: >-
      mkdir -p "$CAMPAIGN_OUT" && python3 -c "import os, sys, time;
      seen = os.path.exists(sys.argv[1]); open(sys.argv[1], 'a').close();
      big = b'x' * (300 << 20) if not seen else b'';
      time.sleep(30 if big else 0); open(sys.argv[2], 'w').write('done')"
      "$CAMPAIGN_OUT/marker" "$CAMPAIGN_OUT/hungry.txt"
    output: "${CAMPAIGN_OUT}/hungry.txt"
  - id: gpu
    cmd: >-
      python3 -c "import sys; sys.exit('torch.OutOfMemoryError: CUDA out of memory. Tried to
      allocate 2.00 GiB. GPU 0 has a total capacity of 15.77 GiB of which 1.02 GiB is free.')"
    output: "${CAMPAIGN_OUT}/gpu.txt"
  - id: env
    cmd: >-
      python3 -c "import sys; sys.exit('ModuleNotFoundError: No module named llmflux')"
    output: "${CAMPAIGN_OUT}/env.txt"
  - id: odd
    cmd: >-
      python3 -c "import sys; sys.exit('ValueError: shape (3, 4) vs (4, 5)')"
    output: "${CAMPAIGN_OUT}/odd.txt"
"""


def _settled(life: Life, *, jobs: int, timeout: float = 120) -> None:
    """Refresh until ``jobs`` jobs are recorded and every one has ended (the retry included)."""

    def ended() -> bool:
        life.run("status", "--refresh")
        found = life.jobs()
        return len(found) == jobs and all(
            j.state and j.state not in ("RUNNING", "PENDING") for j in found
        )

    waiting.until(lambda: str([dict(j.record) for j in life.jobs()]), ended, timeout=timeout)


def test_report_matches_the_ledger(camp, run) -> None:  # type: ignore[no-untyped-def]
    life = Life(root=camp, backend="local", run=run)
    life.write("manifests/mixed.yaml", MANIFEST)
    assert life.submit("manifests/mixed.yaml", "smoke").code == 0
    _settled(life, jobs=3)
    first, *retries = life.jobs()
    retry, gpu = sorted(retries, key=lambda j: j.targets != ("hungry",))
    assert retry.record["attempt"] == 2 and retry.targets == ("hungry",)
    assert gpu.record["attempt"] == 2 and gpu.targets == ("gpu",)

    told = life.run("report", "--format", "json")
    assert told.code == 0, told.err
    doc = json.loads(told.out)
    schema = json.loads(
        resources.files("campaignops.schemas")
        .joinpath("output/report.v1.schema.json")
        .read_text(encoding="utf-8")
    )
    jsonschema.Draft202012Validator(schema).validate(doc)
    assert doc["schema"] == "campaignops/report/v1"
    assert doc["counts"] == {
        "completed": 1,
        "oom-retried": 1,
        "failed": 1,
        "stuck": 2,
        "cancelled": 0,
        "running": 0,
    }
    (group,) = doc["groups"]
    assert (group["manifest"], group["phase"], group["stage"]) == (
        "manifests/mixed.yaml",
        None,
        "smoke",
    )
    by = {t["target"]: t for t in group["targets"]}
    assert {n: (t["outcome"], t["attempts"]) for n, t in by.items()} == {
        "fine": ("completed", 1),
        "hungry": ("oom-retried", 2),
        "gpu": ("stuck", 2),
        "env": ("failed", 1),
        "odd": ("stuck", 1),
    }
    # The diagnoses are those status --refresh recorded, and each row is its ledger task.
    assert by["gpu"]["last"]["diagnosis"] == "oom-gpu (cuda-oom)"
    assert by["gpu"]["stuck"] == "oom_retry: all 2 attempts ran out of memory"
    assert by["env"]["last"]["diagnosis"].startswith("environment") and by["env"]["stuck"] is None
    assert by["odd"]["last"]["diagnosis"] == "unknown"
    assert by["odd"]["stuck"].startswith("failed_other")
    for target, job in (("fine", first), ("gpu", gpu), ("odd", first), ("hungry", retry)):
        task = job.task(target)
        assert task is not None
        last = by[target]["last"]
        assert (last["state"], last["exit_code"]) == (task.state, task.exit_code)
        assert last["job"] == f"{job.job_id}_{job.index_of(target)}" or last["job"] == job.job_id
    oom = [a for a in group["attempts"] if a["target"] == "hungry"]
    assert [(a["attempt"], a["state"]) for a in oom] == [
        (1, "OUT_OF_MEMORY"),
        (2, "COMPLETED"),
    ]
    assert len(group["attempts"]) == 7 and group["tasks"] == 5
    # Started, finished and wall-clock are the ledger's first submission and last end.
    ends = [t.ended for j in (first, *retries) for x in j.targets if (t := j.task(x)) and t.ended]
    assert group["finished"] is not None and group["finished"][:19] == max(ends)[:19]
    assert group["wall_clock_s"] is not None and group["wall_clock_s"] > 0
    assert group["cost"] == []  # the local backend's page has no charging model

    unknown = life.run("report", "--manifest", "manifests/nope.yaml")
    assert unknown.code == 2 and "no manifest manifests/nope.yaml" in unknown.err
    text = life.run("report")
    assert text.code == 0 and "1 completed, 1 OOM-retried then completed" in text.out
    assert "failed_other" in text.out and "oom-gpu (cuda-oom)" in text.out

    written = life.run("report", "--write", "--format", "markdown")
    assert written.code == 0, written.err
    report = (camp / "reports/mixed-smoke.md").read_text(encoding="utf-8")
    assert "**Tasks**: 1 completed, 1 OOM-retried then completed, 1 failed, 2 stuck" in report
    assert "![Per task: queue wait and run time" in report and "(mixed-smoke.svg)" in report
    picture = (camp / "reports/mixed-smoke.svg").read_text(encoding="utf-8")
    assert (
        picture.startswith("<svg ") and picture.count("✕") == 6
    )  # the legend and five failed attempts
    assert "- [mixed-smoke](reports/mixed-smoke.md)" in (camp / "STATUS.md").read_text()
    # Written once more from the same ledger: the same bytes; the views stay in sync.
    assert life.run("report", "--write").code == 0
    assert (camp / "reports/mixed-smoke.svg").read_text(encoding="utf-8") == picture
    assert life.run("check", "--select", "VIEW").code == 0
