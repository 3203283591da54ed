"""The Slurm backend: rendered scripts compared in full; sbatch, sacct and squeue run for real.

The integration tests submit to the single-node cluster of dev/slurm_cluster.py (the session
fixture in conftest.py) and parse what sacct and squeue print right then: no recorded output.
The slow jobs (time limit, warning signal, memory) start together in one module fixture.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from campaignops.backends.slurm import accounting as sacct
from campaignops.backends.slurm import backend as slurm
from campaignops.model import walltime
from campaignops.model.jobspec import JobSpec, JobState, Resources
from campaignops.model.states import FINISHED
from tests import waiting
from tests.runner.expected import EXIT, TRAPS, WAIT, case

HEAD = """\
# Rendered by campaignops from a committed manifest: change that, not this.
set -euo pipefail
export CAMPAIGN_TASK_INDEX="${SLURM_ARRAY_TASK_ID:-0}"
"""
ONE_TASK = case("bash scripts/run_v1.sh configs/t1.yaml")


def spec(**changes: Any) -> JobSpec:
    base: dict[str, Any] = {
        "name": "demo.t1.smoke",
        "workdir": "/work/demo",
        "tasks": ("bash scripts/run_v1.sh configs/t1.yaml",),
    }
    return JobSpec(**{**base, **changes})


# --- render ---------------------------------------------------------------------------------


def test_render_single_job() -> None:
    script = slurm.render(spec(comment="L-0001 abc1234", mail_user="me@example.org"))
    assert script == (
        "#!/bin/bash\n"
        "#SBATCH --job-name=demo.t1.smoke\n"
        "#SBATCH --output=logs/%x-%j.out\n"
        "#SBATCH --chdir=/work/demo\n"
        "#SBATCH --mail-type=END,FAIL\n"
        "#SBATCH --mail-user=me@example.org\n"
        '#SBATCH --comment="L-0001 abc1234"\n' + HEAD + TRAPS + ONE_TASK + WAIT + EXIT
    )


def test_render_array_with_cap_and_afterok() -> None:
    tasks = ("python run.py --seed 1", "python run.py --seed 2", "python run.py --seed 3")
    script = slurm.render(spec(tasks=tasks, max_parallel=2, after=("1201", "1202_3")))
    assert script == (
        """\
#!/bin/bash
#SBATCH --job-name=demo.t1.smoke
#SBATCH --output=logs/%x-%A_%a.out
#SBATCH --chdir=/work/demo
#SBATCH --array=0-2%2
#SBATCH --dependency=afterok:1201:1202_3
#SBATCH --mail-type=END,FAIL
"""
        + HEAD
        + TRAPS
        + """\
case "$CAMPAIGN_TASK_INDEX" in
  0)
    ( python run.py --seed 1
    ) &
    ;;
  1)
    ( python run.py --seed 2
    ) &
    ;;
  2)
    ( python run.py --seed 3
    ) &
    ;;
  *)
    echo "campaign: this job has no task $CAMPAIGN_TASK_INDEX" >&2
    exit 64
    ;;
esac
"""
        + WAIT
        + EXIT
    )


def test_render_array_without_cap() -> None:
    script = slurm.render(spec(tasks=("a", "b")))
    assert "#SBATCH --array=0-1\n" in script


def test_render_warning_signal_and_requeue() -> None:
    script = slurm.render(spec(warning_seconds=300, requeue=True))
    assert script == (
        "#!/bin/bash\n"
        "#SBATCH --job-name=demo.t1.smoke\n"
        "#SBATCH --output=logs/%x-%j.out\n"
        "#SBATCH --chdir=/work/demo\n"
        "#SBATCH --mail-type=END,FAIL\n"
        "#SBATCH --signal=B:USR1@300\n"
        "#SBATCH --requeue\n"
        + HEAD
        + "campaign_warned=0\n"
        + """\
