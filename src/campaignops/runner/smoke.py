"""The smoke_first gate: single and production need, for each target, a smoke of its current
config whose own task COMPLETED with exit 0; a smoke itself must fit stages.smoke_max_minutes.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

from campaignops.model import backendpage, ledger_index, pagefit, smokes
from campaignops.model.ledger import Job
from campaignops.model.ledger_index import Index
from campaignops.runner.request import Request
from campaignops.runner.verdict import Verdict
from campaignops.runner.verdict import listed as _listed
from campaignops.runner.verdict import ok as _ok
from campaignops.runner.verdict import quoted as _quoted
from campaignops.runner.verdict import refuse as _refuse


def smoked_targets(
    fingerprints: Mapping[str, str], jobs: Sequence[Job], index: Index | None = None
) -> frozenset[str]:
    """Targets with a smoke of their current config whose own task COMPLETED with exit 0.

    Each target is judged by its own array task and its own recorded fingerprint: a failed
    sibling in the same array does not spoil it, and an edited target needs its own new smoke.
    (A record without per-target fingerprints, from before the hardware class and the named
    files joined the fingerprint, can match no current one: such smokes must be run again.)
    Asked of the ledger's per-target index (``index``, else built from ``jobs``): the cost
    follows the targets asked about, not the jobs in the history.
    """
    found = ledger_index.of(jobs, index)
    return frozenset(
        t for t, fp in fingerprints.items() if smokes.standing(found, t, fp) == smokes.CURRENT
    )


def smoke_first(
    request: Request,
    *,
    fingerprints: Mapping[str, str],
    jobs: Sequence[Job],
    require_smoke: bool,
    index: Index | None = None,
) -> Verdict:
    """single/production need, for each target, a smoke of its current fingerprint in which
    its own task COMPLETED with exit 0; a smoke itself must fit stages.smoke_max_minutes."""
    gate = "smoke_first"
    if request.stage == "smoke":
        too_long = pagefit.smoke_too_long(request.time_s, request.smoke_max_minutes)
        if too_long is not None:
            return _refuse(gate, too_long.problem, too_long.fix)
        return _ok(gate, "a smoke needs no earlier smoke")
    if not require_smoke:
        return _ok(gate, "stages.require_smoke is false")
    found = ledger_index.of(jobs, index)
    # The one rule the stages view shows too (model/smokes.py): each target's own smoke.
    stands = {t: smokes.standing(found, t, fingerprints.get(t)) for t in request.targets}
    missing = [t for t in request.targets if stands[t] != smokes.CURRENT]
    if not missing:
        return _ok(gate, "every target has a completed smoke of its current config")
    older = {t for t in missing if stands[t] == smokes.OLDER}
    stale = f" (smokes of {_listed(older)} ran an older config)" if older else ""
    if request.hardware_gap:
        return _refuse(
            gate,
            f"no smoke can unlock {request.stage} for {_listed(missing)}: "
            f"{request.hardware_gap}{stale}",
            HARDWARE_HINT.format(page=backendpage.path_of(request.backend)),
        )
    return _refuse(
        gate,
        f"no smoke of the current config COMPLETED with exit 0 for {_listed(missing)}{stale}",
        f"campaign submit {shlex.quote(request.manifest)} --targets {_quoted(missing)} "
        "--stage smoke; when campaign status --refresh shows it COMPLETED, submit again",
    )


HARDWARE_HINT = (
    "smoke on the production hardware (smoke.resources: its partition, gpu_type), or, where "
    "the smoke's partition is a slice of the production one (a MIG slice, a debug QoS on the "
    "same nodes), say so on the smoke row of {page}: smoke_for: <production partition>, with "
    "the source that says so; then smoke again"
)
