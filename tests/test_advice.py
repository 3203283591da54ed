"""`campaign advise`: the playbook's backend questions over a campaign's own pages (issue 19,
gap 8: the decision tree was prose written once, and nothing ran it)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from campaignops.backends import advice
from campaignops.backends.advice import Ask
from campaignops.core.errors import UsageError

CLUSTER = {
    "kind": "slurm",
    "scheduler": "slurm",
    "verified": "2026-11",
    "partitions": [
        {"name": "debug", "purpose": "smoke", "max_walltime": "01:00:00"},
        {"name": "gpu-debug", "purpose": "smoke", "max_walltime": "00:30:00", "gpus": 1},
        {"name": "cpu", "purpose": "production", "max_walltime": "1-00:00:00"},
        {"name": "gpu", "qos": "normal", "purpose": "production", "max_walltime": "12:00:00",
         "gpus": 4},
        {"name": "gpu", "qos": "long", "purpose": "long", "max_walltime": "7-00:00:00", "gpus": 4},
    ],
    "charging": {"unit": "gpu-hours", "per": "gpu"},
}  # fmt: skip
BOX = {
    "kind": "ssh",
    "scheduler": "none",
    "verified": "2026-11",
    "partitions": [{"name": "smoke", "purpose": "smoke"}, {"name": "big", "purpose": "production"}],
}
HERE = {"kind": "local", "scheduler": "none", "verified": "2026-11", "partitions": [
    {"name": "default", "purpose": "smoke"}]}  # fmt: skip
K8S = {"kind": "kubernetes", "scheduler": "kubernetes", "verified": "2026-11"}
PAGES: Mapping[str, Mapping[str, Any] | None] = {
    "hpc": CLUSTER,
    "rent": BOX,
    "local": HERE,
    "k8s": K8S,
}


def ask(q: Ask, backends: tuple[str, ...] = ("hpc", "rent", "local", "k8s")) -> advice.Advice:
    return advice.advise(backends=backends, smoke_backend="hpc", pages=PAGES, ask=q)


@pytest.mark.parametrize(
    ("q", "question", "backend", "partition", "qos"),
    [
        (Ask(hours=0.2), 1, "local", "default", None),
        (Ask(smoke=True), 2, "hpc", "debug", None),
        (Ask(gpu=True, hours=0.5), 2, "hpc", "gpu-debug", None),
        (Ask(gpu=True, hours=6), 3, "hpc", "gpu", "normal"),
        (Ask(gpu=True, hours=6, urgent=True), 3, "rent", "big", None),
        (Ask(hours=6), 3, "hpc", "cpu", None),
        (Ask(gpu=True, hours=20), 4, "rent", "big", None),  # over the GPU partition's 12 h
        (Ask(hours=20), 4, "hpc", "cpu", None),
        (Ask(gpu=True, hours=30), 5, "hpc", "gpu", "normal"),
        (Ask(hours=2, tasks=200), 6, "hpc", "cpu", None),
    ],
)
def test_each_question_picks_from_the_pages(
    q: Ask, question: int, backend: str, partition: str, qos: str | None
) -> None:
    found = ask(q)
    assert (found.question, found.backend, found.partition, found.qos) == (
        question,
        backend,
        partition,
        qos,
    )
    assert found.not_advised == {"k8s": "no runner for kind 'kubernetes'"}


def test_a_chain_for_a_long_job_counts_its_links_and_prices_each_task() -> None:
    found = ask(Ask(gpu=True, hours=30))
    assert "a chain of 3 jobs of at most 12:00:00" in found.how
    assert found.cost == "30 gpu-hours"  # 1 GPU × 30 h, the page's charging block
    assert ("hpc", "partition.max_walltime", "12:00:00") in [
        (f.page, f.key, f.value) for f in found.facts
    ]


def test_failover_follows_the_campaign_order_and_nothing_fitting_asks_a_person() -> None:
    assert ask(Ask(hours=6)).failover == ("rent",)
    assert ask(Ask(hours=2, tasks=200)).failover == ("rent", "local")
    none = ask(Ask(gpu=True, hours=6), backends=("local", "k8s"))
    assert (none.question, none.backend) == (0, None)
    assert "ask a person" in none.how


def test_a_page_with_no_runner_or_no_page_is_never_advised() -> None:
    found = advice.advise(
        backends=("k8s", "gone"),
        smoke_backend="k8s",
        pages={"k8s": K8S, "gone": None},
        ask=Ask(smoke=True),
    )
    assert found.backend is None
    assert found.not_advised == {
        "k8s": "no runner for kind 'kubernetes'",
        "gone": "no page in backends/",
    }


def test_campaign_advise_through_the_cli(new_campaign: Callable[..., Path]) -> None:
    root = new_campaign(
        "advised", "backends=generic-gridengine,vast-ai,local", "smoke_backend=generic-gridengine"
    )

    def advise(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "campaignops", "advise", *args]
        return subprocess.run(argv, cwd=root, capture_output=True, text=True, check=False)

    smoke = advise("--smoke", "--format", "json")
    assert smoke.returncode == 0, smoke.stderr
    doc = json.loads(smoke.stdout)
    assert doc["schema"] == "campaignops/advise/v1"
    assert (doc["question"], doc["backend"], doc["stage"]) == (2, "generic-gridengine", "smoke")
    urgent = advise("--gpu", "--hours", "6", "--urgent")
    assert urgent.returncode == 0, urgent.stderr
    assert "backend:   vast-ai (rented box)" in urgent.stdout
    for hours in ("0", "nan", "inf", "-1"):
        bad = advise("--gpu", "--hours", hours)
        assert bad.returncode == 2, (hours, bad.stderr)
        assert "--hours must be above 0" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize("hours", [0.0, -1.0, float("nan"), float("inf")])
def test_hours_no_job_can_have_are_a_usage_error(hours: float) -> None:
    # NaN and infinity reached the chain's arithmetic (question 5) as a traceback.
    with pytest.raises(UsageError, match="--hours must be above 0"):
        ask(Ask(gpu=True, hours=hours))
