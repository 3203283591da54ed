"""A campaign over days, played through the CLI: on the local backend and on the real Slurm
cluster (PBS through its contract replay, in test_pbs_contract.py).

``camp`` is a fresh campaign from ``campaign new`` (backends generic-slurm and local, git
history, no upstream needed); ``backend`` is each backend a story runs on; ``life`` gives a
story its moves: write and commit files, submit, wait for a job the way a user would (a
refresh at a time, bounded), read the ledger.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from campaignops.model import ledger
from tests import waiting
from tests.conftest import Result, git

BACKENDS = [
    pytest.param("local", id="local"),
    pytest.param("generic-slurm", id="slurm", marks=pytest.mark.slurm),
]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "generic-slurm":
        request.getfixturevalue("slurm_cluster")
    return str(request.param)


@pytest.fixture
def camp(new_campaign: Callable[..., Path]) -> Path:
    return new_campaign(
        "life", "backends=generic-slurm,local", "smoke_backend=local", "require_pushed=no"
    )


@dataclass
class Life:
    root: Path
    backend: str
    run: Callable[..., Result]

    def write(self, rel: str, text: str, *, commit: bool = True) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if commit:
            git(self.root, "add", "-A")
            git(self.root, "commit", "-qm", f"write {rel}")

    def commit(self, message: str = "bookkeeping") -> None:
        git(self.root, "add", "-A")
        git(self.root, "commit", "-qm", message, "--allow-empty")

    def submit(self, manifest: str, stage: str, *more: str) -> Result:
        return self.run("submit", manifest, "--stage", stage, "--backend", self.backend, *more)

    def jobs(self) -> tuple[ledger.Job, ...]:
        return ledger.read(self.root).jobs

    def wait(self, ledger_id: str | None = None, *, timeout: float = 180) -> ledger.Job:
        """The job (default: the newest) once a refresh has recorded its end (tests/waiting.py)."""
        return waiting.settled(self.run, self.root, ledger_id=ledger_id, timeout=timeout)


@pytest.fixture
def life(camp: Path, backend: str, run) -> Life:  # type: ignore[no-untyped-def]
    return Life(root=camp, backend=backend, run=run)
