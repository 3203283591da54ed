"""What ``qacct -o <user> -j`` answers, read: one record per ended job or task.

A record is a block of ``key value`` lines after a line of ``=``; a task rescheduled (exit 99)
has one record per run, the last one counts. Verdicts (sge_execd's ``failed`` codes, seen on the
real cell: tests/runner/recorded/gridengine_qacct_o_j_berlin.txt):

- ``0``: the job ran; ``exit_status`` is its script's (0 COMPLETED, else FAILED);
- ``37  : qmaster enforced h_rt, h_cpu, or h_vmem limit``, exit 137: a kill at a limit. Which
  limit is read from the request (``category``: ``-l h_rt=5,h_vmem=100M``) against what was
  used: maxvmem at or past h_vmem × slots is OUT_OF_MEMORY, else ru_wallclock at or past h_rt
  is TIMEOUT;
- ``100 : assumedly after job``, exit 137: killed while running (qdel): CANCELLED;
- ``25  : rescheduling`` (exit 99): it runs again (the next record says how it ended);
- ``30  : application error returned`` (exit 100): FAILED (the job sits in ``Eqw`` until qdel);
- any other code: the job did not start as asked (1–24: before or while starting it): FAILED.

Times are ctime(3) dates in qacct's zone (UTC under ``TZ=UTC0``); sizes ``155.215MB``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, tzinfo

FAILED_LIMIT = 37
FAILED_ASSUMEDLY_AFTER = 100
FAILED_RESCHEDULING = 25
_SIZE = re.compile(r"([0-9]{1,15}(?:\.[0-9]{1,9})?)([KMGTP]?)B?", re.IGNORECASE)
_KIB = {"": 1 / 1024, "K": 1, "M": 1024, "G": 1024**2, "T": 1024**3, "P": 1024**4}
_SECONDS = re.compile(r"([0-9]{1,12}(?:\.[0-9]{1,9})?)s?")
_LIMIT = re.compile(r"(?:^|[ ,])(h_rt|h_vmem)=([0-9:.]+[KMGTkmgt]?)")


@dataclass(frozen=True)
class Ended:
    """One qacct record, read."""

    job: str
    task: int | None
    name: str | None
    failed: int
    failed_text: str
    exit_status: int | None
    submitted: str | None
    started: str | None
    ended: str | None
    wallclock_s: float | None
    maxvmem_kib: int | None
    slots: int
    category: str


def ctime(text: str | None, zone: tzinfo) -> str | None:
    """``Fri Nov 27 19:40:36 2026`` (C locale) in ``zone`` as ISO 8601; else None."""
    if not text:
        return None
    try:
        when = datetime.strptime(" ".join(text.split()), "%a %b %d %H:%M:%S %Y")
    except ValueError:
        return None  # "-/-" for a job that never started, or a date this reader does not know
    return when.replace(tzinfo=zone).isoformat()


def kib(text: str | None) -> int | None:
    """``155.215MB``, ``0.000B``, ``100M`` (a request), ``104857600`` (bytes) in KiB."""
    match = _SIZE.fullmatch(text.strip()) if text else None
    return None if match is None else int(float(match[1]) * _KIB[match[2].upper()])


def seconds(text: str | None) -> float | None:
    """``6s`` or ``6`` (ru_wallclock), ``0:0:5`` or ``5`` (an h_rt request) in seconds."""
    if text and ":" in text and re.fullmatch(r"[0-9]{1,9}(?::[0-9]{1,2}){1,2}", text.strip()):
        total = 0
        for part in text.strip().split(":"):
            total = total * 60 + int(part)
        return float(total)
    match = _SECONDS.fullmatch(text.strip()) if text else None
    return float(match[1]) if match else None


def limits(category: str) -> dict[str, str]:
    """``-l h_rt=5,h_vmem=100M`` → {"h_rt": "5", "h_vmem": "100M"}."""
    return {m[1]: m[2] for m in _LIMIT.finditer(category)}


def _int(text: str | None) -> int | None:
    head = (text or "").split(maxsplit=1)
    return int(head[0]) if head and re.fullmatch(r"-?[0-9]{1,9}", head[0]) else None


def _blocks(stdout: str) -> Iterator[dict[str, str]]:
    block: dict[str, str] = {}
    for line in stdout.splitlines():
        if line.startswith("====="):
            if block:
                yield block
            block = {}
            continue
        key, _, value = line.partition(" ")
        if key and value:
            block[key] = value.strip()
    if block:
        yield block


def _record(fields: Mapping[str, str], zone: tzinfo) -> Ended | None:
    job = fields.get("jobnumber", "")
    if not job.isdigit():
        return None
    task = _int(fields.get("taskid"))
    failed_words = fields.get("failed", "0").split(":", 1)
    return Ended(
        job=job,
        task=task,
        name=fields.get("jobname"),
        failed=_int(failed_words[0]) or 0,
        failed_text=failed_words[1].strip() if len(failed_words) > 1 else "",
        exit_status=_int(fields.get("exit_status")),
        submitted=ctime(fields.get("qsub_time"), zone),
        started=ctime(fields.get("start_time"), zone),
        ended=ctime(fields.get("end_time"), zone),
        wallclock_s=seconds(fields.get("ru_wallclock")),
        maxvmem_kib=kib(fields.get("maxvmem")),
        slots=_int(fields.get("slots")) or 1,
        category=fields.get("category", ""),
    )


def parse(stdout: str, zone: tzinfo) -> dict[tuple[str, int | None], Ended]:
    """The last record of each (job, task); a job of one task has task None."""
    out: dict[tuple[str, int | None], Ended] = {}
    for fields in _blocks(stdout):
        record = _record(fields, zone)
        if record is not None:
            out[(record.job, record.task)] = record
    return out


def verdict(record: Ended) -> tuple[str, str | None]:
    """The Slurm state of an ended record, and Grid Engine's own words when they say more."""
    why = f"failed {record.failed}: {record.failed_text}" if record.failed else None
    if record.failed == 0:
        return ("COMPLETED" if record.exit_status == 0 else "FAILED"), None
    if record.failed == FAILED_LIMIT:
        return _limit_state(record), why
    if record.failed == FAILED_ASSUMEDLY_AFTER:
        return "CANCELLED", why
    if record.failed == FAILED_RESCHEDULING:
        return "PENDING", why
    return "FAILED", why


def _limit_state(record: Ended) -> str:
    asked = limits(record.category)
    vmem = asked.get("h_vmem")
    if vmem and record.maxvmem_kib is not None:
        limit = kib(vmem)
        if limit is not None and record.maxvmem_kib >= limit * record.slots:
            return "OUT_OF_MEMORY"
    rt = asked.get("h_rt")
    limit_s = seconds(rt)
    if limit_s is not None and record.wallclock_s is not None and record.wallclock_s >= limit_s:
        return "TIMEOUT"
    return "OUT_OF_MEMORY" if vmem and not rt else "TIMEOUT" if rt and not vmem else "FAILED"
