"""What a target is made of, as the campaign's files say now: its command line, its queue
file's cells and their configs, the files its command names, and its fingerprint.

One reading for every asker: the submission (runner/asked.py: the smoke_first gate and the
ledger compare these fingerprints), the review of a change (gitops/review/targets.py), and the
stages view (views/stages.py: a smoke of an older config says so).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from campaignops.core.errors import UsageError
from campaignops.core.files import FileReader
from campaignops.model import (
    accelerator,
    fingerprint,
    headtree,
    lockfile,
    manifest,
    named,
    queuefile,
)
from campaignops.model.stageresources import resources_for


def command(target: manifest.Target, doc: Mapping[str, Any], args: Mapping[str, Any]) -> str:
    base = target.cmd or doc.get("default_cmd")
    if not isinstance(base, str) or not base.strip():
        raise UsageError(
            message=f"target {target.id!r} has no cmd and the manifest no default_cmd",
            hint="give the job or template a cmd, or the manifest a default_cmd",
        )
    if target.positional:
        extra = [k for k in args if k not in manifest.QUEUE_FIELDS]
        if extra:
            raise UsageError(
                message=f"queue cell {target.id!r}: smoke.args may only set epochs, not "
                + ", ".join(map(repr, extra)),
                hint="a queue line passes <cfg> <task> [epochs] to the wrapper; shorten the "
                "run with smoke.args: {epochs: N}",
            )
        fields = " ".join(shlex.quote(str(args[k])) for k in manifest.QUEUE_FIELDS if k in args)
        return _written(base) + f" {fields}"
    bad = [k for k in args if manifest.option_problem(k) is not None]
    if bad:  # the MAN checks refuse them first; this is the last door before the shell
        raise UsageError(
            message=f"target {target.id!r}: args key {bad[0]!r} {manifest.option_problem(bad[0])}",
            hint="each key becomes --key on the command line: rename it",
        )
    flags = " ".join(f"--{k} {shlex.quote(str(v))}" for k, v in args.items())
    return _written(base) + (f" {flags}" if flags else "")


def _written(base: str) -> str:
    """The command as the manifest has it: a YAML block's one trailing newline dropped (so
    args join its last line), nothing else touched."""
    return base[:-1] if base.endswith("\n") else base


def config_problem(reader: FileReader, cfg: str) -> str | None:
    """Why ``cfg`` cannot be run, or None. A symlink leaving the campaign counts as missing:
    the wrapper on the compute host sees a checkout of the repository, not this machine."""
    if not reader.exists(cfg):
        return "does not exist"
    if not reader.inside(cfg):
        return "is a symlink that loops or leads outside the campaign"
    if not (reader.root / cfg).is_file():
        return "is not a file" if (reader.root / cfg).exists() else "is a dangling symlink"
    return None


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
        why = config_problem(reader, cell.cfg)
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
    (model/headtree.py). ``blobs``: the committed files' object ids (default: HEAD's, from
    git), asked for only when some command reaches a directory."""
    out: dict[str, dict[str, str]] = {}
    cache: dict[str, str] = {}
    trees: dict[str, str] = {}
    listing: list[Mapping[str, str]] = []  # HEAD's listing, once, if needed
    # Covered by the fingerprint in their own way: the manifest (masked) and its queue file.
    skip = {p for p in (manifest_path, doc.get("queue")) if isinstance(p, str)}
    for target in targets:
        reach = named.reach([command(target, doc, target.args)], root)
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
    hardware = {t.id: accelerator.of(resources_for(doc, t.phase, stage), page) for t in every}
    files = named_digests(
        doc, [t for t in every if t.id in wanted], root, manifest_path=manifest_path
    )
    return fingerprint.fingerprints(doc, cells, configs=configs, hardware=hardware, files=files)
