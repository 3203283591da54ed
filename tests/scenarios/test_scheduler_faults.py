"""When the scheduler, the disk or git misbehave around a submission: one job per target,
honest exit codes, nothing lost, nothing submitted twice."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from campaignops.backends import command as scheduler
from campaignops.model import ledger
from tests.conftest import git
from tests.scenarios.conftest import Life

NAP = """\
resources: {time: "00:05:00", mem: 100M}
smoke:
  args: {seconds: 60}
jobs:
  - id: nap
    cmd: python3 -c "import sys, time; time.sleep(float(sys.argv[2]))"
    args: {seconds: 600}
"""


def _campaign_bin() -> str:
    found = shutil.which("campaign") or str(Path(sys.executable).with_name("campaign"))
    assert Path(found).exists(), "the campaign command is installed with the package"
    return found


def test_five_concurrent_submits_of_one_target_start_one_job(life: Life) -> None:
    life.write("manifests/nap.yaml", NAP)
    argv = [_campaign_bin(), "submit", "manifests/nap.yaml", "--stage", "smoke"]
    argv += ["--backend", life.backend]
    procs = [
        subprocess.Popen(argv, cwd=life.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(5)
    ]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 1, 1, 1, 1], results
    refusals = [err.decode() for code, _, err in results if code == 1]
    assert all("no_sibling" in err for err in refusals), refusals
    (job,) = life.jobs()
    assert job.job_id and job.targets == ("nap",)
    cancelled = life.run("cancel", str(job.job_id))
    assert cancelled.code == 0, cancelled.err


def test_a_missing_scheduler_is_exit_2_and_a_dry_run_shows_every_other_gate(
    camp: Path, run, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    # A laptop: git and Python, but no Slurm commands on PATH.
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("git", "env", "bash"):
        found = shutil.which(tool)
        assert found is not None
        (bare / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(bare))
    argv = ["submit", "manifests/example.yaml", "--stage", "smoke", "--backend", "generic-slurm"]
    dry = run(*argv, "--dry-run")
    assert dry.code == 2, dry.out + dry.err
    assert "gate committed    pass" in dry.out and "gate smoke_first  pass" in dry.out
    assert "gate no_sibling   pass   not checked" in dry.out
    assert "#SBATCH --job-name=life.example.smoke" in dry.out
    assert "cannot reach backend generic-slurm" in dry.out and "squeue" in dry.out
    real = run(*argv)
    assert real.code == 2 and "cannot reach backend generic-slurm" in real.err
    assert "Traceback" not in real.err
    assert ledger.read(camp).jobs == ()


# What real clients print when they are there but cannot answer. Slurm: recorded from a client
# whose controller is down, and from this machine's squeue with no slurm.conf (a login node that
# is not the backend's). Grid Engine's qstat, first on PATH where a PBS page is used: its
# qmaster is not reachable from here.
NO_CONTROLLER = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
NO_CONFIG = """\
squeue: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host
squeue: error: fetch_config: DNS SRV lookup failed
squeue: error: _establish_config_source: failed to fetch config
squeue: fatal: Could not establish a configuration source"""
GRID_ENGINE = 'error: unable to contact qmaster using port 6444 on host "gridhead"'


def _failing(tmp_path: Path, command: str, message: str) -> Path:
    """A bin directory whose ``command`` prints ``message`` on stderr and exits 1."""
    bindir = tmp_path / "failing-bin"
    bindir.mkdir(exist_ok=True)
    fake = bindir / command
    fake.write_text(f"#!/bin/sh\ncat >&2 <<'EOF'\n{message}\nEOF\nexit 1\n")
    fake.chmod(0o755)
    return bindir


@pytest.mark.parametrize(
    ("backend", "command", "message"),
    [
        pytest.param("generic-slurm", "squeue", NO_CONFIG, id="slurm-no-config"),
        pytest.param("generic-slurm", "squeue", NO_CONTROLLER, id="slurm-no-controller"),
        pytest.param("generic-pbs", "qstat", GRID_ENGINE, id="grid-engine-qstat"),
    ],
)
def test_a_scheduler_command_that_cannot_answer_is_not_checked_in_a_dry_run_and_exit_2(
    new_campaign,  # type: ignore[no-untyped-def]
    run,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    backend: str,
    command: str,
    message: str,
) -> None:
    root = new_campaign(
        "reach",
        "backends=generic-slurm,generic-pbs,local",
        "smoke_backend=local",
        "require_pushed=no",
    )
    bindir = _failing(tmp_path, command, message)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    # A refused connection is retried (1, 2, 4 s apart, tests/runner/test_scheduler.py): the
    # answer is the same each time, so the delays only make the test wait.
    monkeypatch.setattr(scheduler, "BASE_DELAY_S", 0.01)
    argv = ["submit", "manifests/example.yaml", "--stage", "smoke", "--backend", backend]
    dry = run(*argv, "--dry-run")
    assert dry.code == 2, dry.out + dry.err
    assert "gate committed    pass" in dry.out and "gate budget       pass" in dry.out
    assert (
        f"gate no_sibling   pass   not checked: this machine cannot reach backend {backend} ("
        in dry.out
    )
    assert message.splitlines()[-1] in dry.out
    assert ("#SBATCH --job-name=" if command == "squeue" else "#PBS -N ") in dry.out
    assert "partition, account and limits" not in dry.out + dry.err
    real = run(*argv)
    assert real.code == 2, real.out + real.err
    assert f"this machine cannot reach backend {backend}: {command}" in real.err
    assert "nothing was submitted" in real.err and "Traceback" not in real.err
    assert ledger.read(root).jobs == ()


@pytest.mark.slurm
def test_a_submission_that_times_out_is_an_unknown_outcome_until_refresh_finds_it(
    camp: Path, run, slurm_cluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    # sbatch queues the job, then the answer never comes back in time (a slow controller).
    real = shutil.which("sbatch")
    assert real is not None
    wrappers = tmp_path / "slow-bin"
    wrappers.mkdir()
    (wrappers / "sbatch").write_text(f'#!/bin/bash\n"{real}" "$@"\nsleep 30\n')
    (wrappers / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrappers}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(scheduler, "TIMEOUT_S", 3.0)
    life = Life(root=camp, backend="generic-slurm", run=run)
    life.write("manifests/nap.yaml", NAP.replace("{seconds: 60}", "{seconds: 2}"))
    first = life.submit("manifests/nap.yaml", "smoke")
    assert first.code == 1, first.err
    assert "outcome unknown for life.nap.smoke" in first.out and "Traceback" not in first.err
    (job,) = life.jobs()
    assert job.job_id is None and job.text("outcome") == "unknown" and not job.error
    # Until it is found, the target counts as queued: no second job.
    second = life.submit("manifests/nap.yaml", "smoke")
    assert second.code == 1 and "no_sibling" in second.err and "outcome unknown" in second.err
    assert "campaign status --refresh" in second.err
    monkeypatch.setenv("PATH", os.environ["PATH"].split(os.pathsep, 1)[1])
    found = run("status", "--refresh")
    assert found.code == 0 and "1 lost result(s) found" in found.err
    (job,) = life.jobs()
    assert job.job_id is not None and job.job_id.isdigit()
    assert life.wait(job.ledger_id).state == "COMPLETED"


LOST_REPLY = Path(__file__).resolve().parents[1] / "fakes" / "sbatch_lost_reply.sh"


def _queued(name: str, ledger_id: str) -> list[str]:
    """The real cluster's jobs (any state) named ``name`` whose comment holds ``ledger_id``:
    every job one submission queued, whatever the ledger says."""
    shown = subprocess.run(
        ["squeue", "-h", "-t", "all", "-o", "%i|%k", f"--name={name}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [row.split("|")[0] for row in shown.split() if ledger_id in row]


@pytest.mark.slurm
@pytest.mark.parametrize("lost", [1, 2, 3, 4])
def test_a_lost_sbatch_reply_queues_one_job_that_the_refresh_adopts(
    camp: Path, run, slurm_cluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, lost: int
) -> None:  # type: ignore[no-untyped-def]
    # sbatch queues the job, then prints "Socket timed out on send/recv operation" and exits 1,
    # for ``lost`` calls in a row (tests/fakes/sbatch_lost_reply.sh over the real sbatch).
    real = shutil.which("sbatch")
    assert real is not None
    fakes, state = tmp_path / "fake-bin", tmp_path / "sbatch-state"
    fakes.mkdir()
    state.mkdir()
    (fakes / "sbatch").symlink_to(LOST_REPLY)
    monkeypatch.setenv("SBATCH_LOST_REPLY_REAL", real)
    monkeypatch.setenv("SBATCH_LOST_REPLY_DIR", str(state))
    monkeypatch.setenv("SBATCH_LOST_REPLY_TIMES", str(lost))
    monkeypatch.setenv("PATH", f"{fakes}{os.pathsep}{os.environ['PATH']}")
    life = Life(root=camp, backend="generic-slurm", run=run)
    life.write("manifests/nap.yaml", NAP.replace("{seconds: 60}", "{seconds: 240}"))
    name = "life.nap.smoke"
    try:
        first = life.submit("manifests/nap.yaml", "smoke")
        # No calls file: sbatch was never reached, or the real sbatch under the fake failed.
        assert (state / "calls").exists(), first.out + first.err
        calls = (state / "calls").read_text().split("\n")[:-1]
        assert len(calls) == 1 and calls[0].startswith("lost "), calls  # never retried
        (job,) = life.jobs()
        queued = calls[0].split()[1].split(";")[0]
        assert _queued(name, job.ledger_id) == [queued]  # exactly one job on the cluster
        # Told: exit 1, the outcome is unknown, do not resubmit, the refresh resolves it.
        assert first.code == 1 and "Traceback" not in first.err, first.out + first.err
        assert f"outcome unknown for {name}" in first.out and "do not submit it" in first.out
        assert "Socket timed out" in first.err and "outcome is unknown" in first.err
        assert "run: campaign status --refresh" in first.err
        assert job.job_id is None and job.text("outcome") == "unknown" and not job.error
        # Until the refresh finds it, no_sibling counts it as queued: no second job.
        second = life.submit("manifests/nap.yaml", "smoke")
        assert second.code == 1 and "no_sibling" in second.err, second.out + second.err
        assert "outcome unknown" in second.err and "campaign status --refresh" in second.err
        assert len((state / "calls").read_text().splitlines()) == 1
        # The refresh adopts the job that was queued, found by name and comment.
        found = run("status", "--refresh")
        assert found.code == 0 and "1 lost result(s) found" in found.err, found.err
        (job,) = life.jobs()
        assert job.job_id == queued and job.state in ("PENDING", "RUNNING"), job.record
        third = life.submit("manifests/nap.yaml", "smoke")
        assert third.code == 1 and "no_sibling" in third.err and queued in third.err
        assert len((state / "calls").read_text().splitlines()) == 1
        assert _queued(name, job.ledger_id) == [queued]
    finally:
        subprocess.run(["scancel", f"--name={name}"], check=False)


def _hook(root: Path, body: str) -> None:
    hook = root / ".git/hooks/pre-commit"
    hook.write_text(f"#!/bin/sh\n{body}\n")
    hook.chmod(0o755)


def test_commit_records_the_submission_whatever_the_campaigns_hooks_say(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    _hook(camp, "echo 'STALE001 a stamp is old' >&2; exit 1")
    done = run("submit", "manifests/example.yaml", "--stage", "smoke", "--commit")
    assert done.code == 0, done.err
    assert "submitted life.example.smoke as job" in done.out and "committed ledger" in done.out
    assert git(camp, "status", "--porcelain", "--", ".campaign", "STATUS.md") == ""
    shown = git(camp, "show", "--stat", "--format=%s", "HEAD")
    assert shown.startswith("Submit life.example.smoke (local-")
    assert ".campaign/ledger.jsonl" in shown and ".campaign/jobs/" in shown


def test_a_failed_push_after_submitting_is_exit_1_with_the_job_recorded(
    tmp_path: Path, run, new_campaign, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    root = new_campaign("pushy", "require_pushed=yes")
    upstream = tmp_path / "upstream.git"
    git(tmp_path, "init", "-q", "--bare", str(upstream))
    git(root, "remote", "add", "origin", str(upstream))
    git(root, "push", "-q", "-u", "origin", "main")
    # The upstream refuses every push from now on (a protected branch, a full disk...).
    refuse = upstream / "hooks/pre-receive"
    refuse.write_text("#!/bin/sh\necho 'protected branch' >&2\nexit 1\n")
    refuse.chmod(0o755)
    monkeypatch.chdir(root)
    done = run("submit", "manifests/example.yaml", "--stage", "smoke", "--commit")
    assert done.code == 1, done.out + done.err
    assert "submitted pushy.example.smoke as job local-" in done.out
    assert "not pushed" in done.err and "run: git push" in done.err and "Traceback" not in done.err
    records = [json.loads(x) for x in (root / ".campaign/ledger.jsonl").read_text().splitlines()]
    assert [r["kind"] for r in records] == ["intent", "result"]
    assert records[1]["job_id"].startswith("local-")


def test_status_md_that_cannot_be_rendered_after_submitting_is_a_warning(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    status = camp / "STATUS.md"
    # A hand edit broke a marker: the view cannot be written back; the job is queued all the same.
    status.write_text(status.read_text() + "\n<!-- campaign:begin jobs -->\n")
    done = run("submit", "manifests/example.yaml", "--stage", "smoke")
    assert done.code == 1, done.err
    assert "submitted life.example.smoke as job local-" in done.out
    assert "STATUS.md was not re-rendered" in done.err and "run: campaign render" in done.err
    assert "Traceback" not in done.err


def test_a_scheduler_answer_its_backend_cannot_read_is_unreachable_not_a_crash(
    new_campaign,  # type: ignore[no-untyped-def]
    run,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    # Grid Engine's qstat, with a running cell, answers PBS's `qstat -f -F json` with its own
    # queue listing and exit 0 (seen in the suite, where a Grid Engine cell runs): not JSON from the
    # PBS page's scheduler. A dry run says the backend cannot be reached (the same hint as a
    # refusal), and a submit refuses it before anything is written.
    root = new_campaign(
        "silent", "backends=generic-pbs,local", "smoke_backend=local", "require_pushed=no"
    )
    bindir = tmp_path / "silent-bin"
    bindir.mkdir()
    listing = "queuename                      qtype resv/used/tot. load_avg arch          states"
    (bindir / "qstat").write_text(f"#!/bin/sh\necho '{listing}'\nexit 0\n")
    (bindir / "qstat").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    argv = ["submit", "manifests/example.yaml", "--stage", "smoke", "--backend", "generic-pbs"]
    dry = run(*argv, "--dry-run")
    assert dry.code == 2, dry.out + dry.err
    assert "not checked: this machine cannot reach backend generic-pbs" in dry.out, dry.out
    assert "qstat printed no JSON" in dry.out and "#PBS -N " in dry.out
    real = run(*argv)
    assert real.code == 2 and "cannot reach backend generic-pbs: qstat printed" in real.err
    assert "two schedulers may ship one name" in real.err and "Traceback" not in real.err
    assert ledger.read(root).jobs == ()
