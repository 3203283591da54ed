"""``campaign lesson add``: one lesson appended to the campaign's LESSONS.md, safely.

The fields, the job and the catalog entry are checked before anything is written (the format and
its rules are campaignops.model.lessons'). The file is changed under an exclusive ``flock`` of the file
itself, re-read under the lock, and replaced atomically (temporary file, fsync, rename), so two
``lesson add`` at once both land, in some order, and a crash leaves the old file or the new.
A waiter whose lock is on the replaced file notices (the name now points at another inode) and
takes the lock again on the new one.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

from campaignops.core import atomic
from campaignops.core.errors import InputError, UsageError
from campaignops.core.files import FileReader
from campaignops.learn import lesson_job as lessonjob
from campaignops.model import catalog_source as catalogs
from campaignops.model import ledger, lessons

# Each retry means another writer finished; the bound only stops an endless stream of them.
_LOCK_ATTEMPTS = 1000


@dataclass(frozen=True)
class Added:
    """What was appended: the file, the line number, the line, and what had to be created."""

    path: Path
    line: int
    text: str
    created_file: bool
    created_section: bool
    job: lessonjob.JobRef | None


def catalog_ids(root: Path) -> tuple[str, ...]:
    """Every entry id of the campaign's failure catalog(s) (the policy's ``failures`` paths).
    A catalog that cannot be read or parsed is an InputError: an id cannot be judged without."""
    reader = FileReader(root)
    ids: list[str] = []
    for rel in catalogs.files(reader):
        got = reader.read_yaml(rel)
        if got is None:
            raise reader.problems[rel]
        data, syntax = got
        if syntax is not None:
            raise InputError(
                path=rel,
                message=f"not valid YAML at line {syntax.line}: {syntax.problem}",
                hint="fix the catalog (campaign check --select POLICY), then add the lesson",
            )
        ids.extend(lessons.catalog_ids(data))
    return tuple(dict.fromkeys(ids))


def _entry(chosen: str, ref: lessonjob.JobRef | None, explicit: bool, root: Path) -> None:
    if chosen == lessons.NEW:
        return
    known = catalog_ids(root)
    if explicit or ref is None:
        lessons.known_entry(chosen, known)
    elif chosen not in known:
        raise UsageError(
            message=f"job {ref.label} was diagnosed as {chosen!r}, which failures.yaml no "
            "longer has",
            hint="pass --entry with the id it has now, or --entry new",
        )


def prepare(
    *,
    root: Path,
    failed: str,
    fixed: str,
    day: dt.date,
    job: str | None = None,
    entry: str | None = None,
) -> tuple[lessons.Lesson, lessonjob.JobRef | None]:
    """The lesson to append, every field checked (UsageError, exit 2, otherwise). ``entry``
    wins over the job's diagnosis; with neither, the entry is ``new``."""
    ref = lessonjob.find_job(ledger.read(root), job) if job is not None else None
    if entry is not None:
        chosen = entry.strip()
    else:
        chosen = lessonjob.entry_of(ref) if ref is not None else lessons.NEW
    lesson = lessons.make(
        day=day, failed=failed, fixed=fixed, entry=chosen, job=ref.label if ref else None
    )
    _entry(lesson.entry, ref, entry is not None, root)
    return lesson, ref


def _decode(data: bytes) -> tuple[str, str]:
    """``(leading BOM or "", text)``; what is not UTF-8 text is refused."""
    if b"\x00" in data:
        raise InputError(path=lessons.FILE, message="binary file (contains NUL bytes)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            path=lessons.FILE,
            message=f"invalid UTF-8 at byte offset {exc.start}; not appended",
            hint="re-save the file as UTF-8",
        ) from None
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    return bom, text[len(bom) :]


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def write(root: Path, line: str) -> lessons.Plan:
    """Insert ``line`` into ``root``/LESSONS.md (made when missing or empty) under a lock."""
    path = root / lessons.FILE
    boundary = root.resolve()
    target = path.resolve()
    if boundary not in target.parents:
        raise InputError(
            path=lessons.FILE,
            message=f"resolves to {target}, outside the campaign; not written",
            hint="keep LESSONS.md inside the repository",
        )
    for _ in range(_LOCK_ATTEMPTS):
        try:
            fd = os.open(target, os.O_RDWR | os.O_CREAT, atomic.NEW_FILE_MODE)
        except OSError as exc:
            raise InputError(
                path=lessons.FILE, message=f"cannot open: {exc.strerror}", hint="check permissions"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                current = target.stat().st_ino
            except FileNotFoundError:
                continue  # removed while we waited: make it again
            if os.fstat(fd).st_ino != current:
                continue  # replaced by the writer we waited for: lock the new file
            bom, text = _decode(_read_all(fd))
            plan = lessons.plan_append(text or None, line)
            atomic.write_atomic(path, (bom + plan.text).encode("utf-8"), root=root)
            return plan
        finally:
            os.close(fd)  # releases the lock, after the rename
    raise InputError(
        path=lessons.FILE,
        message=f"replaced by other writers {_LOCK_ATTEMPTS} times while waiting; not appended",
        hint="run the command again",
    )


def add(
    *,
    root: Path,
    failed: str,
    fixed: str,
    day: dt.date,
    job: str | None = None,
    entry: str | None = None,
) -> Added:
    """Check the lesson (``prepare``), then append it to LESSONS.md (``write``)."""
    lesson, ref = prepare(root=root, failed=failed, fixed=fixed, day=day, job=job, entry=entry)
    line = lesson.render()
    plan = write(root, line)
    return Added(
        path=root / lessons.FILE,
        line=plan.line,
        text=line,
        created_file=plan.created_file,
        created_section=plan.created_section,
        job=ref,
    )