campaign_woken=0
campaign_pid=
trap 'campaign_warned=1; campaign_woken=1; [ -z "$campaign_pid" ] || kill -USR1 "$campaign_pid" 2>/dev/null || true' USR1
trap 'campaign_woken=1; [ -z "$campaign_pid" ] || kill -TERM "$campaign_pid" 2>/dev/null || true' TERM
"""
        + ONE_TASK
        + WAIT
        + """\
if [ "$campaign_warned" = 1 ] && [ "$campaign_status" != 0 ]; then
  scontrol requeue "$SLURM_JOB_ID"
fi
"""
        + EXIT
    )


def test_render_warning_without_requeue_and_requeue_without_warning() -> None:
    directives = (
        "#!/bin/bash\n"
        "#SBATCH --job-name=demo.t1.smoke\n"
        "#SBATCH --output=logs/%x-%j.out\n"
        "#SBATCH --chdir=/work/demo\n"
        "#SBATCH --mail-type=END,FAIL\n"
    )
    body = HEAD + TRAPS + ONE_TASK + WAIT + EXIT
    assert slurm.render(spec(warning_seconds=60)) == (
        directives + "#SBATCH --signal=B:USR1@60\n" + body
    )
    # Slurm requeues on a node failure or a preemption; without a warning nothing else to do.
    assert slurm.render(spec(requeue=True)) == directives + "#SBATCH --requeue\n" + body


def test_render_resources_and_environment() -> None:
    resources = Resources(
        partition="gpu", account="proj42", qos="normal", time="1-12:00:00", nodes=1,
        ntasks=4, cpus=8, mem="64G", gpus=2, gpu_type="a100", constraint="ib&a100",
    )  # fmt: skip
    env = {"OMP_NUM_THREADS": "8", "CAMPAIGN_NOTE": "it's a test"}
    script = slurm.render(spec(resources=resources, env=env, log_dir="/scratch/demo/logs/"))
    assert script == (
        "#!/bin/bash\n"
        "#SBATCH --job-name=demo.t1.smoke\n"
        "#SBATCH --output=/scratch/demo/logs/%x-%j.out\n"
        "#SBATCH --chdir=/work/demo\n"
        "#SBATCH --mail-type=END,FAIL\n"
        "#SBATCH --partition=gpu\n"
        "#SBATCH --account=proj42\n"
        "#SBATCH --qos=normal\n"
        "#SBATCH --time=1-12:00:00\n"
        "#SBATCH --nodes=1\n"
        "#SBATCH --ntasks=4\n"
        "#SBATCH --cpus-per-task=8\n"
        "#SBATCH --mem=64G\n"
        "#SBATCH --gres=gpu:a100:2\n"
        "#SBATCH --constraint=ib&a100\n" + HEAD + "export CAMPAIGN_NOTE='it'\"'\"'s a test'\n"
        "export OMP_NUM_THREADS=8\n" + TRAPS + ONE_TASK + WAIT + EXIT
    )


@pytest.mark.parametrize(
    ("time", "rendered"),
    [
        ("00:20", "00:20:00"),  # hours:minutes: sbatch would read a bare 00:20 as 20 seconds
        ("90", "01:30:00"),
        ("36:00:00", "1-12:00:00"),
        ("2-03:04", "2-03:04:00"),
        ("1-02:03:04", "1-02:03:04"),
        ("365-00:00", "365-00:00:00"),
    ],
)
def test_render_time_always_in_three_fields(time: str, rendered: str) -> None:
    script = slurm.render(spec(resources=Resources(time=time)))
    assert script == (
        "#!/bin/bash\n"
        "#SBATCH --job-name=demo.t1.smoke\n"
        "#SBATCH --output=logs/%x-%j.out\n"
        "#SBATCH --chdir=/work/demo\n"
        "#SBATCH --mail-type=END,FAIL\n"
        f"#SBATCH --time={rendered}\n" + HEAD + TRAPS + ONE_TASK + WAIT + EXIT
    )


@pytest.mark.parametrize("time", ["1 hour", "00:60", "1-24:00", "0", "366-00:00"])
def test_render_refuses_a_time_that_is_not_a_walltime(time: str) -> None:
    with pytest.raises(walltime.WalltimeError) as err:
        slurm.render(spec(resources=Resources(time=time)))
    assert repr(time) in err.value.message and err.value.exit_code == 2


def test_render_quotes_free_text_with_spaces_and_hashes() -> None:
    script = slurm.render(spec(workdir="/work/my demo", comment="L-7 it's #1 abc"))
    assert script.splitlines()[1:6] == [
        "#SBATCH --job-name=demo.t1.smoke",
        "#SBATCH --output=logs/%x-%j.out",
        '#SBATCH --chdir="/work/my demo"',
        "#SBATCH --mail-type=END,FAIL",
        '#SBATCH --comment="L-7 it\'s #1 abc"',
    ]


def test_render_keeps_multiline_commands_as_written() -> None:
    heredoc = "python3 - <<'PY'\nprint('hi')\nPY"
    script = slurm.render(spec(tasks=(heredoc,)))
    assert "  0)\n    ( python3 - <<'PY'\nprint('hi')\nPY\n    ) &\n    ;;\n" in script


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"name": "demo.t1\n#SBATCH --uid=0"}, "job name"),
        ({"name": "demo t1"}, "job name"),
        ({"name": "a,b"}, "job name"),
        ({"comment": "L-1\nrm -rf /"}, "comment"),
        ({"comment": 'say "hi"'}, "comment"),
        ({"workdir": "relative/dir"}, "work directory"),
        ({"workdir": "/work/de\tmo"}, "work directory"),
        ({"log_dir": "logs/%u"}, "log directory"),
        ({"mail_user": "me@example.org --uid=0"}, "mail user"),
        ({"after": ("12; rm",)}, "job id"),
        ({"env": {"1BAD": "x"}}, "environment name"),
        ({"tasks": ()}, "no task"),
        ({"tasks": ("  ",)}, "no command"),
        ({"max_parallel": 0, "tasks": ("a", "b")}, "positive"),
        ({"warning_seconds": 70000}, "65535"),
        ({"resources": Resources(partition="debug short")}, "partition"),
        ({"resources": Resources(mem="4 GB")}, "mem"),
        ({"resources": Resources(nodes=0)}, "positive"),
        ({"resources": Resources(gpu_type="a100")}, "gpu_type without"),
        ({"resources": Resources(queue="prod")}, "PBS"),
        ({"resources": Resources(constraint="a b")}, "constraint"),
    ],
)
def test_render_refuses_values_that_cannot_go_on_an_sbatch_line(
    changes: dict[str, Any], words: str
) -> None:
    with pytest.raises(slurm.SlurmRefusal) as err:
        slurm.render(spec(**changes))
    assert words in str(err.value)
    assert err.value.exit_code == 1


def test_rendered_scripts_pass_shellcheck(tmp_path: Path) -> None:
    for i, s in enumerate([spec(), spec(tasks=("a", "b"), warning_seconds=9, requeue=True)]):
        path = tmp_path / f"s{i}.sh"
        path.write_text(slurm.render(s))
        proc = subprocess.run(["shellcheck", str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout


def test_parse_job_id_plain_and_with_cluster() -> None:
    assert slurm.parse_job_id("12345\n") == "12345"
    assert slurm.parse_job_id("12345;perlmutter\n") == "12345"
    with pytest.raises(slurm.SlurmOutputError):
        slurm.parse_job_id("sbatch: error: Batch job submission failed\n")


@pytest.mark.parametrize(
    "stdout",
    [
        "NOTICE: 5.0 node-hours left on this allocation\n4242\n",  # a site's banner first
        "Submitted batch job 4242\n",  # a wrapper that drops --parsable
        "sbatch: routing to partition gpu\nSubmitted batch job 4242 on cluster c1\n",
        "4242;c1\nsbatch: job queued\n",
    ],
)
def test_a_job_id_is_read_from_any_output_sbatch_gives(stdout: str) -> None:
    assert slurm.parse_job_id(stdout) == "4242"


@pytest.mark.parametrize("stdout", ["", "4242\n4243\n", "job queued\n"])
def test_no_id_or_two_ids_is_not_read_as_one(stdout: str) -> None:
    with pytest.raises(slurm.SlurmOutputError):
        slurm.parse_job_id(stdout)


def test_query_is_one_sacct_and_one_squeue_whatever_the_number_of_jobs() -> None:
    many = slurm.query_argvs([str(i) for i in range(1000)])
    assert [argv[2] for argv in many] == ["sacct", "squeue"]
    # One id is given twice: squeue -j <one id> fails once slurmctld has forgotten the job.
    assert slurm.query_argvs(["7"])[1][-1] == "7,7"


def test_cancel_is_one_scancel_of_jobs_or_array_tasks_and_logs_follow_output() -> None:
    ids = ["4001", slurm.task_id("4002", 3)]
    assert slurm.cancel_argv(ids) == ["scancel", "4001", "4002_3"]
    with pytest.raises(slurm.SlurmRefusal):
        slurm.cancel_argv(["4001; rm -rf ~"])
    # What --output=logs/%x-%j.out and logs/%x-%A_%a.out expand to.
    assert slurm.log_path("4001", name="c.t.smoke", index=None) == "logs/c.t.smoke-4001.out"
    assert slurm.log_path("4002", name="c.t.smoke", index=3) == "logs/c.t.smoke-4002_3.out"


# --- the real cluster -----------------------------------------------------------------------


def sh(*argv: str) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"{' '.join(argv)}: {proc.stderr}"
    return proc.stdout


def submit(job: JobSpec, *extra: str) -> str:
    """Render, write, sbatch (``extra`` options before the script), parse the id."""
    root = Path(job.workdir)
    (root / job.log_dir).mkdir(parents=True, exist_ok=True)
    script = root / f"{job.name}.sh"
    script.write_text(slurm.render(job))
    argv = slurm.submit_argv(str(script))
    return slurm.parse_job_id(sh(*argv[:-1], *extra, argv[-1]))


def query(ids: Sequence[str]) -> dict[str, JobState]:
    return sacct.parse_states([sh(*argv) for argv in slurm.query_argvs(ids)])


def wait_for(
    ids: Sequence[str],
    ready: Callable[[Mapping[str, JobState]], bool] | None = None,
    limit: float = 60.0,
) -> dict[str, JobState]:
    """Poll sacct/squeue (tests/waiting.py) until ``ready`` (default: all finished) or ``limit``."""
    done = ready or (lambda s: all(i in s and s[i].state in FINISHED for i in ids))
    last: dict[str, JobState] = {}

    def states() -> tuple[dict[str, JobState]] | None:  # a tuple: true even when empty
        last.clear()
        last.update(query(ids))
        return (dict(last),) if done(last) else None

    return waiting.until(lambda: f"{ids}: {last}", states, timeout=limit, most=1.0)[0]


def log(job: JobSpec, job_id: str) -> str:
    return (Path(job.workdir) / job.log_dir / f"{job.name}-{job_id}.out").read_text()


MEMORY_HOG = """python3 - <<'PY'
import time
hog = []
for _ in range(60):
    hog.append(b"x" * (20 << 20))
    time.sleep(0.1)
