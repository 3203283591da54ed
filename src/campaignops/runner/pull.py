"""campaign pull: bring each finished cell's outputs home from the boxes it ran on, then verify.

A cell's outputs are the paths its manifest declares (``output`` / ``output_check``), written
on the box under the job's deploy directory. For each instance, ONE ssh call asks the box's
executor (``outputs JOBDIR``, for every job placed there) for each finished task's files with
their size and SHA-256, computed on the box. Then one ``rsync`` per deploy directory copies
those files to the same relative paths in this checkout, resumably (``--partial-dir``: an
interrupted transfer never leaves a truncated file under the real name, research notes §1).

A cell is *verified* only when every declared output arrived, is non-empty, and has the size
and SHA-256 the box computed; with ``--verify CMD``, also when CMD loads it (exit 0): the seeds'
rule, "a load that succeeds is evidence; a log line is not". Every other verdict is named per
cell, and recorded in the ledger (``tasks.<i>.pulled``), which is what ``campaign release``
and ``campaign submit --failed`` read.
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from campaignops import ledger, roster
from campaignops.errors import CampaignError
from campaignops.runner import boxanswers, ledger_writer, sshlink
from campaignops.runner.sshinstances import Instance

VERIFIED = "verified"
# Every other verdict a cell can get; release and --failed treat them all as "not home yet".
# campaignops.roster judges the files (missing, not-pulled, empty, mismatch, unverified,
# duplicate, no-output: its words, with dashes); these are the pull's own.
VERIFY_FAILED = "verify-failed"  # --verify CMD did not exit 0
NO_OUTPUT = "no-output"  # the manifest declares no output: nothing to verify
NOT_FINISHED = "not-finished"  # the task has not ended on the box (nothing to pull)
UNREACHABLE = "unreachable"  # the instance did not answer
JOB_MARK = "@@campaign-job "
VERIFY_TIMEOUT_S = 600.0
PARTIAL_DIR = ".rsync-partial"


class PullError(CampaignError):
    """A pull that cannot start or whose transfer failed."""

    exit_code = 2


@dataclass(frozen=True)
class Placed:
    """One job's share on one instance, as its ledger record's ``placement`` says."""

    ledger_id: str
    job_id: str
    instance: Instance
    executor: str
    job_dir: str
    deploy: str
    indices: tuple[int, ...]


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
                    )
                )
            except (KeyError, TypeError, ValueError):
                continue
    return found


def outputs_command(shares: Sequence[Placed]) -> str:
    """One remote shell line asking the executor for every job's finished outputs."""
    parts = [
        f"printf '%s\\n' {shlex.quote(JOB_MARK + p.job_id)}; "
        f"python3 {shlex.quote(p.executor)} outputs {shlex.quote(p.job_dir)}"
        for p in shares
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


def safe_relative(path: object) -> str | None:
    """A box-reported path this checkout may write: relative, inside, no ``..``."""
    if not isinstance(path, str) or not path or "\x00" in path or "\n" in path:
        return None
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or pure.parts[:1] == (".git",):
        return None
    return str(pure)


def rsync_argv(box: Instance, deploy: str, files_from: str, dest: Path) -> list[str]:
    """rsync of the listed files from the deploy directory into ``dest``, through the same ssh
    options every other call uses (pinned host key, batch mode, keepalives)."""
    ssh = sshlink.ssh_argv(box, "", control=sshlink.control_dir())[:-3]  # drop "--" host cmd
    return [
        "rsync",
        "-a",
        f"--partial-dir={PARTIAL_DIR}",
        f"--files-from={files_from}",
        "-e",
        shlex.join(ssh),
        "--",
        f"{box.host}:{deploy}/",
        f"{dest}/",
    ]


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
) -> list[Cell]:
    """Copy and verify every finished cell of ``shares`` (``targets``: ledger id → the job's
    targets, by index). One ssh call per instance, one rsync per instance and deploy dir; the
    verdicts are campaignops.roster's, over every cell of the pull at once (so two cells of one
    name are both ``duplicate``), then ``verify`` (a command) on those that passed."""
    by_box: dict[str, list[Placed]] = {}
    for share in shares:
        by_box.setdefault(share.instance.name, []).append(share)

    def name(share: Placed, index: int) -> str:
        got = targets.get(share.ledger_id, ())
        return got[index] if index < len(got) else f"#{index}"

    def cell(
        share: Placed, index: int, said: str, detail: str = "", files: Sequence[str] = ()
    ) -> Cell:
        return Cell(
            share.ledger_id,
            share.job_id,
            index,
            name(share, index),
            share.instance.name,
            said,
            detail,
            tuple(files),
        )

    done: list[Cell] = []  # cells with a verdict before any file is judged
    judged: list[tuple[Placed, int, roster.Expected]] = []
    remote: dict[str, roster.FileFact] = {}
    for group in by_box.values():
        box = group[0].instance
        try:
            answer = call(box, outputs_command(group))
        except sshlink.Unreachable as exc:
            done += [cell(s, i, UNREACHABLE, exc.message) for s in group for i in s.indices]
            continue
        listed = parse_outputs(answer.stdout)
        wanted: dict[str, set[str]] = {}
        for s in group:
            tasks = listed.get(s.job_id)
            for i in s.indices:
                entries = None if tasks is None else tasks.get(i)
                if entries is None:
                    done.append(cell(s, i, NOT_FINISHED, "the box has no finished task for it"))
                    continue
                unsafe = [e.get("path") for e in entries if safe_relative(e.get("path")) is None]
                if unsafe:  # never written here
                    done.append(
                        cell(s, i, "missing", f"the box named an unsafe path {unsafe[0]!r}")
                    )
                    continue
                paths = []
                for e in entries:
                    rel = str(safe_relative(e.get("path")))
                    paths.append(rel)
                    size, sha = e.get("size"), e.get("sha256")
                    if isinstance(size, int) and isinstance(sha, str):
                        remote[rel] = roster.FileFact(size, sha)
                        wanted.setdefault(s.deploy, set()).add(rel)
                judged.append((s, i, roster.Expected(name(s, i), tuple(paths))))
        for deploy, files in sorted(wanted.items()):
            _fetch(box, deploy, sorted(files), root, run)
    expected = [e for _, _, e in judged]
    pulled = roster.local_facts(root, {p for e in expected for p in e.outputs})
    found = roster.reconcile(expected, pulled, remote)
    loaded = (
        {id(c): v for c, v in zip(found.cells, roster.verify(verify, found, cwd=root), strict=True)}
        if verify
        else {}
    )
    for (s, i, want), report in zip(judged, found.cells, strict=True):
        checked = loaded.get(id(report))
        if checked is not None and checked.status == "failed":
            done.append(cell(s, i, VERIFY_FAILED, checked.detail, want.outputs))
        else:
            detail = "" if report.ok else report.detail
            done.append(cell(s, i, verdict(report.status), detail, want.outputs))
    return done


