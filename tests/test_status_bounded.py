"""Views that stay readable as the jobs pile up (issue 22): STATUS.md and `campaign status` list
the live jobs and the last ``status.recent_jobs`` finished ones, newest first (job ids read
naturally), and count the rest; ``--all``, ``--since``, ``--stage`` and JSON reach the others."""

from __future__ import annotations

import json
from pathlib import Path

from campaignops.core import schema
from campaignops.model import policy
from tests.test_views import block

FINISHED = 60


def record(**fields: object) -> str:
    return json.dumps({"v": 1} | fields)


def job(n: int, *, job_id: str, stage: str, state: str, minute: int) -> list[str]:
    lid = f"L-{n:06d}"
    when = f"2026-11-01T{10 + minute // 60:02d}:{minute % 60:02d}:00Z"
    return [
        record(
            kind="intent",
            ledger_id=lid,
            time=when,
            backend="local",
            stage=stage,
            targets=[f"t{n % 4}"],
            fingerprint="sha256:" + "a" * 64,
            commit="0123456789abcdef0123456789abcdef01234567",
            manifest="manifests/smoke.yaml",
        ),
        record(kind="result", ledger_id=lid, time=when, job_id=job_id, submitted=when),
        record(kind="state", ledger_id=lid, time=when, state=state, exit_code=0),
    ]


def history() -> list[str]:
    """Two live jobs submitted first (old enough to fall out of any recent list), then 60
    finished ones a minute apart, the last FAILED; old9 and old10 in the same second."""
    lines = job(0, job_id="live1", stage="production", state="RUNNING", minute=0)
    lines += job(1, job_id="live2", stage="single", state="PENDING", minute=0)
    for n in range(2, FINISHED + 2):
        state = "FAILED" if n == FINISHED + 1 else "COMPLETED"
        minute = 10 if n in (9, 10) else n
        lines += job(n, job_id=f"old{n}", stage="smoke", state=state, minute=minute)
    return lines


def write(root: Path, recent: int | None) -> None:
    (root / ".campaign" / "ledger.jsonl").write_text("\n".join(history()) + "\n")
    if recent is not None:
        policy = root / "campaign.yaml"
        policy.write_text(policy.read_text() + f"status:\n  recent_jobs: {recent}\n")


def ids(lines: list[str]) -> list[str]:
    return [line.split("|")[1].strip() for line in lines if line.startswith("| ")][2:]


def test_status_md_lists_the_live_and_the_recent_finished_newest_first_and_counts_the_rest(
    campaign: Path, run
) -> None:  # type: ignore[no-untyped-def]
    write(campaign, recent=5)
    assert run("render").code == 0
    shown = block(campaign / "STATUS.md", "jobs").strip().splitlines()
    assert ids(shown) == ["old61", "old60", "old59", "old58", "old57", "live2", "live1"]
    assert shown[-1] == (
        "- 55 earlier job(s) not listed (COMPLETED 55): campaign status --all lists them"
    )
    stages = block(campaign / "STATUS.md", "stages")
    assert "| t1 | FAILED, unknown (old61) | PENDING (live2) | — |" in stages


def test_the_default_lists_fifty_finished_jobs(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    write(campaign, recent=None)
    assert run("render").code == 0
    shown = block(campaign / "STATUS.md", "jobs").strip().splitlines()
    assert len(ids(shown)) == 2 + 50
    assert "- 10 earlier job(s) not listed (COMPLETED 10)" in shown[-1]


def test_campaign_status_is_bounded_newest_first_and_lists_more_on_demand(
    campaign: Path, run
) -> None:  # type: ignore[no-untyped-def]
    write(campaign, recent=3)
    plain = run("status")
    assert plain.code == 0, plain.err
    rows = [line.split()[0] for line in plain.out.splitlines()[1:6]]
    assert rows == ["old61", "old60", "old59", "live2", "live1"]
    assert "57 earlier job(s) not listed (COMPLETED 56, FAILED 1)" not in plain.out
    assert "57 earlier job(s) not listed (COMPLETED 57)" in plain.out

    every = run("status", "--all")
    listed = [line.split()[0] for line in every.out.splitlines()[1 : 2 + FINISHED + 1]]
    assert (
        len(listed) == FINISHED + 2
        and listed[0] == "old61"
        and listed[-2:]
        == [
            "live2",
            "live1",
        ]
    )
    # Submitted in the same second: the job ids decide, read as numbers (old10 after old9).
    assert listed.index("old10") < listed.index("old9")

    doc = json.loads(run("status", "--format", "json").out)
    assert [j["job_id"] for j in doc["jobs"]] == ["old61", "old60", "old59", "live2", "live1"]
    assert doc["unlisted"] == {"COMPLETED": 57}
    doc = json.loads(run("status", "--all", "--format", "json").out)
    assert len(doc["jobs"]) == FINISHED + 2 and doc["unlisted"] == {}

    smokes = json.loads(run("status", "--stage", "single", "--format", "json").out)
    assert [j["job_id"] for j in smokes["jobs"]] == ["live2"] and smokes["unlisted"] == {}
    since = json.loads(run("status", "--since", "2026-11-01T10:59:00Z", "--format", "json").out)
    assert [j["job_id"] for j in since["jobs"]] == ["old61", "old60", "old59"]

    bad = run("status", "--since", "last tuesday")
    assert bad.code == 2 and "--since 'last tuesday' is not a date" in bad.err


def test_status_recent_jobs_is_a_policy_key_with_a_default() -> None:
    assert policy.from_data({"status": {"recent_jobs": 7}}).recent_jobs == 7
    assert policy.from_data({"status": {"recent_jobs": 0}}).recent_jobs == 0
    for unusable in (-1, "ten", True, None):
        assert policy.from_data({"status": {"recent_jobs": unusable}}).recent_jobs == 50
    base = {"name": "x", "owner": {"name": "A", "email": "a@example.org"}, "backends": ["local"]}
    ok = base | {"status": {"recent_jobs": 20}}
    assert not list(schema.validate(schema.POLICY, ok))
    for bad in ({"recent_jobs": -1}, {"recent": 5}):
        assert list(schema.validate(schema.POLICY, base | {"status": bad}))
