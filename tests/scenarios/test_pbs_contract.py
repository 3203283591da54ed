"""PBS through `campaign submit` and `campaign status`, end to end, against a CONTRACT REPLAY.

No PBS server can run here. PATH starts with tests/runner/pbs_contract/bin, whose qsub, qstat,
qselect and qdel apply OpenPBS's own rules (each rewritten from the OpenPBS source it cites)
and keep their jobs in a state directory; ``cycle()`` plays the scheduler's pass that runs the
queued jobs with bash. The campaign is the template's, with generic-pbs as its smoke backend.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from campaignops.backends import command as scheduler
from campaignops.backends.pbs import backend as pbs
from campaignops.model import ledger
from tests.conftest import git
from tests.runner.expected import EXIT, OUTPUT_CHECK, OUTPUT_INIT, TRAPS, WAIT, case
from tests.runner.pbs_contract import BIN, STATE_ENV, cycle

SERVER = "pbs-contract-01.example"
THREE = """\
backend: generic-pbs
resources: {time: "00:05:00", cpus: 1}
jobs:
  - id: good
    cmd: echo good
  - id: bad
    cmd: bash -c "echo bad input >&2; exit 3"
  - id: fine
    cmd: echo fine
"""


@pytest.fixture
def camp(
    tmp_path: Path, new_campaign: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> Path:
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv(STATE_ENV, str(tmp_path / "pbs-server"))
    monkeypatch.setenv("PBS_CONTRACT_SERVER", SERVER)
    monkeypatch.setenv("PBS_CONTRACT_QUEUES", "debug,compute")  # the generic-pbs page's
    return new_campaign(
        "pb", "backends=generic-pbs,local", "smoke_backend=generic-pbs", "require_pushed=no"
    )


def commit(root: Path, rel: str, text: str) -> str:
    (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", f"add {rel}")
    return git(root, "rev-parse", "HEAD").strip()


def queued_jobs(tmp_path: Path) -> dict[str, object]:
    """What the replayed server holds: nothing until qsub accepted a job."""
    path = tmp_path / "pbs-server" / "jobs.json"
    return json.loads(path.read_text())["jobs"] if path.exists() else {}


def shown_script(out: str) -> str:
    return out.split("-- the script that would be submitted:\n", 1)[1].split("\ndry run:", 1)[0]


def test_dry_run_shows_the_script_qsub_would_take_contract_replay(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    head = git(camp, "rev-parse", "HEAD").strip()
    # The example smokes on local where the campaign authorizes it: PBS is asked for.
    pbs_argv = ("submit", "manifests/example.yaml", "--backend", "generic-pbs")
    dry = run(*pbs_argv, "--stage", "smoke", "--dry-run")
    assert dry.code == 0, dry.err
    assert "dry run: nothing submitted; a submit would pass every gate" in dry.out
    commands = [
        f"python3 scripts/smoke_task.py --config configs/example/{cfg}.yaml --task {task}"
        f" --out ${{CAMPAIGN_OUT}}/example/{cfg}_{task} --epochs 2"
        for cfg in ("baseline", "wide")
        for task in ("reconstruction", "segmentation")
    ]
    outputs = [
        f'"${{CAMPAIGN_OUT}}"/example/{cfg}_{task}/metrics.json'
        for cfg in ("baseline", "wide")
        for task in ("reconstruction", "segmentation")
    ]
    # Each task is told its target's config fingerprint (what the smoke gate compares).
    configs = re.findall(r"export CAMPAIGN_CONFIG=(sha256:[0-9a-f]{64})\n", shown_script(dry.out))
    assert len(set(configs)) == 4, shown_script(dry.out)
    assert shown_script(dry.out) == (
        "#!/bin/bash\n"
        "#PBS -N pb.example.smoke\n"
        "#PBS -l select=1:ncpus=1:mem=1gb\n"
        "#PBS -l place=scatter\n"
        "#PBS -l walltime=00:05:00\n"
        "#PBS -J 0-3%2\n"
        f"#PBS -o {camp}/logs/\n"
        "#PBS -j oe\n"
        "#PBS -k doe\n"
        "#PBS -m ae\n"
        "#PBS -M owner@example.org\n"
        "#PBS -r y\n"
        # The preview's stand-in ledger id has the real one's shape: qsub and pbs.py take it.
        f"#PBS -v CAMPAIGN_COMMENT=L00000000T000000Z-000000000000:{head}\n"
        "# Rendered by campaignops from a committed manifest: change that, not this.\n"
        "set -euo pipefail\n"
        f"cd {camp}\n"
        'export CAMPAIGN_TASK_INDEX="${PBS_ARRAY_INDEX:-0}"\n'
        "export CAMPAIGN_OUT=runs/smoke\n"
        "export CAMPAIGN_STAGE=smoke\n"
        + OUTPUT_INIT
        + TRAPS
        + case(*commands, outputs=outputs, configs=configs)
        + WAIT
        + OUTPUT_CHECK
        + EXIT
    )
    assert queued_jobs(camp.parent) == {} and ledger.read(camp).jobs == ()
    # The shown script is what qsub accepts: the replay takes it as it stands.
    (camp / "preview.sh").write_text(shown_script(dry.out))
    assert pbs.parse_job_id(scheduler.call(["qsub", str(camp / "preview.sh")]).stdout)
    refused = run(*pbs_argv, "--stage", "production", "--dry-run")
    assert refused.code == 1 and "gate smoke_first  REFUSE" in refused.out
    assert "#PBS -N pb.example.production" in shown_script(refused.out)


def test_submit_then_refresh_records_each_task_contract_replay(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    commit(camp, "manifests/three.yaml", THREE)
    smoke = run("submit", "manifests/three.yaml", "--stage", "smoke")
    assert smoke.code == 0, smoke.err
    job_id = f"1000[].{SERVER}"
    assert f"submitted pb.three.smoke as job {job_id}" in smoke.out
    (job,) = ledger.read(camp).jobs
    assert (job.record["job_id"], job.state, job.targets) == (
        job_id,
        "PENDING",
        ("good", "bad", "fine"),
    )
    again = run("submit", "manifests/three.yaml", "--stage", "smoke")
    assert again.code == 1 and "no_sibling" in again.err and job_id in again.err
    assert cycle() == [job_id]
    refreshed = run("status", "--refresh")
    assert refreshed.code == 0, refreshed.err
    (job,) = ledger.read(camp).jobs
    assert (job.state, job.record["exit_code"]) == ("FAILED", 3)
    assert job.record["started"] and job.record["ended"]
    # Each target's own task, recorded by that refresh from its one qstat -x -t call.
    own = {t: (task.state, task.exit_code) for t in job.targets if (task := job.task(t))}
    assert own == {"good": ("COMPLETED", 0), "bad": ("FAILED", 3), "fine": ("COMPLETED", 0)}
    tasks = [job.task(t) for t in job.targets]
    assert all(t and t.ended and t.started and t.started <= t.ended for t in tasks)
    status = (camp / "STATUS.md").read_text()
    assert f"| bad | FAILED exit 3, unknown ({job_id} task 1) |" in status
    log = camp / "logs" / f"1000[1].{SERVER}.OU"
    assert log.read_text() == "bad input\n"  # -j oe -k doe: the task's own log, in place


def test_a_job_purged_from_the_servers_history_does_not_stop_the_refresh_contract_replay(  # type: ignore[no-untyped-def]
    camp: Path, run
) -> None:
    """qstat exits 153 (PBSE_UNKJOBID) for an id the server no longer knows and prints the
    others: the refresh records what it was told and leaves the purged job as it was."""
    one = "backend: generic-pbs\nresources: {time: '00:05:00', cpus: 1}\njobs:\n"
    commit(camp, "manifests/a.yaml", one + "  - id: a\n    cmd: echo a\n")
    commit(camp, "manifests/b.yaml", one + "  - id: b\n    cmd: echo b\n")
    assert run("submit", "manifests/a.yaml", "--stage", "smoke").code == 0
    state = camp.parent / "pbs-server" / "jobs.json"
    data = json.loads(state.read_text())
    data["jobs"].clear()  # purged: past the server's job_history_duration
    state.write_text(json.dumps(data))
    assert run("submit", "manifests/b.yaml", "--stage", "smoke").code == 0
    assert cycle() == [f"1001.{SERVER}"]
    refreshed = run("status", "--refresh")
    assert refreshed.code == 0, refreshed.err
    by_target = {j.targets: j for j in ledger.read(camp).jobs}
    assert by_target[("b",)].state == "COMPLETED"
    assert by_target[("a",)].state == "PENDING"  # nothing told of it: never recorded UNKNOWN


def test_a_name_qsub_would_refuse_is_refused_before_the_call_contract_replay(  # type: ignore[no-untyped-def]
    camp: Path, run
) -> None:
    """A target id may hold '=' (manifest schema); PBS's -N may not (check_job_name): the
    manifest's check refuses it (MAN018, as campaign check reports it), before qsub."""
    commit(
        camp, "manifests/lr.yaml", "backend: generic-pbs\njobs:\n  - {id: lr=0.1, cmd: 'true'}\n"
    )
    for extra in ((), ("--dry-run",)):
        refused = run("submit", "manifests/lr.yaml", "--stage", "smoke", *extra)
        assert refused.code == 2 and "MAN018" in refused.err
        assert "job name 'pb.lr=0.1.smoke' may hold only letters, digits and _ . + -" in refused.err
    assert queued_jobs(camp.parent) == {} and ledger.read(camp).jobs == ()


