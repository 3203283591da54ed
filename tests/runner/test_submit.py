"""campaign submit / status end to end on the local backend, in a campaign from `campaign new`."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from campaignops.backends.local.kind import KIND as LOCAL
from campaignops.model import ledger
from tests import waiting
from tests.conftest import git

SLEEPY = """\
backend: local
resources: {time: "00:05:00"}
smoke:
  args: {seconds: 1}
jobs:
  - id: nap
    cmd: python3 -c "import sys, time; time.sleep(float(sys.argv[2]))"
    args: {seconds: 30}
"""


@pytest.fixture
def camp(demo: Path) -> Path:
    return demo


def records(root: Path) -> list[dict[str, object]]:
    text = (root / ".campaign/ledger.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def settle(run, root: Path, *, want: str, timeout: float = 60) -> ledger.Job:  # type: ignore[no-untyped-def]
    """The newest job once it reached ``want`` (tests/waiting.py)."""
    return waiting.settled(run, root, want={want}, timeout=timeout)


def test_dry_run_shows_gates_and_script_and_submits_nothing(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    result = run("submit", "manifests/example.yaml", "--stage", "smoke", "--dry-run")
    assert result.code == 0, result.err
    for gate in ("committed", "authorized", "smoke_first", "no_sibling", "breaker", "budget"):
        assert f"gate {gate}" in result.out
    assert "#LOCAL --array=0-3%2" in result.out and "dry run: nothing submitted" in result.out
    assert records(camp) == []


def test_smoke_then_production_with_one_record_chain_per_job(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    refused = run("submit", "manifests/example.yaml", "--stage", "production")
    assert refused.code == 1 and "smoke_first" in refused.err
    assert records(camp) == []
    smoke = run("submit", "manifests/example.yaml", "--stage", "smoke")
    assert smoke.code == 0, smoke.err
    job = settle(run, camp, want="COMPLETED")
    assert job.record["exit_code"] == 0 and job.stage == "smoke"
    kinds = [r["kind"] for r in records(camp)]
    assert kinds[:2] == ["intent", "result"] and set(kinds[2:]) == {"state"}
    assert "COMPLETED" in (camp / "STATUS.md").read_text()
    assert len(list((camp / "runs/smoke/example").glob("*/metrics.json"))) == 4
    assert not (camp / "runs/production").exists()
    git(camp, "commit", "-qam", "smoke done")
    prod = run("submit", "manifests/example.yaml", "--stage", "production", "--dry-run")
    assert prod.code == 0 and "gate smoke_first  pass" in prod.out


def test_uncommitted_manifest_is_refused_by_the_committed_gate(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    (camp / "manifests/example.yaml").write_text(
        (camp / "manifests/example.yaml").read_text() + "# edited\n"
    )
    result = run("submit", "manifests/example.yaml", "--stage", "smoke")
    assert result.code == 1
    assert "committed" in result.err and "manifests/example.yaml" in result.err
    assert records(camp) == []


def test_sibling_refused_while_running_and_status_is_one_query(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    (camp / "manifests/nap.yaml").write_text(SLEEPY.replace("{seconds: 1}", "{seconds: 20}"))
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "nap")
    assert run("submit", "manifests/nap.yaml", "--stage", "smoke").code == 0
    second = run("submit", "manifests/nap.yaml", "--stage", "smoke")
    assert second.code == 1 and "no_sibling" in second.err
    from campaignops.runner import status

    refresh = status.refresh(root=camp)
    assert refresh.queries == 1
    job_id = ledger.read(camp).jobs[-1].record["job_id"]
    # The refusal's hint names the command that cancels the very job; what it says works.
    assert f"(campaign cancel {job_id})" in second.err
    assert run("cancel", str(job_id)).code == 0
    assert settle(run, camp, want="CANCELLED").state == "CANCELLED"


def test_a_lost_result_is_found_again_by_name_and_comment(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    (camp / "manifests/nap.yaml").write_text(SLEEPY.replace("{seconds: 1}", "{seconds: 20}"))
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "nap")
    assert run("submit", "manifests/nap.yaml", "--stage", "smoke").code == 0
    lines = (camp / ".campaign/ledger.jsonl").read_text().splitlines()
    # A crash between the two writes: the intent is there, the result is not.
    (camp / ".campaign/ledger.jsonl").write_text(lines[0] + "\n")
    assert ledger.read(camp).jobs[-1].record.get("job_id") is None
    from campaignops.runner import status

    found = status.refresh(root=camp)
    assert found.reconciled and ledger.read(camp).jobs[-1].record.get("job_id")


def test_a_queue_file_runs_as_one_array_smoke_then_production(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    argv = ("submit", "manifests/example-queue.yaml")
    assert run(*argv, "--stage", "production").code == 1
    smoke = run(*argv, "--stage", "smoke")
    assert smoke.code == 0, smoke.err
    assert "demo.example-queue.smoke on local: 2 task(s)" in smoke.out
    job = settle(run, camp, want="COMPLETED")
    assert job.targets == ("baseline", "wide") and job.record["array"] == "0-1%2"
    cells = {p.parent.name: json.loads(p.read_text()) for p in camp.glob("runs/smoke/*/cell.json")}
    assert {k: (v["status"], v["epochs"]) for k, v in cells.items()} == {
        "baseline": ("completed", 1),
        "wide": ("completed", 1),
    }
    git(camp, "commit", "-qam", "smoke done")
    production = run(*argv, "--stage", "production")
    assert production.code == 0, production.err
    settle(run, camp, want="COMPLETED")
    # Production ran every cell again, at the queue's own epochs, in its own directories.
    cells = {
        p.parent.name: json.loads(p.read_text()) for p in camp.glob("runs/production/*/cell.json")
    }
    assert {k: (v["status"], v["epochs"]) for k, v in cells.items()} == {
        "baseline": ("completed", 5),
        "wide": ("completed", None),
    }
    assert [r["kind"] for r in records(camp) if r["kind"] != "state"] == ["intent", "result"] * 2
    # The wrapper the cells ran through was locked at its first use.
    assert "scripts/run_one.v1.sh" in (camp / ".campaign/wrappers.lock").read_text()


def test_a_malformed_queue_line_refuses_the_submission_where_it_is(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    queue = camp / "queues/example.txt"
    queue.write_text(queue.read_text() + "configs/example/wide.yaml\tsegmentation\n")
    git(camp, "commit", "-qam", "a TAB in the queue")
    refused = run("submit", "manifests/example-queue.yaml", "--stage", "smoke")
    assert refused.code == 2
    assert "queues/example.txt:8:26: a TAB in the line" in refused.err
    assert "campaign check --select QUEUE" in refused.err
    assert records(camp) == []


def test_watch_refreshes_until_every_job_has_finished(  # type: ignore[no-untyped-def]
    camp: Path, run, monkeypatch
) -> None:
    from campaignops.runner import status

    (camp / "manifests/nap.yaml").write_text(SLEEPY.replace("{seconds: 1}", "{seconds: 2}"))
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "nap")
    assert run("submit", "manifests/nap.yaml", "--stage", "smoke").code == 0
    asked: list[float] = []

    def sleep(seconds: float) -> None:  # records the pause asked for; waits a little for real
        asked.append(seconds)
        time.sleep(0.5)

    monkeypatch.setattr(status, "_sleep", sleep)
    watched = run("status", "--watch")
    assert watched.code == 0, watched.err
    # At least one wait; the job is local (files on this machine, no scheduler asked), so the
    # rounds are the local kind's watch_pause_s apart, not the minute a scheduler's are (test_watchpace.py).
    assert asked and set(asked) == {LOCAL.watch_pause_s}
    rounds = watched.err.splitlines()
    assert len(rounds) == len(asked) + 1 and rounds[-1].endswith(", 0 job(s) unfinished")
    assert all("1 scheduler call(s)" in r or "0 scheduler call(s)" in r for r in rounds)
    assert ledger.read(camp).jobs[-1].state == "COMPLETED" and "COMPLETED" in watched.out
    too_fast = run("status", "--watch", "--interval", "5")
    assert too_fast.code == 2 and "--interval 5 is outside 60-86400 s" in too_fast.err


def test_an_unlisted_backend_is_the_authorized_gate_even_in_a_dry_run(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    for extra in ((), ("--dry-run",)):
        refused = run(
            "submit", "manifests/example.yaml", "--backend", "polaris", "--stage", "smoke", *extra
        )
        assert refused.code == 1
        assert "authorized: backend 'polaris' is not in campaign.yaml's backends" in refused.err
        assert "add polaris to backends in campaign.yaml" in refused.err
    assert records(camp) == []


def test_a_queue_file_given_as_the_manifest_says_how_to_submit_it(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    result = run("submit", "queues/example.txt", "--stage", "smoke")
    assert result.code == 2
    assert "queues/example.txt is a queue file; campaign submit takes a manifest" in result.err
    assert "'queue: queues/example.txt'" in result.err


def test_queue_configs_are_part_of_the_committed_gate_and_the_fingerprint(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    argv = ("submit", "manifests/example-queue.yaml")
    queue = camp / "queues/example.txt"
    config = camp / "configs/example/deep.yaml"
    config.write_text((camp / "configs/example/wide.yaml").read_text())
    queue.write_text(queue.read_text() + "configs/example/deep.yaml detection 3\n")
    git(camp, "add", "queues/example.txt")
    git(camp, "commit", "-qm", "a cell whose config is not committed")
    untracked = run(*argv, "--stage", "smoke")
    assert untracked.code == 1 and "committed" in untracked.err
    assert "configs/example/deep.yaml" in untracked.err
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "its config")
    assert run(*argv, "--stage", "smoke").code == 0
    settle(run, camp, want="COMPLETED")
    git(camp, "commit", "-qam", "smoke done")
    ready = run(*argv, "--stage", "production", "--dry-run")
    assert ready.code == 0 and "a submit would pass every gate" in ready.out
    # An edited config is another config: its smoke no longer counts, and the dry run says so.
    config.write_text(config.read_text() + "# wider still\n")
    git(camp, "commit", "-qam", "edit a config")
    stale = run(*argv, "--stage", "production", "--dry-run")
    assert stale.code == 1 and "refused by smoke_first" in stale.out
    assert "deep" in stale.out


def test_a_queue_cell_that_cannot_run_refuses_the_submission(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    queue = camp / "queues/example.txt"
    original = queue.read_text()
    queue.write_text(original + "configs/example/missing.yaml detection\n")
    git(camp, "commit", "-qam", "a cell without its config")
    missing = run("submit", "manifests/example-queue.yaml", "--stage", "smoke")
    assert missing.code == 2
    assert "queues/example.txt:8:1: config 'configs/example/missing.yaml' does not exist" in (
        missing.err
    )
    # A queue file that is a symlink out of the campaign is not followed.
    outside = camp.parent / "elsewhere.txt"
    outside.write_text(original)
    queue.unlink()
    queue.symlink_to(outside)
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "a queue outside")
    escaped = run("submit", "manifests/example-queue.yaml", "--stage", "smoke")
    assert escaped.code == 2 and "outside the campaign" in escaped.err
    assert records(camp) == []


def test_commit_records_the_submitted_script_with_the_ledger(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    done = run("submit", "manifests/example-queue.yaml", "--stage", "smoke", "--commit")
    assert done.code == 0, done.err
    lid = ledger.read(camp).jobs[-1].ledger_id
    tracked = git(camp, "ls-files", ".campaign", "STATUS.md").split()
    assert f".campaign/jobs/{lid}.sh" in tracked
    assert {".campaign/ledger.jsonl", ".campaign/wrappers.lock", "STATUS.md"} <= set(tracked)
    settle(run, camp, want="COMPLETED")


def test_commit_also_records_the_scripts_of_earlier_uncommitted_submits(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    assert run("submit", "manifests/example-queue.yaml", "--stage", "smoke").code == 0
    settle(run, camp, want="COMPLETED")
    first = ledger.read(camp).jobs[-1].ledger_id
    done = run("submit", "manifests/example.yaml", "--stage", "smoke", "--commit")
    assert done.code == 0, done.err
    tracked = set(git(camp, "ls-files", ".campaign").split())
    assert f".campaign/jobs/{first}.sh" in tracked
    # Nothing of the runner's is left for `campaign update` or the committed gate to trip on.
    assert git(camp, "status", "--porcelain", "--untracked-files=all", "--", ".campaign") == ""
    settle(run, camp, want="COMPLETED")


def test_status_prints_aligned_columns_and_interval_needs_watch(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    assert run("submit", "manifests/example-queue.yaml", "--stage", "smoke").code == 0
    settle(run, camp, want="COMPLETED")
    table = run("status").out.splitlines()
    header, row = table[0], table[1]
    assert header.split() == [
        "job",
        "targets",
        "stage",
        "backend",
        "state",
        "queue",
        "wait",
        "run",
        "time",
        "exit",
        "diagnosis",
        "commit",
    ]
    # Every column starts where its header starts.
    for title in ("stage", "state", "exit", "diagnosis", "commit"):
        assert row[header.index(title) - 2 : header.index(title)] == "  "
    assert row.startswith(f"{ledger.read(camp).jobs[-1].job_id}  baseline, wide")
    lone = run("status", "--interval", "90")
    assert lone.code == 2 and "--interval applies to --watch only" in lone.err


@pytest.mark.parametrize(
    "command",
    [
        "bash -c 'cat configs/extra/base.yaml'",
        "cat configs/extra/*.yaml; true",  # the args (--epochs N) go to true
        "d=configs/extra; cat $d/base.yaml; true",
    ],
    ids=["bash -c", "glob", "variable"],
)
def test_a_config_the_command_reads_indirectly_is_part_of_the_fingerprint(  # type: ignore[no-untyped-def]
    camp: Path, run, command: str
) -> None:
    """A config named only inside `bash -c '…'` (or through a glob or a variable) is still what
    the job reads: editing it after the smoke needs a new smoke (issue 16, item 5)."""
    (camp / "configs/extra").mkdir()
    config = camp / "configs/extra/base.yaml"
    config.write_text("width: 32\n")
    (camp / "manifests/indirect.yaml").write_text(
        "project: indirect\nbackend: local\nresources: {time: '00:05:00'}\n"
        f"smoke:\n  args: {{epochs: 1}}\njobs:\n  - id: reads\n    cmd: {json.dumps(command)}\n"
        "    args: {epochs: 2}\n"
    )
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "a job reading a config inside bash -c")
    assert run("submit", "manifests/indirect.yaml", "--stage", "smoke").code == 0
    settle(run, camp, want="COMPLETED")
    git(camp, "commit", "-qam", "smoke done")
    ready = run("submit", "manifests/indirect.yaml", "--stage", "production", "--dry-run")
    assert ready.code == 0 and "a submit would pass every gate" in ready.out, ready.out
    config.write_text("width: 4096\n")
    git(camp, "commit", "-qam", "edit the config after its smoke")
    stale = run("submit", "manifests/indirect.yaml", "--stage", "production", "--dry-run")
    assert stale.code == 1 and "refused by smoke_first" in stale.out, stale.out
