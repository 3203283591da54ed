"""`campaign submit`: a preflight (every gate's verdict and the scripts), then the execution.

``preflight`` is what ``--dry-run`` shows and what a real submission must pass; it asks the
scheduler once (the no_sibling query). ``submit`` runs both under the campaign-wide submit lock,
so two submits of one target cannot both pass no_sibling.

Order of writes for each job: the rendered script, an intent record, the scheduler call, a
result record (job id, error, or an unknown outcome). Once the scheduler accepted a job, what
follows (the wrapper lock, STATUS.md, the commit) can only warn: the job is queued and recorded.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from campaignops.backends import command as scheduler
from campaignops.backends import registry as backends
from campaignops.core.errors import CampaignError
from campaignops.model import ledger
from campaignops.model import ledger_writer as lw
from campaignops.model.jobspec import JobState
from campaignops.runner import (
    asked,
    dispatch,
    elsewhere,
    gates,
    gitfacts,
    inputs,
    judging,
    plan,
    retry_mem,
)
from campaignops.runner.asked import Ask as Ask  # re-exported: cli, status, bench
from campaignops.runner.recording import Warned, after_submission
from campaignops.runner.submitlock import held

JOBS_DIR = dispatch.JOBS_DIR
Submitted = dispatch.Submitted
Retry = dispatch.Retry
Planned = dispatch.Planned
Preflight = dispatch.Preflight
Call = Callable[[Sequence[str]], scheduler.Call]


class BackendUnreachable(CampaignError):
    """This machine cannot reach the backend's scheduler (no command, no controller)."""

    exit_code = 2


@dataclass(frozen=True)
class Outcome:
    backend: str
    planned: tuple[Planned, ...]
    submitted: tuple[Submitted, ...] = ()
    commit: str | None = None
    warnings: tuple[Warned, ...] = ()
    unreachable: str | None = None  # dry run: why no_sibling was not checked
    note: str | None = None  # e.g. --failed with nothing to resubmit


# The queue query names nothing the user chose (no partition, account or limit): a scheduler
# command that refuses it is one that cannot answer here, not a request to fix.
QUERY_REFUSED_HINT = (
    "the {program} here cannot answer for this backend: a client with no reachable controller "
    "or no configuration, or another scheduler's command of that name (two schedulers may "
    "ship one name); run this on the backend's submit host (its backend page says which), or "
    "submit to a backend this machine reaches (--backend local)"
)


def _reach(
    be: backends.Backend, name: str, call: Call, *, dry_run: bool
) -> tuple[tuple[JobState, ...] | None, str | None]:
    """The no_sibling query's answer (live jobs), or, in a dry run, None and why it failed:
    a scheduler that does not answer, is not installed, or refuses the query of its queue."""
    argv = be.sibling_argv(())
    try:
        return be.parse_live(call(argv).stdout), None
    except scheduler.SchedulerUnavailable as exc:
        why, hint = exc.message, exc.hint
    except (scheduler.SchedulerRejected, scheduler.SchedulerOutputError) as exc:
        # Refused, or answered in a form its backend cannot read (Grid Engine's qstat, exit 0,
        # where a PBS page is used): either way not this backend's scheduler answering here.
        why, hint = exc.message, QUERY_REFUSED_HINT.format(program=scheduler.program(argv))
    if dry_run:
        return None, why
    raise BackendUnreachable(
        message=f"this machine cannot reach backend {name}: {why}",
        hint=f"{hint}; nothing was submitted",
    ) from None


def preflight(
    *, root: Path, ask: Ask, call: Call = scheduler.call, retry: Retry | None = None
) -> Preflight | None:
    """Plan the submission and judge it; None when ``failed`` finds nothing to resubmit."""
    if ask.backend is not None:
        backends.checked_name(ask.backend)  # before anything reads backends/{backend}.md
    policy = asked.read_policy(root, ask.manifest)
    doc, name = asked.checked_manifest(root, ask, policy)
    page, be = asked.backend_of(root, name, policy)
    cells, configs = (
        inputs.queue_cells(root, doc["queue"]) if isinstance(doc.get("queue"), str) else ((), {})
    )
    history = ledger.read(root)
    jobs = asked.planned_jobs(root, ask, doc=doc, policy=policy, cells=cells, history=history)
    if jobs is None:
        return None
    jobs = retry_mem.for_retry(jobs, retry, page=page)  # a host OOM's: its memory raised
    fps = asked.fingerprints_of(
        root, ask, doc=doc, cells=cells, configs=configs, page=page, jobs=jobs
    )
    jobs = plan.with_configs(jobs, fps)
    wrappers, paths = asked.named_files(
        root, ask, name=name, doc=doc, policy=policy, configs=configs, jobs=jobs
    )
    repo = gitfacts.repo_facts(root, paths)
    active, unreachable = _reach(be, name, backends.calling(be, call), dry_run=ask.dry_run)
    facts = judging.Facts(
        manifest=ask.manifest,
        stage=ask.stage,
        backend=name,
        override=ask.override,
        policy=policy,
        page=page,
        paths=paths,
        repo=repo,
        fingerprints=fps,
        history=history,
        active=active,
        unreachable=unreachable,
        fixes=judging.CatalogFixes(root),
        elsewhere=elsewhere.of(root, ledger.live(history)),
        hardware_gaps=asked.hardware_gaps(root, ask, doc=doc, policy=policy, jobs=jobs, page=page),
    )
    return Preflight(
        root=root,
        name=name,
        backend=be,
        page=page,
        policy=policy,
        manifest=ask.manifest,
        stage=ask.stage,
        planned=judging.judged(be, jobs, facts),
        fingerprints=fps,
        wrappers=wrappers,
        head=repo.head,
        unreachable=unreachable,
    )


def submit(
    *,
    root: Path,
    ask: Ask,
    commit: bool = False,
    retry: Retry | None = None,
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc),
    call: Call = scheduler.call,
) -> Outcome:
    """Preflight and execute under the campaign's submit lock (a dry run: the preflight only)."""
    with held(root, wait=not ask.dry_run):
        pre = preflight(root=root, ask=ask, call=call, retry=retry)
        if pre is None:
            return Outcome(
                backend=ask.backend or "",
                planned=(),
                note=f"nothing to resubmit: no target's latest {ask.stage} ended without success",
            )
        if ask.dry_run:
            return Outcome(backend=pre.name, planned=pre.planned, unreachable=pre.unreachable)
        for p in pre.planned:
            gates.require(p.verdicts)
        lw.check_writable(root)
        done, stopped = dispatch.execute(
            pre, now=now, call=backends.submitting(pre.backend, call), retry=retry
        )
    if stopped is not None and not done:
        raise stopped
    sha, warnings = after_submission(
        root=root,
        wrappers=pre.wrappers,
        today=now().date(),
        submitted=done,
        commit=commit,
        push=pre.policy.require_pushed,
    )
    if stopped is not None:
        warnings = (*warnings, Warned(step="submit", message=stopped.message, hint=stopped.hint))
    return Outcome(
        backend=pre.name,
        planned=pre.planned,
        submitted=tuple(done),
        commit=sha,
        warnings=tuple(warnings),
    )