PY"""
SLOW = {
    # Slurm counts limits in whole minutes and checks them every 30 s; KillWait is 5 s here.
    "timeout": {"tasks": ("sleep 300",), "resources": Resources(partition="short", time="1")},
    "warned": {
        # The task ends at once on the warning: the wait loop must still report its status.
        "tasks": ("trap 'echo warned; exit 0' USR1; sleep 120 & wait $!",),
        "resources": Resources(time="1"),
        "warning_seconds": 55,
    },
    "requeued": {  # no trap: USR1 ends the task (status 138), so the script requeues the job
        "tasks": ("sleep 120",),
        "resources": Resources(time="1"),
        "warning_seconds": 55,
        "requeue": True,
    },
    "memory": {"tasks": (MEMORY_HOG,), "resources": Resources(mem="100M")},
    "parent": {"tasks": ("sleep 3",)},
    "badparent": {"tasks": ("exit 5",)},
}


@pytest.fixture(scope="session")  # held until `late` tests (tests/conftest.py) have run
def slow_jobs(slurm_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The slow jobs, submitted at once (by this module's first test) so that they run while
    the other tests do."""
    root = tmp_path_factory.mktemp("slow")
    jobs = {k: spec(name=f"demo.{k}.smoke", workdir=str(root), **v) for k, v in SLOW.items()}
    ids = {k: submit(job) for k, job in jobs.items()}
    jobs["child"] = spec(name="demo.child.single", workdir=str(root), tasks=("true",))
    jobs["orphan"] = spec(name="demo.orphan.single", workdir=str(root), tasks=("true",))
    ids["child"] = submit(dataclasses.replace(jobs["child"], after=(ids["parent"],)))
    ids["orphan"] = submit(dataclasses.replace(jobs["orphan"], after=(ids["badparent"],)))
    yield jobs, ids
    sh("scancel", *ids.values())


