"""The real Slurm cluster (dev/slurm_cluster.py) for the runner's tests, one per session.

Tests that need it take the ``slurm_cluster`` fixture and carry ``@pytest.mark.slurm`` (so
``-m "not slurm"`` leaves them out). As root the cluster is installed if need be and started
under a temp dir; otherwise those tests skip, except under CI=true, where they fail: CI must
run them.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

DEV = Path(__file__).resolve().parents[2] / "dev" / "slurm_cluster.py"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slurm: runs on the real single-node Slurm cluster")


def _cluster_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("slurm_cluster", DEV)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: the Slurm tests must run, but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[Any]:
    """A running cluster (``Cluster``: base, name, conf, cgroups); SLURM_CONF set meanwhile."""
    if os.geteuid() != 0:
        _unavailable("the Slurm cluster needs root (it starts munged, MariaDB and slurmd)")
    dev = _cluster_module()
    if dev.missing_binaries() and shutil.which("apt-get") is None:
        _unavailable(f"Slurm is not installed and there is no apt-get: {dev.missing_binaries()}")
    dev.install()
    # mkdtemp under /tmp: munged (user munge) must reach its socket through every parent.
    base = Path(tempfile.mkdtemp(prefix="campaignops-slurm-"))
    cluster = dev.start(base)
    saved = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(cluster.conf)
    try:
        yield cluster
    finally:
        cluster.stop()
        if saved is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = saved
        shutil.rmtree(base, ignore_errors=True)
