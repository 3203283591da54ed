"""Which backend, which partition, which stage: the compute-strategy questions, asked of the
campaign's own authorized pages (``campaign advise``).

The seven questions of HPC_PLAYBOOK.md's tree, walked in order, stopping at the first match:
1. a CPU job under 30 minutes → this machine;
2. a smoke, or a GPU job under an hour → the smoke backend, on its smoke partition;
3. a 1–8 hour single job → a cluster's production partition (a rented box if urgent);
4. 8–24 hours → a cluster's production partition (a rented box with a person's go-ahead);
5. over 24 hours → a chain of shorter jobs on a production partition (a long QoS only if a
   restart is impossible, with a person's agreement);
6. 50 or more independent tasks → one array job with a concurrency cap;
7. the first choice unreachable → the next backend in ``campaign.yaml``'s failover order.
Where each backend sits comes from its page and its registered Kind, never from its name: a
Kind with box keys is a rented box, a page whose ``scheduler`` is ``none`` runs on this machine,
any other registered kind is a cluster; a page kind with no runner is never advised. A
partition fits when its ``purpose`` is the one asked, it has GPUs exactly when the job wants
them, and its ``max_walltime`` (when the page gives one) covers the hours.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaignops.backends import base, charging, registry
from campaignops.core import layout
from campaignops.core.errors import CampaignError, UsageError
from campaignops.core.files import FileReader
from campaignops.model import policy as policy_mod
from campaignops.model import walltime
from campaignops.model.jobspec import Resources

HERE, CLUSTER, BOX = "this machine", "cluster", "rented box"
MAX_HOURS = 100_000  # about eleven years: more is a typo, or NaN/infinity
ENSEMBLE = 50  # tasks: from here a job is an ensemble (question 6)
QUESTIONS = {
    1: "a CPU job under 30 minutes",
    2: "a smoke test, or a GPU job under an hour",
    3: "a single job of 1 to 8 hours",
    4: "a single job of 8 to 24 hours",
    5: "a single job over 24 hours",
    6: f"an ensemble of {ENSEMBLE} or more independent tasks",
}
QUEUE = {
    HERE: "none: it starts at once on this machine",
    CLUSTER: "the cluster's queue: `campaign status --refresh` shows a pending job's reason",
    BOX: "none once the box is up (no scheduler); renting one is a person's decision",
}


@dataclass(frozen=True)
class Ask:
    """The job to place: GPU or not, hours per task, how many tasks, urgency, a smoke or not."""

    gpu: bool = False
    hours: float = 1.0
    tasks: int = 1
    urgent: bool = False
    smoke: bool = False


@dataclass(frozen=True)
class Fact:
    """A page fact the advice rests on: the page, the key, its value."""

    page: str
    key: str
    value: str


@dataclass(frozen=True)
class Advice:
    question: int  # 1–6; 0: no question fits or nothing authorized fits (ask a person)
    asked: str
    backend: str | None
    where: str | None  # this machine, cluster, rented box
    partition: str | None
    qos: str | None
    stage: str
    how: str
    cost: str | None
    queue: str | None
    facts: tuple[Fact, ...]
    failover: tuple[str, ...]  # question 7: the backends to fall over to, in order
    not_advised: Mapping[str, str]  # authorized backends never advised, and why


def place(page: Mapping[str, Any] | None) -> str | None:
    """Where a page's jobs run, from its registered Kind and its facts; None: no runner."""
    kind = registry.kind_of(page)
    if kind is None or page is None:
        return None
    if kind.box_keys:
        return BOX
    return HERE if str(page.get("scheduler") or "none") == "none" else CLUSTER


