"""The suite's one way to wait: poll with a deadline and a growing pause.

``until`` polls any check: first again after 50 ms, then twice as long each time, up to a
ceiling, so a quick event is seen quickly and a slow one costs few polls. ``settled`` waits for
a ledger job the way a user's `campaign status --refresh` sees it, without a full refresh per
poll: a local job is watched through its executor's files (what ``status`` reads, a file read and
a ``kill -0``), and the refresh runs once it shows the wanted state; any other job is refreshed
on the growing pause. A test's loop, not the product's (`campaign status --watch` asks once a
minute).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, TypeVar

from campaignops.backends.local import machine as local
from campaignops.backends.local import state as localstate
from campaignops.model import ledger
from campaignops.model.states import FINISHED

T = TypeVar("T")
FIRST_S = 0.05


def until(
    what: str | Callable[[], str],
    check: Callable[[], T | None],
    *,
    timeout: float = 60.0,
    most: float = 0.5,
) -> T:
    """``check()``'s first true value; AssertionError naming ``what`` (or what it returns,
    asked at the end) after ``timeout`` s. The pause between polls starts at 50 ms and doubles
    up to ``most`` s: keep it short where a check is a file read, longer where it runs a
    scheduler's commands."""
    deadline = time.monotonic() + timeout
    pause = FIRST_S
    while True:
        value = check()
        if value:
            return value
        left = deadline - time.monotonic()
        if left <= 0:
            told = what if isinstance(what, str) else what()
            raise AssertionError(f"gave up after {timeout:g} s waiting for {told}")
        time.sleep(min(pause, left))
        pause = min(pause * 2, most)


def _job(root: Path, ledger_id: str | None) -> ledger.Job:
    jobs = ledger.read(root)
    return jobs.by_id[ledger_id or newest(root)]


def newest(root: Path) -> str:
    """The ledger id of the newest submission: the last intent in the file. Not
    ``jobs[-1]``: two submissions within one second are ordered by their random ledger ids."""
    for line in reversed((root / ".campaign/ledger.jsonl").read_text("utf-8").splitlines()):
        record = json.loads(line) if line.strip() else {}
        if record.get("kind") == "intent":
            return str(record["ledger_id"])
    raise AssertionError(f"no submission in {root}/.campaign/ledger.jsonl")


def _local_state(root: Path, job: ledger.Job) -> Callable[[], str] | None:
    """How ``status`` would read the local job's state now, if its executor's files are here
    (a local GPU job runs under the box executor, elsewhere: None, refresh instead)."""
    job_id = job.job_id
    if job.backend != local.NAME or not job_id:
        return None
    state_root = root / local.STATE_DIR
    if not (state_root / job_id.partition("_")[0]).is_dir():
        return None
    return lambda: str(localstate.view(state_root, job_id)["state"])


def settled(
    run: Callable[..., Any],
    root: Path,
    *,
    want: Collection[str] = FINISHED,
    ledger_id: str | None = None,
    timeout: float = 120.0,
    most: float = 1.0,
) -> ledger.Job:
    """The ledger's job (default: the newest) once `campaign status --refresh` (through ``run``,
    the in-process CLI fixture) has recorded one of the ``want`` states."""
    deadline = time.monotonic() + timeout
    watch = _local_state(root, _job(root, ledger_id))
    if watch is not None:  # UNKNOWN: not this executor's to tell; the refresh decides
        seen = {*want, "UNKNOWN"}
        until(f"a state in {sorted(want)}", lambda: watch() in seen, timeout=timeout, most=0.2)

    def refreshed() -> ledger.Job | None:
        assert run("status", "--refresh").code == 0
        job = _job(root, ledger_id)
        return job if job.state in want else None

    def told() -> str:
        return f"a state in {sorted(want)}: {dict(_job(root, ledger_id).record)}"

    left = max(deadline - time.monotonic(), 1.0)
    return until(told, refreshed, timeout=left, most=most)
