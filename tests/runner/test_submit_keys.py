"""campaign submit refuses what it would not run: a manifest key it ignores, an output outside
the campaign. Through the CLI, in a campaign from `campaign new`, on the local backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import git

BASE = """\
backend: local
resources: {time: "00:05:00"}
jobs:
  - id: t1
    cmd: python3 -c "print(1)"
"""


@pytest.fixture
def camp(demo: Path) -> Path:
    return demo


def commit(root: Path, text: str) -> str:
    (root / "manifests/keys.yaml").write_text(text)
    git(root, "add", "manifests/keys.yaml")
    git(root, "commit", "-qm", "manifest")
    return "manifests/keys.yaml"


@pytest.mark.parametrize(
    ("extra", "where", "words"),
    [
        ("conda: torch\n", "manifests/keys.yaml:1:1: MAN012 conda is accepted", "no conda"),
        (
            "preconditions: [{type: gpu_free, path: x}]\n",
            "manifests/keys.yaml:1:24: MAN013 preconditions[0]",
            "'gpu_free'",
        ),
    ],
)
def test_a_key_the_runner_would_ignore_refuses_the_submission(  # type: ignore[no-untyped-def]
    camp: Path, run, extra: str, where: str, words: str
) -> None:
    rel = commit(camp, extra + BASE)
    result = run("submit", rel, "--stage", "smoke", "--dry-run")
    assert result.code == 2
    assert result.err.startswith(f"campaign: error: {where}")
    assert words in result.err
    assert (
        not (camp / ".campaign/ledger.jsonl").exists()
        or not (camp / ".campaign/ledger.jsonl").read_text().strip()
    )


def test_an_output_outside_the_campaign_refuses_the_submission(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    rel = commit(camp, BASE + "    output: ../elsewhere/metrics.json\n")
    result = run("submit", rel, "--stage", "smoke", "--dry-run")
    assert result.code == 2
    assert "MAN014 output '../elsewhere/metrics.json' of target 't1' leaves the campaign" in (
        result.err
    )
