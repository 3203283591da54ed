"""The one interface every backend provides (``Backend``), and which backend a page picks.

A backend page's front matter picks the module: `scheduler: slurm` → slurm, `scheduler: pbs`
→ pbs, `kind: local` → local, `kind: ssh` → ssh (rented GPUs and bare SSH boxes), `kind:
gridengine` → backends/gridengine (GridEngineBackend). Kubernetes,
notebooks and clouds have pages but no runner module yet: submitting to them is refused with
that reason.

Everything a scheduler does its own way lives in its module: the script it takes, how its ids
and its answers read, how an array's task states fold into a job state, its cancel command and
its task ids, where a task's log goes, which of its errors are worth a retry. The slurm and pbs
modules are the interface themselves (mypy checks each against ``Backend`` below); the local
backend is ``localbackend.LocalBackend``, which fills in the checkout's state directory, and the ssh
backend ``sshbox.SshBackend``, which also knows its page's name (the page lists the instances). Adding a
backend is one module and one line in ``MODULES``. The protocol and the page reading are in
``backend_base`` (below the backend modules, which import it); they are re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from campaignops.backends.gridengine import GridEngineBackend
from campaignops.errors import UsageError
from campaignops.runner import localbackend, pbs, slurm, sshbox
from campaignops.runner.backend_base import BACKEND_NAME as BACKEND_NAME
from campaignops.runner.backend_base import Backend as Backend
from campaignops.runner.backend_base import Run as Run
from campaignops.runner.backend_base import calling as calling
from campaignops.runner.backend_base import checked_name as checked_name
from campaignops.runner.backend_base import module_for as module_for
from campaignops.runner.backend_base import page as page
from campaignops.runner.backend_base import page_path as page_path
from campaignops.runner.backend_base import submitting as submitting


def _module(backend: Backend) -> Callable[[Path, str], Backend]:
    """A scheduler module is the same for every checkout."""
    return lambda root, name: backend


# (checkout root, backend page name) → the backend.
MODULES: Mapping[str, Callable[[Path, str], Backend]] = {
    "slurm": _module(slurm),
    "pbs": _module(pbs),
    "local": localbackend.LocalBackend,
    "ssh": sshbox.SshBackend,
    "gridengine": GridEngineBackend,
}


def for_page(name: str, page: Mapping[str, Any] | None, *, root: Path) -> Backend:
    module = module_for(page)
    if module is None:
        kind = (page or {}).get("kind", "unknown")
        raise UsageError(
            message=f"backend {name!r} (kind {kind}) has no runner module: campaign submit "
            "drives Slurm, PBS Pro, Grid Engine, SSH boxes and the local machine",
            hint=f"follow backends/{name}.md to start jobs there by hand, or submit to another "
            "authorized backend",
        )
    return MODULES[module](root, name)
