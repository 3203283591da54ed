"""Reading the ledger at any size: once per process, and from a snapshot of its folded prefix.

The ledger is the runner's own append-only file, so it has no size limit (FileReader's cap is
for files people write). A year of 1,000-task arrays is ~100,000 records, ~34 MiB; parsing
and folding them all on every command was most of a command's time. So:

- **Per process**, the Ledger read is kept with the file's identity (device, inode, size,
  mtime, ctime): an unchanged file is not read again (one changed in the last RACY_NS is
  compared by content: two writes within a clock tick can leave size and times alike). After
  an append, the kept fold goes on with the new lines only, once the old bytes are found
  unchanged at the file's start.
- **Across processes**, a snapshot of the fold of the ledger's first N bytes (every complete
  line at the time) is kept in the clone's git directory (``.git/campaignops/``), never in the
  work tree: it can neither be committed nor merged, nor arrive with a clone or pull, and git
  keeps the append-only history of the ledger itself. It holds the SHA-256 of those N bytes;
  it is used only when the ledger's first N bytes hash the same (a merge, a checkout or an edit
  anywhere in them and it is rebuilt), and the lines after them are folded on top: the fold
  is a left fold in file order, so the result is exactly the fold of the whole file.
- A snapshot's jobs are read lazily: each job's LIGHT fields (state, ids, stage, backend …)
  at once, its whole record (``targets``, ``tasks``, ``fingerprints``: the bulk of an array)
  on first use of any other field, so a command pays for the jobs it looks into (each a
  campaignops.model.ledger_packed.Packed, as the fold keeps a job it is done with, so a cold
  read writes its jobs' bytes as they are). The snapshot keeps the fold's per-target index
  too (campaignops.model.ledger_index), brought up to date with the jobs the tail changes.

Snapshots are written only when at least SNAPSHOT_AFTER lines would otherwise be parsed, so a
small ledger never has one. A snapshot that cannot be read or written is ignored: it is a cache.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import mmap
import os
import time
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaignops.core import atomic, layout
from campaignops.core.errors import CampaignError, InputError
from campaignops.model.ledger_fold import Folding, Ledger
from campaignops.model.ledger_index import Index
from campaignops.model.ledger_packed import Packed, dump

SNAPSHOT_AFTER = 2000  # lines: below this, parsing is cheaper than writing a snapshot
SNAPSHOT_FILE = "campaignops/ledger-snapshot.v3"  # in the git directory
FORMAT = "campaignops ledger snapshot 3"
RACY_NS = 2_000_000_000  # a file this recent is compared by content, not trusted by its stat


@dataclass
class _Kept:
    """What this process last read: the file's identity, the fold of its complete lines (the
    first ``len(prefix)`` bytes, kept to compare), and the Ledger returned."""

    identity: tuple[int, ...]
    trusted: bool
    prefix: bytes
    torn: bytes
    folding: Folding
    ledger: Ledger


_KEPT: dict[Path, _Kept] = {}
_now_ns = time.time_ns


def forget() -> None:
    """Drop what this process keeps (tests that rewrite a ledger behind its back)."""
    _KEPT.clear()


def _open(root: Path) -> tuple[Path, os.stat_result] | None:
    """The ledger's real path and status, None when missing; a symlink that leaves the
    campaign, or anything but a regular file, is refused as FileReader refuses it."""
    path = root / layout.LEDGER_FILE
    rel = layout.LEDGER_FILE
    if not os.path.lexists(path):
        return None
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        real = None
    base = root.resolve()
    if real is None or (real != base and base not in real.parents):
        where = f"symlink to {path.readlink()}" if path.is_symlink() else "path"
        raise InputError(
            path=rel,
            message=f"{where}, outside the campaign or in a symlink loop; not followed",
            hint="keep campaign files inside the repository (copy the file in, or exclude it)",
        )
    try:
        status = real.stat()
    except OSError as exc:
        raise InputError(
            path=rel, message=f"cannot read: {exc.strerror}", hint="check permissions"
        ) from None
    if not path.is_file():
        raise InputError(path=rel, message="not a regular file", hint="restore it from git")
    return real, status


def read(root: Path) -> Ledger:
    """The campaign's ledger (see the module's docstring for how it is kept fast)."""
    opened = _open(root)
    if opened is None:
        return Ledger()
    real, status = opened
    identity = _identity(status)
    kept = _KEPT.get(real)
    if kept is not None and kept.identity == identity and kept.trusted:
        return kept.ledger
    try:
        data = real.read_bytes()
    except OSError as exc:
        raise InputError(
            path=layout.LEDGER_FILE,
            message=f"cannot read: {exc.strerror}",
            hint="check permissions",
        ) from None
    # Git's rule for racily clean files: a file changed within the clock's granularity of
    # being read may change again without its size or times changing; compare its bytes.
    trusted = _now_ns() - max(status.st_mtime_ns, status.st_ctime_ns) > RACY_NS
    if kept is not None and _same(data, kept):
        kept.identity, kept.trusted = identity, trusted
        return kept.ledger
    end = data.rfind(b"\n") + 1  # complete lines end here; after it, at most a torn one
    snapshot = _snapshot_path(root)
    if kept is not None and len(kept.prefix) <= end and data.startswith(kept.prefix):
        folding, start = kept.folding.copy(), len(kept.prefix)
    else:
        loaded = _load(snapshot, data[:end]) if snapshot is not None else None
        folding, start = loaded if loaded is not None else (Folding(), 0)
    before = folding.lines
    folding.feed(data if (start, end) == (0, len(data)) else data[start:end])
    ledger = folding.ledger()  # frozen, and its index brought up to date
    if snapshot is not None and folding.lines - before >= SNAPSHOT_AFTER:
        _save(snapshot, data[:end], folding)
    if end < len(data):  # a torn last line: read now, but kept out of what is continued
        whole = folding.copy()
        whole.feed(data[end:].decode("utf-8", "surrogateescape"))
        ledger = whole.ledger()
    _KEPT[real] = _Kept(
        identity=identity,
        trusted=trusted,
        prefix=data[:end],
        torn=data[end:],
        folding=folding,
        ledger=ledger,
    )
    return ledger


def _same(data: bytes, kept: _Kept) -> bool:
    # Compared in place: joining prefix and torn tail would copy the whole ledger first.
    size = len(kept.prefix)
    return (
        len(data) == size + len(kept.torn)
        and data.startswith(kept.prefix)
        and data[size:] == kept.torn
    )


def _identity(status: os.stat_result) -> tuple[int, ...]:
    return (
        status.st_dev,
        status.st_ino,
        status.st_size,
        status.st_mtime_ns,
        status.st_ctime_ns,
    )


def _snapshot_path(root: Path) -> Path | None:
    """Where this clone keeps the snapshot: in the git directory of the checkout holding the
    campaign (a linked worktree's own), or nowhere outside a git checkout."""
    base = root.resolve()
    for top in (base, *base.parents):
        dotgit = top / ".git"
        if dotgit.is_dir():
            return dotgit / SNAPSHOT_FILE
        if dotgit.exists():
            return _linked(top, dotgit)
    return None


def _linked(top: Path, dotgit: Path) -> Path | None:
    # A worktree's or submodule's .git is a file: "gitdir: <path>".
    try:
        text = dotgit.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith("gitdir: "):
        return None
    gitdir = Path(text[len("gitdir: ") :].strip())
    gitdir = gitdir if gitdir.is_absolute() else top / gitdir
    return gitdir / SNAPSHOT_FILE if gitdir.is_dir() else None


# --------------------------------------------------------------------------- the snapshot file
#
# Text: a header line (format, the ledger bytes covered and their SHA-256, lines read, skipped
# lines, the body's size and CRC-32), then the body: one line listing every job (its ledger id,
# first line, first time, its LIGHT fields, and where its whole record is), one line of the
# per-target index (campaignops.model.ledger_index), then each job's whole record, one JSON
# object a line, read on first use. The body check catches a snapshot damaged after it was
# written.


CHUNK = 1 << 22  # a multiple of every page size


def _mapped(path: Path) -> mmap.mmap:
    """The snapshot mapped read-only: a job's record is read from it when first used, and
    pages nobody reads take no memory (a replaced snapshot is a new file: this one stays)."""
    with path.open("rb") as file:
        return mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)


