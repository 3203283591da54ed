"""campaign audit resources over a campaign's files: groups by manifest, phase and stage, the
requests resolved from the manifests as the runner resolves them, filters and exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from campaignops.learn import resources as audit
from campaignops.learn.rightsizing import Request

PHASED = """\
resources: {time: "10:00:00", mem: 16G}
smoke:
  args: {epochs: 1}
  resources: {time: "01:00:00"}
phases:
  - name: prep
    resources: {mem: 4G}
    jobs: [{id: p0, cmd: "echo"}, {id: p1, cmd: "echo"}, {id: p2, cmd: "echo"}]
  - name: train
    depends_on: prep
    jobs: [{id: t0, cmd: "echo"}, {id: t1, cmd: "echo"}, {id: t2, cmd: "echo"}]
"""


def _job(n: int, manifest: str, stage: str, targets: list[str], rss: str) -> list[dict[str, Any]]:
    lid = f"L{n}"
    tasks = {
        str(i): {
            "state": "COMPLETED",
            "exit_code": 0,
            "started": "2026-11-20T10:00:05Z",
            "run_time_s": 60 + i,
            "max_rss": rss,
            "req_mem": "16G",
        }
        for i in range(len(targets))
    }
    return [
        {
            "v": 1,
            "kind": "intent",
            "ledger_id": lid,
            "time": f"2026-11-20T10:00:0{n}Z",
            "stage": stage,
            "targets": targets,
            "manifest": manifest,
            "backend": "generic-slurm",
        },
        {
            "v": 1,
            "kind": "result",
            "ledger_id": lid,
            "time": "2026-11-20T10:00:01Z",
            "job_id": str(100 + n),
            "submitted": "2026-11-20T10:00:00Z",
            "state": "PENDING",
        },
        {
            "v": 1,
            "kind": "state",
            "ledger_id": lid,
            "time": "2026-11-20T10:09:00Z",
            "state": "COMPLETED",
            "tasks": tasks,
        },
    ]


@pytest.fixture
def campaign(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "camp"
    (root / "manifests").mkdir(parents=True)
    (root / ".campaign").mkdir()
    (root / "campaign.yaml").write_text("name: camp\n")
    (root / "manifests/pipe.yaml").write_text(PHASED)
    (root / "manifests/broken.yaml").write_text("resources: {mem: [not, a, size]}\njobs: []\n")
    records = [
        *_job(1, "manifests/pipe.yaml", "smoke", ["p0", "p1", "p2"], "1G"),
        *_job(2, "manifests/pipe.yaml", "smoke", ["t0", "t1", "t2"], "2G"),
        *_job(3, "manifests/pipe.yaml", "production", ["t0", "t1", "t2"], "3G"),
        *_job(4, "manifests/broken.yaml", "smoke", ["x", "y", "z"], "1G"),
        *_job(5, "manifests/gone.yaml", "smoke", ["x"], "1G"),
    ]
    (root / ".campaign/ledger.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    monkeypatch.chdir(root)
    return root


def test_groups_are_manifest_phase_and_stage_with_each_phases_own_request(campaign: Path) -> None:
    report = audit.resources(root=campaign)
    got = [(s.manifest, s.stage, s.tasks, s.mem_request, s.time_limit) for s in report.stages]
    assert got == [
        # A manifest that does not pass its schema, or is gone: no current request, memory is
        # held to the recorded ReqMem.
        ("manifests/broken.yaml", "smoke", 3, "16G", None),
        ("manifests/gone.yaml", "smoke", 1, "16G", None),
        ("manifests/pipe.yaml#prep", "smoke", 3, "4G", "01:00:00"),
        ("manifests/pipe.yaml#train", "smoke", 3, "16G", "01:00:00"),
        ("manifests/pipe.yaml#train", "production", 3, "16G", "10:00:00"),
    ]
    changes = [
        (r.manifest, r.stage, r.resource, r.current, r.recommended) for r in report.recommendations
    ]
    assert changes == [
        ("manifests/broken.yaml", "smoke", "mem", "16G", "2G"),
        ("manifests/gone.yaml", "smoke", "mem", "16G", None),
        ("manifests/pipe.yaml#prep", "smoke", "mem", "4G", "2G"),
        ("manifests/pipe.yaml#prep", "smoke", "time", "01:00:00", "00:10:00"),
        ("manifests/pipe.yaml#train", "smoke", "mem", "16G", "3G"),
        ("manifests/pipe.yaml#train", "smoke", "time", "01:00:00", "00:10:00"),
        ("manifests/pipe.yaml#train", "production", "mem", "16G", "5G"),
        ("manifests/pipe.yaml#train", "production", "time", "10:00:00", "00:10:00"),
    ]


def test_stage_and_manifest_filters(campaign: Path) -> None:
    only = audit.resources(root=campaign, stage="production")
    assert [(s.manifest, s.stage) for s in only.stages] == [
        ("manifests/pipe.yaml#train", "production")
    ]
    one = audit.resources(root=campaign, manifest_path="manifests/broken.yaml")
    assert [s.manifest for s in one.stages] == ["manifests/broken.yaml"]
    # Known to the ledger though the file is gone: audited.
    gone = audit.resources(root=campaign, manifest_path="manifests/gone.yaml")
    assert [s.manifest for s in gone.stages] == ["manifests/gone.yaml"]
    assert audit.label("manifests/x.yaml", None) == "manifests/x.yaml"
    assert Request() == Request(mem=None, time=None, cpus=None)


def test_cli_formats_and_exit_codes(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    shown = run("audit", "resources", "--stage", "production", "--format", "json")
    assert shown.code == 0, shown.err
    assert json.loads(shown.out) == {
        "schema": "campaignops/audit-resources/v1",
        "recommendations": [
            {
                "manifest": "manifests/pipe.yaml#train",
                "stage": "production",
                "resource": "mem",
                "current": "16G",
                "recommended": "5G",
                "evidence": "max RSS 3G over 3 tasks (19 % of 16G), +50 % headroom",
            },
            {
                "manifest": "manifests/pipe.yaml#train",
                "stage": "production",
                "resource": "time",
                "current": "10:00:00",
                "recommended": "00:10:00",
                "evidence": "longest run 00:01:02 over 3 tasks (<1 % of 10:00:00), "
                "+50 % headroom, floor 00:10:00",
            },
        ],
        "stages": [
            {
                "manifest": "manifests/pipe.yaml#train",
                "stage": "production",
                "tasks": 3,
                "queue_wait_s": {"median": 5.0, "max": 5.0, "count": 3},
                "run_time_s": {"median": 61.0, "max": 62.0, "count": 3},
                "failures": {},
            }
        ],
        # No CPU time, no GPUs, no ends recorded: only the failure rate is known.
        "efficiency": [
            {
                "manifest": "manifests/pipe.yaml#train",
                "stage": "production",
                "cpu_efficiency": None,
                "cpu_tasks": 0,
                "gpu_hours": None,
                "throughput_per_hour": None,
                "failure_rate": 0.0,
                "concurrency": None,
            }
        ],
    }
    text = run("audit", "resources", "--stage", "production")
    assert text.code == 0
    assert text.out == (
        "Manifest                   Stage       Tasks  Queue wait (median / max)  "
        "Run time (median / max)  Time limit  Peak RSS / mem  Failures\n"
        "manifests/pipe.yaml#train  production  3      5s / 5s                    "
        "1m 01s / 1m 02s          10:00:00    3G / 16G        —\n"
        "\n"
        "Manifest                   Stage       CPU efficiency (tasks)  GPU-hours  "
        "Tasks per hour  Failure rate  Array concurrency\n"
        "manifests/pipe.yaml#train  production  —                       —          "
        "—               0 %           —\n"
        "\n"
        "Manifest                   Stage       Resource  Change               Evidence\n"
        "manifests/pipe.yaml#train  production  mem       16G → 5G             "
        "max RSS 3G over 3 tasks (19 % of 16G), +50 % headroom\n"
        "manifests/pipe.yaml#train  production  time      10:00:00 → 00:10:00  "
        "longest run 00:01:02 over 3 tasks (<1 % of 10:00:00), +50 % headroom, floor 00:10:00\n"
    )
    nothing = run("audit", "resources", "--stage", "single")
    assert (nothing.code, nothing.out) == (
        0,
        "no finished task in the ledger matches: nothing to audit\n",
    )
    markdown = run(
        "audit", "resources", "--manifest", "manifests/gone.yaml", "--format", "markdown"
    )
    assert (
        markdown.code == 0 and "| manifests/gone.yaml | smoke | mem | 16G (keep) |" in markdown.out
    )
    unknown = run("audit", "resources", "--manifest", "manifests/nope.yaml")
    assert unknown.code == 2 and "no manifest manifests/nope.yaml" in unknown.err
    with pytest.raises(SystemExit) as bad_stage:
        run("audit", "resources", "--stage", "prod")
    assert bad_stage.value.code == 2


def test_outside_a_campaign_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    out = run("audit", "resources")
    assert out.code == 2 and "no campaign.yaml here or above" in out.err
