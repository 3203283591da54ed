"""The checks around a task in every rendered script: preconditions before, outputs after.

Rendered scripts are compared in full; the behaviour is proven by running the local backend's
rendered script with real bash (one task index per run), and once through the local executor.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from campaignops.backends import script
from campaignops.backends.local import machine as local
from campaignops.backends.local import state as localstate
from campaignops.backends.pbs import backend as pbs
from campaignops.backends.slurm import backend as slurm
from campaignops.core.errors import UsageError
from campaignops.model.jobspec import JobSpec, Precondition, Resources
from campaignops.model.states import FINISHED
from tests.runner.expected import (
    EXIT,
    OUTPUT_CHECK,
    OUTPUT_INIT,
    PRECONDITION_FAILED,
    TRAPS,
    WAIT,
    case,
)

OUT = "${CAMPAIGN_OUT}/t1/metrics.json"


def spec(workdir: Path | str, *tasks: str, **kw: Any) -> JobSpec:
    env = kw.pop("env", {"CAMPAIGN_OUT": "runs/smoke"})
    return JobSpec(name="demo.t1.smoke", workdir=str(workdir), tasks=tasks, env=env, **kw)


def run(job: JobSpec, index: int = 0) -> subprocess.CompletedProcess[str]:
    """Run task ``index`` of the local backend's rendered script with bash, as the executor does."""
    path = Path(job.workdir) / f"job-{time.monotonic_ns()}.sh"
    path.write_text(local.render(job))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPAIGN_")}
    env["CAMPAIGN_TASK_INDEX"] = str(index)
    return subprocess.run(
        ["bash", str(path)], env=env, capture_output=True, text=True, timeout=30, check=False
    )


def test_reasons_name_the_exit_codes_only_the_script_gives() -> None:
    assert dict(script.REASONS) == {96: "precondition", 97: "output-missing"}


# --- rendered in full ------------------------------------------------------------------------


def test_local_script_in_full_with_preconditions_and_outputs() -> None:
    job = spec(
        "/w",
        "python train.py --id t1",
        "python train.py --id t2",
        "make eval",
        outputs=(OUT, None, "reports/it's here.json"),
        preconditions=(
            Precondition(type="checkpoint_exists", path="checkpoints/teacher ${CAMPAIGN_STAGE}.pt"),
            Precondition(type="file_exists", path="/data/train.bin"),
            Precondition(type="dir_exists", path="~/shards"),
        ),
    )
    teacher = "'checkpoints/teacher '\"${CAMPAIGN_STAGE}\".pt"
    assert local.render(job) == (
        "#!/bin/bash\n"
        "# Local job, run by campaignops.backends.local.executor, which reads the #LOCAL lines as\n"
        "# sbatch reads #SBATCH. Rendered from a committed manifest: change that, not this.\n"
        "#LOCAL --job-name=demo.t1.smoke\n"
        "#LOCAL --chdir=/w\n"
        "#LOCAL --log-dir=logs\n"
        "#LOCAL --array=0-2\n"
        "#LOCAL --kill-wait=30\n"
        "set -euo pipefail\n"
        "cd /w\n"
        'export CAMPAIGN_TASK_INDEX="${CAMPAIGN_TASK_INDEX:-0}"\n'
        "export CAMPAIGN_OUT=runs/smoke\n"
        + PRECONDITION_FAILED
        + f"[ -d {teacher} ] || [ -s {teacher} ] || campaign_precondition_failed "
        f"checkpoint_exists {teacher} 'no directory or non-empty file there'\n"
        "[ -f /data/train.bin ] || campaign_precondition_failed file_exists /data/train.bin "
        "'no file there'\n"
        "[ -d '~/shards' ] || campaign_precondition_failed dir_exists '~/shards' "
        "'no directory there'\n"
        + OUTPUT_INIT
        + TRAPS
        + case(
            "python train.py --id t1",
            "python train.py --id t2",
            "make eval",
            outputs=('"${CAMPAIGN_OUT}"/t1/metrics.json', None, "'reports/it'\"'\"'s here.json'"),
        )
        + WAIT
        + OUTPUT_CHECK
        + EXIT
    )


