"""What `campaign pull` verifies: each expected cell's outputs, pulled and checked, and loaded.

The contract, for the command that pulls (it owns the transport, this module owns the verdict):

1. Before the pull, the box says which outputs it holds, each file's size and sha256, paths
   relative to the deploy directory (the box executor's ``outputs`` command, computed there:
   campaignops.backends.ssh.pull reads it into :class:`FileFact` values).
2. After the pull, :func:`local_facts` hashes the pulled files (same relative paths, under the
   local campaign root).
3. :func:`reconcile` compares the expected cells (names and output_check paths) with both and
   says, per output and per cell: ``ok``, ``missing`` (the box has no such file), ``not_pulled``
   (the box has it, the pull did not bring it: pull again), ``empty``, ``mismatch`` (size or
   sha256 differs from the box's manifest: a torn or stale copy), ``unverified`` (pulled, but
   the box's manifest does not list it, so nothing vouches for it); per cell also
   ``duplicate`` (two expected cells share a name: their outputs collide) and ``no_output``
   (nothing to check). Only ``ok`` is verified; ``Roster.failed`` names the rest, for
   ``--failed``. Files the box listed that no expected cell claims are ``Roster.extras``.
4. :func:`verify` runs a verify command once per verified cell (``argv`` by shlex; an argument
   that is exactly ``{out}`` becomes the cell's output paths, else they are appended), from the
   campaign root, stdin closed. Exit 0 passes: "a load that succeeds is evidence; a log line
   is not" (the experiment-queue seed). A cell that is not ``ok`` is skipped, not loaded.

Everything but :func:`local_facts` and :func:`verify` is pure.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import signal
import subprocess
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from campaignops.backends.ssh import outputs as outputpaths
from campaignops.core.errors import InputError, UsageError

OutputStatus = Literal["ok", "missing", "not_pulled", "empty", "mismatch", "unverified"]
CellStatus = Literal[
    "ok", "missing", "not_pulled", "empty", "mismatch", "unverified", "duplicate", "no_output"
]
# A cell is as bad as its worst output; the order says which is worst (first).
SEVERITY: tuple[OutputStatus, ...] = (
    "missing",
    "not_pulled",
    "mismatch",
    "empty",
    "unverified",
    "ok",
)
PLACEHOLDER = "{out}"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class FileFact:
    size: int
    sha256: str  # lower-case hex


@dataclass(frozen=True)
class Expected:
    """A cell the campaign expects back: its name and its output_check paths, and the stage it
    ran at (each stage writes under its own root, so one name at two stages is no collision)."""

    name: str
    outputs: tuple[str, ...]
    stage: str = ""


@dataclass(frozen=True)
class OutputCheck:
    path: str
    status: OutputStatus
    detail: str


@dataclass(frozen=True)
class CellReport:
    name: str
    status: CellStatus
    outputs: tuple[OutputCheck, ...]
    detail: str

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class Roster:
    cells: tuple[CellReport, ...]
    extras: tuple[str, ...]  # files the box listed that no expected cell claims

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.cells)

    @property
    def failed(self) -> tuple[str, ...]:
        """The names of the cells that are not verified, once each, in roster order."""
        return tuple(dict.fromkeys(c.name for c in self.cells if not c.ok))


def _check(path: str, pulled: FileFact | None, remote: FileFact | None) -> OutputCheck:
    if pulled is None:
        if remote is None:
            return OutputCheck(path, "missing", "not on the box: the cell did not write it")
        return OutputCheck(path, "not_pulled", "on the box, not pulled: run the pull again")
    if remote is None:
        return OutputCheck(path, "unverified", "pulled, but the box's manifest does not list it")
    if pulled.size != remote.size:
        return OutputCheck(
            path, "mismatch", f"{pulled.size} bytes pulled, {remote.size} on the box"
        )
    if pulled.sha256.lower() != remote.sha256.lower():
        return OutputCheck(path, "mismatch", "sha256 differs from the box's")
    if pulled.size == 0:
        return OutputCheck(path, "empty", "0 bytes, on the box too")
    return OutputCheck(path, "ok", f"{pulled.size} bytes, sha256 matches the box's")


def reconcile(
    expected: Sequence[Expected],
    pulled: Mapping[str, FileFact],
    remote: Mapping[str, FileFact],
) -> Roster:
    """Each expected cell's verdict (in the order given) and the box's unclaimed files."""
    counts = Counter((cell.stage, cell.name) for cell in expected)
    reports = []
    for cell in expected:
        checks = tuple(_check(p, pulled.get(p), remote.get(p)) for p in cell.outputs)
        if counts[cell.stage, cell.name] > 1:
            status: CellStatus = "duplicate"
            at = f" at {cell.stage}" if cell.stage else ""
            detail = f"{counts[cell.stage, cell.name]} expected cells{at} are named {cell.name!r}"
        elif not checks:
            status, detail = "no_output", "no output_check to verify"
        else:
            status = min((c.status for c in checks), key=SEVERITY.index)
            bad = [c for c in checks if c.status != "ok"]
            detail = (
                f"{len(checks)} output(s) verified"
                if not bad
                else "; ".join(f"{c.path}: {c.detail}" for c in bad)
            )
        reports.append(CellReport(cell.name, status, checks, detail))
    claimed = {p for cell in expected for p in cell.outputs}
    extras = tuple(sorted(p for p in remote if p not in claimed))
    return Roster(tuple(reports), extras)


def file_fact(path: Path) -> FileFact:
    """Size and sha256 of the regular file ``path``; OSError for a link or anything else (a
    pulled file is never read through a link: campaignops.backends.ssh.outputs)."""
    digest = hashlib.sha256()
    size = 0
    with outputpaths.open_regular(path) as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return FileFact(size, digest.hexdigest())


def local_facts(root: Path, paths: Iterable[str]) -> dict[str, FileFact]:
    """Size and sha256 of each of ``paths`` (relative to ``root``) that is a regular file, not a
    link, below parents that are no links either (anything else is not pulled).
    InputError for a path that is absolute or climbs out with ``..``: outputs live inside."""
    facts = {}
    for rel in paths:
        if rel.startswith("/") or ".." in rel.split("/"):
            raise InputError(
                path=rel,
                message="an output path outside the campaign",
                hint="output_check paths are relative to the campaign root, without '..'",
            )
        target = root / rel
        if outputpaths.parents_problem(root, rel) is None and outputpaths.regular(target):
            with contextlib.suppress(OSError):  # replaced by a link since: not pulled
                facts[rel] = file_fact(target)
    return facts


# -- the verify command -----------------------------------------------------------------------


@dataclass(frozen=True)
class Verified:
    name: str
    status: Literal["passed", "failed", "skipped"]
    argv: tuple[str, ...]
    exit_code: int | None
    detail: str  # why it failed or was skipped; the end of the command's output


def verify_argv(command: str, outputs: Sequence[str]) -> tuple[str, ...]:
    """The argv that verifies one cell: ``{out}`` (a whole argument) becomes the outputs,
    else they are appended. UsageError for a command shlex cannot split, an empty one, or
    ``{out}`` inside a larger argument (which output would it be?)."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise UsageError(
            message=f"--verify {command!r}: {exc}", hint="quote it as a shell would"
        ) from None
    if not words:
        raise UsageError(message="--verify is empty", hint="e.g. --verify 'python3 load.py'")
    for word in words:
        if PLACEHOLDER in word and word != PLACEHOLDER:
            raise UsageError(
                message=f"--verify: {PLACEHOLDER} inside the argument {word!r}",
                hint=f"write {PLACEHOLDER} as an argument of its own: it becomes the cell's "
                "output paths, one argument each",
            )
    if PLACEHOLDER not in words:
        return (*words, *outputs)
    argv: list[str] = []
    for word in words:
        argv.extend(outputs if word == PLACEHOLDER else (word,))
    return tuple(argv)


