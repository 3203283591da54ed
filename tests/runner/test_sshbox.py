"""The ssh backend's pure parts: the script, the job id, the fold of the instances' answers
(an unreachable box's tasks are UNKNOWN, never FAILED), the deal of indices, job.json, and the
budget's price from the instances."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from campaignops.backends import charging
from campaignops.backends import registry as backends
from campaignops.backends.local import directives as localjob
from campaignops.backends.ssh import backend as sshbox
from campaignops.backends.ssh import selfstop
from campaignops.backends.ssh import submit as sshsubmit
from campaignops.backends.ssh.instances import Instance
from campaignops.model.jobspec import BoxSettings, JobSpec, Resources

SPEC = JobSpec(
    name="camp.cells.smoke",
    workdir="/home/me/camp",
    tasks=("bash scripts/run_one.v1.sh a", "bash scripts/run_one.v1.sh b"),
    resources=Resources(time="00:05:00"),
    max_parallel=2,
    after=("ssh-3-abcdef",),
    comment="L1 " + "c" * 40,
    env={"CAMPAIGN_OUT": "runs/smoke"},
)

SCRIPT = """\
#!/bin/bash
# SSH box job: campaignops.backends.ssh.submit reads the #LOCAL lines (sbatch's keys) into
# job.json for the box's executor. Rendered from a committed manifest: change that.
#SSHBOX --after=ssh-3-abcdef
#LOCAL --job-name=camp.cells.smoke
#LOCAL --chdir=@CAMPAIGN_DEPLOY_DIR@
#LOCAL --log-dir=logs
#LOCAL --comment=L1 cccccccccccccccccccccccccccccccccccccccc
#LOCAL --array=0-1%2
#LOCAL --time=00:05:00
#LOCAL --kill-wait=30
set -euo pipefail
cd @CAMPAIGN_DEPLOY_DIR@
export CAMPAIGN_TASK_INDEX="${CAMPAIGN_TASK_INDEX:-0}"
export CAMPAIGN_OUT=runs/smoke
campaign_woken=0
campaign_pid=
trap 'campaign_woken=1; [ -z "$campaign_pid" ] || kill -USR1 "$campaign_pid" 2>/dev/null || true' USR1
trap 'campaign_woken=1; [ -z "$campaign_pid" ] || kill -TERM "$campaign_pid" 2>/dev/null || true' TERM
case "$CAMPAIGN_TASK_INDEX" in
  0)
    ( bash scripts/run_one.v1.sh a
    ) &
    ;;
  1)
    ( bash scripts/run_one.v1.sh b
    ) &
    ;;
  *)
    echo "campaign: this job has no task $CAMPAIGN_TASK_INDEX" >&2
    exit 64
    ;;
esac
campaign_pid=$!
while :; do
  campaign_woken=0
  wait "$campaign_pid" && campaign_status=0 || campaign_status=$?
  if [ "$campaign_woken" = 1 ] && [ "$campaign_status" -gt 128 ]; then campaign_cut=$campaign_status; continue; fi
  break
