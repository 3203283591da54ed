"""The PBS backend against a CONTRACT REPLAY of OpenPBS (tests/runner/pbs_contract).

No PBS server can run here. The replay's qsub applies OpenPBS's own rules, each rewritten from
the OpenPBS source file it cites, and its qstat answers in the shape of the real recordings in
tests/runner/recorded/. It is not OpenPBS: what it proves is that what pbs.py renders passes
those rules and that pbs.py reads each array task's own state back. Every test here says
``contract_replay`` in its name.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from campaignops.backends import command as scheduler
from campaignops.backends.pbs import accounting as qstat
from campaignops.backends.pbs import backend as pbs
from campaignops.model.jobspec import JobSpec, JobState, Resources
from tests.runner.pbs_contract import BIN, STATE_ENV, cycle

RECORDED = Path(__file__).parent / "recorded"
SERVER = "pbs-contract-01.example"


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A replayed server with ALCF's queues and site resources (filesystems, system)."""
    state = tmp_path / "pbs-server"
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv(STATE_ENV, str(state))
    monkeypatch.setenv("PBS_CONTRACT_SERVER", SERVER)
    monkeypatch.setenv("PBS_CONTRACT_QUEUES", "debug,prod")
    monkeypatch.setenv("PBS_CONTRACT_RESOURCES", "filesystems,system")
    return state


def spec(tmp_path: Path, **changes: object) -> JobSpec:
    base: dict[str, object] = {
        "name": "md-screen.lig7.smoke",
        "workdir": str(tmp_path),
        "tasks": ("true",),
        "resources": Resources(queue="debug", account="MDproj", time="00:20"),
        "comment": "L20261121T100000Z-0123456789ab " + "0123456789abcdef" * 2 + "01234567",
    }
    return JobSpec(**{**base, **changes})  # type: ignore[arg-type]


def qsub(tmp_path: Path, text: str, name: str = "job.sh") -> subprocess.CompletedProcess[str]:
    script = tmp_path / name
    script.write_text(text, encoding="utf-8")
    return subprocess.run(["qsub", str(script)], capture_output=True, text=True, check=False)


def submit(tmp_path: Path, job: JobSpec) -> str:
    (tmp_path / job.log_dir).mkdir(exist_ok=True)
    proc = qsub(tmp_path, pbs.render(job), f"{len(list(tmp_path.glob('*.sh')))}.sh")
    assert proc.returncode == 0, proc.stderr
    return pbs.parse_job_id(proc.stdout)


def states(ids: list[str]) -> dict[str, JobState]:
    return qstat.parse_states([scheduler.call(argv).stdout for argv in pbs.query_argvs(ids)])


# --- what qsub accepts ----------------------------------------------------------------------


def test_every_rendered_form_is_accepted_by_qsub_contract_replay(
    server: Path, tmp_path: Path
) -> None:
    first = submit(tmp_path, spec(tmp_path))
    assert first == f"1000.{SERVER}"
    gpu = Resources(
        queue="prod", account="MDproj", time="1-12:00", nodes=2, cpus=32, gpus=4, mem="1.5G",
        constraint="system=polaris", filesystems="home:eagle",
    )  # fmt: skip
    forms = [
        spec(tmp_path, tasks=("a", "b", "c"), max_parallel=2),
        spec(tmp_path, resources=gpu, mail_user="a@b.org", requeue=True, warning_seconds=60),
        spec(tmp_path, after=(first,), env={"OMP_NUM_THREADS": "8"}),
        spec(tmp_path, tasks=("a", "b"), after=(first,), comment=""),
    ]
    ids = [submit(tmp_path, form) for form in forms]
    assert ids == [f"1001[].{SERVER}", f"1002.{SERVER}", f"1003.{SERVER}", f"1004[].{SERVER}"]


