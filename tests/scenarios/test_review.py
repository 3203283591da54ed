"""Story: a pull request that grows the campaign, read by `campaign review`.

A campaign from `campaign new` whose local page has a price (3 USD per node-hour), committed on
main. A branch adds a grid value (`deep`), edits a config the grid reads (`wide.yaml`), appends
a queue line, and raises the example manifest's time limit from 10 minutes to an hour. The
review against main names the two new grid targets and the new queue cell, the targets whose
fingerprint the config edit changed (and not those whose time limit alone changed: time is
placement, masked in the fingerprint), the appended line, and the cost before and after. The
Markdown comment is compared in full; an edit to a queue line is an introduced finding (exit 1).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import git

PRICE = """\
charging:
  unit: usd
  per: node
  per_hour: 3
  source: "the story: a local machine billed like a rented one"
  verified: 2026-11
"""


def _edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.fixture
def branch(demo: Path) -> Path:
    """main: the campaign with a priced local page; HEAD: the branch `grow` with the change."""
    _edit(demo, "backends/local.md", "---\n", "---\n" + PRICE)
    # A priced backend needs a budget: at the template's 0 every task is over the cap (MAN018).
    _edit(demo, "campaign.yaml", "cloud_usd: 0\n", "cloud_usd: 500\n")
    git(demo, "commit", "-qam", "price the local machine")
    git(demo, "checkout", "-qb", "grow")
    _edit(demo, "manifests/example.yaml", "cfg: [baseline, wide]", "cfg: [baseline, wide, deep]")
    _edit(
        demo,
        "manifests/example.yaml",
        'resources: {time: "00:10:00"',
        'resources: {time: "01:00:00"',
    )
    (demo / "configs/example/deep.yaml").write_text("lr: 0.1\nwidth: 8\n", encoding="utf-8")
    _edit(demo, "configs/example/wide.yaml", "width: 4", "width: 5")
    with (demo / "queues/example.txt").open("a", encoding="utf-8") as fh:
        fh.write("configs/example/deep.yaml reconstruction 3\n")
    git(demo, "add", "-A")
    git(demo, "commit", "-qm", "grow: a deeper config, a longer limit")
    return demo


def test_review_json_names_new_targets_resmokes_appended_line_and_cost(branch: Path, run) -> None:  # type: ignore[no-untyped-def]
    # Uncommitted edits are not part of the change under review.
    _edit(branch, "configs/example/baseline.yaml", "width: 1", "width: 2")
    done = run("review", "--base", "main", "--format", "json", "--today", "2026-11-21")
    assert done.code == 0, done.err
    data = json.loads(done.out)
    assert data["base"] == {"ref": "main", "commit": git(branch, "rev-parse", "main").strip()}
    assert data["targets"]["added"] == [
        {"manifest": "manifests/example-queue.yaml", "target": "deep", "phase": None},
        {"manifest": "manifests/example.yaml", "target": "deep_reconstruction", "phase": None},
        {"manifest": "manifests/example.yaml", "target": "deep_segmentation", "phase": None},
    ]
    assert data["targets"]["removed"] == []
    changed = {c["target"]: c["changes"] for c in data["targets"]["changed"]}
    assert changed["baseline_reconstruction"] == [
        {"field": "resources.production.time", "before": "00:10:00", "after": "01:00:00"}
    ]
    assert [c["field"] for c in changed["wide_segmentation"]] == [
        "file configs/example/wide.yaml",
        "resources.production.time",
    ]
    assert data["resmoke"] == [
        {
            "manifest": "manifests/example-queue.yaml",
            "target": "wide",
            "phase": None,
            "because": ["file configs/example/wide.yaml"],
        },
        {
            "manifest": "manifests/example.yaml",
            "target": "wide_reconstruction",
            "phase": None,
            "because": ["file configs/example/wide.yaml"],
        },
        {
            "manifest": "manifests/example.yaml",
            "target": "wide_segmentation",
            "phase": None,
            "because": ["file configs/example/wide.yaml"],
        },
    ]
    assert data["queues"] == [
        {
            "path": "queues/example.txt",
            "appended": [{"line": 8, "text": "configs/example/deep.yaml reconstruction 3"}],
            "edits": [],
        }
    ]
    production = {
        side: next(
            c
            for c in data["cost"][side]
            if c["manifest"] == "manifests/example.yaml" and c["stage"] == "production"
        )
        for side in ("before", "after")
    }
    # 4 targets x 10 min x 1 node at 3 USD/h, then 6 targets x 1 h.
    assert production["before"] == {
        "manifest": "manifests/example.yaml",
        "stage": "production",
        "backend": "local",
        "tasks": 4,
        "node_hours": 0.6667,
        "gpu_hours": 0.0,
        "charged": 2.0,
        "unit": "usd",
    }
    assert production["after"]["tasks"] == 6
    assert production["after"]["node_hours"] == 6.0
    assert production["after"]["charged"] == 18.0
    assert data["findings"] == {"introduced": [], "fixed": []}
    assert data["policy"] == [] and data["wrappers"] == []


def test_review_markdown_is_the_comment(branch: Path, run) -> None:  # type: ignore[no-untyped-def]
    done = run("review", "--base", "main", "--today", "2026-11-21")
    assert done.code == 0, done.err
    base = git(branch, "rev-parse", "main").strip()[:12]
    head = git(branch, "rev-parse", "HEAD").strip()[:12]
    wide = "sha256 `" + _short(branch, "main", "configs/example/wide.yaml") + "`"
    wide_now = "sha256 `" + _short(branch, "HEAD", "configs/example/wide.yaml") + "`"
    edit = f"`file configs/example/wide.yaml`: {wide} → {wide_now}"
    time = "`resources.production.time`: `00:10:00` → `01:00:00`"
    assert (
        done.out
        == f"""\
