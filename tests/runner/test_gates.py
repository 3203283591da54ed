"""The six gates: each one's pass and refusals (budget's in test_budget.py); the committed gate
on real git repositories."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from campaignops.backends.local import machine as local
from campaignops.backends.slurm.kind import KIND as SLURM
from campaignops.backends.ssh import backend as sshbox
from campaignops.core import layout, yamldoc
from campaignops.model import ledger
from campaignops.model import ledger_writer as lw
from campaignops.model.fingerprint import fingerprints, submission_fingerprint
from campaignops.model.jobspec import JobSpec, JobState
from campaignops.model.policy import Policy, from_data
from campaignops.runner import dispatch, recording, submitlock
from campaignops.runner.gates import (
    GATES,
    GateRefused,
    Request,
    authorized,
    breaker,
    committed,
    evaluate,
    job_name,
    no_sibling,
    require,
    smoke_first,
)
from campaignops.runner.gitfacts import RepoFacts, repo_facts
from tests.conftest import git

PATHS = (
    "manifests/smoke.yaml",
    "campaign.yaml",
    "scripts/run_one.v1.sh",
    "queues/example.txt",
    "backends/local.md",
)
COMMIT = "0123456789abcdef0123456789abcdef01234567"
T0 = dt.datetime(2026, 11, 21, 10, 0, tzinfo=dt.timezone.utc)
FP1 = "sha256:" + "a" * 64


def policy_of(root: Path, **changes: Any) -> Policy:
    data = yamldoc.load((root / "campaign.yaml").read_text(), path="campaign.yaml")
    return dataclasses.replace(from_data(data), **changes)


def check(root: Path, **changes: Any):  # type: ignore[no-untyped-def]
    return committed(repo_facts(root, PATHS), paths=PATHS, policy=policy_of(root, **changes))


# ---------------------------------------------------------------------------- committed


def test_committed_passes_on_a_clean_repo(repo: Path) -> None:
    verdict = check(repo, require_pushed=False)
    assert verdict.passed, verdict
    assert verdict.gate == "committed"


def test_committed_refuses_a_dirty_manifest(repo: Path) -> None:
    (repo / "manifests" / "smoke.yaml").write_text("project: edited\n")
    verdict = check(repo, require_pushed=False)
    assert not verdict.passed
    assert verdict.reason == "manifests/smoke.yaml has uncommitted changes"
    assert verdict.hint.startswith("commit it: git add manifests/smoke.yaml && git commit")


def test_committed_refuses_a_staged_but_uncommitted_change(repo: Path) -> None:
    (repo / "scripts" / "run_one.v1.sh").write_text("#!/bin/bash\necho changed\n")
    git(repo, "add", "scripts/run_one.v1.sh")
    verdict = check(repo, require_pushed=False)
    assert not verdict.passed
    assert "scripts/run_one.v1.sh has uncommitted changes" in verdict.reason


def test_committed_refuses_any_other_modified_tracked_file(repo: Path) -> None:
    """A job runs the checkout: an edited config it reads is as uncommitted as the manifest."""
    (repo / "configs" / "baseline.yaml").write_text("lr: 0.5\n")
    (repo / "AGENTS.md").unlink()
    verdict = check(repo, require_pushed=False)
    assert not verdict.passed
    assert verdict.reason == "AGENTS.md, configs/baseline.yaml have uncommitted changes"
    assert "git add AGENTS.md configs/baseline.yaml" in verdict.hint


def test_committed_refuses_an_untracked_manifest(repo: Path) -> None:
    (repo / "manifests" / "new.yaml").write_text("project: new\n")
    (repo / "scripts" / "helper.py").write_text("print(1)\n")
    verdict = check(repo, require_pushed=False)
    assert not verdict.passed
    assert verdict.reason.startswith(
        "untracked in the campaign: manifests/new.yaml, scripts/helper.py (a job can read"
    )
    assert "git add manifests/new.yaml scripts/helper.py && git commit" in verdict.hint


def test_committed_refuses_a_required_file_never_committed(repo: Path) -> None:
    (repo / "scripts" / "run_one.v2.sh").write_text("#!/bin/bash\n")
    paths = (*PATHS, "scripts/run_one.v2.sh")
    verdict = committed(
        repo_facts(repo, paths), paths=paths, policy=policy_of(repo, require_pushed=False)
    )
    assert not verdict.passed
    assert verdict.reason == "not committed: scripts/run_one.v2.sh"


def test_committed_ignores_ledger_lock_status_and_untracked_outputs(repo: Path) -> None:
    (repo / ".campaign" / "wrappers.lock").write_text("")
    git(repo, "add", ".campaign")
    git(repo, "commit", "-q", "-m", "bookkeeping")
    (repo / ".campaign" / "ledger.jsonl").write_text('{"v": 1}\n')
    (repo / ".campaign" / "wrappers.lock").write_text("# lock\n")
    (repo / "STATUS.md").write_text("# rewritten\n")
    # What the runner writes, untracked and not ignored (this campaign has no .gitignore).
    for written in ("runs/smoke/a/metrics.json", "logs/a-1.out", ".campaign/jobs/L1.sh"):
        (repo / written).parent.mkdir(parents=True, exist_ok=True)
        (repo / written).write_text("{}\n")
    facts = repo_facts(repo, PATHS)
    assert {".campaign/ledger.jsonl", "STATUS.md"} <= facts.dirty
    verdict = committed(facts, paths=PATHS, policy=policy_of(repo, require_pushed=False))
    assert verdict.passed, verdict


def test_the_runner_written_paths_are_where_the_runner_writes() -> None:
    """layout.RUNNER_DIRS/RUNNER_FILES name what the runner modules write: kept in step."""
    spec_log_dir = {f.name: f.default for f in dataclasses.fields(JobSpec)}["log_dir"]
    for written in (layout.OUT_ROOT, spec_log_dir, dispatch.JOBS_DIR, recording.JOBS_DIR):
        assert f"{written}/" in layout.RUNNER_DIRS
    for state in (local.STATE_DIR, sshbox.STATE_DIR):
        assert layout.runner_written(f"{state}/x/y.json")
    assert layout.runner_written(submitlock.LOCK_FILE)
    # A submit killed while it rewrote STATUS.md leaves its temporary file (tests/test_faults.py
    # found one refusing every later submit); another file's leftover is not the runner's.
    assert layout.runner_written(".STATUS.md.395f433baa3a.tmp")
    assert layout.runner_written(".campaign/.wrappers.lock.0123456789ab.tmp")
    assert not layout.runner_written(".README.md.395f433baa3a.tmp")
    assert not layout.runner_written("configs/.STATUS.md.395f433baa3a.tmp")
    assert not layout.runner_written("runsy/x") and not layout.runner_written("configs/a.yaml")


def test_committed_refuses_an_untracked_file_anywhere_in_the_campaign(repo: Path) -> None:
    """A job reaches files no command word names (a glob, a directory, a variable): an
    untracked file outside the runner's own directories is refused wherever it is."""
    (repo / "results").mkdir()
    (repo / "results" / "metrics.json").write_text("{}\n")
    (repo / "configs" / "extra.yaml").write_text("lr: 9\n")
    verdict = check(repo, require_pushed=False)
    assert not verdict.passed
    assert verdict.reason.startswith(
        "untracked in the campaign: configs/extra.yaml, results/metrics.json (a job can read"
    )
    assert "git add configs/extra.yaml results/metrics.json && git commit" in verdict.hint


