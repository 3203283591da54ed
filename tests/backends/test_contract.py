"""The contract every registered backend keeps, checked on each of ``registry.KINDS``.

A backend added to the registry inherits these tests: its script (``render``), its readings of
what its own submit and query printed (``parse_job_id``, ``parse_states``), its task ids read
back as (job, index) by the campaign's one reader (model/jobref.py with the registry's
``task_refs``), ``job_of`` of a task id, and where a task's log goes (``log_path``). The
answers are RECORDED real output under tests/backends/recorded/<kind>/ (``cases.json`` names
the files and what each job is): this is the replay layer, fast and with no scheduler; the
real-cluster tests live beside each backend's own tests. A kind with no recording fails every
test here with what to record.

Then what must agree with the registry: the backend page schema's kind and scheduler enums and
the template's shipped pages, and the scheduler words behind ``registry.verdict_category``.
"""

from __future__ import annotations

import json
import posixpath
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any

import jinja2
import pytest

from campaignops.backends import registry
from campaignops.backends.base import Backend, Kind
from campaignops.core import schema, yamldoc
from campaignops.generate import answers
from campaignops.model import frontmatter, jobref
from campaignops.model.jobspec import JobSpec, JobState, Resources
from campaignops.model.ledger import Job, Ledger
from campaignops.model.states import FINISHED, STATES, worst

TESTS = Path(__file__).resolve().parents[1]
RECORDED = Path(__file__).resolve().parent / "recorded"
PAGES = TESTS.parent / "template" / "{{cookiecutter.campaign_slug}}" / "backends"
KINDS = pytest.mark.parametrize("kind", registry.KINDS, ids=[k.name for k in registry.KINDS])

WHAT_TO_RECORD = """\
backend {name!r} is registered (backends/registry.py KINDS) but {problem}.
Record, from a real {name} (never written by hand), under tests/backends/recorded/{name}/:
  - what submit_argv printed for a job of one task, and for an array of three tasks;
  - what each of query_argvs printed for those two jobs: once while queued or running, once
    after every task ended (an array with a failing task shows the fold);
and write cases.json beside them:
  {{"source": "where and how it was recorded",
   "page": {{the front matter of a backends/<name>.md page it serves}},
   "submits": [{{"file": "submit-single.txt", "job_id": "the id it printed"}}, ...],
   "queries": [{{"outputs": ["finished-0.txt", ...],
                "jobs": {{"<job id>": {{"state": "FAILED", "tasks": {{"1": "FAILED", ...}}}}}}}}],
   "gaps": {{"array": "why no array could be recorded (only when none can)"}}}}
python -m tests.backends.record {name} does all of it for a backend that runs here."""

TASKS = (
    "python train.py --seed 1 --out results/seed1",
    "python train.py --seed 2 --out results/seed2",
    "bash scripts/evaluate.sh 'seed 3'",
)
NAME = "contract.seeds.smoke"
COMMENT = "L20261127T200000Z-000000000001 " + "0123456789abcdef" * 2 + "01234567"


# --- the recordings -------------------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    """What a recorded job is by construction: its state (None: any of the vocabulary) and
    each array task's state by index."""

    state: str | None
    tasks: Mapping[int, str]


@dataclass(frozen=True)
class Query:
    outputs: tuple[str, ...]  # the texts, in query_argvs' order
    jobs: Mapping[str, Expected]


@dataclass(frozen=True)
class Recorded:
    page: Mapping[str, Any]
    submits: tuple[tuple[str, str], ...]  # (what submit printed, the job id it names)
    queries: tuple[Query, ...]
    gaps: Mapping[str, str]

    @property
    def arrays(self) -> dict[str, tuple[int, ...]]:
        """Every recorded array job, with the task indices recorded for it."""
        found: dict[str, set[int]] = {}
        for query in self.queries:
            for job_id, expected in query.jobs.items():
                if expected.tasks:
                    found.setdefault(job_id, set()).update(expected.tasks)
        return {job_id: tuple(sorted(indices)) for job_id, indices in found.items()}


def _text(where: Path, rel: object, name: str) -> str:
    """A recorded file named in cases.json, which must lie under tests/."""
    path = (where / str(rel)).resolve()
    if not path.is_relative_to(TESTS) or not path.is_file():
        pytest.fail(
            WHAT_TO_RECORD.format(
                name=name, problem=f"cases.json names {rel!r}, no file under tests/"
            ),
            pytrace=False,
        )
    return path.read_text(encoding="utf-8")


def _expected(raw: Mapping[str, Any]) -> Expected:
    tasks = raw.get("tasks") or {}
    return Expected(state=raw.get("state"), tasks={int(i): s for i, s in tasks.items()})


