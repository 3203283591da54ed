"""The fuzz suite for box answers (issue 16, item 6): random JSON shapes, near-valid answers
and raw text into every function that reads what a box sent; each may raise only its documented
error (boxanswers.BadAnswer, sshbox.SshBackendError), never anything else. And the other way
round: whatever a damaged job directory holds, the box executor's own status answer is one the
runner accepts (the executor answers UNKNOWN with why for a job it cannot read).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from campaignops.backends.ssh import afterok as sshafter
from campaignops.backends.ssh import answers as boxanswers
from campaignops.backends.ssh import backend as sshbox
from campaignops.backends.ssh import link as sshlink
from campaignops.backends.ssh import pull
from campaignops.backends.ssh import query as sshquery
from campaignops.backends.ssh import submit as sshsubmit
from campaignops.backends.ssh.answers import BadAnswer
from campaignops.backends.ssh.backend import SshBackendError
from campaignops.backends.ssh.instances import Instance
from campaignops.model.states import STATES
from campaignops.remote.commands import cmd_status

BOUNDED = settings(max_examples=300, deadline=None, database=None)
FIXTURE = settings(
    BOUNDED, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
JOB = "ssh-7-abcdef"
BOX = Instance(name="box1", host="u@127.0.0.1", workdir="/w")

# --- strategies ---------------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**63, max_value=2**70)
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["", "0", "²", "-1", "007", "1e999", "9" * 40, JOB, "COMPLETED"])
    | st.sampled_from([2001, 5000]).map(lambda n: "9" * n)  # past MAX_TEXT, past int()'s digits
)
json_any = st.recursive(
    scalars,
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4)
    ),
    max_leaves=20,
)


def maybe(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly the valid value, sometimes any JSON: the answer of a damaged or hostile box."""
    return st.one_of(valid, valid, valid, json_any)


index_key = st.sampled_from(["0", "1", "2", "12", "²", "-1", "٣", "", "0x1"]) | st.sampled_from(
    [10, 5000]
).map(lambda n: "9" * n)
key = index_key | st.text(max_size=6)  # a JSON object's key is always a string
text_or_null = st.none() | st.text(max_size=20)
whole_or_null = st.none() | st.integers(-(2**31), 2**31)
task = st.fixed_dictionaries(
    {},
    optional={
        "state": maybe(st.sampled_from(sorted(STATES))),
        "exit_code": maybe(whole_or_null),
        "start": maybe(text_or_null),
        "end": maybe(text_or_null),
        "attempts": maybe(whole_or_null),
        "gpu": maybe(whole_or_null),
        "reason": maybe(text_or_null),
    },
)
job_view = st.fixed_dictionaries(
    {
        "state": maybe(st.sampled_from(sorted(STATES))),
        "executor_alive": maybe(st.booleans()),
        "tasks": maybe(st.dictionaries(key, maybe(task), max_size=3)),
    },
    optional={
        "awaits": maybe(st.lists(maybe(st.text(max_size=12)), max_size=3)),
        "error": maybe(st.text()),
    },
)
gpu_row = st.fixed_dictionaries(
    {"index": maybe(whole_or_null), "memory_used_mib": maybe(whole_or_null)},
    optional={"memory_total_mib": maybe(whole_or_null)},
)
status_doc = st.fixed_dictionaries(
    {
        "jobs": maybe(
            st.dictionaries(
                st.sampled_from([JOB, "ssh-1-000000"]) | key, maybe(job_view), max_size=3
            )
        )
    },
    optional={
        "now": maybe(text_or_null),
        "gpus": maybe(st.none() | st.lists(maybe(gpu_row), max_size=3)),
    },
)
any_answer = status_doc | json_any
# Text as a box prints it: JSON of any shape, cut JSON, deep nesting, not JSON at all.
answer_text = (
    any_answer.map(json.dumps)
    | any_answer.map(lambda d: json.dumps(d)[:-1])
    | st.integers(1, 200_000).map(lambda n: "[" * n + "]" * (n % 3))
    | st.text(max_size=40)
)

ISSUE_EXAMPLES = ("[1]", '{"jobs": [1]}', json.dumps({"jobs": {JOB: "x"}}))

# --- the validator ------------------------------------------------------------------------------