def _crc(data: mmap.mmap, start: int) -> int:
    """CRC-32 of ``data`` from ``start``, read a chunk at a time and each chunk then given back
    (MADV_DONTNEED): the check reads every byte, and need not keep them all in memory."""
    crc = 0
    with memoryview(data) as view:
        for chunk in range(0, len(data), CHUNK):
            end = min(chunk + CHUNK, len(data))
            if end > start:
                crc = zlib.crc32(view[max(chunk, start) : end], crc)
            if hasattr(mmap, "MADV_DONTNEED"):
                data.madvise(mmap.MADV_DONTNEED, chunk, end - chunk)
    return crc


def _load(path: Path, covered: bytes) -> tuple[Folding, int] | None:
    """The snapshot's fold and the ledger bytes it covers, when those bytes are still the
    ledger's first ones; None when there is none, or it is stale or damaged."""
    try:
        data = _mapped(path)
        # Offsets into the one mapping, never slices of it: the body is most of the file.
        at = data.find(b"\n") + 1
        head = json.loads(data[:at])
        size = int(head["bytes"])
        if head.get("format") != FORMAT or size > len(covered):
            return None
        if int(head["body_bytes"]) != len(data) - at or head["body_crc"] != _crc(data, at):
            return None
        if hashlib.sha256(memoryview(covered)[:size]).hexdigest() != head["sha256"]:
            return None
        folding = Folding(lines=int(head["lines"]))
        folding.skipped = [(int(n), str(r)) for n, r in head["skipped"]]
        rows_end = data.find(b"\n", at)
        index_end = data.find(b"\n", rows_end + 1)
        if rows_end < 0 or index_end < 0:
            return None
        base = index_end + 1
        rows = json.loads(data[at:rows_end])
        for lid, line, first_time, light, start, end in rows:
            folding.first[lid] = (int(line), first_time)
            folding.kept[lid] = Packed(light, data, (base + start, base + end))
        folding.order = [row[0] for row in rows]  # written in submission order
        folding.index = Index.loads(data[rows_end + 1 : index_end])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # JSON's, UTF-8's too
        return None
    return folding, size