def recorded(kind: Kind) -> Recorded:
    """The kind's recordings, or the test FAILS saying what to record."""
    where = RECORDED / kind.name
    cases_file = where / "cases.json"
    if not cases_file.is_file():
        problem = f"has no recorded outputs ({cases_file.relative_to(TESTS.parent)} is missing)"
        pytest.fail(WHAT_TO_RECORD.format(name=kind.name, problem=problem), pytrace=False)
    cases = json.loads(cases_file.read_text(encoding="utf-8"))
    if not cases.get("submits") or not cases.get("queries") or not cases.get("page"):
        problem = "its cases.json lacks a page, a submit answer or a query answer"
        pytest.fail(WHAT_TO_RECORD.format(name=kind.name, problem=problem), pytrace=False)
    return Recorded(
        page=cases["page"],
        submits=tuple((_text(where, s["file"], kind.name), s["job_id"]) for s in cases["submits"]),
        queries=tuple(
            Query(
                outputs=tuple(_text(where, f, kind.name) for f in q["outputs"]),
                jobs={j: _expected(e) for j, e in q["jobs"].items()},
            )
            for q in cases["queries"]
        ),
        gaps=cases.get("gaps", {}),
    )


def made(kind: Kind, root: Path) -> tuple[Backend, Recorded]:
    """The kind made for a checkout at ``root`` holding its recorded page."""
    rec = recorded(kind)
    name = str(rec.page["platform"])
    (root / "backends").mkdir(parents=True, exist_ok=True)
    (root / "backends" / f"{name}.md").write_text(f"---\n{json.dumps(dict(rec.page))}\n---\n")
    return kind.make(root, name), rec


def arrays_or_gap(kind: Kind, rec: Recorded) -> dict[str, tuple[int, ...]]:
    if rec.arrays:
        return rec.arrays
    if "array" in rec.gaps:
        pytest.skip(f"{kind.name}: no recorded array: {rec.gaps['array']}")
    problem = "none of its recorded queries shows an array job with its tasks"
    pytest.fail(WHAT_TO_RECORD.format(name=kind.name, problem=problem), pytrace=False)


# --- the contract, per kind -----------------------------------------------------------------


@KINDS
def test_every_kind_has_recorded_outputs(kind: Kind) -> None:
    rec = recorded(kind)
    assert kind.serves(rec.page), f"{kind.name} does not serve its own recorded page {rec.page}"
    assert registry.kind_of(rec.page) is kind, "another kind is matched first for this page"
    errors = [e.message for e in schema.validate(schema.BACKEND, dict(rec.page))]
    assert not errors, f"{kind.name}'s recorded page is not one the page schema admits: {errors}"


@KINDS
def test_render_is_a_deterministic_script_naming_every_task(kind: Kind, tmp_path: Path) -> None:
    backend, _ = made(kind, tmp_path)
    assert kind.name == backend.NAME, "the backend answers to another name than its kind"
    array = JobSpec(
        name=NAME,
        workdir=str(tmp_path),
        tasks=TASKS,
        resources=Resources(time="00:10:00"),
        max_parallel=2,
        comment=COMMENT,
    )
    for spec in (array, JobSpec(name=NAME, workdir=str(tmp_path), tasks=TASKS[:1])):
        script = backend.render(spec)
        assert script.startswith("#!"), script[:80]
        for command in spec.tasks:
            assert command in script, f"task {command!r} is not in the script"
        again = kind.make(tmp_path, str(recorded(kind).page["platform"])).render(spec)
        assert backend.render(spec) == script == again


@KINDS
def test_parse_job_id_reads_each_recorded_submit_answer(kind: Kind, tmp_path: Path) -> None:
    backend, rec = made(kind, tmp_path)
    for stdout, job_id in rec.submits:
        assert backend.parse_job_id(stdout) == job_id
        assert kind.job_of(job_id) == kind.job_of(kind.job_of(job_id))
    # What parse_job_id gave is what the query and the cancel take, each in one call.
    ids = [job_id for _, job_id in rec.submits]
    argvs = backend.query_argvs(ids)
    asked = {w for argv in argvs for a in argv for w in a.split(",")}
    if set(ids) & asked:
        assert set(ids) <= asked, f"the query names some of {ids}, not all: {argvs}"
    else:
        # A query that cannot name jobs asks for every job of the user (Grid Engine: qacct -j
        # takes one job, qstat -xml none): then it must not depend on the ids at all, and the
        # recorded answers name each job (test_parse_states_reads_recorded_queries_...).
        assert all(backend.query_argvs([i]) == argvs for i in ids), f"{argvs} drops the ids"
    assert set(ids) <= set(backend.cancel_argv(ids))


