"""failures.yaml as the engine uses it: entries with compiled, safe, case-insensitive matchers.

Loading never fails on a bad entry: the POLICY checks report malformed entries and unsafe
matchers (with path:line:col); here such an entry, or such a matcher, is left out, so one
careless edit cannot stop ``status --refresh`` from recording what it can.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaignops.core import yamldoc
from campaignops.core.errors import CampaignError, InputError
from campaignops.model import catalog_source as catalogs
from campaignops.model import failure_patterns as patterns

FAILURES_FILE = "failures.yaml"
RETRIES = ("never", "after-fix", "as-is")


@dataclass(frozen=True)
class Matcher:
    source: str
    regex: re.Pattern[str]
    anchor: int  # literal characters every match holds: the matcher's specificity


@dataclass(frozen=True)
class Entry:
    id: str
    category: str
    matchers: tuple[Matcher, ...]
    title: str = ""
    symptom: str = ""
    cause: str = ""
    fix: str = ""
    retry: str | None = None
    source: str = ""
    backends: tuple[str, ...] = ()  # backend page names or kinds; empty: every backend
    verdicts: tuple[str, ...] = ()  # scheduler states that name this entry without a log line
    warnings: bool = False  # may match lines that read as warnings or info
    # Entries whose answer this one overrides when it matches too; it never answers alone
    # unless it is also ``standalone``.
    refines: tuple[str, ...] = ()
    standalone: bool = False
    # Header lines of the table whose rows the matchers read: they count only on the rows
    # right after such a header (a `df -i` row reads like a `df -h` row without it).
    table_header: tuple[Matcher, ...] = ()
    order: int = 0  # place in the file: the last tie-breaker, for stable output only

    def applies_to(self, backend: str | None, kind: str | None) -> bool:
        if not self.backends or backend is None:
            return True
        return backend in self.backends or (kind is not None and kind in self.backends)

    def restricted_to(self, backend: str | None, kind: str | None) -> bool:
        """Written for this very backend (by name or kind), not for every backend."""
        return bool(self.backends) and backend is not None and self.applies_to(backend, kind)


@dataclass(frozen=True)
class Catalog:
    entries: tuple[Entry, ...] = ()
    # Every matcher as one alternation: most log lines match nothing, and one search in C
    # tells so (None when the matchers cannot be joined, e.g. two use one group name).
    any_line: re.Pattern[str] | None = None

    def get(self, entry_id: str) -> Entry | None:
        return next((e for e in self.entries if e.id == entry_id), None)


def _text(entry: Mapping[str, Any], key: str) -> str:
    value = entry.get(key)
    return value.strip() if isinstance(value, str) else ""


def _strings(entry: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = entry.get(key)
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def matcher(source: str) -> Matcher | None:
    """``source`` compiled case-insensitively, or None when it is unsafe or not a regex."""
    if patterns.problem(source) is not None:
        return None
    return Matcher(
        source=source,
        regex=re.compile(source, re.IGNORECASE),
        anchor=patterns.anchor_length(source),
    )


def _compiled(entry: Mapping[str, Any], key: str) -> tuple[Matcher, ...]:
    return tuple(m for m in map(matcher, _strings(entry, key)) if m is not None)


def from_data(data: Any) -> Catalog:
    """The usable entries of a parsed failures.yaml (anything else: an empty catalog)."""
    raw = data.get("failures") if isinstance(data, Mapping) else None
    entries: list[Entry] = []
    seen: set[str] = set()
    for order, item in enumerate(raw if isinstance(raw, list) else ()):
        if not isinstance(item, Mapping):
            continue
        entry_id, category = _text(item, "id"), _text(item, "category")
        if not entry_id or not category or entry_id in seen:
            continue
        compiled = _compiled(item, "matchers")
        verdicts = _strings(item, "verdicts")
        if not compiled and not verdicts:
            continue
        seen.add(entry_id)
        retry = _text(item, "retry")
        entries.append(
            Entry(
                id=entry_id,
                category=category,
                matchers=compiled,
                title=_text(item, "title"),
                symptom=_text(item, "symptom"),
                cause=_text(item, "cause"),
                fix=_text(item, "fix"),
                retry=retry if retry in RETRIES else None,
                source=_text(item, "source"),
                backends=_strings(item, "backends"),
                verdicts=verdicts,
                warnings=item.get("warnings") is True,
                refines=_strings(item, "refines"),
                standalone=item.get("standalone") is True,
                table_header=_compiled(item, "table_header"),
                order=order,
            )
        )
    return Catalog(entries=tuple(entries), any_line=_union(entries))


def _union(entries: Sequence[Entry]) -> re.Pattern[str] | None:
    sources = [m.source for e in entries for m in e.matchers]
    if not sources:
        return None
    try:
        return re.compile("|".join(f"(?:{s})" for s in sources), re.IGNORECASE)
    except (re.error, OverflowError, RecursionError):
        return None


def load(root: Path) -> Catalog:
    """The campaign's catalog: failures.yaml with failures.local.yaml merged over it by id
    (campaignops.model.catalog_source); a campaign without either has an empty one. A file that cannot be
    read or parsed raises InputError naming it."""
    merged = catalogs.load(
        root, hint="fix it (campaign check --select POLICY says where), then run diagnose again"
    )
    return from_data(merged.data)


def load_file(path: Path, *, shown: str) -> Catalog:
    """A failures.yaml by path. One that cannot be read or parsed raises InputError (exit 2:
    say where, never guess from half a catalog)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            path=shown, message=f"cannot read: {exc}", hint="pass a readable UTF-8 failures.yaml"
        ) from None
    try:
        data = yamldoc.load(text, path=shown)
    except CampaignError as exc:
        raise InputError(
            path=shown,
            message=exc.message.removeprefix(f"{shown}: "),
            hint="fix it (campaign check --select POLICY says where), then run diagnose again",
        ) from None
    return from_data(data)


def categories(entries: Sequence[Entry]) -> set[str]:
    return {e.category for e in entries}


GPU_OOM = "oom-gpu"  # the category the box executor's oom_retry acts on


def oom_patterns(catalog: Catalog, *, backend: str | None, kind: str | None) -> tuple[str, ...]:
    """The matchers of the catalog's GPU out-of-memory entries that apply to ``backend``, as
    regex sources the box executor compiles as they are (``(?i)``: case-insensitive, as here).
    The executor retries a task whose log tail one of them matches (the manifest's oom_retry)."""
    return tuple(
        f"(?i){m.source}"
        for e in catalog.entries
        if e.category == GPU_OOM and e.applies_to(backend, kind)
        for m in e.matchers
    )
