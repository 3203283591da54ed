"""Views: the generated Markdown blocks (see blocks.py), rebuilt from the campaign's own files.

Each view is a pure function of its sources (campaign.yaml, backend pages, failures.yaml, the
ledger): no clock, no environment, so ``campaign render`` is idempotent and ``campaign check`` can compare a block with
what would be rendered now.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from campaignops.backends import registry, spending
from campaignops.core import layout, schema
from campaignops.core.atomic import write_atomic
from campaignops.core.errors import InputError
from campaignops.core.files import FileReader
from campaignops.model import backendpage, blocks, ledger_index
from campaignops.model import catalog_source as catalogs
from campaignops.model import ledger as ledger_mod
from campaignops.model import policy as policy_mod
from campaignops.views import recent, reports, tree
from campaignops.views.recent import state as state  # re-exported: the views' word for a job

BOM = "\ufeff"
FAILURES_FILE = "failures.yaml"
LOCAL_FAILURES_FILE = "failures.local.yaml"
MARKER_HINT = (
    "view blocks are '<!-- campaign:begin NAME -->' ... '<!-- campaign:end NAME -->', "
    "each marker alone on its line, not nested; NAME is one of "
)


# ---------------------------------------------------------------------------------- sources


class Sources:
    """The files views are rendered from, read once through a FileReader.

    A source that cannot be read or parsed raises InputError naming it. Values of the wrong
    type are tolerated (rendered as they are, or as '—'): schema problems are POLICY's to report.
    """

    def __init__(self, reader: FileReader) -> None:
        self.reader = reader
        self._ledger: ledger_mod.Ledger | None = None
        self._rendered: dict[str, str] = {}
        self._pages: dict[str, dict[str, Any] | None] = {}  # one read per page, not per row

    def _text(self, rel: str) -> str:
        if not self.reader.exists(rel):
            raise InputError(path=rel, message="no such file", hint=f"restore {rel} from git")
        text = self.reader.read_text(rel)
        if text is None:
            raise self.reader.problems.get(rel) or InputError(path=rel, message="unreadable")
        return text

    def _yaml(self, rel: str) -> Any:
        self._text(rel)
        parsed = self.reader.read_yaml(rel)
        if parsed is None:
            raise self.reader.problems.get(rel) or InputError(path=rel, message="unreadable")
        data, error = parsed
        if error is not None:
            raise InputError(
                path=rel,
                message=f"not valid YAML (line {error.line}, column {error.col}: {error.problem})",
                hint="fix the syntax, then run campaign render",
            )
        return data

    def backends(self) -> tuple[str, ...]:
        return self.policy().backends

    def policy(self) -> policy_mod.Policy:
        return policy_mod.from_data(self._yaml(layout.POLICY_FILE))

    def page(self, name: str) -> dict[str, Any] | None:
        """A backend page's front matter, or None when the backend has no page."""
        if name not in self._pages:
            rel = backendpage.path_of(name)
            found = backendpage.is_name(name) and self.reader.exists(rel)
            self._pages[name] = (
                backendpage.front_matter(self._text(rel), path=rel) if found else None
            )
        return self._pages[name]

    def failures(self) -> Any:
        """The merged catalog: failures.yaml with failures.local.yaml over it by id."""
        if not catalogs.files(self.reader):
            self._text(FAILURES_FILE)  # none at all: say which file to restore
        return dict(
            catalogs.read(self.reader, hint="fix the syntax, then run campaign render").data
        )

    def recent_jobs(self) -> int:
        """campaign.yaml's status.recent_jobs (its default when the policy cannot be read)."""
        parsed = self.reader.read_yaml(layout.POLICY_FILE)
        return policy_mod.from_data(parsed[0] if parsed else None).recent_jobs

    def ledger(self) -> ledger_mod.Ledger:
        # Not through the FileReader: the ledger is the runner's own append-only file, with no
        # size cap (ledger.read refuses a symlink out of the campaign as the reader does).
        if self._ledger is None:
            self._ledger = ledger_mod.read(self.reader.root)
        return self._ledger

    def render(self, name: str) -> str:
        if name not in self._rendered:
            self._rendered[name] = escape_surrogates(VIEWS[name].render(self))
        return self._rendered[name]


# ---------------------------------------------------------------------------------- rendering