def test_committed_refuses_a_file_only_a_local_exclude_rule_hides(repo: Path) -> None:
    """.git/info/exclude is no clone's and no review's: what only it hides is refused; what the
    committed .gitignore hides (an output, a cache) and bytecode caches pass."""
    (repo / ".gitignore").write_text("results/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore results")
    (repo / ".git" / "info" / "exclude").write_text("data/\n__pycache__/\n")
    for made in ("results/m.json", "data/train.csv", "configs/__pycache__/x.pyc"):
        (repo / made).parent.mkdir(parents=True, exist_ok=True)
        (repo / made).write_text("1\n")
    verdict = check(repo, require_pushed=False)
    assert not verdict.passed
    assert verdict.reason.startswith(
        "ignored only by a rule HEAD does not hold: data/ (.git/info/exclude:1: data/)"
    )
    assert "move the rule into the campaign's .gitignore and commit it" in verdict.hint
    (repo / ".gitignore").write_text("results/\ndata/\n")
    git(repo, "commit", "-qam", "data is no source")
    assert check(repo, require_pushed=False).passed


def test_committed_refuses_outside_git(campaign: Path) -> None:
    verdict = check(campaign)
    assert not verdict.passed
    assert verdict.reason == "the campaign is not inside a git repository"
    assert verdict.hint.startswith("git init")