@pytest.mark.parametrize(
    ("directive", "refusal"),
    [
        ("-N a/b", "qsub: illegal -N value"),
        ("-N " + "a" * 231, "qsub: Job name is too long"),  # PBS_MAXJOBNAME 230
        ("-J 0-0", "qsub: illegal -J value"),  # chk_Jrange: a range needs X < Y
        ("-J 0-3%0", "qsub: illegal -J value"),
        ("-J 0-10000", "qsub: Array job exceeds server or queue size limit"),
        ("-r n\n#PBS -J 0-3", "cannot submit non-rerunable Array Job"),
        ("-J 0-3\n#PBS -r n", "cannot submit non-rerunable Array Job"),
        ("-l walltime=1-00:00:00", "Illegal attribute or resource value Resource_List.walltime"),
        ("-l select=1:ncpus=x", "Illegal attribute or resource value Resource_List.ncpus"),
        ("-l select=1:foo=1", "qsub: Unknown resource: foo"),
        ("-j x", "qsub: illegal -j value"),
        ("-k d", "qsub: illegal -k value"),  # direct write needs o or e
        ("-W depend=afterok", "qsub: illegal -W value"),
        ("-W depend=afterok:1000[3]", "cannot have dependancy on subjob"),
        ("-W depend=afterok:4242", "qsub: Unknown Job Id 4242"),
        ("-q nosuch", "qsub: Unknown queue nosuch"),
    ],
)
def test_qsub_refuses_what_openpbs_refuses_contract_replay(
    server: Path, tmp_path: Path, directive: str, refusal: str
) -> None:
    proc = qsub(tmp_path, f"#!/bin/bash\n#PBS {directive}\ntrue\n")
    assert proc.returncode in (1, 2) and refusal in proc.stderr, proc.stderr
    assert proc.stdout == ""


def test_directives_end_at_the_first_command_contract_replay(server: Path, tmp_path: Path) -> None:
    """pbs_isexecutable: after the first command a #PBS line is the shell's comment; so render
    puts every directive before its own comment line."""
    proc = qsub(tmp_path, "#!/bin/bash\n# a comment\n#PBS -N early\ntrue\n#PBS -N a/b\n")
    assert proc.returncode == 0, proc.stderr
    job = states([pbs.parse_job_id(proc.stdout)])
    assert [j.name for j in job.values()] == ["early"]


@pytest.mark.parametrize(
    "name",
    ["a.b.smoke", "x" * 230, "x" * 231, "2024-md.a.smoke", "_a", "a b", "a=b", "a/b", "a+b_2", "é"],
)
def test_check_name_refuses_every_name_qsub_refuses_contract_replay(
    server: Path, tmp_path: Path, name: str
) -> None:
    """check_name refuses what qsub refuses, before the scheduler call. It is stricter on one
    point only: a first character of ``_ . + -``, which qsub takes (chk_alpha is 0 for a
    QueueJob request) but pbs_job_attributes(7B) does not allow."""
    accepted = qsub(tmp_path, f"#!/bin/bash\n#PBS -N '{name}'\ntrue\n").returncode == 0
    try:
        pbs.check_name(name)
    except pbs.PbsRefusal:
        assert not accepted or name[0] in "_.+-", f"check_name refused {name!r}, qsub takes it"
        return
    assert accepted, f"check_name passed {name!r}, which qsub refuses"


# --- per-task truth -------------------------------------------------------------------------


def test_each_array_task_has_its_own_state_contract_replay(server: Path, tmp_path: Path) -> None:
    tasks = ("echo zero > t0", "echo one > t1; exit 3", "echo two > t2")
    array = submit(tmp_path, spec(tmp_path, tasks=tasks, max_parallel=2))
    queued = states([array])[array]
    assert queued.state == "PENDING" and sorted(queued.tasks) == [0, 1, 2]
    assert {t.state for t in queued.tasks.values()} == {"PENDING"}
    assert cycle() == [array]
    done = states([array])[array]
    assert (done.state, done.exit_code, done.comment) == ("FAILED", 3, spec(tmp_path).comment)
    own = {i: (t.job_id, t.task, t.state, t.exit_code) for i, t in done.tasks.items()}
    assert own == {
        0: (f"1000[0].{SERVER}", 0, "COMPLETED", 0),
        1: (f"1000[1].{SERVER}", 1, "FAILED", 3),
        2: (f"1000[2].{SERVER}", 2, "COMPLETED", 0),
    }
    for task in done.tasks.values():
        assert task.started and task.ended and task.started <= task.ended
        assert task.timelimit == "00:20:00" and not task.tasks
    assert [(tmp_path / f"t{i}").read_text() for i in range(3)] == ["zero\n", "one\n", "two\n"]
    logs = sorted(p.name for p in (tmp_path / "logs").iterdir())
    assert logs == [f"1000[{i}].{SERVER}.OU" for i in range(3)]  # -o <dir>/ -k doe: in place