NONE = "—"


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (from a ledger string such as ``"\\ud800"``, which
    JSON allows and UTF-8 cannot hold) written as its escape ``\\ud800``, so a view of it can be
    written to a file and printed."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def cell(value: object) -> str:
    """One table cell: on one line, pipes escaped, no raw HTML, '—' when empty."""
    if value is None or value == "" or value == []:
        return NONE
    text = " ".join(str(value).split())
    return text.replace("|", "\\|").replace("<", "&lt;") or NONE


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = [header, ["---"] * len(header), *rows]
    return "\n".join("| " + " | ".join(row) + " |" for row in lines)


def _empty(header: Sequence[str], message: str) -> list[list[str]]:
    return [[message] + [""] * (len(header) - 1)]


def duration(seconds: float | None) -> str:
    if seconds is None:
        return NONE
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m {s:02d}s"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h}h {m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d {h:02d}h"


def _smoke(page: Mapping[str, Any]) -> object:
    for key in ("partitions", "queues"):
        entries = page.get(key)
        for entry in entries if isinstance(entries, list) else ():
            if isinstance(entry, dict) and entry.get("purpose") == "smoke":
                return entry.get("name")
    return None


BACKENDS_HEADER = ("order", "backend", "kind", "scheduler", "smoke partition/queue", "verified")


def render_backends(src: Sources) -> str:
    rows: list[list[str]] = []
    for order, name in enumerate(src.backends(), start=1):
        page = src.page(name)
        if page is None:
            rows.append([str(order), cell(name), "no page", NONE, NONE, NONE])
            continue
        link = f"[{cell(name)}]({backendpage.path_of(name)})"
        facts = (page.get("kind"), page.get("scheduler"), _smoke(page), page.get("verified"))
        rows.append([str(order), link, *map(cell, facts)])
    return table(BACKENDS_HEADER, rows or _empty(BACKENDS_HEADER, "no authorized backends"))


FAILURES_HEADER = ("id", "symptom", "fix", "source", "verified")


def render_failures(src: Sources) -> str:
    data = src.failures()
    entries = data.get("failures") if isinstance(data, dict) else None
    groups: dict[str, list[dict[str, Any]]] = {}
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, dict):
            category = entry.get("category")
            groups.setdefault(category if isinstance(category, str) else "other", []).append(entry)
    if not groups:
        return "_No failures catalogued yet._"
    known: list[str] = schema.load(schema.FAILURES)["$defs"]["category"]["enum"]
    order = [c for c in known if c in groups] + sorted(c for c in groups if c not in known)
    sections = []
    for category in order:
        rows = [[cell(e.get(k)) for k in FAILURES_HEADER] for e in groups[category]]
        sections.append(f"### {cell(category)}\n\n{table(FAILURES_HEADER, rows)}")
    return "\n\n".join(sections)


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


def render_stages(src: Sources) -> str:
    """Each target's latest job per stage (the ledger's per-target index: the table's size
    follows the targets, not the history)."""
    ledger = src.ledger()
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
            box = registry.cell_note(last, target, src.page(last.backend) if last.backend else None)
            where = f"{where} {box}" if box else where
            text = task_state(last, target)
            row.append(cell(f"{text} ({where})" if last.job_id else text))
        rows.append(row)
    return table(STAGES_HEADER, rows or _empty(STAGES_HEADER, "no jobs yet"))


JOBS_HEADER = (
    "job",
    "targets",
    "stage",
    "backend",
    "state",
    "queue wait",
    "run time",
    "exit",
    "diagnosis",
    "commit",
)
SHOWN_TARGETS = 3


def _targets(targets: Sequence[str]) -> str:
    shown = ", ".join(targets[:SHOWN_TARGETS])
    more = len(targets) - SHOWN_TARGETS
    return f"{shown} (+{more} more)" if more > 0 else shown


def render_jobs(
    src: Sources,
    shown: Mapping[str, str] | None = None,
    selection: recent.Selection | None = None,
) -> str:
    """The jobs table: what ``selection`` lists (views/recent.py; default: the live jobs and
    the last status.recent_jobs finished ones), the rest counted. ``shown`` replaces the state
    of the jobs it names (by ledger id) with what they read as here (another clone's local
    job). STATUS.md passes neither: a committed view is the same in every clone."""
    ledger = src.ledger()
    instead = shown or {}
    listed = recent.select(ledger, selection or recent.Selection(recent=src.recent_jobs()))
    rows = [
        [
            cell(job.job_id),
            cell(_targets(job.targets)),
            cell(job.stage),
            cell(job.backend),
            cell(instead.get(job.ledger_id) or state(job)),
            duration(job.queue_wait()),
            duration(job.run_time()),
            cell(job.exit_code),
            cell(job_diagnosis(job)),
            cell(job.commit[:10] if job.commit else None),
        ]
        for job in listed.jobs
    ]
    text = table(JOBS_HEADER, rows or _empty(JOBS_HEADER, "no jobs yet"))
    more = recent.unlisted_note(listed, command="campaign status --all")
    notes = [f"- {cell(more)}"] if more else []
    notes += [
        f"- {layout.LEDGER_FILE} line {s.line} skipped: {cell(s.reason)}"
        + (" (torn last line)" if s.last else "")
        for s in ledger.skipped
    ]
    return "\n\n".join([text, "\n".join(notes)]) if notes else text