<!-- campaign-review -->
### campaign review: `main` ({base}) → HEAD ({head})

**targets: 3 added, 0 removed, 5 changed · 3 to re-smoke · 1 queue line appended · \
cost changed in 4 manifest stages · findings: 0 introduced, 0 fixed**

#### Targets

| manifest | target | change |
|---|---|---|
| `manifests/example-queue.yaml` | `deep` | added |
| `manifests/example.yaml` | `deep_reconstruction` | added |
| `manifests/example.yaml` | `deep_segmentation` | added |
| `manifests/example-queue.yaml` | `wide` | {edit} |
| `manifests/example.yaml` | `baseline_reconstruction` | {time} |
| `manifests/example.yaml` | `baseline_segmentation` | {time} |
| `manifests/example.yaml` | `wide_reconstruction` | {edit}; {time} |
| `manifests/example.yaml` | `wide_segmentation` | {edit}; {time} |

#### Need a new smoke (fingerprint changed)

| manifest | target | because |
|---|---|---|
| `manifests/example-queue.yaml` | `wide` | `file configs/example/wide.yaml` |
| `manifests/example.yaml` | `wide_reconstruction` | `file configs/example/wide.yaml` |
| `manifests/example.yaml` | `wide_segmentation` | `file configs/example/wide.yaml` |

#### Cost at the time limits (every target once)

| manifest | stage | backend | before | after |
|---|---|---|---|---|
| `manifests/example-queue.yaml` | production | `local` | 2 tasks, 0.33 node-hours, charged 1.00 USD | \
3 tasks, 0.5 node-hours, charged 1.50 USD |
| `manifests/example-queue.yaml` | smoke | `local` | 2 tasks, 0.17 node-hours, charged 0.50 USD | \
3 tasks, 0.25 node-hours, charged 0.75 USD |
| `manifests/example.yaml` | production | `local` | 4 tasks, 0.67 node-hours, charged 2.00 USD | \
6 tasks, 6 node-hours, charged 18.00 USD |
| `manifests/example.yaml` | smoke | `local` | 4 tasks, 0.33 node-hours, charged 1.00 USD | \
6 tasks, 0.5 node-hours, charged 1.50 USD |

#### Queues

| file | line | change | text |
|---|---|---|---|
| `queues/example.txt` | 8 | appended | `configs/example/deep.yaml reconstruction 3` |
"""
    )


def _short(root: Path, ref: str, rel: str) -> str:
    import hashlib

    data = git(root, "show", f"{ref}:{rel}").encode()
    return hashlib.sha256(data).hexdigest()[:12]


def test_an_edited_queue_line_is_an_introduced_finding(branch: Path, run) -> None:  # type: ignore[no-untyped-def]
    _edit(branch, "queues/example.txt", "wide.yaml segmentation", "wide.yaml reconstruction")
    git(branch, "commit", "-qam", "rewrite a line of a queue in flight")
    done = run("review", "--base", "main", "--format", "json", "--today", "2026-11-21")
    assert done.code == 1, done.err
    data = json.loads(done.out)
    assert [(f["id"], f["path"], f["line"]) for f in data["findings"]["introduced"]] == [
        ("QUEUE004", "queues/example.txt", 7)
    ]
    assert data["queues"][0]["edits"] == [
        {"line": 7, "text": "line 7 was changed (it was 'configs/example/wide.yaml segmentation')"}
    ]


def test_a_base_that_is_no_commit_is_exit_2(branch: Path, run) -> None:  # type: ignore[no-untyped-def]
    done = run("review", "--base", "no-such-branch")
    assert done.code == 2
    assert "--base no-such-branch: cannot resolve" in done.err


def test_a_base_with_no_shared_history_is_compared_as_it_is_with_a_warning(
    branch: Path, run
) -> None:  # type: ignore[no-untyped-def]
    git(branch, "checkout", "-q", "--orphan", "replanted")
    git(branch, "commit", "-qm", "the same files, no shared history")
    done = run("review", "--base", "grow", "--format", "json", "--today", "2026-11-21")
    assert done.code == 0, done.err
    assert "warning: grow and HEAD share no history in this clone" in done.err
    data = json.loads(done.out)
    assert data["base"]["commit"] == git(branch, "rev-parse", "grow").strip()
    assert data["targets"] == {"added": [], "removed": [], "changed": []}