def test_committed_refuses_a_repository_without_commits(campaign: Path) -> None:
    git(campaign, "init", "-q")
    verdict = check(campaign)
    assert (verdict.passed, verdict.reason) == (False, "the repository has no commit yet")


def test_committed_with_require_pushed_and_a_bare_upstream(repo: Path, tmp_path: Path) -> None:
    bare = tmp_path / "upstream.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    verdict = check(repo)
    assert not verdict.passed
    assert verdict.reason == "branch main has no upstream and campaign.yaml has require_pushed"
    # No remote at all (a fresh `campaign new`): how to add one, or how to stay local.
    assert verdict.hint == (
        "this repository has no remote to push to: add one and push (git remote add origin URL "
        "&& git push -u origin main), or keep the campaign local: set require_pushed: false in "
        "campaign.yaml and commit it"
    )

    git(repo, "remote", "add", "origin", str(bare))
    verdict = check(repo)
    assert (verdict.passed, verdict.hint) == (False, "git push -u origin main")
    git(repo, "push", "-q", "-u", "origin", "main")
    assert check(repo).passed

    (repo / "configs" / "baseline.yaml").write_text("lr: 0.5\n")
    git(repo, "commit", "-q", "-am", "tune")
    head = git(repo, "rev-parse", "HEAD").strip()
    verdict = check(repo)
    assert not verdict.passed
    assert (
        verdict.reason
        == f"HEAD {head[:12]} is not on origin/main (require_pushed in campaign.yaml)"
    )
    assert verdict.hint == "git push, then submit again"
    assert check(repo, require_pushed=False).passed

    git(repo, "push", "-q")
    assert check(repo).passed


def test_the_no_upstream_hint_names_the_remote_there_is(repo: Path, tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "--bare", str(tmp_path / "shared.git"))
    git(repo, "remote", "add", "shared", str(tmp_path / "shared.git"))
    assert check(repo).hint == "git push -u shared main"
    git(repo, "remote", "add", "mine", str(tmp_path / "shared.git"))
    assert check(repo).hint == "git push -u REMOTE main"
    git(repo, "push", "-q", "-u", "shared", "main")
    assert check(repo).passed


def test_the_no_remote_hint_when_kept_local_passes(repo: Path) -> None:
    """The hint's second way, followed as written: require_pushed: false, committed."""
    policy = repo / "campaign.yaml"
    text = policy.read_text(encoding="utf-8")
    assert not check(repo).passed
    policy.write_text(text.replace("require_pushed: true", "require_pushed: false"))
    git(repo, "commit", "-q", "-am", "keep the campaign local")
    assert check(repo).passed


def test_committed_refuses_a_detached_head_when_pushing_is_required(repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach")
    verdict = check(repo)
    assert not verdict.passed
    assert "is detached" in verdict.reason


def test_repo_facts_of_a_campaign_in_a_subdirectory(tmp_path: Path) -> None:
    top = tmp_path / "mono"
    (top / "camp" / "manifests").mkdir(parents=True)
    (top / "camp" / "manifests" / "a.yaml").write_text("project: a\n")
    (top / "other.txt").write_text("x\n")
    git(top, "init", "-q")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "init")
    (top / "other.txt").write_text("edited outside the campaign\n")
    (top / "camp" / "manifests" / "a.yaml").write_text("project: b\n")
    (top / "camp" / "manifests" / "b.yaml").write_text("project: b\n")
    facts = repo_facts(top / "camp", ["manifests/a.yaml", "manifests/b.yaml"])
    assert facts.tracked == {"manifests/a.yaml"}
    assert facts.dirty == {"manifests/a.yaml"}
    assert facts.untracked == {"manifests/b.yaml"}
    assert facts.head == git(top, "rev-parse", "HEAD").strip()


# --------------------------------------------------------------------------- authorized

POLICY = Policy(name="demo", backends=("local", "polaris"))
SLURM_PAGE = {"partitions": [{"name": "debug"}, {"name": "compute"}, {"name": "compute"}]}
PBS_PAGE = {"queues": [{"name": "debug"}, {"name": "prod"}]}


def test_authorized_passes_a_listed_backend_and_partition() -> None:
    assert authorized("local", policy=POLICY, page=SLURM_PAGE, partition="compute").passed
    assert authorized("polaris", policy=POLICY, page=PBS_PAGE, queue="prod").passed
    assert authorized("local", policy=POLICY, page={}).passed


