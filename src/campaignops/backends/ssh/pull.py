"""campaign pull: bring each finished cell's outputs home from the boxes it ran on, then verify.

A cell's outputs are the paths its manifest declares (``output`` / ``output_check``), recorded
per task in the job's placement at submit (``placement[].outputs``, relative to the deploy
directory, under the stage's ``${CAMPAIGN_OUT}``). Each share is reached as the backend page
says (campaignops.backends.ssh.placement: a ledger line only names its instance). For each instance,
ONE ssh call asks the box's executor (``outputs JOBDIR``, for every job placed there) for each
finished task's files with their size and SHA-256, computed on the box. The box's list only
vouches for paths the record declares (a declared file, or a file under a declared directory);
anything else it lists is ignored and reported, never copied. Then one ``rsync`` per deploy
directory copies exactly those files, regular files only (campaignops.backends.ssh.pullcopy).

A cell is *verified* only when every declared output arrived, is non-empty, and has the size
and SHA-256 the box computed; with ``--verify CMD``, also when CMD loads it (exit 0): the seeds'
rule, "a load that succeeds is evidence; a log line is not". Every other verdict is named per
cell, and recorded in the ledger (``tasks.<i>.pulled``), which is what ``campaign release``
and ``campaign submit --failed`` read. A placement the page does not vouch for is ``refused``:
nothing of it is copied and nothing recorded; a record from before outputs were recorded is
``unrecorded``: nothing is copied, and the verdict is recorded (``--failed`` resubmits it).
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaignops.backends.ssh import answers as boxanswers
from campaignops.backends.ssh import boxlogs, pullcopy, roster
from campaignops.backends.ssh import link as sshlink
from campaignops.backends.ssh import outputs as outputpaths
from campaignops.backends.ssh import placement as sshplaced
from campaignops.backends.ssh.instances import Instance
from campaignops.core.errors import InputError
from campaignops.core.layout import stage_root
from campaignops.core.units import show_size
from campaignops.model import ledger, ledger_writer

VERIFIED = "verified"
# Every other verdict a cell can get; release and --failed treat them all as "not home yet".
# campaignops.backends.ssh.roster judges the files (missing, not-pulled, empty, mismatch, unverified,
# duplicate, no-output: its words, with dashes); these are the pull's own.
VERIFY_FAILED = "verify-failed"  # --verify CMD did not exit 0
NO_OUTPUT = "no-output"  # the manifest declares no output: nothing to verify
NOT_FINISHED = "not-finished"  # the task has not ended on the box (nothing to pull)
UNREACHABLE = "unreachable"  # the instance did not answer
REFUSED = "refused"  # the placement or a declared output is not one this checkout trusts
UNRECORDED = "unrecorded"  # the placement predates recorded outputs: nothing to trust
# Verdicts that learnt nothing about the cell, or come from a record not to be trusted with a
# write: never written to the ledger. (``unrecorded`` is: --failed then resubmits the cell.)
NOT_RECORDED = frozenset({NOT_FINISHED, UNREACHABLE, REFUSED})
JOB_MARK = "@@campaign-job "
VERIFY_TIMEOUT_S = 600.0
NO_RECORD = (
    "its placement was recorded before campaignops kept each task's declared outputs, so "
    "nothing says which of the box's files are this cell's: nothing was copied (copy the "
    "output by hand, or resubmit: campaign submit MANIFEST --stage S --failed)"
)


@dataclass(frozen=True)
class Placed:
    """One job's share on one instance, as its ledger record *names* it: the instance's name,
    the job's stage and the indices are read from it; what connects is the page's instance
    (``reach``, campaignops.backends.ssh.placement), never ``instance``'s other fields."""

    ledger_id: str
    job_id: str
    instance: Instance
    executor: str
    job_dir: str
    deploy: str
    indices: tuple[int, ...]
    backend: str = ""
    stage: str = ""
    entry: Any = None  # the placement entry as recorded
    job: Any = None  # the job's ledger record (its name and every placement: boxlogs)


@dataclass(frozen=True)
class Cell:
    """What the pull found for one cell (an array task of an ssh job)."""

    ledger_id: str
    job_id: str
    index: int
    target: str
    instance: str
    verdict: str
    detail: str = ""
    files: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()  # paths the box listed that the cell does not declare

    @property
    def verified(self) -> bool:
        return self.verdict == VERIFIED