def test_without_checks_the_block_is_unchanged() -> None:
    # A job with no outputs (or only None) and no preconditions renders as before this feature.
    plain = spec("/w", "a", "b", env={})
    assert local.render(plain) == local.render(spec("/w", "a", "b", env={}, outputs=(None, None)))
    assert OUTPUT_INIT not in local.render(plain)
    assert "campaign_precondition_failed" not in local.render(plain)


@pytest.mark.parametrize(
    ("render", "resources"),
    [(slurm.render, Resources()), (pbs.render, Resources(account="proj", queue="debug"))],
    ids=["slurm", "pbs"],
)
def test_slurm_and_pbs_render_the_same_checks(render: Any, resources: Resources) -> None:
    """Each backend's script with checks is its own script without them, plus the shared block's
    precondition tests, output set-up and output check, in the same places as for local."""
    bare = spec("/w", "run a", "run b", resources=resources)
    checked = spec(
        "/w",
        "run a",
        "run b",
        resources=resources,
        outputs=(None, "${CAMPAIGN_OUT}/b.json"),
        preconditions=(Precondition(type="dir_exists", path="data"),),
    )
    plain_block = TRAPS + case("run a", "run b") + WAIT
    assert render(bare).count(plain_block) == 1
    assert render(checked) == render(bare).replace(
        plain_block,
        PRECONDITION_FAILED
        + "[ -d data ] || campaign_precondition_failed dir_exists data 'no directory there'\n"
        + OUTPUT_INIT
        + TRAPS
        + case("run a", "run b", outputs=(None, '"${CAMPAIGN_OUT}"/b.json'))
        + WAIT
        + OUTPUT_CHECK,
    )


@pytest.mark.parametrize(
    ("output", "words"),
    [
        ("$(touch pwned)/m.json", "only environment references"),
        ("${CAMPAIGN_OUT}/$HOME/m.json", "only environment references"),
        ("${CAMPAIGN_OUT/x/y}/m.json", "only environment references"),
        ("/abs/metrics.json", "is absolute"),
        ("runs/../../etc/m.json", "leaves the campaign"),
        ("runs/a\nb.json", "control character"),
        ("  ", "is empty"),
    ],
)
def test_an_output_the_shell_would_not_take_literally_is_refused(output: str, words: str) -> None:
    with pytest.raises(UsageError) as err:
        local.render(spec("/w", "true", outputs=(output,)))
    assert words in err.value.message and repr(output) in err.value.message


def test_unknown_precondition_type_and_misaligned_outputs_are_refused() -> None:
    with pytest.raises(UsageError) as err:
        slurm.render(spec("/w", "true", preconditions=(Precondition("gpu_free", "x"),)))
    assert "'gpu_free'" in err.value.message
    assert "checkpoint_exists, dir_exists, file_exists" in err.value.hint
    with pytest.raises(UsageError) as err:
        pbs.render(spec("/w", "true", preconditions=(Precondition("file_exists", "a`b`$x"),)))
    assert "only environment references" in err.value.message
    with pytest.raises(UsageError) as err:
        local.render(spec("/w", "a", "b", outputs=("x",)))
    assert err.value.message == "1 output paths for 2 tasks"


@pytest.mark.parametrize("render", [local.render, slurm.render, pbs.render])
def test_each_task_is_told_its_config_fingerprint(render: Any) -> None:
    text = render(spec("/w", "true", "true", configs=("sha256:aa", "sha256:b b")))
    assert "  0)\n    export CAMPAIGN_CONFIG=sha256:aa\n" in text
    assert "  1)\n    export CAMPAIGN_CONFIG='sha256:b b'\n" in text
    assert "CAMPAIGN_CONFIG" not in render(spec("/w", "true", "true"))
    with pytest.raises(UsageError) as err:
        render(spec("/w", "a", "b", configs=("x",)))
    assert err.value.message == "1 config fingerprints for 2 tasks"


# --- run with bash ----------------------------------------------------------------------------