def test_authorized_refuses_a_backend_the_policy_does_not_list() -> None:
    verdict = authorized("alpine", policy=POLICY, page=SLURM_PAGE)
    assert not verdict.passed
    assert verdict.reason == "backend 'alpine' is not in campaign.yaml's backends (local, polaris)"
    assert "add alpine to backends in campaign.yaml" in verdict.hint


def test_authorized_refuses_a_missing_page() -> None:
    verdict = authorized("polaris", policy=POLICY, page=None)
    assert (verdict.passed, verdict.reason) == (False, "backends/polaris.md is missing")


def test_authorized_refuses_an_unknown_partition_or_queue() -> None:
    verdict = authorized("local", policy=POLICY, page=SLURM_PAGE, partition="gpu")
    assert not verdict.passed
    assert verdict.reason == "partition 'gpu' is not on backends/local.md (debug, compute)"
    verdict = authorized("polaris", policy=POLICY, page=PBS_PAGE, queue="preemptable")
    assert verdict.reason == "queue 'preemptable' is not on backends/polaris.md (debug, prod)"


# ---------------------------------------------------------------------------- ledger jobs


def jobs(*chains: Sequence[dict[str, Any]]) -> tuple[ledger.Job, ...]:
    """Ledger jobs as the reader folds them from the writer's lines."""
    lines = [lw.encode(record) for chain in chains for record in chain]
    return ledger.parse("\n".join(lines) + "\n").jobs


def run(n: int, targets: Sequence[str] = ("t",), **fields: Any) -> list[dict[str, Any]]:
    """Attempt ``n``: intent, result and final state records (a failed single by default)."""
    f = {"stage": "single", "fingerprint": FP1, "state": "FAILED", "exit_code": 1} | fields
    lid, when, job_id = f"L-{n:06d}", T0 + dt.timedelta(hours=n), f.get("job_id") or str(100 + n)
    intent = lw.intent_record(
        ledger_id=lid,
        time=when,
        campaign="demo",
        backend="local",
        stage=f["stage"],
        targets=targets,
        fingerprint=f["fingerprint"],
        fingerprints=f.get("fingerprints"),
        commit=COMMIT,
        manifest="manifests/smoke.yaml",
    )
    result = lw.result_record(ledger_id=lid, time=when, job_id=job_id, submitted=when)
    state = JobState(job_id=job_id, state=f["state"], exit_code=f["exit_code"])
    end = when + dt.timedelta(minutes=30)
    final = lw.state_record(ledger_id=lid, time=end, state=state, signature=f.get("signature"))
    return [intent, result, final]


@pytest.fixture
def fps() -> dict[str, str]:
    doc = yamldoc.load(
        (Path(__file__).parent.parent / "fixtures/clean/manifests/smoke.yaml").read_text(),
        path="smoke.yaml",
    )
    return fingerprints(doc)


def request(stage: str, *targets: str, override: str | None = None) -> Request:
    return Request(
        campaign="demo",
        manifest="manifests/smoke.yaml",
        stage=stage,
        backend="local",
        targets=targets,
        paths=PATHS,
        override=override,
    )


# --------------------------------------------------------------------------- smoke_first


def smoke_gate(fps: dict[str, str], stage: str, *targets: str, done: Any = (), on: bool = True):  # type: ignore[no-untyped-def]
    return smoke_first(request(stage, *targets), fingerprints=fps, jobs=done, require_smoke=on)


def smoke(fps: dict[str, str], cells: Sequence[str], **fields: Any) -> list[dict[str, Any]]:
    """A smoke of ``cells`` recorded as the writer records it: the combined fingerprint and,
    for several cells, each one's own."""
    fp = submission_fingerprint(fps, cells)
    own = {"fingerprints": {c: fps[c] for c in cells}} if len(cells) > 1 else {}
    return run(
        1,
        cells,
        **(
            {"stage": "smoke", "fingerprint": fp, "state": "COMPLETED", "exit_code": 0}
            | own
            | fields
        ),
    )


def test_smoke_first_refuses_production_without_a_smoke(fps: dict[str, str]) -> None:
    verdict = smoke_gate(fps, "production", "lr0.1_s1")
    assert not verdict.passed
    assert verdict.reason == "no smoke of the current config COMPLETED with exit 0 for lr0.1_s1"
    assert verdict.hint.startswith(
        "campaign submit manifests/smoke.yaml --targets lr0.1_s1 --stage smoke"
    )


