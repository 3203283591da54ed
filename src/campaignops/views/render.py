"""Views: the generated Markdown blocks (see blocks.py), rebuilt from the campaign's own files.

Each view is a pure function of its sources (campaign.yaml, backend pages, failures.yaml, the
ledger): no clock, no environment, so ``campaign render`` is idempotent and ``campaign check`` can compare a block with
what would be rendered now.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from campaignops.backends import spending
from campaignops.core import layout, schema
from campaignops.core.atomic import write_atomic
from campaignops.core.errors import InputError
from campaignops.core.files import FileReader
from campaignops.model import backendpage, blocks, ledger_index
from campaignops.model import catalog_source as catalogs
from campaignops.model import ledger as ledger_mod
from campaignops.model import policy as policy_mod
from campaignops.views import jobs, recent, reports, stages, tree
from campaignops.views.cells import NONE as NONE  # re-exported: the views' empty cell
from campaignops.views.cells import cell as cell  # re-exported: learn, tests
from campaignops.views.cells import duration as duration  # re-exported: learn, runner, tests
from campaignops.views.cells import empty, table
from campaignops.views.cells import escape_surrogates as escape_surrogates  # re-exported: cli
from campaignops.views.recent import state as state  # re-exported: the views' word for a job
from campaignops.views.stages import diagnosis as diagnosis  # re-exported: learn.summary

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
# The pieces of a table are in views/cells.py; the stages and jobs blocks in their own modules.


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
    return table(BACKENDS_HEADER, rows or empty(BACKENDS_HEADER, "no authorized backends"))


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


def render_stages(src: Sources) -> str:
    """Each target's latest job per stage (views/stages.py), a smoke of an older config so
    marked."""
    ledger = src.ledger()
    known = ledger_index.of(ledger.jobs, ledger.index).targets()
    return stages.render(ledger, src.page, stages.Now(src.reader, src.page, known))


def render_jobs(
    src: Sources,
    shown: Mapping[str, str] | None = None,
    selection: recent.Selection | None = None,
) -> str:
    """The jobs table (views/jobs.py): what ``selection`` lists (views/recent.py; default: the
    live jobs and the last status.recent_jobs finished ones), the rest counted. ``shown``
    replaces the state of the jobs it names (by ledger id) with what they read as here (another
    clone's local job). STATUS.md passes neither: a committed view is the same in every clone."""
    chosen = selection or recent.Selection(recent=src.recent_jobs())
    return jobs.render(src.ledger(), chosen, shown)


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
        "stages": View(
            render_stages,
            f"{layout.LEDGER_FILE} and the smoked targets' manifests, queues, configs, scripts",
            "STATUS.md",
        ),
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