def render_budget(sources: Sources) -> str:
    """Spent against budget per charged backend (backends/spending.py summary), without a clock:
    running tasks count as reserved whole, so the block changes only when the ledger does."""
    policy = policy_mod.from_data(sources._yaml(layout.POLICY_FILE))
    pages = {name: sources.page(name) for name in policy.backends}
    found = spending.summary(policy, pages, sources.ledger().jobs)
    lines = found.splitlines()
    rows = [line for line in lines if line.startswith("|")]
    notes = [f"- {cell(line)}" for line in lines if not line.startswith("|")]
    if not rows:
        return "_No authorized backend has a charging model: nothing is charged._"
    return "\n\n".join(["\n".join(rows), "\n".join(notes)])


@dataclass(frozen=True)
class View:
    render: Callable[[Sources], str]
    source: str
    home: str


VIEWS: Mapping[str, View] = MappingProxyType(
    {
        "backends": View(render_backends, f"{layout.POLICY_FILE} and backend pages", "AGENTS.md"),
        "failures": View(
            render_failures, f"{FAILURES_FILE} and {LOCAL_FAILURES_FILE}", "FAILURES.md"
        ),
        "stages": View(render_stages, layout.LEDGER_FILE, "STATUS.md"),
        "jobs": View(render_jobs, layout.LEDGER_FILE, "STATUS.md"),
        "budget": View(
            render_budget, f"{layout.POLICY_FILE}, backend pages, {layout.LEDGER_FILE}", "STATUS.md"
        ),
        "reports": View(lambda src: reports.render(src.reader.root), "reports/", "STATUS.md"),
        "backend-tree": View(
            lambda src: tree.render(
                src.backends(), src.policy().smoke_backend, {n: src.page(n) for n in src.backends()}
            ),
            f"{layout.POLICY_FILE} and backend pages",
            "HPC_PLAYBOOK.md",
        ),
    }
)


# ---------------------------------------------------------------------------------- files


def parse(text: str) -> blocks.Parsed:
    return blocks.parse(text, known=VIEWS)


def render_all(*, root: Path, write: bool) -> list[str]:
    """Re-render every block under ``root``; return the files whose blocks changed.

    Everything is rendered before anything is written, so a bad marker or an unreadable source
    (InputError naming the file) leaves every file as it was. Only changed files are rewritten,
    atomically, with every byte outside the blocks (a BOM included) kept.
    """
    reader = FileReader(root)
    sources = Sources(reader)
    policy_yaml = reader.read_yaml(layout.POLICY_FILE)
    globs = policy_mod.from_data(policy_yaml[0] if policy_yaml else None).globs
    updates: list[tuple[str, bytes]] = []
    targets: set[Path] = set()
    for rel in layout.walk(reader.root):
        if not layout.matches(rel, globs[layout.MARKDOWN]):
            continue
        raw = reader.read_bytes(rel)
        # Files that are not text cannot hold blocks this tool wrote: leave them to the checks.
        text = reader.read_text(rel) if raw and b"campaign:" in raw else None
        if text is None:
            continue
        parsed = parse(text)
        if parsed.defects:
            first = parsed.defects[0]
            raise InputError(
                path=rel,
                message=f"line {first.line}: {first.problem}",
                hint=MARKER_HINT + ", ".join(VIEWS),
            )
        new = blocks.refresh(text, parsed, sources.render)
        target = (reader.root / rel).resolve()
        if new != text and target not in targets:
            targets.add(target)
            prefix = BOM if raw and raw.startswith(BOM.encode()) else ""
            updates.append((rel, (prefix + new).encode("utf-8")))
    if write:
        for rel, data in updates:
            write_atomic(reader.root / rel, data, root=reader.root)
    return [rel for rel, _ in updates]