def test_smoke_first_passes_after_a_completed_smoke(fps: dict[str, str]) -> None:
    done = jobs(smoke(fps, ["lr0.1_s1"]))
    assert smoke_gate(fps, "single", "lr0.1_s1", done=done).passed
    assert smoke_gate(fps, "production", "lr0.1_s1", done=done).passed
    assert not smoke_gate(fps, "production", "lr0.1_s2", done=done).passed


@pytest.mark.parametrize(("state", "code"), [("FAILED", 1), ("RUNNING", None), ("COMPLETED", 3)])
def test_smoke_first_needs_completed_with_exit_0(
    fps: dict[str, str], state: str, code: int | None
) -> None:
    done = jobs(smoke(fps, ["lr0.1_s1"], state=state, exit_code=code))
    assert not smoke_gate(fps, "production", "lr0.1_s1", done=done).passed


def test_smoke_first_refuses_a_smoke_of_an_older_config(fps: dict[str, str]) -> None:
    done = jobs(smoke(fps, ["lr0.1_s1"], fingerprint="sha256:" + "1" * 64))
    verdict = smoke_gate(fps, "production", "lr0.1_s1", done=done)
    assert not verdict.passed
    assert verdict.reason.endswith("(smokes of lr0.1_s1 ran an older config)")


def test_one_array_smoke_covers_each_of_its_cells(fps: dict[str, str]) -> None:
    done = jobs(smoke(fps, ["lr0.1_s1", "lr0.1_s2", "lr0.01_s1"]))
    assert smoke_gate(fps, "production", "lr0.1_s2", "lr0.01_s1", done=done).passed
    assert not smoke_gate(fps, "production", "lr0.01_s2", done=done).passed


def test_smoke_first_is_off_for_smokes_and_when_the_policy_says_so(fps: dict[str, str]) -> None:
    assert smoke_gate(fps, "smoke", "lr0.1_s1").passed
    verdict = smoke_gate(fps, "production", "lr0.1_s1", on=False)
    assert (verdict.passed, verdict.reason) == (True, "stages.require_smoke is false")


# ---------------------------------------------------------------------------- no_sibling


def test_no_sibling_refuses_a_pending_job_of_the_target_at_any_stage() -> None:
    active = [JobState(job_id="5001", state="PENDING", name=job_name("demo", "lr0.1_s1", "smoke"))]
    verdict = no_sibling(request("production", "lr0.1_s1"), active=active, jobs=())
    assert not verdict.passed
    assert verdict.reason == "already queued or running: 5001 (PENDING, lr0.1_s1)"
    assert "campaign status" in verdict.hint


def test_no_sibling_passes_other_targets_campaigns_and_finished_jobs() -> None:
    active = [
        JobState(job_id="1", state="RUNNING", name="demo.lr0.1_s2.production"),
        JobState(job_id="2", state="PENDING", name="other-campaign.lr0.1_s1.smoke"),
        JobState(job_id="3", state="COMPLETED", name="demo.lr0.1_s1.smoke"),
        JobState(job_id="4", state="RUNNING", name="demo.lr0.1_s1"),  # not a campaign job name
    ]
    assert no_sibling(request("production", "lr0.1_s1"), active=active, jobs=()).passed


def test_no_sibling_finds_an_array_through_the_ledger(fps: dict[str, str]) -> None:
    cells = ["lr0.1_s1", "lr0.1_s2"]
    known = jobs(smoke(fps, cells, state="RUNNING", exit_code=None, job_id="7000"))
    active = [JobState(job_id="7000_[1]", state="RUNNING", name="demo.sweep.smoke")]
    job_of = SLURM.job_of  # Slurm's array task id 7000_[1] is job 7000's
    verdict = no_sibling(request("smoke", "lr0.1_s2"), active=active, jobs=known, job_of=job_of)
    assert not verdict.passed
    assert verdict.reason == "already queued or running: 7000_[1] (RUNNING, lr0.1_s2)"
    assert no_sibling(
        request("smoke", "lr0.01_s1"), active=active, jobs=known, job_of=job_of
    ).passed
    # Without the backend's reading of its ids, the task is not found through the ledger.
    assert no_sibling(request("smoke", "lr0.1_s2"), active=active, jobs=known).passed


# ------------------------------------------------------------------------------- breaker


def failures(sigs: Sequence[str | None], *, start: int = 1, **fields: Any) -> list[dict[str, Any]]:
    return [r for i, sig in enumerate(sigs, start=start) for r in run(i, signature=sig, **fields)]


