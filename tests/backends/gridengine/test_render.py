"""The qsub script of the Grid Engine backend: directives, memory per slot, refusals, the
afterok check and the exit statuses Grid Engine reserves (run for real in test_script_runs)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from campaignops.backends.gridengine import render
from campaignops.backends.gridengine.render import GridEngineRefusal, PageSettings
from campaignops.model.jobspec import JobSpec, Resources

PAGE = PageSettings()


def _spec(**more: object) -> JobSpec:
    base: dict[str, object] = {
        "name": "c.t.smoke",
        "workdir": "/work/c",
        "tasks": ("true", "false", "true"),
        "resources": Resources(time="00:20:00", mem="4G", cpus=4),
        "max_parallel": 2,
        "mail_user": "a@b.org",
    }
    return JobSpec(**{**base, **more})  # type: ignore[arg-type]


def _directives(text: str) -> list[str]:
    return [line[3:] for line in text.splitlines() if line.startswith("#$ ")]


def test_an_array_asks_for_tasks_slots_memory_per_slot_and_mail() -> None:
    lines = _directives(render.render(_spec(), PAGE))
    assert "-t 1-3" in lines and "-tc 2" in lines
    assert "-o /work/c/logs/$JOB_NAME.o$JOB_ID.$TASK_ID" in lines and "-j y" in lines
    assert "-pe smp 4" in lines and "-l h_rt=00:20:00" in lines
    assert "-l h_vmem=1024M" in lines  # 4G over 4 slots: Grid Engine counts h_vmem per slot
    assert "-m ea" in lines and "-M a@b.org" in lines and "-cwd" in lines
    assert not any(line.startswith("-notify") for line in lines)


def test_the_page_picks_the_memory_resource_and_the_pe() -> None:
    page = PageSettings(memory_resource="mem_free", parallel_environment="threads", notify=True)
    spec = _spec(tasks=("true",), warning_seconds=60)
    lines = _directives(render.render(spec, page))
    assert "-l mem_free=1024M" in lines and "-pe threads 4" in lines
    assert "-l s_rt=00:19:00" in lines and "-notify" in lines
    assert "-o /work/c/logs/$JOB_NAME.o$JOB_ID" in lines and "-t 1-1" not in lines


@pytest.mark.parametrize(
    ("resources", "words"),
    [
        (Resources(qos="high"), "QoS"),
        (Resources(gpus=1), "GPUs"),
        (Resources(nodes=2), "slots, not nodes"),
    ],
)
def test_requests_grid_engine_has_no_words_for_are_refused(
    resources: Resources, words: str
) -> None:
    with pytest.raises(GridEngineRefusal, match=words):
        render.render(_spec(resources=resources), PAGE)


def test_a_name_qstat_would_read_as_a_pattern_is_refused() -> None:
    with pytest.raises(GridEngineRefusal, match="job name"):
        render.render(_spec(name="c.t*.smoke"), PAGE)


def _run(
    script: str, tmp_path: Path, task: str, job: str = "7"
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "job.sh"
    path.write_text(script)
    env = {**os.environ, "SGE_TASK_ID": task, "JOB_ID": job}
    return subprocess.run(["bash", str(path)], env=env, capture_output=True, text=True, check=False)


def test_reserved_exits_are_shifted_and_verdicts_are_written(tmp_path: Path) -> None:
    spec = _spec(workdir=str(tmp_path), tasks=("exit 100", "exit 3"), resources=Resources())
    script = render.render(spec, PAGE)
    first = _run(script, tmp_path, "1")
    assert first.returncode == 200 and "Grid Engine reads as its own" in first.stderr
    assert _run(script, tmp_path, "2").returncode == 3
    verdicts = tmp_path / "logs" / ".afterok"
    assert (verdicts / "7.tasks").read_text() == "2\n"
    assert (verdicts / "7.1").read_text() == "100\n" and (verdicts / "7.2").read_text() == "3\n"
    child = render.render(
        _spec(workdir=str(tmp_path), tasks=("echo ran",), resources=Resources(), after=("7",)),
        PAGE,
    )
    refused = _run(child, tmp_path, "undefined", job="8")
    assert refused.returncode == render.AFTEROK_EXIT and "ran" not in refused.stdout
    assert "campaign: afterok: parent job 7 task 1 ended with 100" in refused.stderr
    (verdicts / "7.1").write_text("0\n")
    (verdicts / "7.2").write_text("0\n")
    assert _run(child, tmp_path, "undefined", job="9").stdout == "ran\n"
    unknown = render.render(
        _spec(workdir=str(tmp_path), tasks=("echo ran",), resources=Resources(), after=("6",)),
        PAGE,
    )
    assert "left no verdict" in _run(unknown, tmp_path, "undefined").stderr