@pytest.mark.slurm
def test_single_job_completes_with_times_from_sacct(
    slurm_cluster: Any, slow_jobs: Any, tmp_path: Path
) -> None:
    # 2 s: without cgroups, MaxRSS comes from polling every second (JobAcctGatherFrequency).
    task = "echo hello from task $CAMPAIGN_TASK_INDEX; sleep 2"
    job = spec(workdir=str(tmp_path), tasks=(task,), comment="L-0001 abc1234")
    job_id = submit(job)
    state = wait_for([job_id])[job_id]
    assert (state.state, state.exit_code, state.name) == ("COMPLETED", 0, "demo.t1.smoke")
    assert state.comment == "L-0001 abc1234"  # AccountingStoreFlags=job_comment
    assert (state.req_mem, state.timelimit) == ("500M", "UNLIMITED")  # DefMemPerCPU, debug
    assert state.max_rss is not None and state.max_rss.endswith("K")  # from the .batch step
    assert state.elapsed_s is not None and state.elapsed_s >= 0
    assert state.submitted and state.started and state.ended
    times = [dt.datetime.fromisoformat(t) for t in (state.submitted, state.started, state.ended)]
    assert times == sorted(times) and all(t.tzinfo is not None for t in times)
    # The same instants as sacct prints them by default (local time, no zone).
    plain = sh("sacct", "-P", "-n", "-X", "-j", job_id, "--format=Submit,Start,End").strip()
    assert plain == "|".join(t.astimezone().replace(tzinfo=None).isoformat() for t in times)
    assert log(job, job_id) == "hello from task 0\n"


