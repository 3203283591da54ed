"""Story: a job is cancelled with `campaign cancel`, whole or one target of its array.

On the local backend, through the CLI in-process: the jobs are real detached executors running
real bash, the ledger and STATUS.md are the campaign's own. Waits are bounded polls of
`campaign status --refresh` or of a log file (a test helper: the product never polls).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from campaignops.backends.local import machine as local
from campaignops.backends.local import state as localstate
from campaignops.model import ledger
from tests import waiting
from tests.conftest import git

NAP = """\
backend: local
resources: {time: "00:10:00"}
smoke:
  args: {seconds: 300}
jobs:
  - id: nap
    cmd: bash -c 'echo epoch 1 loss 0.91; echo epoch 2 loss 0.64; sleep "$2"' nap
    args: {seconds: 600}
"""

# Two targets, one array: `slow` sleeps, `quick` waits for a gate file, then finishes.
PAIR = """\
backend: local
max_parallel: 2
resources: {time: "00:10:00"}
smoke:
  args: {seconds: 300}
jobs:
  - id: slow
    cmd: bash -c 'echo slow started; sleep "$2"' slow
    args: {seconds: 600}
  - id: quick
    cmd: bash -c 'echo quick started; until [ -e "$2" ]; do sleep 0.1; done; echo ok > quick.done' quick
    args: {gate: gate}
"""


@pytest.fixture
def camp(new_campaign: Callable[..., Path]) -> Iterator[Path]:
    root = new_campaign("demo", "require_pushed=no")
    (root / "manifests/nap.yaml").write_text(NAP)
    (root / "manifests/pair.yaml").write_text(PAIR)
    (root / "manifests/one-at-a-time.yaml").write_text(
        PAIR.replace("max_parallel: 2", "max_parallel: 1")
    )
    git(root, "add", "-A")
    git(root, "commit", "-qm", "nap and pair")
    yield root
    # Leave nothing running: a failed test's jobs are cancelled by the backend itself.
    state = root / ".campaign/local"
    for job_id in localstate.list_jobs(state):
        subprocess.run(local.cancel_argv([job_id], state_root=str(state)), check=False)


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60) -> Any:
    return waiting.until(what, check, timeout=timeout)


def refreshed(run, root: Path) -> ledger.Job:  # type: ignore[no-untyped-def]
    assert run("status", "--refresh").code == 0
    return ledger.read(root).jobs[-1]


def records(root: Path) -> list[dict[str, Any]]:
    text = (root / ".campaign/ledger.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def task_states(root: Path, job_id: str, size: int) -> list[str]:
    """Each array task's state, as the local backend reports it."""
    argv = local.query_argvs(
        [local.task_id(job_id, i) for i in range(size)], state_root=str(root / ".campaign/local")
    )[0]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    states = local.parse_states([out])
    return [states[local.task_id(job_id, i)].state for i in range(size)]