# The retry rule on PBS (docs/runner.md "Retrying what ran out of memory"). The replay has no
# memory enforcement: ``host`` prints the line PBS's MoM writes when it kills a job over its
# memory (failures.yaml pbs-memory-exceeded) and exits 1 on its first attempt; ``gpu`` prints a
# CUDA out-of-memory error; each completes on its second attempt.
FLAKY = """\
backend: generic-pbs
resources: {time: "00:05:00", cpus: 1, mem: 1G, queue: debug}
oom_retry: {delay: 0, max_attempts: 2, memory_factor: 4}
jobs:
  - id: host
    cmd: >-
      bash -c 'mkdir -p "$CAMPAIGN_OUT"; [ -e "$CAMPAIGN_OUT/host" ] && exit 0;
      touch "$CAMPAIGN_OUT/host"; echo "=>> PBS: job killed: mem 1300000kb exceeded limit
      1048576kb" >&2; exit 1'
  - id: gpu
    cmd: >-
      bash -c 'mkdir -p "$CAMPAIGN_OUT"; [ -e "$CAMPAIGN_OUT/gpu" ] && exit 0;
      touch "$CAMPAIGN_OUT/gpu"; echo "torch.OutOfMemoryError: CUDA out of memory. Tried to
      allocate 2.00 GiB" >&2; exit 1'
"""