def placements(jobs: Iterable[ledger.Job]) -> list[Placed]:
    """Every (job, instance) share recorded in the ledger's ssh result records."""
    found: list[Placed] = []
    for job in jobs:
        entries = job.record.get("placement")
        if not isinstance(entries, list) or not job.job_id:
            continue
        for entry in entries:
            try:
                found.append(
                    Placed(
                        ledger_id=job.ledger_id,
                        job_id=job.job_id,
                        instance=Instance.from_record(entry["instance"]),
                        executor=str(entry["executor"]),
                        job_dir=str(entry["job_dir"]),
                        deploy=str(entry["dir"]),
                        indices=tuple(int(i) for i in entry["indices"]),
                        backend=job.backend or "",
                        stage=job.stage or "",
                        entry=entry,
                        job=job.record,
                    )
                )
            except (KeyError, TypeError, ValueError, AttributeError):
                continue
    return found


def reach(
    root: Path, shares: Sequence[Placed]
) -> tuple[list[tuple[Placed, sshplaced.Reach]], dict[int, sshplaced.Refused]]:
    """Each share as the page lets it be reached, and the refused ones (by position)."""
    pages: dict[str, dict[str, Instance] | InputError] = {}
    lines = sshplaced.placement_lines(root)
    reached: list[tuple[Placed, sshplaced.Reach]] = []
    refused: dict[int, sshplaced.Refused] = {}
    for n, share in enumerate(shares):
        where = sshplaced.where(share.ledger_id, lines)
        if share.backend not in pages:
            try:
                pages[share.backend] = sshplaced.page_instances(root, share.backend)
            except InputError as exc:
                pages[share.backend] = exc
        page = pages[share.backend]
        try:
            if isinstance(page, InputError):
                raise sshplaced.refused_page(where, share.job_id, share.backend, page)
            reached.append(
                (
                    share,
                    sshplaced.resolve(
                        share.entry,
                        page,
                        job_id=share.job_id,
                        backend=share.backend,
                        where=where,
                    ),
                )
            )
        except sshplaced.Refused as exc:
            refused[n] = exc
    return reached, refused


def outputs_command(shares: Sequence[tuple[Placed, sshplaced.Reach]]) -> str:
    """One remote shell line asking the executor for every job's finished outputs."""
    parts = [
        f"printf '%s\\n' {shlex.quote(JOB_MARK + p.job_id)}; "
        f"python3 {shlex.quote(r.executor)} outputs {shlex.quote(r.job_dir)}"
        for p, r in shares
    ]
    return "; ".join(parts)


def parse_outputs(stdout: str) -> dict[str, dict[int, list[dict[str, Any]]]]:
    """``outputs_command``'s answer: job id → task index → [{path, size, sha256}]."""
    found: dict[str, dict[int, list[dict[str, Any]]]] = {}
    job: str | None = None
    for line in stdout.splitlines():
        if line.startswith(JOB_MARK):
            job = line[len(JOB_MARK) :].strip()
            continue
        if job is None or not line.strip():
            continue
        try:
            doc = json.loads(line)
        except (ValueError, RecursionError):  # a box's answer: 100,000 "[" is no ValueError
            continue
        if not isinstance(doc, dict) or "error" in doc:
            continue
        tasks: dict[int, list[dict[str, Any]]] = {}
        for key, files in doc.items():
            if (index := boxanswers.index_of(key)) is not None and isinstance(files, list):
                tasks[index] = [f for f in files if isinstance(f, dict)]
        found[job] = tasks
    return found


@dataclass(frozen=True)
class Chosen:
    """One cell's files after the record has judged the box's list."""

    outputs: tuple[str, ...]  # what the cell is judged on: declared files, files under dirs
    facts: Mapping[str, roster.FileFact]  # the box's size and sha256, for those only
    ignored: tuple[str, ...]  # what the box listed that the cell does not declare


def declared_problem(declared: Sequence[str], stage: str) -> str | None:
    """Why the record's declared outputs may not be written here, or None."""
    if stage not in ledger.STAGES:
        return f"the job's stage {stage!r} is not one of {', '.join(ledger.STAGES)}"
    for path in declared:
        problem = outputpaths.problem(path, stage_root(stage))
        if problem is not None:
            return f"the declared output {path!r} {problem}"
    return None