@pytest.mark.slurm
def test_failing_job_is_failed_with_its_exit_code(slurm_cluster: Any, tmp_path: Path) -> None:
    job_id = submit(spec(workdir=str(tmp_path), tasks=("echo failing >&2; exit 3",)))
    state = wait_for([job_id])[job_id]
    assert (state.state, state.exit_code) == ("FAILED", 3)


@pytest.mark.slurm
def test_array_runs_at_most_its_cap_and_squeue_shows_it(slurm_cluster: Any, tmp_path: Path) -> None:
    tasks = tuple(f"sleep 3; echo task {i}" for i in range(4))
    job = spec(workdir=str(tmp_path), tasks=tasks, max_parallel=2)
    job_id = submit(job)
    snapshots: list[list[str]] = []
    while not snapshots or any("RUNNING" in s or "PENDING" in s for s in snapshots[-1]):
        snapshots.append(sh("squeue", "-h", "-j", job_id, "-o", "%i|%T|%r").split())
        assert len(snapshots) < 120, snapshots
        time.sleep(0.5)
    running = [sum(row.split("|")[1] == "RUNNING" for row in snap) for snap in snapshots]
    assert max(running) == 2, snapshots  # parallel, but never past %2 (the node has 8 CPUs)
    assert f"{job_id}_[2-3%2]|PENDING|JobArrayTaskLimit" in [r for s in snapshots for r in s]
    state = wait_for([job_id])[job_id]
    assert (state.state, state.exit_code, state.job_id) == ("COMPLETED", 0, job_id)
    for i in range(4):
        path = tmp_path / "logs" / f"demo.t1.smoke-{job_id}_{i}.out"
        assert path.read_text() == f"task {i}\n"


