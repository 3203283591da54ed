"""campaign report's rules on hand-made ledgers: outcomes (the breaker's and oom_retry's stuck
included), times, costs, and the picture's bytes."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import jsonschema

from campaignops.learn import summary_files, summary_render, summary_svg
from campaignops.learn.summary import Summary, summarize
from campaignops.model import ledger
from campaignops.runner import retry

M = "manifests/t.yaml"


def _jobs(*records: dict[str, Any]) -> tuple[ledger.Job, ...]:
    return ledger.parse("\n".join(json.dumps(r) for r in records)).jobs


def _job(n: int, target: str, state: str, **more: Any) -> dict[str, Any]:
    """Job ``n`` of one target at smoke, submitted at minute n, started a minute later and
    ended two minutes after that."""
    return {
        "ledger_id": f"L{n}",
        "job_id": str(100 + n),
        "manifest": M,
        "stage": "smoke",
        "targets": [target],
        "submitted": f"2026-11-21T10:{n:02d}:00Z",
        "started": f"2026-11-21T10:{n + 1:02d}:00Z",
        "ended": f"2026-11-21T10:{n + 3:02d}:00Z",
        "state": state,
        "exit_code": 0 if state == "COMPLETED" else 1,
        **more,
    }


def _summary(*records: dict[str, Any], policy: retry.Policy | None = None) -> Summary:
    jobs = _jobs(*records)
    return summarize(
        jobs, everything=jobs, phase_of=lambda path, target: None, policy_of=lambda path: policy
    )


def _outcomes(found: Summary) -> dict[str, tuple[str, int, str | None]]:
    return {t.target: (t.outcome, t.attempts, t.stuck) for g in found.groups for t in g.targets}


CRASH = {"signature": "FAILED:1 KeyError", "diagnosis": {"entry": None, "category": "environment"}}


def test_three_same_signature_failures_are_stuck_by_the_breaker() -> None:
    found = _summary(*(_job(n, "t", "FAILED", **CRASH) for n in (0, 5, 10)))
    assert _outcomes(found) == {"t": ("stuck", 3, "breaker: FAILED:1 KeyError, 3 times in a row")}
    two = _summary(*(_job(n, "t", "FAILED", **CRASH) for n in (0, 5)))
    assert _outcomes(two) == {"t": ("failed", 2, None)}  # a diagnosed failure, retry may do


def test_oom_retries_spent_are_stuck_and_an_oom_then_success_is_oom_retried() -> None:
    policy = retry.Policy(max_attempts=2, delay_s=0)
    oom = {"diagnosis": {"entry": None, "category": "oom-host"}}
    spent = _summary(
        _job(0, "a", "OUT_OF_MEMORY", **oom),
        _job(5, "a", "OUT_OF_MEMORY", attempt=2, **oom),
        policy=policy,
    )
    assert _outcomes(spent) == {"a": ("stuck", 2, "oom_retry: all 2 attempts ran out of memory")}
    due = _summary(_job(0, "a", "OUT_OF_MEMORY", **oom), policy=policy)
    assert _outcomes(due) == {"a": ("failed", 1, None)}  # its retry is still to come
    healed = _summary(
        _job(0, "a", "OUT_OF_MEMORY", **oom), _job(5, "a", "COMPLETED", attempt=2), policy=policy
    )
    assert _outcomes(healed) == {"a": ("oom-retried", 2, None)}
    gpu = {"diagnosis": {"entry": "cuda-oom", "category": "oom-gpu"}}
    fixed = _summary(_job(0, "a", "FAILED", **gpu), _job(5, "a", "COMPLETED"))
    assert _outcomes(fixed) == {"a": ("oom-retried", 2, None)}  # a GPU OOM, then a fix
    # oom_retry retries a GPU OOM too: once its attempts are spent, the target is stuck.
    gpu_spent = _summary(
        _job(0, "a", "FAILED", **gpu), _job(5, "a", "FAILED", attempt=2, **gpu), policy=policy
    )
    assert _outcomes(gpu_spent) == {
        "a": ("stuck", 2, "oom_retry: all 2 attempts ran out of memory")
    }


def test_running_cancelled_and_refused_submissions() -> None:
    live = _job(0, "a", "RUNNING")
    del live["ended"]
    refused = {"ledger_id": "R", "manifest": M, "stage": "smoke", "targets": ["b"], "error": "x"}
    found = _summary(live, _job(1, "c", "CANCELLED"), refused)
    assert _outcomes(found) == {"a": ("running", 1, None), "c": ("cancelled", 1, None)}
    (group,) = found.groups
    assert group.finished is None and group.wall_clock_s is None  # still running


def test_times_and_costs_come_from_the_ledger() -> None:
    charge = {"charge": {"unit": "usd", "rate": 2.0, "time_s": 3600}}
    found = _summary(
        _job(0, "a", "COMPLETED", run_time_s=120, **charge),
        _job(5, "b", "COMPLETED", run_time_s=120, **charge),
    )
    (group,) = found.groups
    assert summary_render.when(group.submitted) == "2026-11-21T10:00:00Z"
    assert summary_render.when(group.started) == "2026-11-21T10:01:00Z"
    assert summary_render.when(group.finished) == "2026-11-21T10:08:00Z"
    assert group.wall_clock_s == 480
    assert (group.queue_wait.median, group.queue_wait.max) == (60, 60)
    assert [(c.unit, round(c.used, 6), c.reserved) for c in group.costs] == [("usd", 0.133333, 0)]
    assert [a.cost for a in group.attempts] == [2.0 * 120 / 3600] * 2


def test_the_json_validates_and_the_picture_is_the_same_bytes_each_time() -> None:
    found = _summary(
        _job(0, "a", "COMPLETED", charge={"unit": "usd", "rate": 1.0, "time_s": 600}),
        _job(2, "b", "FAILED", **CRASH),
    )
    schema = json.loads(
        resources.files("campaignops.schemas").joinpath("output/report.v1.schema.json").read_text()
    )
    jsonschema.Draft202012Validator(schema).validate(summary_render.to_json(found))
    first = summary_svg.svg(found.groups, title="T <&>")
    assert first == summary_svg.svg(found.groups, title="T <&>")
    assert first.startswith('<svg xmlns="http://www.w3.org/2000/svg"') and first.endswith(
        "</svg>\n"
    )
    ElementTree.fromstring(first)  # well-formed: a repeated attribute is not
    assert "T &lt;&amp;&gt;" in first and first.count("✕") == 2  # legend, the failed attempt
    assert "0.03 USD" in first  # the cost line's total: 1 USD/h for 2 minutes


def test_write_adds_the_reports_section_once_and_links_each_report(tmp_path: Path) -> None:
    (tmp_path / "STATUS.md").write_text("# Status\n\nMine.\n", encoding="utf-8")
    found = _summary(_job(0, "a", "COMPLETED"), _job(1, "b", "FAILED", **CRASH))
    written = summary_files.write(root=tmp_path, summary=found)
    assert written == ["reports/t-smoke.md", "reports/t-smoke.svg"]
    status = (tmp_path / "STATUS.md").read_text(encoding="utf-8")
    assert status.startswith("# Status\n\nMine.\n\n## Reports\n")
    assert "\n- [t-smoke](reports/t-smoke.md)\n" in status
    report = (tmp_path / "reports/t-smoke.md").read_text(encoding="utf-8")
    assert report.startswith("# Campaign report: manifests/t.yaml, smoke\n")
    assert "**Tasks**: 1 completed, 1 failed, 0 stuck" in report
    summary_files.write(root=tmp_path, summary=found)
    assert (tmp_path / "STATUS.md").read_text(encoding="utf-8") == status  # once
    assert summary_files.stem("manifests/a/b.yaml", "single") == "a-b-single"
    assert summary_files.stem("other/x.yaml", "smoke") == "other-x-smoke"
