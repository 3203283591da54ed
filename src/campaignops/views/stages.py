"""The stages view: each target's latest job per stage, with its own task's outcome (state,
exit code, the runner's reason, the diagnosis), in STATUS.md and `campaign status`. A passed
smoke of a config the campaign no longer has says "(older config)": the smoke_first gate would
not take it (model/smokes.py, one rule for both).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from campaignops.backends import registry
from campaignops.core import schema
from campaignops.core.errors import CampaignError
from campaignops.core.files import FileReader
from campaignops.model import ledger as ledger_mod
from campaignops.model import ledger_index, makeup, smokes
from campaignops.views.cells import NONE, cell, empty, table
from campaignops.views.recent import state

STAGES_HEADER = ("target", *ledger_mod.STAGES)


def diagnosis(task: ledger_mod.Task) -> str | None:
    """What status --refresh diagnosed for a failed task: ``oom-gpu (cuda-oom)``, ``unknown``
    when no catalog entry explained it; None for a task that did not fail."""
    if not task.finished or task.succeeded or task.state == "CANCELLED":
        return None
    if task.category is None:
        return "unknown"
    return task.category + (f" ({task.entry})" if task.entry else "")


def task_state(job: ledger_mod.Job, target: str) -> str:
    """A target's own outcome in ``job``: its array task's state (with the reason the runner
    recorded, e.g. output-missing, and the diagnosis), else what the ledger says of the
    submission."""
    task = job.task(target)
    if task is None or task.state is None:
        return state(job)
    reason = f", {task.reason}" if task.reason else ""
    code = task.exit_code
    shown = f" exit {code}" if task.finished and code not in (0, None) else ""
    found = diagnosis(task)
    diagnosed = f", {found}" if found else ""
    return f"{task.state}{shown}{reason}{diagnosed}"


def job_diagnosis(job: ledger_mod.Job) -> str | None:
    """The diagnoses of a job's failed tasks: ``oom-gpu (cuda-oom)``, or counted for an array
    (``oom-gpu (cuda-oom) ×2, unknown``)."""
    counts: dict[str, int] = {}
    for target in dict.fromkeys(job.targets):
        task = job.task(target)
        found = diagnosis(task) if task is not None else None
        if found:
            counts[found] = counts.get(found, 0) + 1
    return ", ".join(f"{d} ×{n}" if n > 1 else d for d, n in counts.items()) or None


OLDER_CONFIG = " (older config)"  # a passed smoke that no longer unlocks single/production

# What the fingerprint of a target of a job is now (None: it cannot be told), see Now.
Current = Callable[[ledger_mod.Job, str], str | None]


class Now:
    """Each target's fingerprint as the campaign's files make it now (model/makeup.py, as
    `campaign submit` computes it), at the stage and on the backend of the job asked about.
    Read once per manifest, stage and backend, the named files only for the targets the
    ledger knows; a manifest that is gone or cannot be read tells nothing (None): the MAN
    checks say why."""

    def __init__(
        self,
        reader: FileReader,
        page: Callable[[str], Mapping[str, Any] | None],
        known: Iterable[str],
    ) -> None:
        self._reader = reader
        self._page = page
        self._known = sorted(known)
        self._prints: dict[tuple[str, str, str], Mapping[str, str]] = {}

    def __call__(self, job: ledger_mod.Job, target: str) -> str | None:
        rel, stage, backend = job.text("manifest"), job.stage, job.backend
        if not (rel and stage and backend):
            return None
        key = (rel, stage, backend)
        if key not in self._prints:
            self._prints[key] = self._read(rel, stage, backend)
        return self._prints[key].get(target)

    def _read(self, rel: str, stage: str, backend: str) -> Mapping[str, str]:
        parsed = self._reader.read_yaml(rel) if self._reader.exists(rel) else None
        doc = parsed[0] if parsed and parsed[1] is None else None
        if not isinstance(doc, Mapping) or next(schema.validate(schema.MANIFEST, doc), None):
            return {}
        root = self._reader.root
        try:
            queue = doc.get("queue")
            cells, configs = makeup.queue_cells(root, queue) if isinstance(queue, str) else ((), {})
            return makeup.fingerprints(
                doc=doc,
                cells=cells,
                configs=configs,
                stage=stage,
                page=self._page(backend),
                root=root,
                targets=self._known,
                manifest_path=rel,
            )
        except (CampaignError, ValueError, KeyError, TypeError):
            return {}  # what the runner would refuse to read: the runner's own message says why


def older_config(
    index: ledger_index.Index, job: ledger_mod.Job, target: str, current: Current
) -> bool:
    """``job`` is ``target``'s latest passed smoke, and it ran a config the campaign no longer
    has: the smoke_first gate's own rule (model/smokes.py) on the fingerprint now."""
    if job.stage != "smoke" or index.smoked(target, None) != job.ledger_id:
        return False
    now = current(job, target)
    return now is not None and smokes.standing(index, target, now) == smokes.OLDER


def render(
    ledger: ledger_mod.Ledger,
    page: Callable[[str], Mapping[str, Any] | None],
    current: Current | None = None,
) -> str:
    """Each target's latest job per stage (the ledger's per-target index: the table's size
    follows the targets, not the history). ``page``: a backend's page by name (a box's note);
    ``current``: a target's fingerprint now, so a smoke of an older config says so."""
    index = ledger_index.of(ledger.jobs, ledger.index)
    rows = []
    for target in sorted(index.targets()):
        row = [cell(target)]
        for stage in ledger_mod.STAGES:
            lid = index.latest(target, stage)
            last = ledger.by_id.get(lid) if lid is not None else None
            if last is None:
                row.append(NONE)
                continue
            index_of = last.index_of(target)
            where = last.job_id if len(last.targets) == 1 else f"{last.job_id} task {index_of}"
            box = registry.cell_note(last, target, page(last.backend) if last.backend else None)
            where = f"{where} {box}" if box else where
            text = task_state(last, target)
            if current is not None and older_config(index, last, target, current):
                text += OLDER_CONFIG
            row.append(cell(f"{text} ({where})" if last.job_id else text))
        rows.append(row)
    return table(STAGES_HEADER, rows or empty(STAGES_HEADER, "no jobs yet"))