def _save(path: Path, covered: bytes, folding: Folding) -> None:
    """Write the snapshot of ``folding`` (whose ``ledger`` was made: its index is current).
    Its body is made a piece at a time, twice (its size and CRC go first, in the header),
    never whole: a year's snapshot is tens of MiB, and its pieces joined, and that copy
    again behind the header, were most of a cold read's peak memory."""
    index = folding.index.dumps() if folding.index is not None else b"null"
    size = crc = 0
    for piece in _body(folding, index):
        size, crc = size + len(piece), zlib.crc32(piece, crc)
    head = {
        "format": FORMAT,
        "bytes": len(covered),
        "sha256": hashlib.sha256(covered).hexdigest(),
        "lines": folding.lines,
        "skipped": folding.skipped,
        "body_bytes": size,
        "body_crc": crc,
    }
    first = json.dumps(head).encode() + b"\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_atomic(path, itertools.chain([first], _body(folding, index)))
    except (OSError, CampaignError):
        pass  # a cache: the next command parses the lines again


def _body(folding: Folding, index: bytes) -> Iterator[bytes]:
    """The snapshot's body: the line of job rows (each job's ledger id, first line and time,
    LIGHT fields, and where its whole record is), the index's line, each record's line."""
    order = folding.order or list(folding.first)
    packed = {lid: _packed(folding.kept[lid]) for lid in order}
    offset = 0
    yield b"["
    for n, lid in enumerate(order):
        line, first_time = folding.first[lid]
        fields = packed[lid]
        end = offset + fields.size()
        yield (b"," if n else b"") + dump([lid, line, first_time, fields.light(), offset, end])
        offset = end + 1
    yield b"]\n"
    yield index + b"\n"
    for lid in order:
        yield packed[lid].raw() + b"\n"


def _packed(fields: Mapping[str, Any]) -> Packed:
    return fields if isinstance(fields, Packed) else Packed.of(fields)
