"""Box task logs come home: a tail at the refresh that sees a task end, the whole log at pull.

A task's log is written on the box, under its deploy directory (the executor's naming:
``<log_dir>/<name>-<job>_<index>.out``). Everything that reads a task's log on this machine
(``campaign diagnose``, the breaker's signature at refresh, ``cancel``'s tail) reads it where the
backend's ``log_path`` says, relative to the campaign root, as for every other backend. So:

- ``status --refresh``'s one ssh call per box also asks the executor (``tails``) for the tail of
  each task this checkout has no log of yet, and the executor answers only for tasks that ended:
  the last ``TAIL_LINES`` lines, at most ``HOME_TAIL_BYTES``. Each is written at ``log_path``;
- ``campaign pull`` copies each finished task's whole log over it (:func:`pulled`).

What the box answers is input: only the job ids and task indices asked for are written, at the
path this checkout computes (never one the box names), bounded, never through a link.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from campaignops.backends.local import machine as local
from campaignops.backends.ssh import outputs as outputpaths
from campaignops.backends.ssh import pullcopy
from campaignops.backends.ssh.answers import index_of
from campaignops.backends.ssh.instances import Instance
from campaignops.core.atomic import write_atomic
from campaignops.core.errors import CampaignError
from campaignops.remote.commands import HOME_TAIL_BYTES

MARK = "@@campaign-tails"
LIMIT = HOME_TAIL_BYTES

Json = dict[str, Any]


def size_of(record: Mapping[str, Any]) -> int:
    """How many tasks the job has over every box (one: its log has no index, as on Slurm)."""
    return sum(
        len(e.get("indices") or ()) for e in record.get("placement") or () if isinstance(e, dict)
    )


def home_path(job_id: str, record: Mapping[str, Any], index: int) -> str:
    """Where this checkout keeps the task's log: the ssh backend's log_path."""
    single = size_of(record) == 1
    name = str(record.get("name") or "")
    return local.log_path(job_id, name=name, index=None if single else index)


def box_path(job_id: str, record: Mapping[str, Any], index: int) -> str:
    """The task's log relative to its deploy directory on the box (the executor's naming)."""
    return local.log_path(job_id, name=str(record.get("name") or ""), index=index)


def wanted(
    root: Path, jobs: Mapping[str, Mapping[str, Any]], records: Mapping[str, Mapping[str, Any]]
) -> dict[str, list[int]]:
    """Per job id, the indices placed on one box (``jobs``: its placement entries) whose log
    this checkout does not have yet."""
    found: dict[str, list[int]] = {}
    for job_id, entry in jobs.items():
        record = records.get(job_id) or {}
        for index in entry.get("indices") or ():
            if isinstance(index, int) and not (root / home_path(job_id, record, index)).exists():
                found.setdefault(job_id, []).append(index)
    return found


def command(executor: str, jobs_root: str, asked: Mapping[str, Sequence[int]]) -> str:
    """The shell words that follow the status call in the same ssh call (empty: nothing
    asked). An executor too old to have ``tails`` fails quietly: the status stands."""
    if not asked:
        return ""
    pairs = [f"{job}={','.join(str(i) for i in indices)}" for job, indices in sorted(asked.items())]
    words = shlex.join(["python3", executor, "tails", jobs_root, *pairs])
    return f" && {{ echo; echo {MARK}; {words} || true; }}"


def split(stdout: str) -> tuple[str, str]:
    """The status answer and the tails answer of one call's stdout."""
    head, _, tail = stdout.partition(f"\n{MARK}\n")
    return head, tail


def keep(
    root: Path,
    answer: object,
    asked: Mapping[str, Sequence[int]],
    records: Mapping[str, Mapping[str, Any]],
) -> list[str]:
    """Write the tails the box sent for tasks asked about; the paths written."""
    if not isinstance(answer, dict):
        return []
    written = []
    for job_id, tasks in answer.items():
        if job_id not in asked or not isinstance(tasks, dict):
            continue
        for key, text in tasks.items():
            index = index_of(key)
            if index is None or index not in asked[job_id] or not isinstance(text, str):
                continue
            rel = home_path(job_id, records.get(job_id) or {}, index)
            if _write(root, rel, text.encode("utf-8", "replace")[-LIMIT:]):
                written.append(rel)
    return written


def _write(root: Path, rel: str, data: bytes) -> bool:
    """``data`` at ``root/rel`` unless a parent is a link or not a directory (never followed)."""
    if outputpaths.parents_problem(root, rel) is not None:
        return False
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    try:
        write_atomic(root / rel, data)
    except CampaignError:
        return False
    return True


def pulled(job_id: str, record: Mapping[str, Any], indices: Iterable[int]) -> dict[str, str]:
    """For ``campaign pull``: each finished task's log on the box (relative to its deploy
    directory) → where this checkout keeps it."""
    return {box_path(job_id, record, i): home_path(job_id, record, i) for i in indices}


def fetch(
    root: Path,
    box: Instance,
    tasks: Sequence[tuple[str, Mapping[str, Any], str, int]],
    run: pullcopy.Run,
    step: Callable[[str], None],
) -> None:
    """``campaign pull``'s copy of the whole log of each cell it judged on the box (``tasks``:
    job id, its ledger record, its deploy directory, the index), over the tail a refresh
    brought; none of a share pull refused or could not trust. Logs are no outputs: nothing
    about them enters a verdict."""
    wanted: dict[str, dict[str, str]] = {}
    for job_id, record, deploy, index in tasks:
        wanted.setdefault(deploy, {}).update(pulled(job_id, record, [index]))
    for deploy, logs in sorted(wanted.items()):
        step(f"{box.name}: copying {len(logs)} log(s) from {deploy}")
        pullcopy.fetch(box, deploy, sorted(logs), root, run, dest=logs)