def test_breaker_refuses_three_same_signature_failures() -> None:
    verdict = breaker(request("single", "t"), jobs=jobs(failures(["FAILED:1 KeyError"] * 3)))
    assert not verdict.passed
    assert verdict.reason == (
        "failed 3 times in a row with the same signature: t (FAILED:1 KeyError; jobs 101, 102, 103)"
    )
    assert "--override" in verdict.hint


def test_breaker_counts_attempts_at_any_stage_and_without_signatures() -> None:
    chain = [*failures([None], stage="smoke"), *failures([None, None], start=2)]
    verdict = breaker(request("smoke", "t"), jobs=jobs(chain))
    assert not verdict.passed
    assert "(FAILED:1;" in verdict.reason


def test_breaker_override_passes_and_carries_the_reason() -> None:
    verdict = breaker(
        request("single", "t", override="  raised --mem after the OOM  "),
        jobs=jobs(failures(["oom"] * 3)),
    )
    assert verdict.passed
    assert verdict.override == "raised --mem after the OOM"
    assert verdict.reason.startswith("overridden: failed 3 times")


@pytest.mark.parametrize(
    "chain",
    [
        failures(["a", "a"]),
        failures(["a", "b", "a"]),
        failures(["a", "a", "a"]) + run(9, stage="smoke", state="COMPLETED", exit_code=0),
        failures(["a", "a", "a"]) + failures(["b"], start=10),
    ],
    ids=["two", "mixed", "then-success", "then-other"],
)
def test_breaker_passes(chain: list[dict[str, Any]]) -> None:
    assert breaker(request("single", "t"), jobs=jobs(chain)).passed


def test_breaker_skips_cancelled_and_unfinished_attempts() -> None:
    chain = [
        *failures(["a", "a"]),
        *run(5, state="CANCELLED", exit_code=0),
        *run(6, state="RUNNING", exit_code=None),
        *failures(["a"], start=7),
    ]
    assert not breaker(request("single", "t"), jobs=jobs(chain)).passed
    assert breaker(request("single", "u"), jobs=jobs(chain)).passed


def test_breaker_never_counts_a_preemption() -> None:
    # Three preemptions in a row say nothing about the config (the scheduler took the node).
    preempted = [r for n in (1, 2, 3) for r in run(n, state="PREEMPTED", exit_code=None)]
    assert breaker(request("single", "t"), jobs=jobs(preempted)).passed
    # Nor does one between failures end their run: a, preempted, a, a is three a's in a row.
    chain = [
        *failures(["a", "a"]),
        *run(5, state="PREEMPTED", exit_code=None),
        *failures(["a"], start=7),
    ]
    assert not breaker(request("single", "t"), jobs=jobs(chain)).passed


# ---------------------------------------------------------------------------- all of them


def test_evaluate_reports_every_gate_in_order_and_require_stops_at_the_first(
    fps: dict[str, str],
) -> None:
    facts = RepoFacts(is_repo=True, head=COMMIT, branch="main", tracked=frozenset(PATHS))
    verdicts = evaluate(
        request("production", "lr0.1_s1"),
        repo=facts,
        policy=Policy(name="demo", backends=("local",), require_pushed=False),
        require_smoke=True,
        page={"partitions": [{"name": "default"}]},
        fingerprints=fps,
        jobs=(),
        active=[JobState(job_id="9", state="PENDING", name="demo.lr0.1_s1.smoke")],
    )
    assert tuple(v.gate for v in verdicts) == GATES
    assert [v.passed for v in verdicts] == [True, True, False, False, True, True]
    assert verdicts[-1].reason == "no charging model on backends/local.md: cost not estimated"
    with pytest.raises(GateRefused) as caught:
        require(verdicts)
    assert caught.value.exit_code == 1
    assert str(caught.value).startswith("smoke_first: no smoke of the current config")
    require(verdicts[:2])


def test_committed_refuses_a_file_only_a_global_excludes_file_hides(
    repo: Path, tmp_path: Path
) -> None:
    (tmp_path / "global-ignore").write_text("*.local\n")
    git(repo, "config", "core.excludesFile", str(tmp_path / "global-ignore"))
    (repo / "configs" / "lr.local").write_text("lr: 9\n")
    verdict = check(repo, require_pushed=False)
    assert not verdict.passed
    assert verdict.reason.startswith(
        f"ignored only by a rule HEAD does not hold: configs/lr.local ({tmp_path}/global-ignore:1:"
    )