def test_oom_retry_resubmits_through_qsub_contract_replay(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    page = camp / "backends/generic-pbs.md"
    row = "  - {name: debug, purpose: smoke}"
    page.write_text(page.read_text().replace(row, row[:-1] + ", mem_per_node: 3G}"))
    commit(camp, "manifests/flaky.yaml", FLAKY)
    assert run("submit", "manifests/flaky.yaml", "--stage", "smoke").code == 0
    first = f"1000[].{SERVER}"
    assert cycle() == [first]
    refreshed = run("status", "--refresh")
    assert refreshed.code == 0, refreshed.err
    # The first submission and its retries by what the records say, not by their order: a
    # retry submitted within the same second as a scheduler-stamped original may sort first.
    jobs = ledger.read(camp).jobs
    (one,) = [j for j in jobs if not j.record.get("retry_of")]
    retries = [j for j in jobs if j is not one]
    tasks = {t: (task.state, task.category) for t in one.targets if (task := one.task(t))}
    shown = (refreshed.out, [dict(j.record) for j in jobs])
    assert tasks == {"host": ("FAILED", "oom-host"), "gpu": ("FAILED", "oom-gpu")}, shown
    # Two retries at once: the host OOM's with 4 × 1G capped by the queue's 3G, the GPU's as is.
    by_target = {j.targets: j for j in retries}
    assert set(by_target) == {("host",), ("gpu",)}, [dict(j.record) for j in retries]
    host, gpu = by_target[("host",)], by_target[("gpu",)]
    assert (host.record["attempt"], host.record["resources"]) == (2, {"mem": "3G"})
    assert (gpu.record["attempt"], gpu.record["resources"]) == (2, {"mem": "1G"})
    assert host.record["retry_of"] == gpu.record["retry_of"] == [one.ledger_id]
    held = queued_jobs(camp.parent)
    asked = {job_id: str(job) for job_id, job in held.items() if job_id != first}
    assert any("mem=3gb" in text.lower() for text in asked.values()), asked
    assert cycle() and run("status", "--refresh").code == 0
    ended = {j.targets: j.state for j in ledger.read(camp).jobs if j.record.get("retry_of")}
    assert ended == {("host",): "COMPLETED", ("gpu",): "COMPLETED"}