def _checked(job_id: str, state: JobState) -> None:
    assert state.job_id == job_id and state.task is None
    assert state.state in STATES, f"{job_id}: {state.state!r} is not one of model/jobspec STATES"
    for index, task in state.tasks.items():
        assert task.state in STATES, f"{job_id} task {index}: {task.state!r} is not in STATES"
        assert task.task == index and task.job_id == job_id and not task.tasks


@KINDS
def test_parse_states_reads_recorded_queries_in_the_state_vocabulary(
    kind: Kind, tmp_path: Path
) -> None:
    backend, rec = made(kind, tmp_path)
    for query in rec.queries:
        states = backend.parse_states(query.outputs)
        for job_id, state in states.items():
            _checked(job_id, state)
        for job_id, expected in query.jobs.items():
            assert job_id in states, f"{job_id} is in the recording but not in parse_states"
            if expected.state is not None:
                assert states[job_id].state == expected.state, job_id
            got = {i: t.state for i, t in states[job_id].tasks.items()}
            assert {i: got.get(i) for i in expected.tasks} == dict(expected.tasks), job_id


@KINDS
def test_an_array_reads_as_its_worst_task_once_every_task_ended(kind: Kind, tmp_path: Path) -> None:
    backend, rec = made(kind, tmp_path)
    arrays = arrays_or_gap(kind, rec)
    folded = 0
    for query in rec.queries:
        for job_id, state in backend.parse_states(query.outputs).items():
            tasks = [t.state for t in state.tasks.values()]
            if job_id in arrays and tasks and all(s in FINISHED for s in tasks):
                assert state.state == worst(tasks), f"{job_id}: {state.state} from {tasks}"
                folded += 1
    assert folded, f"no recorded query of {kind.name} shows an array whose every task ended"


def _ledger(job_id: str, size: int, backend: str) -> tuple[Ledger, Job]:
    job = Job(
        ledger_id="L20261127T200000Z-000000000001",
        record=MappingProxyType(
            {"job_id": job_id, "backend": backend, "targets": [f"t{i}" for i in range(size)]}
        ),
        first_line=1,
        first_time=None,
    )
    return Ledger(jobs=(job,), by_id=MappingProxyType({job.ledger_id: job})), job


@KINDS
def test_a_task_id_reads_back_as_its_job_and_index(kind: Kind, tmp_path: Path) -> None:
    backend, rec = made(kind, tmp_path)
    for job_id, indices in arrays_or_gap(kind, rec).items():
        history, job = _ledger(job_id, max(indices) + 1, str(rec.page["platform"]))
        for index in indices:
            task_id = backend.task_id(job_id, index)
            assert task_id != job_id
            # Every command that takes a task (cancel, diagnose, lesson add) reads it so.
            assert jobref.resolve(history, task_id, readings=registry.task_refs) == (job, index)
            # The no_sibling gate finds a live task's recorded job through job_of.
            assert kind.job_of(task_id) == kind.job_of(job_id), task_id
            # campaign cancel: one call for jobs or array tasks, the task named as task_id has it.
            assert task_id in backend.cancel_argv([task_id])


def _inside(path: str, workdir: Path) -> bool:
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or not path:
        return False
    return (workdir / posixpath.normpath(path)).resolve().is_relative_to(workdir.resolve())


@KINDS
def test_log_path_is_relative_and_inside_the_work_directory(kind: Kind, tmp_path: Path) -> None:
    backend, rec = made(kind, tmp_path)
    paths = {backend.log_path(job_id, name=NAME, index=None) for _, job_id in rec.submits}
    assert len(paths) == len({job_id for _, job_id in rec.submits}), "two jobs share one log"
    if rec.arrays:
        for job_id, indices in rec.arrays.items():
            own = {backend.log_path(job_id, name=NAME, index=i) for i in indices}
            assert len(own) == len(indices), f"{job_id}: two tasks share one log"
            paths |= own
    for path in paths:
        assert _inside(path, tmp_path), f"{path!r} is not relative to the work directory"


# --- what must agree with the registry ------------------------------------------------------


def _enum(field: str) -> list[Any]:
    return list(schema.load(schema.BACKEND)["properties"][field]["enum"])


def _pages_the_schema_admits() -> list[dict[str, Any]]:
    return [
        {"kind": k, **({} if s is None else {"scheduler": s})}
        for k in _enum("kind")
        for s in [None, *_enum("scheduler")]
    ]


