"""What a submission is made of, read from the campaign: a queue file's cells and their
configs, the versioned wrappers the tasks call, and each target's fingerprint with the facts
that only the submitting checkout knows (the hardware class of the stage's request on the
backend page, the content of the files each command names).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from campaignops.checks import queues as queue_checks
from campaignops.core import layout
from campaignops.core.errors import UsageError
from campaignops.core.files import FileReader
from campaignops.model import accelerator, fingerprint, lockfile, manifest, queuefile
from campaignops.runner import headtree, named, plan

WRAPPER_REF = re.compile(r"(?<![\w./-])(scripts/[\w./-]+\.v[1-9][0-9]*\.[A-Za-z0-9]+)")


def wrappers_in(tasks: Sequence[str], root: Path) -> tuple[str, ...]:
    """The versioned wrappers the tasks call by path (they are locked at first use)."""
    found = {m.group(1) for t in tasks for m in WRAPPER_REF.finditer(t)}
    return tuple(sorted(p for p in found if (root / layout.guard_length(p)).is_file()))


def queue_cells(root: Path, rel: str) -> tuple[tuple[queuefile.Cell, ...], dict[str, str]]:
    """The cells of a manifest's queue file, and each config's sha256 (part of its cell's
    fingerprint). Read as `campaign check` reads it (inside the campaign, size-capped, UTF-8);
    a line the wrapper would misread, a config it could not open, or two cells with one name
    (one output directory) refuse the whole submission."""
    reader = FileReader(root)
    text = reader.read_text(rel)
    if text is None:
        raise reader.problems[rel]
    parsed = queuefile.parse(text)
    if parsed.problems:
        first = parsed.problems[0]
        raise UsageError(
            message=f"{rel}:{first.line}:{first.col}: {first.message}",
            hint=f"fix the queue file first: campaign check --select QUEUE {rel}",
        )
    seen: dict[str, int] = {}
    digests: dict[str, str] = {}
    for cell in parsed.cells:
        if cell.name in seen:
            raise UsageError(
                message=f"{rel}:{cell.line}:1: cell {cell.name!r} again (line {seen[cell.name]}):"
                " both would write the same output directory",
                hint="give each config a distinct file name, or comment one line out",
            )
        seen[cell.name] = cell.line
        why = queue_checks.config_problem(reader, cell.cfg)
        data = reader.read_bytes(cell.cfg) if why is None else None
        if data is None:
            raise UsageError(
                message=f"{rel}:{cell.line}:1: config {cell.cfg!r} "
                + (why or str(reader.problems[cell.cfg].message)),
                hint="commit the config inside the campaign, or fix the path (relative to the "
                "campaign root)",
            )
        digests[cell.cfg] = lockfile.digest(data)
    if not parsed.cells:
        raise UsageError(
            message=f"{rel}: no cells to run", hint="add lines '<cfg_path> <task> [epochs]'"
        )
    return parsed.cells, digests


def named_digests(
    doc: Mapping[str, Any],
    targets: Sequence[manifest.Target],
    root: Path,
    *,
    manifest_path: str | None = None,
    blobs: Callable[[], Mapping[str, str]] | None = None,
) -> dict[str, dict[str, str]]:
    """Each target's named files (path → sha256), read from its production command (the run
    length a smoke shortens never changes which files a config is made of), and for each
    directory the command reaches without naming its files (a glob, a brace, a variable, a
    directory argument, inside ``bash -c '…'`` too) the digest of the committed files under it
    (runner/headtree.py). ``blobs``: the committed files' object ids (default: HEAD's, from
    git), asked for only when some command reaches a directory."""
    out: dict[str, dict[str, str]] = {}
    cache: dict[str, str] = {}
    trees: dict[str, str] = {}
    listing: list[Mapping[str, str]] = []  # HEAD's listing, once, if needed
    # Covered by the fingerprint in their own way: the manifest (masked) and its queue file.
    skip = {p for p in (manifest_path, doc.get("queue")) if isinstance(p, str)}
    for target in targets:
        command = plan.command(target, doc, target.args)
        reach = named.reach([command], root)
        digests: dict[str, str] = {}
        for rel in reach.files:
            if rel not in cache:
                try:
                    cache[rel] = lockfile.digest((root / rel).read_bytes())
                except OSError:
                    cache[rel] = "unreadable"
            digests[rel] = cache[rel]
        if reach.dirs:
            if not listing:
                listing.append(blobs() if blobs is not None else headtree.head_blobs(root))
            digests.update(headtree.reached(reach.dirs, listing[0], skip=skip, cache=trees))
        out[target.id] = digests
    return out


def fingerprints(
    *,
    doc: Mapping[str, Any],
    cells: Sequence[queuefile.Cell],
    configs: Mapping[str, str],
    stage: str,
    page: Mapping[str, Any] | None,
    root: Path,
    targets: Sequence[str],
    manifest_path: str | None = None,
) -> dict[str, str]:
    """Every target's fingerprint at ``stage``; the named files are read for ``targets`` (the
    ones submitted) only."""
    every = list(manifest.targets(doc, cells))
    wanted = set(targets)
    hardware = {t.id: accelerator.of(plan.resources_for(doc, t.phase, stage), page) for t in every}
    files = named_digests(
        doc, [t for t in every if t.id in wanted], root, manifest_path=manifest_path
    )
    return fingerprint.fingerprints(doc, cells, configs=configs, hardware=hardware, files=files)


HARDWARE_GAP = (
    "the smoke asks for {smoke} on {smoke_backend}, {stage} for {now} on {backend}: a smoke "
    "counts only for the hardware class it ran on"
)


def hardware_gaps(
    doc: Mapping[str, Any],
    groups: Mapping[str, str | None],
    *,
    stage: str,
    going: tuple[str, Mapping[str, Any] | None],
    smoke: tuple[str, Mapping[str, Any] | None],
) -> dict[str, str]:
    """For each planned group (its phase, or None) whose smoke (on the backend a smoke goes
    to) asks for another hardware class than ``stage`` does (on ``going``): why no smoke can
    unlock it (the smoke_first gate's refusal says so)."""
    out: dict[str, str] = {}
    if stage == "smoke":
        return out
    for group, phase in groups.items():
        now = accelerator.of(plan.resources_for(doc, phase, stage), going[1])
        then = accelerator.of(plan.resources_for(doc, phase, "smoke"), smoke[1])
        if now != then:
            out[group] = HARDWARE_GAP.format(
                smoke=then, smoke_backend=smoke[0], stage=stage, now=now, backend=going[0]
            )
    return out