def _well_typed(doc: dict[str, Any]) -> None:
    """What status_answer returns is what the runner reads, each of its type."""
    assert set(doc) == {"now", "gpus", "jobs"}
    assert doc["now"] is None or isinstance(doc["now"], str)
    for job_id, job in doc["jobs"].items():
        assert isinstance(job_id, str)
        assert isinstance(job["state"], str) and isinstance(job["executor_alive"], bool)
        assert all(isinstance(a, str) for a in job["awaits"])
        for key, one in job["tasks"].items():
            assert boxanswers.index_of(key) is not None
            for field, value in one.items():
                kind = str if boxanswers.TASK_FIELDS[field] == boxanswers.TEXT else int
                assert value is None or (isinstance(value, kind) and not isinstance(value, bool))
                assert not isinstance(value, str) or len(value) <= boxanswers.MAX_TEXT


@FIXTURE
@given(any_answer)
@example([1])
@example({"jobs": [1]})
@example({"jobs": {JOB: "x"}})
def test_status_answer_is_checked_or_refused(doc: Any) -> None:
    try:
        checked = boxanswers.status_answer(doc)
    except BadAnswer as exc:
        assert exc.message and "\n" not in exc.message
        return
    _well_typed(checked)


@BOUNDED
@given(answer_text)
def test_loads_raises_only_bad_answer(text: str) -> None:
    with contextlib.suppress(BadAnswer):
        boxanswers.loads(text, "the answer")


@BOUNDED
@given(st.text(max_size=12) | scalars.map(json.dumps))
def test_index_of_never_raises(key: str) -> None:
    found = boxanswers.index_of(key)
    assert found is None or (0 <= found < 10**9 and str(found) == key.lstrip("0").rjust(1, "0"))


# --- the runner's parsers -----------------------------------------------------------------------


@BOUNDED
@given(
    answer_text | st.fixed_dictionaries({"jobs": st.lists(json_any, max_size=3)}).map(json.dumps)
)
@example(json.dumps({"jobs": [{"job_id": JOB, "tasks": {"²": {}}}]}))
@example(json.dumps({"jobs": [{"job_id": JOB, "tasks": {"9" * 5000: {}}}]}))
def test_sshbox_parse_states_raises_only_its_error(text: str) -> None:
    try:
        found = sshbox.parse_states([text])
    except SshBackendError:
        return
    assert all(state.job_id == job_id for job_id, state in found.items())


@BOUNDED
@given(answer_text)
def test_sshbox_submit_answers_raise_only_its_error(text: str) -> None:
    with contextlib.suppress(SshBackendError):
        sshbox.parse_job_id(text)
    placed = sshbox.placement(text)
    assert placed is None or isinstance(placed, list)


@BOUNDED
@given(
    answer_text
    | st.dictionaries(st.text(max_size=4), st.lists(json_any, max_size=2), max_size=3).map(
        json.dumps
    )
)
@example('{"²": []}')
@example(json.dumps({"9" * 5000: []}))
def test_pull_parse_outputs_never_raises(text: str) -> None:
    found = pull.parse_outputs(f"{pull.JOB_MARK}{JOB}\n{text}\n")
    for tasks in found.values():
        assert all(isinstance(i, int) and isinstance(f, list) for i, f in tasks.items())


@BOUNDED
@given(
    answer_text
    | st.fixed_dictionaries({"pid": json_any}, optional={"via": json_any}).map(json.dumps)
)
def test_start_answer_records_only_a_pid_and_how(text: str) -> None:
    try:
        got = sshsubmit._start_answer(text, BOX)
    except SshBackendError:
        return
    assert set(got) == {"pid", "via"}
    assert got["pid"] is None or type(got["pid"]) is int
    assert got["via"] is None or isinstance(got["via"], str)


@BOUNDED
@given(status_doc)
def test_awaited_reads_any_checked_answer(doc: Any) -> None:
    try:
        checked = boxanswers.status_answer(doc)
    except BadAnswer:
        return
    assert all(isinstance(w, str) for w in sshafter.awaited(checked))


# --- the ssh helper's status, end to end with a box answering anything ----------------------------