def writes(path: str, text: str = "{}") -> str:
    """A task command writing ``text`` to ``path`` (under the job's CAMPAIGN_OUT)."""
    return f'mkdir -p "$(dirname {path})" && printf %s {text!r} > {path}'


def test_a_task_sees_its_config_fingerprint(tmp_path: Path) -> None:
    job = spec(tmp_path, 'echo "$CAMPAIGN_CONFIG"', 'echo "$CAMPAIGN_CONFIG"', configs=("a", "b"))
    assert (run(job, 0).stdout, run(job, 1).stdout) == ("a\n", "b\n")


def test_output_present_exits_0(tmp_path: Path) -> None:
    result = run(spec(tmp_path, writes("runs/smoke/t1/metrics.json"), outputs=(OUT,)))
    assert (result.returncode, result.stderr) == (0, "")


def test_output_missing_exits_97_and_says_which_path(tmp_path: Path) -> None:
    # The smoke wrote to the wrong place: the task exited 0, its promised output is not there.
    result = run(spec(tmp_path, writes("runs/t1/metrics.json"), outputs=(OUT,)))
    assert result.returncode == 97
    assert result.stderr == "campaign: output-missing: runs/smoke/t1/metrics.json\n"
    assert script.REASONS[result.returncode] == "output-missing"


def test_output_empty_file_or_empty_directory_exits_97(tmp_path: Path) -> None:
    empty_file = run(spec(tmp_path, writes("runs/smoke/t1/metrics.json", ""), outputs=(OUT,)))
    assert (empty_file.returncode, empty_file.stderr) == (
        97,
        "campaign: output-missing: runs/smoke/t1/metrics.json\n",
    )
    job = spec(tmp_path, "mkdir -p runs/smoke/ckpt", outputs=("${CAMPAIGN_OUT}/ckpt",))
    assert run(job).returncode == 97
    # One entry, even a hidden empty one, written by the task.
    job = spec(tmp_path, ": > runs/smoke/ckpt/.done", outputs=("${CAMPAIGN_OUT}/ckpt",))
    assert (run(job).returncode, run(job).stderr) == (0, "")


def test_an_output_the_task_did_not_write_is_not_its_own(tmp_path: Path) -> None:
    # Left by an earlier attempt or another stage (older than the task's start): not this
    # task's output, wherever it sits (docs/decisions.md: outputs outside ${CAMPAIGN_OUT}).
    (tmp_path / "figures").mkdir()
    old = tmp_path / "figures/N64_seed1.json"
    old.write_text("{}")
    os.utime(old, (1_000_000_000, 1_000_000_000))
    left = run(spec(tmp_path, "true", outputs=("figures/N64_seed1.json",)))
    assert (left.returncode, left.stderr) == (
        97,
        "campaign: output-missing: figures/N64_seed1.json (older than the task: not written "
        "by it)\n",
    )
    rewritten = spec(
        tmp_path, writes("figures/N64_seed1.json"), outputs=("figures/N64_seed1.json",)
    )
    assert (run(rewritten).returncode, run(rewritten).stderr) == (0, "")
    # A directory counts when the task added or rewrote an entry in it.
    ckpt = tmp_path / "checkpoints"
    ckpt.mkdir()
    (ckpt / "a.pt").write_text("x")
    for p in (ckpt, ckpt / "a.pt"):
        os.utime(p, (1_000_000_000, 1_000_000_000))
    assert run(spec(tmp_path, "true", outputs=("checkpoints",))).returncode == 97
    assert (
        run(spec(tmp_path, "echo y > checkpoints/a.pt", outputs=("checkpoints",))).returncode == 0
    )


def test_a_failed_task_keeps_its_own_exit_code(tmp_path: Path) -> None:
    # No output, but the task failed: its exit code says more than "output-missing" would.
    result = run(spec(tmp_path, "echo broken >&2; exit 3", outputs=(OUT,)))
    assert (result.returncode, result.stderr) == (3, "broken\n")