done
[ "$campaign_status" -ge 0 ] || campaign_status=$campaign_cut
exit "$campaign_status"
"""


def test_the_script_is_the_local_one_with_the_deploy_dir_left_open() -> None:
    script = sshbox.render(SPEC)
    assert script == SCRIPT
    assert sshbox.after_of(script) == ("ssh-3-abcdef",)
    deployed = sshsubmit.instance_script(script, "/workspace/camp/" + "c" * 40)
    assert "cd /workspace/camp/cccc" in deployed and sshbox.DEPLOY_MARK not in deployed


def test_a_page_of_kind_ssh_gets_the_ssh_backend(tmp_path: Path) -> None:
    page = {"kind": "ssh", "scheduler": "none"}
    assert backends.module_for(page) == "ssh"
    be = backends.for_page("generic-ssh", page, root=tmp_path)
    assert isinstance(be, sshbox.SshBackend)
    assert be.submit_argv("/s.sh")[2:] == [
        "campaignops.backends.ssh.submit", "submit",
        "--root", str(tmp_path), "--backend", "generic-ssh", "/s.sh",
    ]  # fmt: skip
    assert be.query_argvs(["ssh-1-abcdef", "ssh-2-abcdef"])[0][2:] == [
        "campaignops.backends.ssh.query", "status",
        "--root", str(tmp_path), "--backend", "generic-ssh", "ssh-1-abcdef", "ssh-2-abcdef",
    ]  # fmt: skip
    assert len(be.query_argvs(["ssh-1-abcdef"])) == 1  # one helper; it makes one call per box
    assert (
        be.log_path("ssh-1-abcdef", name="c.x.smoke", index=3)
        == "logs/c.x.smoke-ssh-1-abcdef_3.out"
    )
    # ssh's own failures are retried inside the helpers only: a whole submit never twice.
    assert not be.TRANSIENT.search("ssh: connect to host 1.2.3.4 port 22: Connection refused")


def test_the_job_id_is_read_from_the_submit_answer() -> None:
    out = json.dumps({"job_id": "ssh-7-0a1b2c", "placement": [{"instance": {"name": "a"}}]})
    assert sshbox.parse_job_id(out) == "ssh-7-0a1b2c"
    assert sshbox.placement(out) == [{"instance": {"name": "a"}}]
    for bad in ("ssh-7", '{"job_id": "local-1-abcdef"}', '{"job_id": "ssh-7-0a1b2c; rm"}'):
        with pytest.raises(sshbox.SshBackendError):
            sshbox.parse_job_id(bad)


def status(tasks: dict[str, dict[str, object]]) -> str:
    return json.dumps(
        {"jobs": [{"job_id": "ssh-1-abcdef", "name": "n", "comment": "L c", "tasks": tasks}]}
    )


def test_tasks_of_an_unreachable_box_are_unknown_and_the_job_not_failed() -> None:
    done = {
        "state": "COMPLETED",
        "exit_code": 0,
        "start": "2026-11-24T10:00:00+00:00",
        "end": "2026-11-24T10:01:00+00:00",
        "instance": "a",
    }
    lost = {"state": "UNKNOWN", "reason": "instance b unreachable", "instance": "b"}
    job = sshbox.parse_states([status({"0": done, "1": lost, "2": done})])["ssh-1-abcdef"]
    assert (job.state, job.exit_code, job.ended) == ("RUNNING", None, None)
    assert {i: t.state for i, t in job.tasks.items()} == {
        0: "COMPLETED",
        1: "UNKNOWN",
        2: "COMPLETED",
    }
    assert job.tasks[1].reason == "instance b unreachable"
    every = sshbox.parse_states([status({"0": lost, "1": lost})])["ssh-1-abcdef"]
    assert every.state == "UNKNOWN"  # nothing known: the runner keeps what the ledger says


def test_a_finished_job_is_its_worst_task() -> None:
    failed = {"state": "FAILED", "exit_code": 97, "end": "2026-11-24T10:02:00+00:00"}
    done = {"state": "COMPLETED", "exit_code": 0, "end": "2026-11-24T10:01:00+00:00"}
    job = sshbox.parse_states([status({"0": done, "1": failed})])["ssh-1-abcdef"]
    assert (job.state, job.exit_code, job.ended) == ("FAILED", 97, "2026-11-24T10:02:00+00:00")
    pending = sshbox.parse_states([status({"0": {"state": "PENDING"}})])["ssh-1-abcdef"]
    assert pending.state == "PENDING"
    with pytest.raises(sshbox.SshBackendError):
        sshbox.parse_states(["not json"])


def test_indices_are_dealt_round_robin_and_idle_boxes_left_out() -> None:
    boxes = [Instance(name=n, host="h", workdir="/w") for n in ("a", "b", "c")]
    assert sshsubmit.deal(5, boxes) == {"a": [0, 3], "b": [1, 4], "c": [2]}
    assert sshsubmit.deal(1, boxes) == {"a": [0]}


def test_with_costs_the_boxes_get_equal_work_longest_first() -> None:
    boxes = [Instance(name=n, host="h", workdir="/w") for n in ("a", "b")]
    # Epochs 8, 1, 1, 4, 2 on two boxes: round-robin would give a 11 and b 5; by cost 8 | 8.
    shares = sshsubmit.deal(5, boxes, [8, 1, 1, 4, 2])
    assert sorted(sorted(v) for v in shares.values()) == [[0], [1, 2, 3, 4]]
    assert shares[next(k for k, v in shares.items() if 3 in v)] == [3, 4, 1, 2]  # longest first
    assert sshsubmit.deal(1, boxes, [5]) == {"a": [0]}  # fewer tasks than boxes: as dealt


def test_the_manifests_box_keys_reach_job_json(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = JobSpec(
        name="camp.cells.smoke",
        workdir="/home/me/camp",
        tasks=("true", "true"),
        box=BoxSettings(
            gpus=(2, 3),
            gpu_free_threshold_mib=800,
            conda="dllm",
            oom_attempts=3,
            oom_delay_s=60.0,
            costs=(5.0, 1.0),
        ),
    )
    script = sshbox.render(spec)
    settings = sshbox.box_of(script)
    assert settings == {
        "conda": "dllm",
        "costs": [5.0, 1.0],
        "gpu_free_threshold_mib": 800,
        "gpus": [2, 3],
        "oom_attempts": 3,
        "oom_delay_s": 60.0,
    }
    assert localjob.parse_directives(script).size == 2  # the local parser skips the line
    box = Instance(name="a", host="h", workdir="/w", gpus=(0, 1, 2, 3))
    doc = sshsubmit.job_document(
        localjob.parse_directives(script), "ssh-1-abcdef", [0, 1], box, [], "/w",
        settings=settings, oom_patterns=["(?i)CUDA out of memory"],
    )  # fmt: skip
    assert (doc["gpus"], doc["gpu_free_threshold_mib"], doc["conda"], doc["oom_retry"]) == (
        [2, 3],
        800,
        {"hook": None, "env": "dllm"},
        {"max_attempts": 3, "delay_s": 60.0, "patterns": ["(?i)CUDA out of memory"]},
    )
    # No GPU list in the manifest: the instance's; no catalog matcher: no retry on the box.
    bare = sshsubmit.job_document(
        localjob.parse_directives(script), "ssh-1-abcdef", [0], box, [], "/w",
        settings={"oom_attempts": 3}, oom_patterns=[],
    )  # fmt: skip
    assert (bare["gpus"], bare["oom_retry"], bare["conda"]) == ([0, 1, 2, 3], None, None)


def test_job_json_carries_the_directives_and_the_box(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sshsubmit, "now", lambda: "2026-11-24T10:00:00+00:00")
    directives = localjob.parse_directives(SCRIPT)
    box = Instance(name="a", host="h", workdir="/w", gpus=(0, 1))
    doc = sshsubmit.job_document(
        directives, "ssh-1-abcdef", [0, 2], box, ["ssh-0-abcdef"], "/w/c/x"
    )
    assert doc == {
        "job_id": "ssh-1-abcdef",
        "workdir": "/w/c/x",
        "name": "camp.cells.smoke",
        "comment": "L1 " + "c" * 40,
        "indices": [0, 2],
        "max_parallel": 2,
        "time_limit_s": 300,
        "kill_wait_s": 30,
        "warning": None,
        "after": ["ssh-0-abcdef"],
        "gpus": [0, 1],
        "gpu_free_threshold_mib": 500,
        "oom_retry": None,
        "conda": None,
        "log_dir": "logs",
        "log_name": "camp.cells.smoke-ssh-1-abcdef_{index}.out",
        "outputs": {},
        "idle_stop": None,
        "submitted": "2026-11-24T10:00:00+00:00",
    }
    stop = {"minutes": 0.5, "command": 'runpodctl stop pod "$RUNPOD_POD_ID"'}
    with_stop = sshsubmit.job_document(
        directives, "ssh-1-abcdef", [0, 2], box, [], "/w/c/x", idle_stop=stop
    )
    assert with_stop["idle_stop"] == stop
    outputs = {"0": ["runs/smoke/a"], "1": ["runs/smoke/b"], "2": ["runs/smoke/c"]}
    mine = sshsubmit.job_document(directives, "ssh-1-abcdef", [0, 2], box, [], "/w", outputs)
    assert mine["outputs"] == {"0": ["runs/smoke/a"], "2": ["runs/smoke/c"]}


def test_outputs_are_read_from_the_script_as_it_checks_them() -> None:
    spec = JobSpec(
        name="camp.cells.smoke",
        workdir="/home/me/camp",
        tasks=("true", "true", "true"),
        env={"CAMPAIGN_OUT": "runs/smoke", "CELL": "x y"},
        outputs=(
            "${CAMPAIGN_OUT}/a/metrics.json",
            None,
            "${CAMPAIGN_OUT}/${CELL}-${CAMPAIGN_TASK_INDEX}/${HOME}",
        ),
    )
    script = sshbox.render(spec)
    assert sshsubmit.outputs_of(script) == {"0": ["runs/smoke/a/metrics.json"]}
    spec2 = JobSpec(
        name="c.x.smoke",
        workdir="/w",
        tasks=("true", "true"),
        env={"CAMPAIGN_OUT": "runs/smoke", "CELL": "x y"},
        outputs=("out/${CELL}-${CAMPAIGN_TASK_INDEX}.txt", "${CAMPAIGN_OUT}/b"),
    )
    assert sshsubmit.outputs_of(sshbox.render(spec2)) == {
        "0": ["out/x y-0.txt"],
        "1": ["runs/smoke/b"],
    }


def test_the_budget_prices_a_task_by_its_box_share() -> None:
    page = {
        "kind": "ssh",
        "instances": [
            {"name": "a", "host": "h", "workdir": "/w", "usd_per_hour": 2.0, "gpus": [0, 1]},
            {"name": "b", "host": "h", "workdir": "/w", "usd_per_hour": 0.5},
        ],
    }
    # Per task: the mean of 2.0/2 GPUs and 0.5/1 box = 0.75 USD an hour.
    assert charging.job_charge(Resources(), 3600, page) == charging.Charge(
        unit="usd", rate=0.75, time_s=3600
    )
    assert charging.estimate(Resources(), 4, 1800, page) == pytest.approx(1.5)
    unpriced = {"kind": "ssh", "instances": [{"name": "a", "host": "h", "workdir": "/w"}]}
    assert charging.job_charge(Resources(), 3600, unpriced) is None
    block = {"unit": "usd", "per": "gpu", "per_hour": 3.0, "source": "s", "verified": "2026-11"}
    assert charging.charging(page | {"charging": block}) == charging.Charging(
        unit="usd", per="gpu", per_hour=3.0
    )


def test_for_no_sibling_a_task_on_a_silent_box_holds_its_target(tmp_path: Path) -> None:
    done = {"state": "COMPLETED", "exit_code": 0, "instance": "a"}
    lost = {"state": "UNKNOWN", "reason": "instance b unreachable", "instance": "b"}
    be = sshbox.SshBackend(tmp_path, "generic-ssh")
    (job,) = be.parse_live(status({"0": done, "1": lost}))
    assert (job.state, sorted(job.tasks)) == ("RUNNING", [1])
    (silent,) = be.parse_live(status({"0": lost, "1": lost}))
    assert (silent.state, sorted(silent.tasks)) == ("RUNNING", [0, 1])
    assert be.parse_live(status({"0": done})) == ()


def test_the_idle_stop_comes_from_the_policy_and_the_page(tmp_path: Path) -> None:
    page = {"kind": "ssh", "self_stop": "stop-me"}
    (tmp_path / "campaign.yaml").write_text("name: c\nbudgets: {idle_stop_minutes: 0.02}\n")
    assert selfstop.job_setting(tmp_path, page) == {"minutes": 0.02, "command": "stop-me"}
    assert selfstop.job_setting(tmp_path, {"kind": "ssh"}) is None  # the page gives none
    (tmp_path / "campaign.yaml").write_text("name: c\n")
    assert selfstop.job_setting(tmp_path, page) is None  # off by default
