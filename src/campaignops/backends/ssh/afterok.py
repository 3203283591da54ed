"""afterok across boxes for the ssh backend (docs/runner.md "afterok across boxes").

A box's executor sees only its own share of a parent job. So each ``after`` entry of job.json
says where the parent runs: ``here`` (a share on this box, read from its state file) and
``elsewhere`` (tasks on other boxes, which only the runner sees). For an ``elsewhere`` parent
the executor waits for the runner's verdict: ``campaign status --refresh`` folds the parent's
tasks of every box, and once every one has ended it writes the verdict (COMPLETED, or the
worst end) with ``boxexec verdict`` on each box whose answer said a job there awaits it.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from campaignops.model.states import FINISHED, worst

Json = dict[str, Any]


def requirement(parent: str, record: Mapping[str, Any] | None, box: str) -> Json:
    """The job.json ``after`` entry for ``parent`` on instance ``box``, from the parent's
    placement record. A parent this checkout has no record of keeps the older meaning (its
    share is on this box): the executor then cancels at once if it finds none, as before."""
    if record is None:
        return {"job": parent, "here": True, "elsewhere": False}
    names = set()
    for entry in record.get("placement") or ():
        instance = entry.get("instance") if isinstance(entry, Mapping) else None
        if isinstance(instance, Mapping) and isinstance(instance.get("name"), str):
            names.add(instance["name"])
    return {"job": parent, "here": box in names, "elsewhere": bool(names - {box})}


def requirements(
    after: Sequence[str], records: Mapping[str, Mapping[str, Any]], box: str
) -> list[Json]:
    return [requirement(p, records.get(p), box) for p in after]


def verdict(states: Iterable[str]) -> str | None:
    """A parent's end over every box: COMPLETED when every task completed, else its worst end;
    None while any task has not ended (or did not answer: UNKNOWN is no end)."""
    seen = list(states)
    if not seen or any(s not in FINISHED for s in seen):
        return None
    return worst(seen)


def awaited(status_doc: Mapping[str, Any] | None) -> set[str]:
    """The parents whose verdict some job on this box still awaits (its status answer)."""
    jobs = (status_doc or {}).get("jobs")
    found: set[str] = set()
    for job in jobs.values() if isinstance(jobs, Mapping) else ():
        waits = job.get("awaits") if isinstance(job, Mapping) else None
        found.update(w for w in waits or () if isinstance(w, str))
    return found


def plan(
    awaiting: Mapping[str, set[str]],
    folded: Mapping[str, str | None],
    ended: Mapping[str, str],
) -> dict[str, dict[str, str]]:
    """The verdicts to write, per box: for each parent a box awaits, this refresh's fold of it
    when it was refreshed (``folded``; None: some task has not ended, so nothing yet), else its
    final state in the ledger (``ended``: a parent that ended at an earlier refresh). Boxes with
    nothing to write are left out: no call for them."""
    out: dict[str, dict[str, str]] = {}
    for box, wanted in sorted(awaiting.items()):
        found = {}
        for parent in sorted(wanted):
            said = folded[parent] if parent in folded else ended.get(parent)
            if said is not None and said in FINISHED:
                found[parent] = said
        if found:
            out[box] = found
    return out


def verdict_command(executor: str, jobs_root: str, verdicts: Mapping[str, str]) -> str:
    pairs = [f"{job}={state}" for job, state in sorted(verdicts.items())]
    return shlex.join(["python3", executor, "verdict", jobs_root, *pairs])