def _tail(text: str, lines: int = 3) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return " | ".join(kept)


def verify(
    command: str, roster: Roster, *, cwd: Path, timeout: float = 600.0
) -> tuple[Verified, ...]:
    """Run ``command`` once per cell of ``roster``, in order; cells not ``ok`` are skipped."""
    verify_argv(command, ())  # refuse a bad command before running anything
    results = []
    for cell in roster.cells:
        argv = verify_argv(command, [o.path for o in cell.outputs])
        if not cell.ok:
            results.append(
                Verified(cell.name, "skipped", argv, None, f"not pulled and checked: {cell.status}")
            )
            continue
        try:
            code, output = _run(argv, cwd=cwd, timeout=timeout)
        except subprocess.TimeoutExpired:
            detail = f"timed out after {timeout:g} s"
            results.append(Verified(cell.name, "failed", argv, None, detail))
            continue
        except OSError as exc:
            detail = f"cannot run {argv[0]!r}: {exc.strerror}"
            results.append(Verified(cell.name, "failed", argv, None, detail))
            continue
        status: Literal["passed", "failed"] = "passed" if code == 0 else "failed"
        results.append(Verified(cell.name, status, argv, code, _tail(output)))
    return tuple(results)


def _run(argv: Sequence[str], *, cwd: Path, timeout: float) -> tuple[int, str]:
    """Exit code and output (stderr, else stdout). In its own session, so a timeout kills what
    it started too: a child left holding the pipes would keep the read from ever ending."""
    with subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    text = err.decode("utf-8", "backslashreplace").strip() or out.decode(
        "utf-8", "backslashreplace"
    )
    return proc.returncode, text