@KINDS
def test_the_page_schema_admits_a_page_each_kind_serves(kind: Kind) -> None:
    assert any(kind.serves(p) for p in _pages_the_schema_admits()), (
        f"no kind/scheduler of {schema.BACKEND} is served by {kind.name}: add its words to the enums"
    )


def shipped_pages() -> dict[str, dict[str, Any]]:
    """The template's backend pages as `campaign new` writes them with every backend chosen."""
    env = jinja2.Environment(keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    chosen = {
        "backends": ",".join(answers.BACKENDS),
        "campaign_slug": "contract",
        "notify_email": "ops@example.org",
    }
    pages = {}
    for path in sorted(PAGES.iterdir()):
        name = env.from_string(path.name).render(cookiecutter=chosen)
        if name and name != "TEMPLATE.md":  # TEMPLATE.md is the page to copy, not a backend
            text = env.from_string(path.read_text(encoding="utf-8")).render(cookiecutter=chosen)
            fm = frontmatter.split(text)
            assert fm is not None, f"{path.name}: no front matter"
            pages[name.removesuffix(".md")] = yamldoc.load(fm.text, path=name)
    return pages


def test_every_kind_serves_a_shipped_page_and_every_runner_page_is_served() -> None:
    pages = shipped_pages()
    assert set(pages) == set(answers.BACKENDS)
    for kind in registry.KINDS:
        assert any(kind.serves(p) for p in pages.values()), f"no shipped page for {kind.name}"
    names = {k.name for k in registry.KINDS}
    for name, page in pages.items():
        words = {page.get("kind"), page.get("scheduler")} & names
        serving = registry.kind_of(page)
        every = [k.name for k in registry.KINDS if k.serves(page)]
        assert len(every) <= 1, f"{name} is served by {every}: which runs it is order luck"
        if words:
            assert serving is not None and serving.name in words, f"{name}: {words}, {serving}"
        else:
            assert serving is None, f"{name} names no runner kind but {serving} serves it"


def _words(kind: Kind) -> tuple[set[int], set[str]]:
    """The exit codes and reason words the module of the kind's verdict_category names in its
    constants: what it may give a meaning to."""
    codes: set[int] = set()
    reasons: set[str] = set()
    module = sys.modules[kind.verdict_category.__module__]
    for value in vars(module).values():
        items: Iterable[object] = ()
        if isinstance(value, Mapping):
            items = value.keys()
        elif isinstance(value, (tuple, list, set, frozenset)):
            items = value
        for item in items:
            if isinstance(item, bool):
                continue
            if isinstance(item, int):
                codes.add(item)
            elif isinstance(item, str):
                reasons.add(item)
    return codes, reasons


def _meanings(code: int | None, reason: str | None) -> dict[str, str]:
    return {k.name: m for k in registry.KINDS if (m := k.verdict_category(code, reason))}


def test_no_two_kinds_give_one_verdict_word_two_meanings(tmp_path: Path) -> None:
    """Each word alone (an exit code, a reason), beside the plainest other half: the exit
    codes any kind's module names, every code a shell gives, and every reason a kind's module
    names or a recording carries."""
    codes: set[int] = set(range(-300, 301))
    reasons: set[str] = set()
    for kind in registry.KINDS:
        own_codes, own_reasons = _words(kind)
        codes |= own_codes
        reasons |= own_reasons
        backend, rec = made(kind, tmp_path / kind.name)
        for query in rec.queries:
            for state in backend.parse_states(query.outputs).values():
                found = [state.reason, *(t.reason for t in state.tasks.values())]
                reasons |= {r for r in found if r}
    words = [(c, r) for c in codes for r in (None, "")] + [
        (c, r) for r in reasons for c in (None, 0, 1)
    ]
    for code, reason in words:
        meanings = _meanings(code, reason)
        assert len(set(meanings.values())) <= 1, f"({code}, {reason!r}) means {meanings}"
        assert registry.verdict_category(code, reason) in {None, *meanings.values()}


def test_a_kind_without_recordings_fails_saying_what_to_record(tmp_path: Path) -> None:
    # A name no registered kind has (Grid Engine was the newcomer until it was recorded).
    newcomer = Kind(name="newcomer", serves=lambda p: False, make=registry.SLURM.make)
    assert newcomer.name not in {k.name for k in registry.KINDS}
    with pytest.raises(pytest.fail.Exception) as failed:
        recorded(newcomer)
    message = str(failed.value)
    assert "backend 'newcomer' is registered" in message
    assert "tests/backends/recorded/newcomer/cases.json is missing" in message
    assert "submit_argv printed" in message and "query_argvs printed" in message