def _entries(page: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found: list[Mapping[str, Any]] = []
    for key in ("partitions", "queues"):
        entries = page.get(key)
        found += [e for e in entries if isinstance(e, Mapping)] if isinstance(entries, list) else []
    return found


def _limit(entry: Mapping[str, Any]) -> int | None:
    try:
        return walltime.parse(entry["max_walltime"]) if "max_walltime" in entry else None
    except CampaignError:
        return None


def partition(page: Mapping[str, Any], purpose: str, ask: Ask) -> Mapping[str, Any] | None:
    """The page's first partition or queue of ``purpose`` that fits the job (see the module)."""
    gpus_must_match = place(page) == CLUSTER  # a box's or this machine's rows list no GPUs
    for entry in _entries(page):
        has_gpus = bool(entry.get("gpus") or entry.get("gpu_type"))
        if entry.get("purpose") != purpose or (gpus_must_match and has_gpus != ask.gpu):
            continue
        limit = _limit(entry)
        if limit is None or limit >= ask.hours * 3600:
            return entry
    return None


def question(ask: Ask) -> int:
    """The first of the seven questions the job matches (7, failover, is asked of every answer)."""
    single = ask.tasks < ENSEMBLE
    if single and not ask.gpu and not ask.smoke and ask.hours < 0.5:
        return 1
    if single and (ask.smoke or (ask.gpu and ask.hours < 1)):
        return 2
    if not single:
        return 6
    return 3 if ask.hours <= 8 else 4 if ask.hours <= 24 else 5


def _order(q: int, ask: Ask) -> tuple[str, ...]:
    """Where to look, best first, for question ``q``."""
    if q == 1:
        return (HERE,)
    if q == 3:
        return (BOX, CLUSTER) if ask.urgent else (CLUSTER, BOX)
    if q == 6:
        return (CLUSTER, BOX, HERE)
    return (CLUSTER, BOX)


def _how(q: int, ask: Ask, entry: Mapping[str, Any] | None) -> str:
    limit = _limit(entry) if entry else None
    if q == 5 and limit:
        links = -(-int(ask.hours * 3600) // limit)
        return (
            f"a chain of {links} jobs of at most {walltime.hms(limit)} that checkpoint and "
            "restart (`campaign submit … --after JOBID`); a long QoS only if a restart is "
            "impossible, and only with a person's agreement"
        )
    if q == 6:
        return "one array job (one submission) with a concurrency cap (the manifest's max_parallel)"
    if q == 2:
        return "`campaign submit MANIFEST --stage smoke`, then production once the smoke passes"
    return "`campaign submit MANIFEST --stage production`, after a passing smoke of the same config"


def _facts(name: str, page: Mapping[str, Any], entry: Mapping[str, Any] | None) -> tuple[Fact, ...]:
    facts = [
        Fact(name, "kind", str(page.get("kind"))),
        Fact(name, "verified", str(page.get("verified"))),
    ]
    for key in ("name", "qos", "purpose", "max_walltime", "gpus", "gpu_type"):
        if entry and key in entry:
            facts.append(Fact(name, f"partition.{key}", str(entry[key])))
    return tuple(facts)


def _cost(page: Mapping[str, Any], entry: Mapping[str, Any] | None, ask: Ask) -> str | None:
    named = str(entry.get("name")) if entry else None
    res = Resources(partition=named, queue=named, gpus=1 if ask.gpu else None)
    value = charging.estimate(res, ask.tasks, int(ask.hours * 3600), page)
    model = charging.charging(page)
    return charging.amount(value, model.unit) if value is not None and model else None


def _fit(page: Mapping[str, Any], q: int, ask: Ask) -> tuple[bool, Mapping[str, Any] | None]:
    """Whether the page can take the job for question ``q``, and the partition it would use."""
    if place(page) == HERE:
        entries = _entries(page)
        return (not ask.gpu or bool(page.get("gpus"))), (entries[0] if entries else None)
    purpose = "smoke" if q == 2 else "production"
    sized = Ask(gpu=ask.gpu, hours=0 if q == 5 else ask.hours, tasks=ask.tasks)
    entry = partition(page, purpose, sized)
    listed = bool(_entries(page))
    return (entry is not None or not listed), entry


def _why_not(page: Mapping[str, Any] | None) -> str:
    return "no page in backends/" if page is None else f"no runner for kind {page.get('kind')!r}"


def advise(
    *,
    backends: Sequence[str],
    smoke_backend: str | None,
    pages: Mapping[str, Mapping[str, Any] | None],
    ask: Ask,
) -> Advice:
    """Walk the questions for ``ask`` over the authorized ``backends`` (failover order)."""
    # NaN and infinity are floats argparse accepts: both end as a usage error, not a traceback.
    if not 0 < ask.hours <= MAX_HOURS or ask.tasks < 1:
        raise UsageError(
            message=f"--hours must be above 0 and at most {MAX_HOURS:,}, and --tasks at least 1",
            hint="e.g. campaign advise --gpu --hours 6 --tasks 1",
        )
    places = {name: place(pages.get(name)) for name in backends}
    not_advised = {n: _why_not(pages.get(n)) for n, where in places.items() if where is None}
    q = question(ask)
    if q == 2 and smoke_backend in places and places[smoke_backend] is not None:
        candidates = [smoke_backend, *(n for n in backends if n != smoke_backend)]
    else:
        candidates = [n for where in _order(q, ask) for n in backends if places[n] == where]
    fits = []
    for name in candidates:
        page = pages.get(name)
        if page is None or places.get(name) is None:
            continue
        ok, entry = _fit(page, q, ask)
        if ok:
            fits.append((name, page, entry))
    return _advice(q, ask, fits, not_advised)


def _advice(
    q: int,
    ask: Ask,
    fits: Sequence[tuple[str, Mapping[str, Any], Mapping[str, Any] | None]],
    not_advised: Mapping[str, str],
) -> Advice:
    if not fits:
        return Advice(
            question=0, asked=QUESTIONS.get(q, ""), backend=None, where=None, partition=None,
            qos=None, stage="smoke" if q == 2 else "production",
            how="ask a person: no authorized backend fits this job", cost=None, queue=None,
            facts=(), failover=(), not_advised=not_advised,
        )  # fmt: skip
    name, page, entry = fits[0]
    return Advice(
        question=q,
        asked=QUESTIONS[q],
        backend=name,
        where=place(page),
        partition=str(entry["name"]) if entry and "name" in entry else None,
        qos=str(entry["qos"]) if entry and "qos" in entry else None,
        stage="smoke" if q == 2 else "production",
        how=_how(q, ask, entry),
        cost=_cost(page, entry, ask),
        queue=QUEUE[place(page) or CLUSTER],
        facts=_facts(name, page, entry),
        failover=tuple(n for n, _, _ in fits[1:]),
        not_advised=not_advised,
    )


def advise_campaign(*, root: Path, ask: Ask) -> Advice:
    """``advise`` over the campaign at ``root``: its campaign.yaml and its backend pages."""
    reader = FileReader(root)
    parsed = reader.read_yaml(layout.POLICY_FILE)
    if parsed is None:
        raise UsageError(
            message=f"no {layout.POLICY_FILE} in {root}: not a campaign",
            hint="run campaign advise inside a campaign repository",
        )
    policy = policy_mod.from_data(parsed[0], found=True)
    pages = {name: base.page(root, base.checked_name(name)) for name in policy.backends}
    return advise(
        backends=policy.backends, smoke_backend=policy.smoke_backend, pages=pages, ask=ask
    )
