"""Diagnosis during ``campaign status --refresh``: each task that newly ended in failure.

The catalog is read once per refresh; a failures.yaml that does not parse gives an empty
catalog here (``campaign check`` reports it with its line): the refresh still records states,
and each failure its state-and-last-line signature, rather than failing as a whole.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from campaignops.backends import registry as backends
from campaignops.core.errors import CampaignError
from campaignops.learn.diagnosis.engine import Diagnosis, diagnose
from campaignops.learn.diagnosis.report import backend_kind, read_inside
from campaignops.learn.diagnosis.verdicts import Evidence
from campaignops.model import catalog as catalog_mod
from campaignops.model import ledger
from campaignops.model.jobspec import JobState


class Diagnosers:
    """Per refresh: the catalog and the backends' kinds, read once, shared by every task."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._catalog: catalog_mod.Catalog | None = None
        self._kinds: dict[str, str | None] = {}

    @property
    def catalog(self) -> catalog_mod.Catalog:
        if self._catalog is None:
            try:
                self._catalog = catalog_mod.load(self.root)
            except CampaignError:
                self._catalog = catalog_mod.Catalog()
        return self._catalog

    def kind(self, name: str) -> str | None:
        if name not in self._kinds:
            self._kinds[name] = backend_kind(self.root, name)
        return self._kinds[name]

    def of(
        self, job: ledger.Job, job_id: str, name: str, be: backends.Backend
    ) -> Callable[[int | None, JobState], Diagnosis]:
        """Diagnose ``job``'s task ``index`` (None: the job itself) in the state it ended."""
        array = len(job.targets) > 1

        def run(index: int | None, state: JobState) -> Diagnosis:
            rel = be.log_path(job_id, name=job.text("name") or "", index=index if array else None)
            text = read_inside(self.root, rel) or ""
            evidence = Evidence(state=state.state, exit_code=state.exit_code, reason=state.reason)
            return diagnose(
                text, catalog=self.catalog, evidence=evidence, backend=name, kind=self.kind(name)
            )

        return run