def choose(declared: Sequence[str], listed: Sequence[Mapping[str, Any]], stage: str) -> Chosen:
    """The box's list, judged by the record: a path is this cell's when it is a declared output
    or a file under one (a directory output) and passes campaignops.backends.ssh.outputs; the rest is
    ignored. A declared output the box lists nothing for stays expected (``missing``)."""
    root = stage_root(stage)
    mine: dict[str, roster.FileFact] = {}
    under: dict[str, list[str]] = {d: [] for d in declared}
    ignored: list[str] = []
    for entry in listed:
        path = entry.get("path")
        owner = next(
            (
                d
                for d in declared
                if isinstance(path, str) and (path == d or path.startswith(d + "/"))
            ),
            None,
        )
        if owner is None or not isinstance(path, str) or outputpaths.problem(path, root):
            ignored.append(repr(path) if not isinstance(path, str) else path)
            continue
        if path not in under[owner]:
            under[owner].append(path)
        size, sha = entry.get("size"), entry.get("sha256")
        if isinstance(size, int) and not isinstance(size, bool) and isinstance(sha, str):
            mine[path] = roster.FileFact(size, sha)
    outputs = tuple(p for d in declared for p in (under[d] or [d]))
    return Chosen(outputs, mine, tuple(ignored))


def _chosen(
    share: Placed, where: sshplaced.Reach, index: int, tasks: Mapping[int, Any] | None
) -> Chosen | tuple[str, str]:
    """The cell's files from the box's list, or the verdict it gets without a copy (and why)."""
    entries = None if tasks is None else tasks.get(index)
    if entries is None:
        return NOT_FINISHED, "the box has no finished task for it"
    if where.outputs is None:
        return UNRECORDED, NO_RECORD
    declared = where.outputs.get(index, ())
    problem = declared_problem(declared, share.stage)
    if problem is not None:  # a crafted record: nothing of it is written
        return REFUSED, f"{problem}: nothing was copied"
    return choose(declared, entries, share.stage)


def _noted(detail: str, ignored: Sequence[str]) -> str:
    """``detail`` with what the box listed beyond the cell's outputs (the first five)."""
    if not ignored:
        return detail
    shown = ", ".join(ignored[:5]) + (f" and {len(ignored) - 5} more" if len(ignored) > 5 else "")
    note = f"ignored what the box listed beyond the cell's declared outputs: {shown}"
    return f"{detail}; {note}" if detail else note


def verdict(status: str) -> str:
    """roster's cell status as the ledger writes it: ``ok`` is ``verified``."""
    return VERIFIED if status == "ok" else status.replace("_", "-")


Call = Callable[..., sshlink.Answer]
Run = Callable[..., "subprocess.CompletedProcess[str]"]