@FIXTURE
@given(text=answer_text, code=st.sampled_from([0, 0, 0, 1, 2, 127]))
@example(text="[1]", code=0)
@example(text='{"jobs": [1]}', code=0)
@example(text=json.dumps({"jobs": {JOB: "x"}}), code=0)
@example(text="Traceback (most recent call last):\n  boom\nValueError: x", code=1)
def test_sshquery_status_makes_any_answer_unknown_or_known(
    text: str, code: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    record = {
        "job_id": JOB,
        "name": "n",
        "comment": "c",
        "submitted": "2026-11-27T00:00:00+00:00",
        "placement": [
            {  # as sshsubmit writes it, under the page's instance (sshplaced checks both)
                "instance": BOX.record(),
                "commit": "c" * 40,
                "dir": f"/w/camp/{'c' * 40}",
                "executor": "/w/.campaignops/boxexec-abc.py",
                "indices": [0, 1],
                "job_dir": f"/w/.campaignops/jobs/{JOB}",
            }
        ],
    }
    (tmp_path / "backends").mkdir(exist_ok=True)
    (tmp_path / "backends/generic-ssh.md").write_text(
        "---\nplatform: generic-ssh\nkind: ssh\n"
        f"instances: [{{name: box1, host: '{BOX.host}', workdir: /w}}]\n---\n"
    )
    monkeypatch.setattr(sshquery, "placements", lambda root, backend, ids: {JOB: record})

    def call(box: Instance, command: str, **_: Any) -> sshlink.Answer:
        if " status " in command:
            return sshlink.Answer(code, text if code == 0 else "", "" if code == 0 else text, 1)
        return sshlink.Answer(0, "{}", "", 1)

    monkeypatch.setattr(sshlink, "call", call)
    doc = sshquery.status(tmp_path, "generic-ssh", [JOB], confirm=True)
    printed = json.dumps(doc)
    assert "Traceback" not in printed
    (job,) = sshbox.parse_states([printed]).values()
    for index in (0, 1):
        one = job.tasks[index]
        assert one.state in STATES
        if one.state == "UNKNOWN":
            assert one.reason and "\n" not in one.reason, one
    if text in ISSUE_EXAMPLES and code == 0:
        assert job.state == "UNKNOWN"
        assert all("instance box1: unusable answer" in str(t.reason) for t in job.tasks.values())


# --- the executor's own answers, whatever its job directory holds ---------------------------------


def _job_dir(root: Path, job_doc: Any, state_doc: Any) -> Path:
    jobdir = root / JOB
    jobdir.mkdir(parents=True, exist_ok=True)
    (jobdir / "script.sh").write_text("#!/bin/bash\ntrue\n")
    (jobdir / "job.json").write_text(json.dumps(job_doc))
    (jobdir / "state.json").write_text(json.dumps(state_doc))
    return jobdir


state_doc = st.fixed_dictionaries(
    {
        "state": maybe(st.sampled_from(sorted(STATES))),
        "tasks": maybe(st.dictionaries(key, maybe(task), max_size=3)),
    },
    optional={
        "executor": maybe(
            st.fixed_dictionaries({"pid": maybe(whole_or_null), "ticks": maybe(whole_or_null)})
        )
    },
)
job_doc = st.fixed_dictionaries(
    {"indices": maybe(st.lists(st.integers(-2, 3), max_size=3))},
    optional={"after": maybe(st.lists(maybe(st.text(max_size=8)), max_size=2)), "name": json_any},
)


@FIXTURE
@given(job=job_doc, state=state_doc | json_any)
@example(job={"indices": [0]}, state={"state": "RUNNING", "tasks": {"0": "x"}})
@example(job={"indices": [0]}, state={"tasks": {}})
@example(
    job={"indices": [0]},
    state={"state": "RUNNING", "tasks": {"0": {"state": "RUNNING", "exit_code": [1]}}},
)
def test_the_executors_status_is_always_an_answer_the_runner_accepts(
    job: Any, state: Any, tmp_path: Path
) -> None:
    _job_dir(tmp_path, job, state)
    answer = json.loads(json.dumps(cmd_status(tmp_path, [JOB])))
    checked = boxanswers.status_answer(answer)
    view = checked["jobs"][JOB]
    if "error" in view:
        assert view["state"] == "UNKNOWN" and view["tasks"] == {}
