"""The breaker gate: a target whose last BREAKER_RUN finished attempts of its current config
failed with one signature is refused until the config changes or an override says why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from campaignops.model import ledger_index
from campaignops.model.ledger import Job
from campaignops.model.ledger_index import Index
from campaignops.runner.request import Request
from campaignops.runner.verdict import Verdict
from campaignops.runner.verdict import listed as _listed
from campaignops.runner.verdict import ok as _ok
from campaignops.runner.verdict import refuse as _refuse

BREAKER_RUN = 3  # the seed's "3 consecutive same-error failures"


def tripped(last: Sequence[ledger_index.Attempt]) -> str | None:
    """The breaker's rule on a target's last finished attempts (oldest first): the signature
    when there are BREAKER_RUN of them, none passed, and all failed with one signature."""
    sigs = {a.signature for a in last}
    passed = any(a.outcome == ledger_index.PASSED for a in last)
    return str(sigs.pop()) if len(last) == BREAKER_RUN and not passed and len(sigs) == 1 else None


def tripped_run(
    target: str, ordered: Sequence[Job], fingerprint: str | None
) -> tuple[str, tuple[str, ...]] | None:
    """The breaker's rule for one target over ``ordered`` (jobs in submission order): the
    signature and the ledger ids of the attempts, else None. campaign report asks it too (a
    stuck target); the gate asks the ledger's own index."""
    named = _Named(ordered)
    last = Index.build(ordered).finished(target, fingerprint, BREAKER_RUN, named.order)
    sig = tripped(last)
    return None if sig is None else (sig, tuple(a.ledger_id for a in last))


def breaker(
    request: Request,
    *,
    jobs: Sequence[Job],
    fingerprints: Mapping[str, str] | None = None,
    fixes: Mapping[str, str] | None = None,
    index: Index | None = None,
) -> Verdict:
    """Refuse when a target's last three finished attempts of its current config failed with
    one signature (the diagnosis: a catalog entry, else the normalised last error line):
    resubmitting the same crash burns allocation. Each attempt is the target's own task (a
    sibling's failure in the same array is not this target's); only attempts recorded with the
    target's current fingerprint count, so a fix (a new fingerprint) starts a new count.
    CANCELLED and preempted attempts are skipped (a person or the scheduler stopped them; they
    say nothing about the config).
    ``fixes`` (catalog entry → fix) goes into the hint. ``request.override`` passes it, and
    the verdict carries the reason for the ledger. The attempts come from the ledger's
    per-target index (``index``, else built from ``jobs``)."""
    gate = "breaker"
    found = ledger_index.of(jobs, index)
    named = _Named(jobs)
    refused: list[str] = []
    advice: list[str] = []
    for target in request.targets:
        current = (fingerprints or {}).get(target)
        last = found.finished(target, current, BREAKER_RUN, named.order)
        sig = tripped(last)
        if sig is not None:
            ids = ", ".join(named.shown(a.ledger_id) for a in last)
            refused.append(f"{target} ({sig}; jobs {ids})")
            fix = (fixes or {}).get(sig)
            if fix and f"{sig}: {fix}" not in advice:
                advice.append(f"{sig}: {fix}")
    if not refused:
        return _ok(gate, "no run of same-signature failures")
    why = f"failed {BREAKER_RUN} times in a row with the same signature: {_listed(refused)}"
    override = (request.override or "").strip()
    if override:
        return Verdict(gate=gate, passed=True, reason=f"overridden: {why}", override=override)
    known = f"the catalog's fix for {'; '.join(advice)}; " if advice else ""
    return _refuse(
        gate,
        why,
        f"{known}fix the cause (campaign diagnose JOB_TASK reads the log; FAILURES.md lists "
        "known ones), commit, and re-smoke: a changed config starts a new count. To submit "
        'the same config anyway, pass --override "what changed" (recorded in the ledger)',
    )


class _Named:
    """The jobs by ledger id, made only when a question needs them (a tripped breaker's
    message, the order of attempts from several configs)."""

    def __init__(self, jobs: Sequence[Job]) -> None:
        self._jobs = jobs
        self._by_id: dict[str, Job] | None = None

    def _get(self, ledger_id: str) -> Job | None:
        if self._by_id is None:
            self._by_id = {j.ledger_id: j for j in self._jobs}
        return self._by_id.get(ledger_id)

    def shown(self, ledger_id: str) -> str:
        job = self._get(ledger_id)
        return (job.job_id if job is not None else None) or ledger_id

    def order(self, ledger_id: str) -> Any:
        job = self._get(ledger_id)
        assert job is not None, "the index names only the jobs it was made of"
        return job.sort_key()
