"""Which backend a page picks: the registered backends (``KINDS``), each serving some pages.

A backend page's front matter picks it: `scheduler: slurm` → slurm, `scheduler: pbs` → pbs,
`kind: gridengine` → gridengine, `kind: local` → local, `kind: ssh` → ssh (rented GPUs and
bare SSH boxes). Kubernetes,
notebooks and clouds have pages but no runner yet: submitting to them is refused with that
reason.

Everything a scheduler does its own way lives in its folder under backends/: the script it
takes, how its ids and its answers read, how an array's task states fold into a job state, its
cancel command and its task ids, where a task's log goes, which of its errors are worth a
retry. Each folder's ``kind`` module says which pages it serves, how it is made for a checkout
(the slurm and pbs modules are the ``Backend`` themselves; local and ssh are classes that know
the checkout) and what it answers beyond the protocol (``base.Kind``'s hooks). The rest of the
package reaches a backend only through this module: adding one is a folder and one entry in
``KINDS`` (docs/architecture.md, "Adding a backend").
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from campaignops.backends.base import Backend as Backend
from campaignops.backends.base import Doubt as Doubt
from campaignops.backends.base import Kind as Kind
from campaignops.backends.base import Run as Run
from campaignops.backends.base import calling as calling
from campaignops.backends.base import checked_name as checked_name
from campaignops.backends.base import page as page
from campaignops.backends.base import page_path as page_path
from campaignops.backends.base import submitting as submitting
from campaignops.backends.gridengine.kind import KIND as GRIDENGINE
from campaignops.backends.local.kind import KIND as LOCAL
from campaignops.backends.pbs.kind import KIND as PBS
from campaignops.backends.slurm.kind import KIND as SLURM
from campaignops.backends.ssh.kind import KIND as SSH
from campaignops.core.errors import CampaignError, UsageError
from campaignops.model.backendpage import path_of
from campaignops.model.ledger import Job

# Every backend the runner drives, in the order a page is matched: adding one is its folder under
# backends/ (with a ``kind`` module) and one entry here.
KINDS: tuple[Kind, ...] = (SLURM, PBS, GRIDENGINE, LOCAL, SSH)


def kind_of(page: Mapping[str, Any] | None) -> Kind | None:
    """The registered backend that serves this page, or None (no page, or no runner for it)."""
    if not page:
        return None
    return next((kind for kind in KINDS if kind.serves(page)), None)


def kind_named(root: Path, name: str) -> Kind | None:
    """The registered backend of a campaign's backend ``name``, or None: no page, no runner for
    it, or a page that cannot be read (campaign check reports that; a caller asking a hook
    treats it as a backend that says nothing)."""
    try:
        return kind_of(page(root, name))
    except CampaignError:
        return None


def module_for(page: Mapping[str, Any] | None) -> str | None:
    kind = kind_of(page)
    return kind.name if kind else None


def for_page(name: str, page: Mapping[str, Any] | None, *, root: Path) -> Backend:
    kind = kind_of(page)
    if kind is None:
        page_kind = (page or {}).get("kind", "unknown")
        raise UsageError(
            message=f"backend {name!r} (kind {page_kind}) has no runner module: campaign submit "
            "drives Slurm, PBS Pro, Grid Engine, SSH boxes and the local machine",
            hint=f"follow {path_of(name)} to start jobs there by hand, or submit to another "
            "authorized backend",
        )
    return kind.make(root, name)


def doubts(root: Path) -> Iterator[Doubt]:
    """Every registered backend's ledger lines its page does not vouch for (campaign check)."""
    for kind in KINDS:
        yield from kind.doubts(root)


def task_refs(ref: str) -> list[tuple[str, int]]:
    """Every registered backend's reading of a task reference in its own syntax."""
    return [found for kind in KINDS if (found := kind.task_ref(ref)) is not None]


def verdict_category(exit_code: int | None, reason: str | None) -> str | None:
    """The failure category a scheduler's own words give (no two backends give one word two
    meanings: tests/backends/test_contract.py), or None."""
    for kind in KINDS:
        found = kind.verdict_category(exit_code, reason)
        if found is not None:
            return found
    return None


def cell_note(job: Job, target: str, page: Mapping[str, Any] | None) -> str | None:
    """What STATUS.md adds after a cell's job id, by the backend that ran it."""
    kind = kind_of(page)
    return kind.cell_note(job, target, page) if kind else None
