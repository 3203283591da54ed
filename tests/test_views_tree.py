"""HPC_PLAYBOOK.md's backend questions are a view (issue 19, gap 8): the template's Jinja and
`campaign render` agree for every kind of campaign, and adding a backend rebuilds the tree."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from campaignops.generate import answers

COMBOS = [
    ("alpine,vast-ai,local", "alpine"),
    ("generic-gridengine,local", "generic-gridengine"),
    ("local", "local"),
    ("kubernetes,generic-ssh", "generic-ssh"),
    ("polaris,crux,lambda,runpod,kubernetes,local", "polaris"),
    (",".join(answers.BACKENDS), "vast-ai"),
]


def campaign(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "campaignops", *args]
    return subprocess.run(argv, cwd=root, capture_output=True, text=True, check=False)


@pytest.mark.parametrize(("backends", "smoke"), COMBOS)
def test_the_templates_tree_is_what_render_makes(
    new_campaign: Callable[..., Path], backends: str, smoke: str
) -> None:
    root = new_campaign("tree", f"backends={backends}", f"smoke_backend={smoke}")
    proc = campaign(root, "check", "--select", "VIEW", "--format", "json")
    assert proc.returncode == 0, proc.stdout
    assert "<!-- campaign:begin backend-tree -->" in (root / "HPC_PLAYBOOK.md").read_text()


GRIDENGINE_PAGE = """\
---
platform: site-sge
kind: gridengine
scheduler: gridengine
partitions:
  - {name: all.q, purpose: production, max_walltime: "48:00:00"}
verified: 2026-11
---
# site-sge
"""


def test_adding_a_backend_rebuilds_the_tree(new_campaign: Callable[..., Path]) -> None:
    root = new_campaign("grown", "backends=local", "smoke_backend=local")
    tree = (root / "HPC_PLAYBOOK.md").read_text()
    assert "no HPC or rented backend is authorized" in tree
    (root / "backends/site-sge.md").write_text(GRIDENGINE_PAGE)
    policy = (root / "campaign.yaml").read_text()
    (root / "campaign.yaml").write_text(
        policy.replace("backends: [local]", "backends: [local, site-sge]")
    )
    assert "site-sge" in (root / "campaign.yaml").read_text()
    stale = campaign(root, "check", "--select", "VIEW", "--format", "json")
    assert stale.returncode == 1
    found = json.loads(stale.stdout)["findings"]
    assert [(f["id"], f["path"]) for f in found if f["path"] == "HPC_PLAYBOOK.md"] == [
        ("VIEW001", "HPC_PLAYBOOK.md")
    ]
    assert campaign(root, "render").returncode == 0
    tree = (root / "HPC_PLAYBOOK.md").read_text()
    assert "→ the production partition of [`site-sge`](backends/site-sge.md)." in tree
    assert "the failover order of `campaign.yaml`: local → site-sge." in tree
    assert campaign(root, "check", "--select", "VIEW").returncode == 0
