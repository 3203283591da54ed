"""The template catalog answers the scheduler's own verdicts, and reads the Slurm lines that
come in pairs the way the engine's rule promises (earliest line first, warnings not failures)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from campaignops.learn.diagnosis import engine
from campaignops.learn.diagnosis.verdicts import Evidence
from campaignops.model import catalog as catalog_mod
from campaignops.model.catalog import Catalog

BENCH = Path(__file__).resolve().parents[2] / "bench" / "diagnose.py"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    spec = importlib.util.spec_from_file_location("bench_diagnose_verdicts", BENCH)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return catalog_mod.from_data(module.catalog_data())


@pytest.mark.parametrize(
    ("state", "entry", "category"),
    [
        ("TIMEOUT", "slurm-time-limit", "timeout"),
        ("OUT_OF_MEMORY", "slurm-oom-kill", "oom-host"),
        ("PREEMPTED", "slurm-preempted", "preempted"),
        ("NODE_FAIL", "slurm-node-fail", "node-failure"),
        ("BOOT_FAIL", "slurm-node-fail", "node-failure"),
    ],
)
def test_a_slurm_verdict_without_a_log_names_its_entry(
    catalog: Catalog, state: str, entry: str, category: str
) -> None:
    got = engine.diagnose(
        "", catalog=catalog, evidence=Evidence(state=state), backend="generic-slurm", kind="slurm"
    )
    assert (got.entry_id, got.category) == (entry, category)


def test_the_memory_warning_of_a_completed_job_is_no_diagnosis(catalog: Catalog) -> None:
    got = engine.diagnose(
        "slurmstepd: error: Exceeded job memory limit at some point.\n",
        catalog=catalog,
        backend="generic-slurm",
        kind="slurm",
    )
    assert (got.entry_id, got.category) == (None, None)


def test_a_qos_minimum_before_the_policy_line_is_a_rejected_request(catalog: Catalog) -> None:
    text = (
        "salloc: error: QOSMinCpuNotSatisfied\n"
        "salloc: error: Job submit/allocate failed: Job violates accounting/QOS policy"
        " (job submit limit, user's size and/or time limits)\n"
    )
    got = engine.diagnose(text, catalog=catalog, backend="generic-slurm", kind="slurm")
    assert (got.entry_id, got.category) == ("slurm-qos-minimum", "scheduler-rejected")


def test_the_policy_line_alone_is_a_quota_limit(catalog: Catalog) -> None:
    text = (
        "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy"
        " (job submit limit, user's size and/or time limits)\n"
    )
    got = engine.diagnose(text, catalog=catalog, backend="generic-slurm", kind="slurm")
    assert (got.entry_id, got.category) == ("slurm-qos-policy-violation", "quota-limit")


def test_an_eviction_in_kubectls_event_table_is_read_despite_the_warning_column(
    catalog: Catalog,
) -> None:
    text = (
        "  Warning  Evicted  2m  kubelet  The node was low on resource: memory."
        " Container trainer was using 30Gi, which exceeds its request of 16Gi.\n"
    )
    got = engine.diagnose(text, catalog=catalog, backend="kubernetes", kind="kubernetes")
    assert (got.entry_id, got.category) == ("k8s-evicted-memory", "oom-host")
