"""One face for every backend module: the runner calls these, whatever the scheduler.

A backend page's front matter picks the module: `scheduler: slurm` → slurm, `scheduler: pbs`
→ pbs, `kind: local` → local. Rented GPUs, bare SSH boxes and Kubernetes have pages but no
runner module yet: submitting to them is refused with that reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any, Protocol

from campaignops import views
from campaignops.errors import UsageError
from campaignops.runner import local, pbs, scheduler, slurm
from campaignops.runner.spec import JobSpec, JobState

LOCAL_STATE = ".campaign/local"


Run = Callable[[Sequence[str]], scheduler.Call]


class LogPath(Protocol):
    def __call__(self, job_id: str, *, name: str, index: int | None) -> str: ...


@dataclass(frozen=True)
class Backend:
    module: str  # slurm | pbs | local
    render: Callable[[JobSpec], str]
    submit_argv: Callable[[str], list[str]]
    parse_job_id: Callable[[str], str]
    query_argvs: Callable[[Sequence[str]], list[list[str]]]
    parse_states: Callable[[Sequence[str]], dict[str, JobState]]
    sibling_argv: Callable[[Sequence[str]], list[str]]
    parse_siblings: Callable[[str, Sequence[str]], tuple[JobState, ...]]
    # The live jobs in sibling_argv's answer, each with its live tasks (no name filter).
    parse_live: Callable[[str], tuple[JobState, ...]]
    # Every job under these names, finished or not: how a lost or unknown result is found.
    lookup: Callable[[Sequence[str], Run], dict[str, JobState]]
    # campaign cancel: one call for jobs or array tasks (task_id names one), and where each
    # task's output goes (log_path(job_id, name=, index=): relative to the work directory).
    cancel_argv: Callable[[Sequence[str]], list[str]]
    task_id: Callable[[str, int], str]
    log_path: LogPath


def _live(jobs: Iterable[JobState]) -> tuple[JobState, ...]:
    out = []
    for job in jobs:
        if job.state in ("PENDING", "RUNNING"):
            live = {i: t for i, t in job.tasks.items() if t.state in ("PENDING", "RUNNING")}
            out.append(dataclasses.replace(job, tasks=MappingProxyType(live)))
    return tuple(out)


def _slurm_lookup(names: Sequence[str], call: Run) -> dict[str, JobState]:
    # By name to find the ids (sacct's window misses a job held until it was cancelled, so its
    # states by name can be partial), then by id, as every refresh asks.
    found = slurm.parse_states([call(a).stdout for a in slurm.lookup_argvs(names)])
    if not found:
        return {}
    return slurm.parse_states([call(a).stdout for a in slurm.query_argvs(sorted(found))])


def _pbs_lookup(names: Sequence[str], call: Run) -> dict[str, JobState]:
    ids = pbs.parse_lookup([call(a).stdout for a in pbs.lookup_argvs(names)])
    return pbs.parse_states([call(a).stdout for a in pbs.query_argvs(ids)]) if ids else {}


def _scheduler(
    module: ModuleType,
    parse_live: Callable[[str], tuple[JobState, ...]],
    lookup: Callable[[Sequence[str], Run], dict[str, JobState]],
) -> Callable[[Path], Backend]:
    """A scheduler module (slurm, pbs) already has the face: its functions, by name."""

    def make(root: Path) -> Backend:
        return Backend(
            module=module.__name__.rsplit(".", 1)[-1],
            render=module.render,
            submit_argv=module.submit_argv,
            parse_job_id=module.parse_job_id,
            query_argvs=module.query_argvs,
            parse_states=module.parse_states,
            sibling_argv=module.sibling_argv,
            parse_siblings=module.parse_siblings,
            parse_live=parse_live,
            lookup=lookup,
            cancel_argv=module.cancel_argv,
            task_id=module.task_id,
            log_path=module.log_path,
        )

    return make


def _local(root: Path) -> Backend:
    state = str(root / LOCAL_STATE)
    return Backend(
        module="local",
        render=local.render,
        submit_argv=lambda script: local.submit_argv(script, state_root=state),
        parse_job_id=local.parse_job_id,
        query_argvs=lambda ids: local.query_argvs(ids, state_root=state),
        parse_states=local.parse_states,
        sibling_argv=lambda names: local.sibling_argv(names, state_root=state),
        parse_siblings=lambda out, names: tuple(
            j for j in local.parse_siblings(out) if j.name in set(names)
        ),
        parse_live=lambda out: _live(local.parse_siblings(out)),
        lookup=lambda names, call: {
            j.job_id: j
            for j in local.parse_siblings(
                call(local.sibling_argv(names, state_root=state, include_finished=True)).stdout
            )
        },
        cancel_argv=lambda ids: local.cancel_argv(ids, state_root=state),
        task_id=local.task_id,
        log_path=local.log_path,
    )


MODULES: Mapping[str, Callable[[Path], Backend]] = {
    "slurm": _scheduler(slurm, slurm.parse_live, _slurm_lookup),
    "pbs": _scheduler(pbs, lambda out: _live(pbs.parse_states([out]).values()), _pbs_lookup),
    "local": _local,
}


def page_path(name: str) -> str:
    return f"backends/{name}.md"


def page(root: Path, name: str) -> dict[str, Any] | None:
    """The backend page's front matter, or None when the campaign has no page for it."""
    rel = page_path(name)
    if not (root / rel).is_file():
        return None
    return views.front_matter((root / rel).read_text(encoding="utf-8"), path=rel)


def module_for(page: Mapping[str, Any] | None) -> str | None:
    if not page:
        return None
    scheduler = page.get("scheduler")
    if scheduler in ("slurm", "pbs"):
        return str(scheduler)
    return "local" if page.get("kind") == "local" else None


def for_page(name: str, page: Mapping[str, Any] | None, *, root: Path) -> Backend:
    module = module_for(page)
    if module is None:
        kind = (page or {}).get("kind", "unknown")
        raise UsageError(
            message=f"backend {name!r} (kind {kind}) has no runner module: campaign submit "
            "drives Slurm, PBS Pro and the local machine",
            hint=f"follow backends/{name}.md to start jobs there by hand, or submit to another "
            "authorized backend",
        )
    return MODULES[module](root)