def test_each_task_checks_its_own_output(tmp_path: Path) -> None:
    job = spec(
        tmp_path,
        writes("runs/smoke/a.json"),
        writes("runs/smoke/b.json"),
        "true",
        outputs=("${CAMPAIGN_OUT}/a.json", "${CAMPAIGN_OUT}/c.json", None),
    )
    assert [run(job, i).returncode for i in range(3)] == [0, 97, 0]


def test_output_paths_are_literal_apart_from_env_references(tmp_path: Path) -> None:
    # A quote and a space are part of the name; a glob is refused at render (MAN014 before):
    # checked literally, `a*.json` would never be satisfied by the a1.json the task wrote.
    with pytest.raises(UsageError, match="holds '\\*', a glob"):
        spec_script = spec(tmp_path, "true", outputs=("${CAMPAIGN_OUT}/a*.json",))
        run(spec_script)
    writes_it = "mkdir -p runs/smoke && echo '{}' > \"runs/smoke/it's a.json\""
    quoted = spec(tmp_path, writes_it, outputs=("${CAMPAIGN_OUT}/it's a.json",))
    assert run(quoted).returncode == 0


def test_precondition_failing_exits_96_and_the_task_never_runs(tmp_path: Path) -> None:
    job = spec(
        tmp_path,
        "touch ran",
        outputs=("ran",),
        preconditions=(
            Precondition(type="dir_exists", path="data"),
            Precondition(type="checkpoint_exists", path="checkpoints/teacher_N64.pt"),
        ),
    )
    (tmp_path / "data").mkdir()
    result = run(job)
    assert result.returncode == 96
    assert result.stderr == (
        "campaign: precondition failed: checkpoint_exists checkpoints/teacher_N64.pt: "
        "no directory or non-empty file there\n"
    )
    assert not (tmp_path / "ran").exists()
    assert script.REASONS[result.returncode] == "precondition"


@pytest.mark.parametrize(
    ("kind", "make", "holds"),
    [
        ("checkpoint_exists", lambda p: p.write_text("w"), True),
        ("checkpoint_exists", lambda p: p.mkdir(), True),
        ("checkpoint_exists", lambda p: p.write_text(""), False),
        ("checkpoint_exists", lambda p: None, False),
        ("file_exists", lambda p: p.write_text(""), True),
        ("file_exists", lambda p: p.mkdir(), False),
        ("dir_exists", lambda p: p.mkdir(), True),
        ("dir_exists", lambda p: p.write_text("w"), False),
    ],
)
def test_each_precondition_type(tmp_path: Path, kind: str, make: Any, holds: bool) -> None:
    (tmp_path / "runs" / "smoke").mkdir(parents=True)
    make(tmp_path / "runs" / "smoke" / "in put")
    pre = Precondition(type=kind, path="${CAMPAIGN_OUT}/in put")
    result = run(spec(tmp_path, "touch ran", preconditions=(pre,)))
    assert result.returncode == (0 if holds else 96)
    assert (tmp_path / "ran").exists() is holds
    if not holds:
        assert result.stderr.startswith(
            f"campaign: precondition failed: {kind} runs/smoke/in put: "
        )


def test_through_the_local_executor_the_task_fails_with_97_and_logs_why(tmp_path: Path) -> None:
    root = tmp_path / ".campaign" / "local"
    job_script = tmp_path / "job.sh"
    job_script.write_text(local.render(spec(tmp_path, "echo ran", "true", outputs=(OUT, None))))
    argv = local.submit_argv(str(job_script), state_root=str(root))
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=30)
    job_id = local.parse_job_id(out.stdout)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        state = localstate.read_state(root / job_id)  # as status reads it
        if isinstance(state, dict) and state["state"] in FINISHED:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"{job_id} did not finish")
    assert [(t["state"], t["exit_code"]) for t in state["tasks"]] == [
        ("FAILED", 97),
        ("COMPLETED", 0),
    ]
    log = tmp_path / "logs" / f"demo.t1.smoke-{job_id}_0.out"
    assert log.read_text() == "ran\ncampaign: output-missing: runs/smoke/t1/metrics.json\n"