def pull(
    root: Path,
    shares: Sequence[Placed],
    targets: Mapping[str, tuple[str, ...]],
    *,
    verify: str | None = None,
    call: Call = sshlink.call,
    run: Run = subprocess.run,
    step: Callable[[str], None] = lambda _: None,
) -> list[Cell]:
    """Copy and verify every finished cell of ``shares`` (``targets``: ledger id → the job's
    targets, by index). One ssh call per instance, one rsync per instance and deploy dir; the
    verdicts are campaignops.backends.ssh.roster's, over every cell of the pull at once (so two cells of one
    name are both ``duplicate``), then ``verify`` (a command) on those that passed. ``step`` is
    told each call and transfer as it starts (the CLI shows it on a terminal)."""

    def name(share: Placed, index: int) -> str:
        got = targets.get(share.ledger_id, ())
        return got[index] if index < len(got) else f"#{index}"

    def cell(
        share: Placed, index: int, said: str, detail: str = "", chosen: Chosen | None = None
    ) -> Cell:
        files, ignored = (chosen.outputs, chosen.ignored) if chosen else ((), ())
        return Cell(
            share.ledger_id, share.job_id, index, name(share, index), share.instance.name,
            said, _noted(detail, ignored), tuple(files), tuple(ignored),
        )  # fmt: skip

    reached, refused = reach(root, shares)
    done: list[Cell] = []  # cells with a verdict before any file is judged
    for n, exc in refused.items():
        why = f"{exc.message} (next: {exc.hint})"
        done += [cell(shares[n], i, REFUSED, why) for i in shares[n].indices]
    by_box: dict[str, list[tuple[Placed, sshplaced.Reach]]] = {}
    for share, where in reached:
        by_box.setdefault(where.instance.name, []).append((share, where))
    judged: list[tuple[Placed, int, roster.Expected, Chosen]] = []
    remote: dict[str, roster.FileFact] = {}
    not_kept: dict[str, str] = {}  # copied, then refused (a link, a FIFO…): why
    for group in by_box.values():
        box = group[0][1].instance
        step(f"{box.name}: asking for the finished outputs")
        try:
            answer = call(box, outputs_command(group))
        except sshlink.Unreachable as exc:
            done += [cell(s, i, UNREACHABLE, exc.message) for s, r in group for i in r.indices]
            continue
        listed = parse_outputs(answer.stdout)
        wanted: dict[str, set[str]] = {}
        logs: list[tuple[str, Any, str, int]] = []  # each judged cell's: boxlogs.fetch
        for s, r in group:
            for i in r.indices:
                chosen = _chosen(s, r, i, listed.get(s.job_id))
                if not isinstance(chosen, Chosen):
                    done.append(cell(s, i, *chosen))
                    continue
                remote.update(chosen.facts)
                wanted.setdefault(r.deploy, set()).update(chosen.facts)
                judged.append((s, i, roster.Expected(name(s, i), chosen.outputs, s.stage), chosen))
                logs.append((s.job_id, s.job or {}, r.deploy, i))
        for deploy, files in sorted(wanted.items()):
            size = sum(remote[f].size for f in files)
            step(f"{box.name}: copying {len(files)} file(s), {_size(size)}, from {deploy}")
            not_kept.update(pullcopy.fetch(box, deploy, sorted(files), root, run))
        boxlogs.fetch(root, box, logs, run, step)
    if judged:
        step(f"verifying {len(judged)} cell(s)" + (f" and running {verify}" if verify else ""))
    return done + _judged(root, judged, remote, not_kept, verify, cell)


def _size(size: int) -> str:
    return f"{size} B" if size < 1024 else show_size(size / 1024)


def _judged(
    root: Path,
    judged: Sequence[tuple[Placed, int, roster.Expected, Chosen]],
    remote: Mapping[str, roster.FileFact],
    not_kept: Mapping[str, str],
    verify: str | None,
    cell: Callable[..., Cell],
) -> list[Cell]:
    """campaignops.backends.ssh.roster's verdicts on the copied files, then the verify command's."""
    expected = [e for _, _, e, _ in judged]
    pulled = roster.local_facts(root, {p for e in expected for p in e.outputs})
    found = roster.reconcile(expected, pulled, remote)
    loaded = (
        {id(c): v for c, v in zip(found.cells, roster.verify(verify, found, cwd=root), strict=True)}
        if verify
        else {}
    )
    out: list[Cell] = []
    for (s, i, _, chosen), report in zip(judged, found.cells, strict=True):
        checked = loaded.get(id(report))
        if checked is not None and checked.status == "failed":
            out.append(cell(s, i, VERIFY_FAILED, checked.detail, chosen))
        else:
            why = [f"{p}: {not_kept[p]}" for p in chosen.outputs if p in not_kept]
            detail = "" if report.ok else "; ".join([report.detail, *why])
            out.append(cell(s, i, verdict(report.status), detail, chosen))
    return out


def records(cells: Sequence[Cell], *, time: dt.datetime) -> list[dict[str, Any]]:
    """One ``pull`` record per job with each looked-at cell's verdict (a cell not finished, on
    an unreachable box, or of a refused record is not recorded: nothing was learnt about it,
    or the record is not one to write for)."""
    by_job: dict[str, dict[int, str]] = {}
    for c in cells:
        if c.verdict not in NOT_RECORDED:
            by_job.setdefault(c.ledger_id, {})[c.index] = c.verdict
    return [
        ledger_writer.pull_record(ledger_id=lid, time=time, verdicts=verdicts)
        for lid, verdicts in sorted(by_job.items())
    ]
