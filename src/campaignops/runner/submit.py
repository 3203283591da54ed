"""`campaign submit`: gates, then one scheduler call per planned job, recorded in the ledger.

Order of writes for each job: the rendered script, an intent record, the scheduler call, a
result record (job id or error). A crash between intent and result is reconciled by
`campaign status` through the job's name and comment.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaignops import layout, ledger, lockfile, queuefile, views, yamldoc
from campaignops import policy as policy_mod
from campaignops.checks import manifests as man_checks
from campaignops.checks import queues as queue_checks
from campaignops.errors import CampaignError, InputError, UsageError
from campaignops.files import FileReader
from campaignops.runner import backends, fingerprint, gates, gitfacts, named, plan, scheduler
from campaignops.runner import ledger_writer as lw

JOBS_DIR = ".campaign/jobs"
WRAPPER_REF = re.compile(r"(?<![\w./-])(scripts/[\w./-]+\.v[1-9][0-9]*\.[A-Za-z0-9]+)")

Call = Callable[[Sequence[str]], scheduler.Call]


@dataclass(frozen=True)
class Planned:
    job: plan.PlannedJob
    verdicts: tuple[gates.Verdict, ...]
    script: str


@dataclass(frozen=True)
class Submitted:
    ledger_id: str
    job_id: str
    name: str
    targets: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    backend: str
    planned: tuple[Planned, ...]
    submitted: tuple[Submitted, ...] = ()
    commit: str | None = None


def _yaml(root: Path, rel: str) -> Any:
    path = root / rel
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path=rel, message=f"cannot read: {exc}", hint="check the path") from None
    return text, yamldoc.load(text, path=rel)


def wrappers_in(tasks: Sequence[str], root: Path) -> tuple[str, ...]:
    """The versioned wrappers the tasks call by path (they are locked at first use)."""
    found = {m.group(1) for t in tasks for m in WRAPPER_REF.finditer(t)}
    return tuple(sorted(p for p in found if (root / p).is_file()))


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


def submit(
    *,
    root: Path,
    manifest: str,
    stage: str,
    targets: Sequence[str] = (),
    backend: str | None = None,
    after: str | None = None,
    dry_run: bool = False,
    override: str | None = None,
    commit: bool = False,
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc),
    call: Call = scheduler.call,
) -> Outcome:
    _, policy_doc = _yaml(root, layout.POLICY_FILE)
    policy = policy_mod.from_data(policy_doc)
    if layout.QUEUE in layout.kinds_of(manifest, policy.globs):
        raise UsageError(
            message=f"{manifest} is a queue file; campaign submit takes a manifest",
            hint=f"write a manifest with 'queue: {manifest}' and 'default_cmd: bash "
            "scripts/run_one.v1.sh' (manifests/example-queue.yaml is one), commit, submit that",
        )
    text, doc = _yaml(root, manifest)
    problems = list(
        man_checks.check_document(
            manifest, doc, yamldoc.Locator(text), authorized=set(policy.backends)
        )
    )
    if problems:
        first = problems[0]
        raise UsageError(
            message=f"{manifest}:{first.line}:{first.col}: {first.id} {first.message}",
            hint="fix the manifest first: campaign check " + manifest,
        )
    name = (
        backend
        or doc.get("backend")
        or (policy.smoke_backend if stage == "smoke" else None)
        or (policy.backends[0] if policy.backends else "local")
    )
    page_rel = backends.page_path(name)
    page = backends.page(root, name)
    # An unlisted backend or a missing page is the authorized gate's refusal, even under
    # --dry-run: with no backend there is no script to show.
    gates.require((gates.authorized(name, policy=policy, page=page),))
    be = backends.for_page(name, page, root=root)
    cells, configs = (
        queue_cells(root, doc["queue"]) if isinstance(doc.get("queue"), str) else ((), {})
    )
    jobs = plan.plan(
        doc=doc,
        manifest_path=manifest,
        stage=stage,
        policy=policy,
        workdir=str(root),
        only=targets,
        cells=cells,
    )
    if after:
        chained = dataclasses.replace(jobs[0].spec, after=(after,))
        jobs = [dataclasses.replace(jobs[0], spec=chained), *jobs[1:]]
    fps = fingerprint.fingerprints(doc, cells, configs=configs)
    tasks = [t for j in jobs for t in j.spec.tasks]
    wrappers = wrappers_in(tasks, root)
    queue_files = tuple(
        r for r in layout.walk(root) if layout.QUEUE in layout.kinds_of(r, policy.globs)
    )
    if isinstance(doc.get("queue"), str) and doc["queue"] not in queue_files:
        queue_files = (*queue_files, doc["queue"])
    paths = (
        manifest,
        layout.POLICY_FILE,
        page_rel,
        *wrappers,
        *queue_files,
        *configs,
        *named.files_named(tasks, root),
    )
    repo = gitfacts.repo_facts(root, paths)
    history = ledger.read(root)
    names = [j.spec.name for j in jobs]
    # One scheduler query for the sibling gate, whatever the number of targets.
    active = be.parse_siblings(call(be.sibling_argv(names)).stdout, names)
    planned: list[Planned] = []
    for job in jobs:
        request = gates.Request(
            campaign=policy.name,
            manifest=manifest,
            stage=stage,
            backend=name,
            targets=job.targets,
            paths=paths,
            partition=job.spec.resources.partition,
            queue=job.spec.resources.queue,
            override=override,
            scheduler=be.module,
        )
        verdicts = gates.evaluate(
            request,
            repo=repo,
            policy=policy,
            require_smoke=policy.require_smoke,
            page=page,
            fingerprints=fps,
            jobs=history.jobs,
            active=active,
        )
        preview = dataclasses.replace(job.spec, comment=f"<ledger-id> {repo.head or '<commit>'}")
        planned.append(Planned(job=job, verdicts=verdicts, script=be.render(preview)))
    if dry_run:
        return Outcome(backend=name, planned=tuple(planned))
    for p in planned:
        gates.require(p.verdicts)
    assert repo.head is not None  # the committed gate passed
    done: list[Submitted] = []
    ids_by_group: dict[str, str] = {}
    for p in planned:
        job = p.job
        lid = lw.new_ledger_id(now())
        after_ids = job.spec.after + (
            (ids_by_group[job.after_group],) if job.after_group in ids_by_group else ()
        )
        spec = dataclasses.replace(job.spec, comment=f"{lid} {repo.head}", after=after_ids)
        script = root / JOBS_DIR / f"{lid}.sh"
        script.parent.mkdir(parents=True, exist_ok=True)
        (root / spec.log_dir).mkdir(parents=True, exist_ok=True)
        script.write_text(be.render(spec), encoding="utf-8")
        breaker = next((v for v in p.verdicts if v.gate == "breaker"), None)
        lw.append(
            root,
            [
                lw.intent_record(
                    ledger_id=lid,
                    time=now(),
                    campaign=policy.name,
                    backend=name,
                    stage=stage,
                    targets=job.targets,
                    fingerprint=fingerprint.submission_fingerprint(fps, job.targets),
                    commit=repo.head,
                    name=spec.name,
                    manifest=manifest,
                    wrappers={w: lockfile.digest((root / w).read_bytes()) for w in wrappers},
                    array=(
                        f"0-{len(spec.tasks) - 1}"
                        + (f"%{spec.max_parallel}" if spec.max_parallel else "")
                    )
                    if spec.is_array
                    else None,
                    after=after_ids,
                    override=breaker.override if breaker else None,
                )
            ],
        )
        try:
            out = call(be.submit_argv(str(script)))
            job_id = be.parse_job_id(out.stdout)
        except CampaignError as exc:
            lw.append(
                root, [lw.result_record(ledger_id=lid, time=now(), job_id=None, error=exc.message)]
            )
            raise
        lw.append(
            root,
            [
                lw.result_record(
                    ledger_id=lid, time=now(), job_id=job_id, submitted=now(), state="PENDING"
                )
            ],
        )
        ids_by_group[job.group] = job_id
        done.append(Submitted(ledger_id=lid, job_id=job_id, name=spec.name, targets=job.targets))
    if wrappers:
        lockfile.lock(root=root, paths=list(wrappers), cwd=root, today=now().date())
    views.render_all(root=root, write=True)
    sha = _commit(root, done) if commit else None
    return Outcome(backend=name, planned=tuple(planned), submitted=tuple(done), commit=sha)


def _commit(root: Path, done: Sequence[Submitted]) -> str:
    import git

    repo = git.Repo(root, search_parent_directories=True)
    # The scripts as submitted are committed too: the job's exact text stays with its id.
    scripts = [f"{JOBS_DIR}/{s.ledger_id}.sh" for s in done]
    kept = (layout.LEDGER_FILE, layout.LOCK_FILE, "STATUS.md", *scripts)
    files = [p for p in kept if (root / p).exists()]
    repo.index.add([str(root / p) for p in files])
    jobs = ", ".join(f"{s.name} ({s.job_id})" for s in done)
    return str(repo.index.commit(f"Submit {jobs}").hexsha)
