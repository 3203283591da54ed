"""What a box answers, checked before use (docs/robustness.md, "Box answers").

A rented box is somebody else's computer: its executor (campaignops/remote/, one zip there) may
be damaged, another version, or replaced, so every JSON document that comes back is read as
untrusted. ``status_answer`` checks the executor's ``status`` document (shape, types, task
indices, sizes; strings cut at MAX_TEXT) and returns only the fields the runner reads; else
it raises BadAnswer naming the first thing wrong, which the caller turns into UNKNOWN tasks
with that reason (never a traceback, never a recorded state). ``index_of`` is the one rule
for a task index sent as a JSON key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from campaignops.core.errors import CampaignError

Json = dict[str, Any]

# A task index as a JSON key: ASCII digits only ("²".isdigit() holds, int("²") raises), short
# enough for int() (Python refuses over 4,300 digits) and for an array's size.
INDEX = re.compile(r"[0-9]{1,9}")
MAX_TEXT = 2000  # a reason, a time: cut there (a longer reason is kept short, not refused)
MAX_ITEMS = 100_000  # jobs on a box, tasks of a job, GPUs, awaited parents
TEXT = "a string"
WHOLE = "an integer"
FLAG = "true or false"


class BadAnswer(CampaignError):
    """A box's answer that is not what its executor prints (damaged, another version, or
    hostile): the box's jobs read as UNKNOWN with this message."""

    exit_code = 2


def index_of(key: object) -> int | None:
    """A task index from a JSON key, or None when it is not one."""
    return int(key) if isinstance(key, str) and INDEX.fullmatch(key) else None


def loads(text: str, what: str) -> object:
    """JSON from a box; BadAnswer for anything json cannot read (a 100,000-deep nesting
    raises RecursionError, not ValueError)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BadAnswer(
            message=f"{what} is not JSON ({type(exc).__name__}): {text[:80]!r}"
        ) from None


def _bad(where: str, wanted: str, value: object) -> BadAnswer:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return BadAnswer(message=f"{where} is {shown}, not {wanted}")


def _at(where: str, key: str) -> str:
    """A path into the answer for a message: a box's key quoted and cut (it may hold anything,
    a line break included)."""
    shown = repr(key)
    return f"{where}[{shown if len(shown) <= 40 else shown[:37] + '...'}]"


def _object(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _bad(where, "a JSON object", value)
    if len(value) > MAX_ITEMS:
        raise BadAnswer(message=f"{where} holds {len(value)} entries (at most {MAX_ITEMS})")
    return value


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _bad(where, "a JSON list", value)
    if len(value) > MAX_ITEMS:
        raise BadAnswer(message=f"{where} holds {len(value)} items (at most {MAX_ITEMS})")
    return value


def _is_text(value: object) -> bool:
    return isinstance(value, str)


def _is_whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**63


def _field(doc: Mapping[str, Any], key: str, where: str, *, wanted: str, null: bool = True) -> Any:
    """``doc[key]`` when it has the wanted type (or is absent/null, when ``null``)."""
    value = doc.get(key)
    if value is None and null:
        return None
    check: Callable[[object], bool] = {
        TEXT: _is_text,
        WHOLE: _is_whole,
        FLAG: lambda v: isinstance(v, bool),
    }[wanted]
    if not check(value):
        raise _bad(f"{where}.{key}", wanted + ("" if not null else " or null"), value)
    return value[:MAX_TEXT] if isinstance(value, str) else value


# The task fields the executor's status gives (campaignops.remote.jobstate.PUBLIC), by type.
TASK_FIELDS = {
    "state": TEXT,
    "exit_code": WHOLE,
    "start": TEXT,
    "end": TEXT,
    "attempts": WHOLE,
    "gpu": WHOLE,
    "reason": TEXT,
}
GPU_FIELDS = ("index", "memory_used_mib", "memory_total_mib")


def _tasks(value: object, where: str) -> Json:
    tasks: Json = {}
    for key, raw in _object(value, where).items():
        if index_of(key) is None:
            raise _bad(f"{where} key", "a task index (digits)", key)
        task = _object(raw, _at(where, key))
        tasks[key] = {f: _field(task, f, _at(where, key), wanted=w) for f, w in TASK_FIELDS.items()}
    return tasks


def _job(value: object, where: str) -> Json:
    view = _object(value, where)
    awaits = [
        _field({"awaits": a}, "awaits", where, wanted=TEXT, null=False)
        for a in _list(view.get("awaits") or [], f"{where}.awaits")
    ]
    job: Json = {
        "state": _field(view, "state", where, wanted=TEXT, null=False),
        "executor_alive": _field(view, "executor_alive", where, wanted=FLAG, null=False),
        "tasks": _tasks(view.get("tasks"), f"{where}.tasks"),
        "awaits": awaits,
    }
    error = _field(view, "error", where, wanted=TEXT)
    return job if error is None else job | {"error": error}


def _gpus(value: object) -> list[Json] | None:
    if value is None:
        return None
    rows = []
    for n, raw in enumerate(_list(value, "gpus")):
        row = _object(raw, f"gpus[{n}]")
        rows.append({k: _field(row, k, f"gpus[{n}]", wanted=WHOLE) for k in GPU_FIELDS})
    return rows


def status_answer(doc: object) -> Json:
    """The executor's ``status`` document with only the fields the runner reads, each of its
    type: ``{"now", "gpus", "jobs": {id: {"state", "executor_alive", "tasks", "awaits"}}}``.
    BadAnswer names the first thing that is not so."""
    top = _object(doc, "the answer")
    jobs = {
        _field({"id": k}, "id", "jobs key", wanted=TEXT, null=False): _job(v, _at("jobs", k))
        for k, v in _object(top.get("jobs"), "jobs").items()
    }
    return {
        "now": _field(top, "now", "the answer", wanted=TEXT),
        "gpus": _gpus(top.get("gpus")),
        "jobs": jobs,
    }
