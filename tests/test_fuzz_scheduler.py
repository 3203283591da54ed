"""Fuzzing what a scheduler answers (issue 16: every answer validated before use): sbatch's and
qsub's job id, sacct's and squeue's rows, qstat's JSON, qselect's ids. Each reader returns what
the runner expects (typed JobStates, one id) or raises its backend's documented error
(SlurmOutputError, PbsOutputError); never anything else, whatever the text or JSON shape.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from campaignops.backends import command as scheduler
from campaignops.backends.local import directives as localjob
from campaignops.backends.local import machine as local
from campaignops.backends.pbs import backend as pbs
from campaignops.backends.slurm import accounting as sacct
from campaignops.backends.slurm import backend as slurm
from campaignops.model.jobspec import JobState
from campaignops.model.states import STATES

BOUNDED = settings(max_examples=300, deadline=None, database=None)

# Values a scheduler prints in a field, and the shapes that once broke readers elsewhere: a
# digit that is not ASCII ("²" passes str.isdigit), numbers past int()'s 4300 digits, a dotted
# size, epochs past datetime, control and bidi characters.
# fmt: off
ODD = [
    "", "0", "1", "4242", "4242_0", "4242_[1-3%2]", "4242.batch", "4242+0", "-1", "²", "٣",
    "1" * 5000, "9" * 30, "1..2", "1.2.3K", ".", "1e999", "NaN", "0:0", "9:99", "0:9",
    "1" * 5000 + ":0", "COMPLETED", "FAILED", "CANCELLED by 0", "RUNNING", "PENDING", "Unknown",
    "None", "N/A", "(null)", "2026-13-45", "99999999999999", "00:05:00", "1-00:00:00",
    "1" * 5000 + ":00:00", "4G", "100M", "16?", "\x1b]0;x\x07", "\u202e", "\x00", "|", "a b",
]
# fmt: on
field = st.sampled_from(ODD) | st.text(max_size=12)


def rows(width: int) -> st.SearchStrategy[str]:
    """Lines of ``|``-separated fields, mostly of the right count."""
    line = st.lists(field, min_size=1, max_size=width + 2).map("|".join)
    right = st.lists(field, min_size=width, max_size=width).map("|".join)
    return st.lists(right | line, max_size=6).map("\n".join)


SACCT = rows(len(sacct.SACCT_FIELDS))
SQUEUE = rows(9)
ANY_TEXT = st.text(max_size=300) | st.binary(max_size=200).map(lambda b: b.decode("latin-1"))

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.sampled_from(ODD)
    | st.text(max_size=8),
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids, max_size=4)
    ),
    max_leaves=16,
)
PBS_KEYS = st.sampled_from(
    [
        "job_state", "substate", "Exit_status", "Job_Name", "ctime", "qtime", "stime",
        "obittime", "mtime", "resources_used", "Resource_List", "Variable_List", "walltime",
        "mem", pbs.qstat.COMMENT_VAR,
    ]
)  # fmt: skip
pbs_record = st.dictionaries(PBS_KEYS, json_values | st.dictionaries(PBS_KEYS, json_values))
PBS_IDS = st.sampled_from(
    ["1.s", "2[].s", "2[0].s", "2[1].s", "3[x].s", "2[" + "1" * 5000 + "].s", ""]
)
QSTAT_DOC = st.one_of(
    json_values,
    st.fixed_dictionaries({"Jobs": json_values}),
    st.fixed_dictionaries({"Jobs": st.dictionaries(PBS_IDS | st.text(max_size=6), pbs_record)}),
).map(json.dumps)
QSTAT = QSTAT_DOC | ANY_TEXT | st.sampled_from(["[" * 100_000, '{"Jobs": ' * 50_000])


def _typed(states: dict[str, JobState]) -> None:
    """What the runner reads of an answer has the types it expects."""
    for key, job in states.items():
        assert isinstance(key, str) and isinstance(job, JobState)
        for one in (job, *job.tasks.values()):
            assert one.state in STATES, one
            assert one.exit_code is None or type(one.exit_code) is int
            assert isinstance(one.job_id, str) and (one.task is None or type(one.task) is int)
            assert one.elapsed_s is None or type(one.elapsed_s) in (int, float)
            assert all(type(i) is int for i in one.tasks)
            texts = (one.name, one.comment, one.submitted, one.started, one.ended, one.reason)
            for text in (*texts, one.max_rss, one.req_mem, one.timelimit):
                assert text is None or isinstance(text, str)


def _only(error: type[Exception], read: Callable[[], Any]) -> Any:
    try:
        return read()
    except error:
        return None


@BOUNDED
@given(sacct_out=SACCT | ANY_TEXT, squeue_out=SQUEUE | ANY_TEXT)
@example(sacct_out="", squeue_out="4242|²|RUNNING|None|n|1|1|1:00|c")
@example(
    sacct_out="4242|n|COMPLETED|0:0|1|1|1|00:01||1G|00:05:00|1|00:00:01||c\n4242.batch|batch|COMPLETED|0:0|1|1|1|00:01|1..2K|1G|00:05:00|1|00:00:01||",
    squeue_out="",
)
@example(sacct_out="", squeue_out="-x|N/A|RUNNING|None|n|1|1|1:00|c")
@example(sacct_out="", squeue_out=f"{'1' * 5000}|{'1' * 5000}|RUNNING|None|n|1|1|1:00|c")
@example(
    sacct_out=f"4242_{'1' * 5000}|n|FAILED|{'1' * 5000}:0|1|1|1|00:01||1G|00:05:00|1|00:00:01||",
    squeue_out="",
)
@example(
    sacct_out=f"4242|n|FAILED|0:0|1|1|1|{'1' * 5000}:00:00||1G|00:05:00|1|00:00:01||", squeue_out=""
)
def test_sacct_and_squeue_answers_read_or_raise_slurm_output_error(
    sacct_out: str, squeue_out: str
) -> None:
    states = _only(slurm.SlurmOutputError, lambda: slurm.parse_states([sacct_out, squeue_out]))
    if states is not None:
        _typed(states)
        assert slurm.query_argvs(states) if states else True  # ids the next calls take
    for read in (
        lambda: slurm.parse_live(squeue_out),
        lambda: slurm.parse_siblings(squeue_out, ["n"]),
        lambda: sacct.parse_reasons(squeue_out),
    ):
        _only(slurm.SlurmOutputError, read)


@BOUNDED
@given(out=ANY_TEXT | SQUEUE | st.sampled_from(ODD))
@example(out="Submitted batch job " + "1" * 5000)
def test_an_sbatch_answer_is_one_job_id_or_slurm_output_error(out: str) -> None:
    job_id = _only(slurm.SlurmOutputError, lambda: slurm.parse_job_id(out))
    assert job_id is None or slurm.cancel_argv([job_id])  # an id the next calls take


@BOUNDED
@given(outs=st.lists(QSTAT, min_size=1, max_size=3))
@example(outs=['{"Jobs": {"1.s": {"resources_used": {"walltime": "' + "1" * 5000 + ':00:00"}}}}'])
@example(outs=['{"Jobs": {"1.s": {"Resource_List": {"mem": "' + "1" * 5000 + 'kb"}}}}'])
@example(outs=['{"Jobs": {"2[].s": {}, "2[' + "1" * 5000 + '].s": {"job_state": "X"}}}'])
@example(outs=['{"Jobs": {"1.s": {"Exit_status": "' + "1" * 5000 + '", "job_state": "F"}}}'])
@example(outs=["[" * 100_000])
def test_qstat_answers_read_or_raise_pbs_output_error(outs: list[str]) -> None:
    states = _only(pbs.PbsOutputError, lambda: pbs.parse_states(outs))
    if states is not None:
        _typed(states)
    _only(pbs.PbsOutputError, lambda: pbs.parse_live(outs[0]))
    _only(pbs.PbsOutputError, lambda: pbs.parse_siblings(outs[0], ["n"]))


@BOUNDED
@given(out=ANY_TEXT | st.sampled_from(ODD))
def test_a_qsub_answer_is_one_job_id_or_pbs_output_error(out: str) -> None:
    job_id = _only(pbs.PbsOutputError, lambda: pbs.parse_job_id(out))
    assert job_id is None or pbs.cancel_argv([job_id])


def _answering(answers: Sequence[str]) -> scheduler.Runs:
    """A stand-in scheduler that prints each answer in turn (then nothing)."""
    left = list(answers)

    def call(argv: Sequence[str]) -> scheduler.Call:
        return scheduler.Call(argv=tuple(argv), stdout=left.pop(0) if left else "", attempts=1)

    return call


@BOUNDED
@given(answers=st.lists(SACCT | SQUEUE | ANY_TEXT, min_size=4, max_size=4))
def test_a_slurm_lookup_by_name_reads_or_raises_slurm_output_error(answers: list[str]) -> None:
    found = _only(slurm.SlurmOutputError, lambda: slurm.lookup(["n"], _answering(answers)))
    if found is not None:
        _typed(found)


@BOUNDED
@given(ids=ANY_TEXT | st.sampled_from(ODD), qstat_out=QSTAT)
@example(ids="1.s\n-u x\n", qstat_out="")
def test_a_pbs_lookup_by_name_reads_or_raises_pbs_output_error(ids: str, qstat_out: str) -> None:
    asked: list[Sequence[str]] = []
    answer = _answering([ids, qstat_out])

    def call(argv: Sequence[str]) -> scheduler.Call:
        asked.append(argv)
        return answer(argv)

    found = _only(pbs.PbsOutputError, lambda: pbs.lookup(["n"], call))
    if found is not None:
        _typed(found)
    for argv in asked[1:]:  # qstat is given job ids only, never an option from qselect
        assert all(pbs._FORMS["job id"][0].fullmatch(a) for a in argv[argv.index("-t") + 1 :])


# The local executor's answer (`python -m campaignops.backends.local.executor status`): JSON of its
# own state files, which a crash or a hand edit of .campaign/local/ can leave in any shape.
LOCAL_RECORD = st.dictionaries(
    st.sampled_from(["job_id", "state", "exit_code", "name", "comment", "started", "ended",
                     "elapsed_s", "max_rss", "tasks", "index", "task", "reason"]),
    json_values | st.sampled_from(["local-1-abcdef", "RUNNING", "COMPLETED"])
    | st.lists(st.dictionaries(st.sampled_from(["index", "state", "exit_code", "job_id", "task"]),
                               json_values | st.sampled_from(["RUNNING", 0, 1])), max_size=3),
)  # fmt: skip
LOCAL = st.one_of(
    json_values.map(json.dumps),
    st.fixed_dictionaries({"jobs": json_values | st.lists(LOCAL_RECORD, max_size=3)}).map(
        json.dumps
    ),
    ANY_TEXT,
)


@BOUNDED
@given(out=LOCAL)
@example(out='{"jobs": [1]}')
@example(out='{"jobs": {"local-1-abcdef": "x"}}')
@example(out='{"jobs": [{"job_id": "local-1-abcdef", "state": "RUNNING", "exit_code": "x"}]}')
@example(
    out='{"jobs": [{"job_id": "j", "state": "RUNNING", "tasks": [{"index": 0, "state": "RUNNING", "job_id": 1}]}]}'
)
@example(out='{"jobs": [{"job_id": "j", "state": "RUNNING", "task": "x"}]}')
def test_a_local_executor_answer_reads_or_raises_local_backend_error(out: str) -> None:
    states = _only(localjob.LocalBackendError, lambda: local.parse_states([out]))
    if states is not None:
        _typed(states)
    _only(localjob.LocalBackendError, lambda: local.parse_siblings(out))