@pytest.mark.slurm
def test_arrays_with_a_failing_task_never_read_completed(
    slurm_cluster: Any, tmp_path: Path
) -> None:
    """sacct has some tasks' records seconds before the others': until squeue's finished
    tasks are all in sacct, an array is not finished (before that rule, 3 of 8 read COMPLETED)."""
    job = spec(workdir=str(tmp_path), tasks=("true", "exit 4", "true"))
    ids = [submit(dataclasses.replace(job, name=f"demo.a{i}.smoke")) for i in range(8)]
    seen: set[tuple[str | None, int | None]] = set()

    def done(states: Mapping[str, JobState]) -> bool:
        seen.update((s.state, s.exit_code) for s in states.values() if s.state in FINISHED)
        return all(i in states and states[i].state in FINISHED for i in ids)

    states = wait_for(ids, done)
    assert seen == {("FAILED", 4)}
    assert sorted(states) == sorted(ids)  # one record per array, none per task


@pytest.mark.slurm
def test_afterok_child_starts_after_its_parent_ends(slow_jobs: Any) -> None:
    _, ids = slow_jobs
    states = wait_for([ids["parent"], ids["child"]])
    parent, child = states[ids["parent"]], states[ids["child"]]
    assert (parent.state, child.state) == ("COMPLETED", "COMPLETED")
    assert parent.ended and child.started and child.started >= parent.ended


@pytest.mark.slurm
def test_failed_parent_leaves_its_child_pending_forever(slow_jobs: Any) -> None:
    _, ids = slow_jobs
    orphan = ids["orphan"]
    wait_for([ids["badparent"]])

    def never(_: Mapping[str, JobState]) -> bool:
        squeue = sh(*slurm.query_argvs([orphan])[1])
        return sacct.parse_reasons(squeue).get(orphan) == "DependencyNeverSatisfied"

    assert wait_for([orphan], never)[orphan].state == "PENDING"
    sh("scancel", orphan)
    state = wait_for([orphan])[orphan]
    assert state.state == "CANCELLED"  # sacct says "CANCELLED by 0"


@pytest.mark.slurm
@pytest.mark.late  # the other Slurm tests run meanwhile: by then it has ended
def test_job_past_its_time_limit_is_timeout(slow_jobs: Any) -> None:
    _, ids = slow_jobs
    # Up to 60 s of limit + 30 s until slurmctld checks it + KillWait.
    state = wait_for([ids["timeout"]], limit=150)[ids["timeout"]]
    assert (state.state, state.timelimit) == ("TIMEOUT", "00:01:00")


@pytest.mark.slurm
def test_warning_signal_reaches_the_task(slow_jobs: Any) -> None:
    jobs, ids = slow_jobs
    state = wait_for([ids["warned"]], limit=90)[ids["warned"]]
    assert (state.state, state.exit_code) == ("COMPLETED", 0)
    # slurmstepd may add that its SIGCONT found the batch shell gone: the script had ended.
    assert log(jobs["warned"], ids["warned"]).splitlines()[0] == "warned"