def test_a_task_killed_at_its_walltime_is_timeout_contract_replay(
    server: Path, tmp_path: Path
) -> None:
    limited = Resources(queue="debug", time="00:00:01")
    array = submit(tmp_path, spec(tmp_path, tasks=("true", "sleep 60"), resources=limited))
    cycle()
    done = states([array])[array]
    assert done.state == "TIMEOUT"
    assert [(t.state, t.exit_code) for t in done.tasks.values()] == [
        ("COMPLETED", 0),
        ("TIMEOUT", -29),  # JOB_EXEC_KILL_WALLTIME
    ]


def test_a_single_job_has_no_tasks_and_afterok_waits_contract_replay(
    server: Path, tmp_path: Path
) -> None:
    first = submit(tmp_path, spec(tmp_path, tasks=("exit 1",)))
    after = submit(tmp_path, spec(tmp_path, after=(first,)))
    held = states([first, after])
    assert (held[first].state, held[after].state, held[after].tasks) == ("PENDING", "PENDING", {})
    cycle()
    ended = states([first, after])
    assert (ended[first].state, ended[first].exit_code, ended[first].tasks) == ("FAILED", 1, {})
    assert ended[after].state == "CANCELLED"  # its afterok can never be met: deleted


def test_siblings_and_lookup_contract_replay(server: Path, tmp_path: Path) -> None:
    array = submit(tmp_path, spec(tmp_path, tasks=("true", "true")))
    out = scheduler.call(pbs.sibling_argv(["md-screen.lig7.smoke"])).stdout
    (found,) = pbs.parse_siblings(out, ["md-screen.lig7.smoke"])
    assert (found.job_id, found.state, sorted(found.tasks)) == (array, "PENDING", [0, 1])
    cycle()
    assert pbs.parse_siblings(scheduler.call(pbs.sibling_argv([])).stdout, [found.name or ""]) == ()
    lookup = [scheduler.call(a).stdout for a in pbs.lookup_argvs(["md-screen.lig7.smoke"])]
    assert pbs.parse_lookup(lookup) == [array]


def test_an_unknown_id_is_left_out_and_qstat_fails_contract_replay(
    server: Path, tmp_path: Path
) -> None:
    """qstat.c: the JSON holds the ids it knows; the exit status is PBSE_UNKJOBID's low byte."""
    known = submit(tmp_path, spec(tmp_path))
    argv = pbs.query_argvs([known, f"999.{SERVER}"])[0]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert proc.returncode == 15001 & 0xFF
    assert proc.stderr == f"qstat: Unknown Job Id 999.{SERVER}\n"
    assert list(qstat.parse_states([proc.stdout])) == [known]


# --- the replay's shape is the recorded one -------------------------------------------------


def test_qstat_json_has_the_recorded_shape_contract_replay(server: Path, tmp_path: Path) -> None:
    """Same header, and the attributes a real finished job has, in the same order and with
    the same JSON types (recorded/pbs_qstat_xf_json_aurora_finished.json, job 6631289)."""
    job = submit(tmp_path, spec(tmp_path))
    cycle()
    mine = json.loads(scheduler.call(pbs.query_argvs([job])[0]).stdout)
    real = json.loads((RECORDED / "pbs_qstat_xf_json_aurora_finished.json").read_text())
    assert list(mine) == list(real)
    ours = mine["Jobs"][job]
    theirs = next(v for k, v in real["Jobs"].items() if k.startswith("6631289."))
    assert [k for k in ours if k in theirs] == [k for k in theirs if k in ours]
    assert set(ours) - set(theirs) <= {"depend"}, set(ours) - set(theirs)
    assert len(set(ours) & set(theirs)) >= 35
    types = {k: (type(ours[k]).__name__, type(theirs[k]).__name__) for k in ours if k in theirs}
    assert all(a == b for a, b in types.values()), types
