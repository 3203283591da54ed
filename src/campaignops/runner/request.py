"""What the gates are asked: one submission's facts (gates judges it, budget reads it).

Its own module, below both gates and budget: gates calls budget's gate, and budget reads a
Request, so keeping the Request in gates would tie the two in an import circle.
"""

from __future__ import annotations

from dataclasses import dataclass

from campaignops.model.jobspec import Resources


@dataclass(frozen=True)
class Request:
    """What is asked: the submission the gates judge."""

    campaign: str
    manifest: str  # relative to the campaign root
    stage: str
    backend: str
    targets: tuple[str, ...]
    paths: tuple[str, ...]  # manifest, policy, wrappers, queue files, backend page
    partition: str | None = None
    queue: str | None = None
    override: str | None = None
    time_s: int | None = None  # the job's time limit, in seconds
    smoke_max_minutes: int | None = None  # stages.smoke_max_minutes
    resources: Resources | None = None  # what each task holds: the budget gate's estimate
    earlier_cost: float = 0.0  # the budget estimates of this submission's earlier phases
    # Why no smoke can unlock this stage: its smoke asks for other hardware (inputs.hardware_gaps).
    hardware_gap: str | None = None