@pytest.mark.slurm
def test_task_stopped_by_the_warning_is_requeued(slow_jobs: Any) -> None:
    _, ids = slow_jobs
    job_id = ids["requeued"]

    def requeued(_: Mapping[str, JobState]) -> bool:
        history = sh("sacct", "-D", "-X", "-P", "-n", "-j", job_id, "--format=State")
        return "REQUEUED" in history.split()

    # Slurm holds a requeued job ~2 minutes before it may start again: it reads as PENDING.
    assert wait_for([job_id], requeued, limit=90)[job_id].state == "PENDING"


@pytest.mark.slurm
def test_job_over_its_memory_limit(slurm_cluster: Any, slow_jobs: Any) -> None:
    _, ids = slow_jobs
    state = wait_for([ids["memory"]])[ids["memory"]]
    if slurm_cluster.cgroups:  # task/cgroup: the kernel's OOM kill, counted by Slurm
        assert state.state == "OUT_OF_MEMORY"
    else:  # proctrack/linuxproc: jobacct_gather's OverMemoryKill sends SIGKILL
        assert (state.state, state.exit_code) == ("FAILED", 137)
    assert state.req_mem == "100M"


@pytest.mark.slurm
def test_sibling_query_and_lookup_find_a_pending_job_by_name(
    slurm_cluster: Any, tmp_path: Path
) -> None:
    job = spec(name="demo.held.production", workdir=str(tmp_path), comment="L-9 f00")
    job_id = submit(job, "--hold")
    names = ["demo.held.production", "demo.held.smoke"]
    found = slurm.parse_siblings(sh(*slurm.sibling_argv(names)), names)
    assert [(j.job_id, j.state, j.comment) for j in found] == [(job_id, "PENDING", "L-9 f00")]
    looked = sacct.parse_states([sh(*argv) for argv in slurm.lookup_argvs(names)])
    assert (looked[job_id].state, looked[job_id].comment) == ("PENDING", "L-9 f00")
    sh("scancel", job_id)
    wait_for([job_id])
    assert slurm.parse_siblings(sh(*slurm.sibling_argv(names)), names) == ()
    # Once it has ended the lookup still finds it (sacct), which is how a lost result of a
    # finished job is recovered (tests/scenarios: a lost result found after the job ended).
    ids = sacct.parse_states([sh(*argv) for argv in slurm.lookup_argvs(names)])
    assert list(ids) == [job_id]
    ended = sacct.parse_states([sh(*argv) for argv in slurm.query_argvs(ids)])
    assert ended[job_id].state == "CANCELLED"


@pytest.mark.slurm
def test_query_of_unknown_ids_is_empty_not_an_error(slurm_cluster: Any) -> None:
    assert query(["999999"]) == {}


@pytest.mark.slurm
def test_parse_job_id_of_a_cluster_qualified_submission(slurm_cluster: Any, tmp_path: Path) -> None:
    stdout = sh(
        "sbatch",
        "--parsable",
        f"--clusters={slurm_cluster.name}",
        "--wrap=true",
        f"--chdir={tmp_path}",
    )
    assert stdout.strip().endswith(f";{slurm_cluster.name}")
    assert slurm.parse_job_id(stdout).isdigit()


def test_zero_gpus_asks_for_none() -> None:
    # A CPU smoke of a GPU job (smoke.resources: {gpus: 0}) renders no --gres at all.
    script = slurm.render(spec(resources=Resources(gpus=0, mem="1G")))
    assert "--gres" not in script and "#SBATCH --mem=1G" in script
    with pytest.raises(slurm.SlurmRefusal):
        slurm.render(spec(resources=Resources(gpus=0, gpu_type="a100")))
