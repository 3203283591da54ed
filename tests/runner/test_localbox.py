"""campaignops.backends.local.gpu and LocalBackend's choice of executor per job (the whole story,
through the CLI with real executors: tests/scenarios/test_local_gpu.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from campaignops.backends.local import backend as localbackend
from campaignops.backends.local import directives as localjob
from campaignops.backends.local import gpu as localbox
from campaignops.backends.local import machine as local
from campaignops.model import manifest_keys
from campaignops.model.jobspec import BoxSettings, JobSpec, Resources

SPEC = JobSpec(
    name="demo.pair.smoke",
    workdir="/c",
    tasks=("bash a", "bash b"),
    comment="L1 abc",
    after=("local-gpu-1-abcdef",),
    box=BoxSettings(gpus=(0, 1), conda="torch"),
)
SCRIPT = """\
#!/bin/bash
# Local GPU job, run by the box executor (campaignops.remote.boxexec), which reads the
# #LOCAL lines as sbatch reads #SBATCH. Rendered from a committed manifest: change that.
#LOCALBOX --box={"conda":"torch","gpus":[0,1]}
#LOCALBOX --after=local-gpu-1-abcdef
#LOCAL --job-name=demo.pair.smoke
#LOCAL --chdir=/c
#LOCAL --log-dir=logs
#LOCAL --comment=L1 abc
#LOCAL --array=0-1
#LOCAL --kill-wait=30
set -euo pipefail
cd /c
export CAMPAIGN_TASK_INDEX="${CAMPAIGN_TASK_INDEX:-0}"
campaign_woken=0
campaign_pid=
trap 'campaign_woken=1; [ -z "$campaign_pid" ] || kill -USR1 "$campaign_pid" 2>/dev/null || true' USR1
trap 'campaign_woken=1; [ -z "$campaign_pid" ] || kill -TERM "$campaign_pid" 2>/dev/null || true' TERM
case "$CAMPAIGN_TASK_INDEX" in
  0)
    ( bash a
    ) &
    ;;
  1)
    ( bash b
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


def backend(tmp_path: Path, page: str | None = None) -> localbackend.LocalBackend:
    if page is not None:
        (tmp_path / "backends").mkdir()
        (tmp_path / "backends/local.md").write_text(page)
    return localbackend.LocalBackend(tmp_path)


def test_a_gpu_list_renders_the_box_executors_script_in_full(tmp_path: Path) -> None:
    script = backend(tmp_path).render(SPEC)
    assert script == SCRIPT
    assert localbox.is_box_script(script)
    assert localbox.settings_of(script) == {"conda": "torch", "gpus": [0, 1]}
    # The #LOCAL parser skips the #LOCALBOX lines: no afterok of a foreign id reaches it.
    assert localjob.parse_directives(script).after == ()


def test_no_gpu_list_keeps_localexec(tmp_path: Path) -> None:
    plain = JobSpec(name="demo.a.smoke", workdir="/c", tasks=("bash a",))
    be = backend(tmp_path)
    assert be.render(plain) == local.render(plain)
    path = tmp_path / "job.sh"
    path.write_text(be.render(plain))
    assert be.submit_argv(str(path))[2] == localjob.EXECUTOR
    path.write_text(be.render(SPEC))
    assert be.submit_argv(str(path))[2:4] == [localbox.HELPER, "submit"]


def test_the_pages_gpu_list_serves_a_job_that_asks_for_gpus(tmp_path: Path) -> None:
    asks = JobSpec(
        name="demo.a.smoke", workdir="/c", tasks=("bash a",), resources=Resources(gpus=1)
    )
    be = backend(tmp_path, "---\nplatform: local\nkind: local\ngpus: [2, 3]\n---\n")
    assert localbox.settings_of(be.render(asks))["gpus"] == [2, 3]
    (tmp_path / "m").mkdir()
    models = backend(tmp_path / "m", "---\nplatform: local\nkind: local\ngpus: [A100]\n---\n")
    assert not localbox.is_box_script(models.render(asks))  # model names list no indices


def test_box_keys_without_a_gpu_list_are_refused_not_ignored(tmp_path: Path) -> None:
    conda_only = JobSpec(
        name="demo.a.smoke",
        workdir="/c",
        tasks=("bash a",),
        box=BoxSettings(conda="torch", gpu_free_threshold_mib=800),
    )
    with pytest.raises(localjob.LocalBackendError) as caught:
        backend(tmp_path).render(conda_only)
    assert caught.value.message == (
        "job 'demo.a.smoke' has no GPU list here, so localexec would run it and ignore conda, "
        "gpu_free_threshold_mib"
    )


def test_each_id_goes_to_its_own_executor(tmp_path: Path) -> None:
    be = backend(tmp_path)
    argvs = be.query_argvs(["local-3-abcdef", "local-gpu-4-012345_1"])
    assert [a[2:4] for a in argvs] == [[localjob.EXECUTOR, "status"], [localbox.HELPER, "status"]]
    assert argvs[1][-1] == "local-gpu-4-012345_1"
    assert be.cancel_argv(["local-3-abcdef"])[2] == localjob.EXECUTOR
    assert be.cancel_argv(["local-3-abcdef", "local-gpu-4-012345"])[2:4] == [
        localbox.HELPER,
        "cancel",
    ]
    assert be.parse_job_id("local-gpu-4-012345\n") == "local-gpu-4-012345"
    assert [
        localbox.is_box_id(i)
        for i in ("local-gpu-4-012345", "local-gpu-4-01234", "local-4-012345", "local-gpu-x-012345")
    ] == [True, False, False, False]


def test_box_answers_read_as_the_ssh_backends(tmp_path: Path) -> None:
    doc = {
        "executor": "box",
        "jobs": [
            {
                "job_id": "local-gpu-4-012345",
                "name": "n",
                "tasks": {
                    "0": {"state": "COMPLETED", "exit_code": 0},
                    "1": {"state": "PENDING", "reason": "no GPU below 500 MiB (0: 9000 MiB used)"},
                },
            }
        ],
    }
    found = backend(tmp_path).parse_states([json.dumps(doc)])["local-gpu-4-012345"]
    assert found.state == "RUNNING"
    assert found.tasks[1].reason == "no GPU below 500 MiB (0: 9000 MiB used)"


@pytest.mark.parametrize(
    ("doc", "page_lists", "runs"),
    [
        ({"gpus": [0, 1]}, False, True),
        ({"gpus": 2}, False, False),
        ({"gpus": 2}, True, True),
        ({"resources": {"gpus": 1}}, True, True),
        ({"resources": {"cpus": 1}}, True, False),
        ({"gpus": []}, False, False),
    ],
)
def test_man012_counts_local_as_a_box_exactly_when_a_gpu_list_applies(
    doc: dict[str, object], page_lists: bool, runs: bool
) -> None:
    assert manifest_keys.local_box(doc, page_lists_gpus=page_lists) is runs