def test_cancel_prints_the_log_tail_then_cancels_and_records_it(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    assert run("submit", "manifests/nap.yaml", "--stage", "smoke").code == 0
    job = ledger.read(camp).jobs[-1]
    job_id = str(job.job_id)
    log = camp / f"logs/demo.nap.smoke-{job_id}.out"
    wait_for("the task's output", lambda: log.is_file() and "epoch 2" in log.read_text())
    assert wait_for("RUNNING", lambda: refreshed(run, camp).state == "RUNNING")

    done = run("cancel", job_id, "--reason", "loss is fine, stop early")
    assert done.code == 0, done.err
    assert done.out.splitlines() == [
        f"== logs/demo.nap.smoke-{job_id}.out (target nap): last 2 line(s)",
        "   epoch 1 loss 0.91",
        "   epoch 2 loss 0.64",
        f"cancelled job {job_id} (demo.nap.smoke: nap) on local; recorded in the ledger "
        f"({job.ledger_id}, by {records(camp)[-1]['cancel_by']})",
        "next: campaign status --refresh   (shows CANCELLED once it has stopped)",
    ]
    cancel = records(camp)[-1]
    assert {k: v for k, v in cancel.items() if k not in ("time", "cancel_by")} == {
        "v": 1,
        "kind": "cancel",
        "ledger_id": job.ledger_id,
        "job_id": job_id,
        "cancel_ids": [job_id],
        "cancel_targets": ["nap"],
        "cancel_reason": "loss is fine, stop early",
    }
    assert "@" in str(cancel["cancel_by"])
    ended = wait_for("CANCELLED", lambda: refreshed(run, camp).state == "CANCELLED")
    assert ended
    assert ledger.read(camp).jobs[-1].targets == ("nap",)
    assert f"| {job_id} |" in (camp / "STATUS.md").read_text()
    assert "CANCELLED" in (camp / "STATUS.md").read_text()
    # An ended job has nothing left to cancel; the ledger id names the job as well.
    again = run("cancel", job.ledger_id)
    assert again.code == 2
    assert f"job {job_id} ({job.ledger_id}) already ended CANCELLED" in again.err
    assert records(camp)[-1]["kind"] == "state"


def test_cancel_of_one_target_stops_its_task_while_the_other_completes(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    assert run("submit", "manifests/pair.yaml", "--stage", "smoke").code == 0
    job = ledger.read(camp).jobs[-1]
    job_id, targets = str(job.job_id), job.targets
    assert targets == ("slow", "quick")
    logs = [camp / f"logs/demo.pair.smoke-{job_id}_{i}.out" for i in range(2)]
    wait_for("both tasks' output", lambda: all(p.is_file() and p.read_text() for p in logs))

    done = run("cancel", job_id, "--targets", "slow")
    assert done.code == 0, done.err
    assert done.out.splitlines()[:2] == [
        f"== logs/demo.pair.smoke-{job_id}_0.out (target slow, task 0): last 1 line(s)",
        "   slow started",
    ]
    assert "quick started" not in done.out
    assert f"cancelled task(s) {job_id}_0 (demo.pair.smoke: slow) on local" in done.out
    cancel = records(camp)[-1]
    assert (cancel["cancel_ids"], cancel["cancel_targets"]) == ([f"{job_id}_0"], ["slow"])

    wait_for("slow to end", lambda: task_states(camp, job_id, 2) == ["CANCELLED", "RUNNING"])
    assert refreshed(run, camp).state == "RUNNING"  # quick still runs
    (camp / "gate").touch()
    ended = wait_for("the array to end", lambda: refreshed(run, camp).state == "CANCELLED")
    assert ended
    assert task_states(camp, job_id, 2) == ["CANCELLED", "COMPLETED"]
    assert (camp / "quick.done").read_text() == "ok\n"
    assert ledger.read(camp).jobs[-1].targets == ("slow", "quick")


def test_a_task_not_started_yet_has_no_log_and_never_starts(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    assert run("submit", "manifests/one-at-a-time.yaml", "--stage", "smoke").code == 0
    job = ledger.read(camp).jobs[-1]
    job_id = str(job.job_id)
    log = camp / f"logs/demo.one-at-a-time.smoke-{job_id}_0.out"
    wait_for("slow's output", lambda: log.is_file() and log.read_text())
    done = run("cancel", job.ledger_id)
    assert done.code == 0, done.err
    assert done.out.splitlines()[:3] == [
        f"== logs/demo.one-at-a-time.smoke-{job_id}_0.out (target slow, task 0): last 1 line(s)",
        "   slow started",
        "== no log yet: quick",
    ]
    assert f"cancelled job {job_id} (demo.one-at-a-time.smoke: slow, quick)" in done.out
    assert wait_for("CANCELLED", lambda: refreshed(run, camp).state == "CANCELLED")
    assert task_states(camp, job_id, 2) == ["CANCELLED", "CANCELLED"]
    assert not (camp / f"logs/demo.one-at-a-time.smoke-{job_id}_1.out").exists()


def test_an_unknown_job_or_target_is_a_usage_error_naming_campaign_status(  # type: ignore[no-untyped-def]
    camp: Path, run
) -> None:
    unknown = run("cancel", "local-999-abcdef")
    assert unknown.code == 2
    assert "no job 'local-999-abcdef' in the ledger" in unknown.err
    assert "campaign status lists the recorded jobs" in unknown.err
    assert run("submit", "manifests/pair.yaml", "--stage", "smoke").code == 0
    job = ledger.read(camp).jobs[-1]
    stray = run("cancel", str(job.job_id), "--targets", "slow", "nap")
    assert stray.code == 2 and "does not run nap" in stray.err and "slow, quick" in stray.err
    assert [r["kind"] for r in records(camp)] == ["intent", "result"]  # nothing recorded


def test_the_sibling_refusal_hints_campaign_cancel(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    assert run("submit", "manifests/nap.yaml", "--stage", "smoke").code == 0
    second = run("submit", "manifests/nap.yaml", "--stage", "smoke")
    assert second.code == 1 and "no_sibling" in second.err
    job_id = ledger.read(camp).jobs[-1].job_id
    assert f"campaign cancel {job_id}" in second.err
    assert "localexec" not in second.err


ESCAPES = """\
backend: local
resources: {time: "00:10:00"}
jobs:
  - id: loud
    cmd: bash -c 'printf "\\033]0;owned\\007title\\n\\033[2Jcleared\\n::error::forged\\n"; sleep 600' loud
"""


def test_cancel_shows_a_log_tail_without_its_terminal_escapes(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    (camp / "manifests/loud.yaml").write_text(ESCAPES)
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "loud")
    assert run("submit", "manifests/loud.yaml", "--stage", "smoke").code == 0
    job_id = str(ledger.read(camp).jobs[-1].job_id)
    log = camp / f"logs/demo.loud.smoke-{job_id}.out"
    wait_for("the task's output", lambda: log.is_file() and "forged" in log.read_text())
    done = run("cancel", job_id)
    assert done.code == 0, done.err
    assert "\x1b" not in done.out and "\x07" not in done.out
    assert done.out.splitlines()[1:4] == [
        "   \\x1b]0;owned\\x07title",
        "   \\x1b[2Jcleared",
        "   \\::error::forged",  # the runner strips the indent: no workflow command either
    ]
