"""No manifest of the test corpora passes `campaign check` and then fails at submit.

Each manifest of ``tests/data/manifests`` (and the generated campaign's own) goes into a campaign
with every kind of backend page (local, Slurm, PBS, an ssh box listing the seed's SJTUServer5, and
kubernetes, which has no runner). Where check accepts it, ``submit --dry-run`` must pass every
gate but those only the moment of submission decides (smoke_first's missing smoke); where check
refuses it, these are the findings, one per edit the manifest needs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import git

CORPUS = Path(__file__).resolve().parents[1] / "data" / "manifests"
BACKENDS = "backends=local,generic-slurm,alpine,polaris,kubernetes,generic-ssh"
BOX = "instances:\n  - {name: box1, host: SJTUServer5, workdir: /data/runs, gpus: [0, 1, 2, 3]}\n"
# What check says of each corpus manifest (nothing: it must then submit).
EXPECTED = {
    "seed-experiment-queue.yaml": ["MAN012", "MAN019", "MAN013"],  # cwd, backend:, {N}
    "seed-experiment-queue-edited.yaml": [],
    "seed-phases.yaml": ["MAN014"],  # the glob in output_check
    "grid-no-command.yaml": ["MAN016"],
    "kubernetes.yaml": ["MAN017"],
    "precondition-grid-key.yaml": [],  # ${N} filled per task
    "precondition-unfilled.yaml": ["MAN013"],
    "alpine-48h.yaml": ["MAN018"],
    "alpine-long.yaml": [],
    "polaris-prod-one-node.yaml": ["MAN018"],
    "polaris-prod-ten-nodes.yaml": [],
    "smoke-too-long.yaml": ["MAN018"],
    "output-glob.yaml": ["MAN014"],
    "conda-hook-forms.yaml": [],
}
# Gates whose refusal only the moment of submission can decide (the ledger, the live queue).
AT_SUBMISSION = {"smoke_first"}
STAGE = re.compile(r"# stage: (\w+)")


@pytest.fixture(scope="module")
def corpus_names() -> list[str]:
    return sorted(p.name for p in CORPUS.glob("*.yaml"))


@pytest.fixture
def camp(new_campaign: Callable[..., Path]) -> Path:
    root = new_campaign("corpus", BACKENDS, "smoke_backend=local", "require_pushed=no")
    page = root / "backends/generic-ssh.md"
    page.write_text(page.read_text().replace("# instances:\n", BOX + "# instances:\n", 1))
    # Polaris charges an allocation share: without its size every submission there is refused
    # (MAN018 says so; here the corpus is about the manifests).
    policy = root / "campaign.yaml"
    text = policy.read_text().replace(
        "  # allocations: {polaris:", "  allocations: {polaris: 1000000}  #"
    )
    assert "allocations: {polaris: 1000000}" in text
    policy.write_text(text)
    for src in CORPUS.glob("*.yaml"):
        (root / "manifests" / src.name).write_text(src.read_text(encoding="utf-8"))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the corpus")
    return root


def test_the_corpus_is_the_listed_one(corpus_names: list[str]) -> None:
    assert corpus_names == sorted(EXPECTED)


def test_no_manifest_passes_check_then_fails_at_submit(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    accepted = []
    for rel in sorted(str(p.relative_to(camp)) for p in (camp / "manifests").glob("*.yaml")):
        found = run("check", "--select", "MAN", "--format", "json", rel).ids()
        name = rel.removeprefix("manifests/")
        if name in EXPECTED:
            assert found == EXPECTED[name], (rel, found)
        if found:
            continue
        accepted.append(name)
        stage = m[1] if (m := STAGE.match((camp / rel).read_text())) else "smoke"
        result = run("submit", rel, "--stage", stage, "--dry-run")
        refused = re.search(r"a submit would be refused by (.+)", result.err + result.out)
        gates = set(refused[1].split(", ")) if refused else set()
        assert result.code in (0, 1) and gates <= AT_SUBMISSION, (rel, result.err, result.out)
    # The seed as the checks edit it, and the shipped examples, are among those that run.
    assert {"seed-experiment-queue-edited.yaml", "example.yaml"} <= set(accepted)
