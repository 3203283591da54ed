"""What ``qstat -u <user> -xml`` answers, read: the live jobs and their tasks' states.

Each ``job_list`` is one running task (``<tasks>7</tasks>``), or a group of waiting tasks whose
ids are a range list (``3-5:1``, ``2,3``, ``1-9:2,12``); a job of one task has no ``<tasks>``.
States are letter strings (``qw``, ``hqw``, ``Eqw``, ``r``, ``t``, ``Rr``, ``dr``, ``s`` …),
times local ISO 8601 without a zone (the queries run under ``TZ=UTC0``).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, tzinfo

from campaignops.backends.command import SchedulerOutputError

MAX_TASKS = 1_000_000  # Grid Engine's max_aj_tasks default is 75,000: past this it is no answer
_RANGE = re.compile(r"([0-9]{1,9})(?:-([0-9]{1,9})(?::([0-9]{1,9}))?)?")


class GridEngineOutputError(SchedulerOutputError):
    """qsub, qstat or qacct printed something this backend cannot read."""


@dataclass(frozen=True)
class Live:
    """One live task (``task`` None: a job of one task) as qstat lists it."""

    job: str
    task: int | None
    letters: str
    name: str | None
    submitted: str | None
    started: str | None


ZOMBIE = "z"  # qstat -s z: ended (run to its end, or deleted while it waited)
ENDED_UNACCOUNTED = "ended; no accounting record yet"


def state_of(letters: str) -> tuple[str, str | None]:
    """Slurm's state name for qstat's letters, and why, when the letters say more. A zombie
    (``z``) has ended, but only qacct says how: UNKNOWN until its record is read."""
    if letters == ZOMBIE:
        return "UNKNOWN", ENDED_UNACCOUNTED
    if "E" in letters:
        return "PENDING", f"Grid Engine error state ({letters}): qstat -j <id> says why"
    if "d" in letters:
        return "RUNNING", "being deleted"
    if any(c in letters for c in "rtRsST"):
        return "RUNNING", ("suspended" if any(c in letters for c in "sST") else None)
    if "h" in letters:
        return "PENDING", "held"
    return "PENDING", None


def task_ids(text: str) -> list[int]:
    """``3-5:1`` → [3, 4, 5]; ``2,3`` → [2, 3]; bounded (MAX_TASKS)."""
    out: list[int] = []
    for part in text.split(","):
        match = _RANGE.fullmatch(part.strip())
        if match is None:
            raise GridEngineOutputError(message=f"qstat printed task ids {text[:80]!r}")
        first = int(match[1])
        last = int(match[2] or first)
        step = max(int(match[3] or 1), 1)
        if (last - first) // step + len(out) >= MAX_TASKS:
            raise GridEngineOutputError(message=f"qstat printed task ids {text[:80]!r}: too many")
        out.extend(range(first, last + 1, step))
    return out


def iso(text: str | None, zone: tzinfo) -> str | None:
    """qstat's ``2026-11-27T19:40:21`` (a local time, no zone) in ``zone`` as ISO 8601."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.strip()).replace(tzinfo=zone).isoformat()
    except ValueError:
        return None


def _text(node: ET.Element, tag: str) -> str | None:
    found = node.find(tag)
    return None if found is None or found.text is None else found.text.strip()


def parse(stdout: str, zone: tzinfo) -> Iterator[Live]:
    """Every live task in qstat's XML."""
    if not stdout.strip():
        return
    try:
        doc = ET.fromstring(stdout)
    except ET.ParseError as exc:
        raise GridEngineOutputError(message=f"qstat printed no XML: {exc}") from None
    for node in doc.iter("job_list"):
        job = _text(node, "JB_job_number")
        if job is None or not job.isdigit():
            raise GridEngineOutputError(message="qstat listed a job without JB_job_number")
        tasks = _text(node, "tasks")
        for task in task_ids(tasks) if tasks else [None]:
            yield Live(
                job=job,
                task=task,
                letters=_text(node, "state") or "",
                name=_text(node, "JB_name"),
                submitted=iso(_text(node, "JB_submission_time"), zone),
                started=iso(_text(node, "JAT_start_time"), zone),
            )