def _fetch(box: Instance, deploy: str, files: Sequence[str], root: Path, run: Run) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".files", delete=False) as listing:
        listing.write("".join(f + "\n" for f in files))
    try:
        done = run(
            rsync_argv(box, deploy, listing.name, root),
            capture_output=True,
            text=True,
            timeout=sshlink.CALL_TIMEOUT_S * 12,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PullError(
            message=f"instance {box.name}: rsync did not finish: {exc}",
            hint="run campaign pull again: rsync resumes from .rsync-partial",
        ) from None
    finally:
        Path(listing.name).unlink(missing_ok=True)
    # Exit 23/24 (some files vanished or could not be read) still copied the rest: the verdicts
    # name what is missing. Anything else is a failed transfer.
    if done.returncode not in (0, 23, 24):
        raise PullError(
            message=f"instance {box.name}: rsync exit {done.returncode}: "
            f"{done.stderr.strip()[-300:]}",
            hint="run campaign pull again (it resumes); check the box's disk and rsync",
        )


def records(cells: Sequence[Cell], *, time: dt.datetime) -> list[dict[str, Any]]:
    """One ``pull`` record per job with each looked-at cell's verdict (a cell not finished or
    on an unreachable box is not recorded: nothing was learnt about it)."""
    by_job: dict[str, dict[int, str]] = {}
    for c in cells:
        if c.verdict not in (NOT_FINISHED, UNREACHABLE):
            by_job.setdefault(c.ledger_id, {})[c.index] = c.verdict
    return [
        ledger_writer.pull_record(ledger_id=lid, time=time, verdicts=verdicts)
        for lid, verdicts in sorted(by_job.items())
    ]
