"""VIEW: blocks out of sync with their sources (VIEW001), broken markers (VIEW002), unrenderable
sources (VIEW003), each at the exact marker line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import git


def line_of(path: Path, text: str) -> int:
    """1-based number of the first line of ``path`` holding ``text``."""
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


def begin(path: Path, name: str) -> tuple[str, int]:
    return path.name, line_of(path, f"<!-- campaign:begin {name} -->")


def check(run, *args: str):  # type: ignore[no-untyped-def]
    return run("check", "--select", "VIEW", "--format", "json", *args)


def findings(run, *args: str) -> list[dict[str, object]]:  # type: ignore[no-untyped-def]
    return check(run, *args).json()["findings"]


def test_clean_fixture_is_silent(campaign: Path, run) -> None:
    result = check(run)
    assert (result.code, result.json()["findings"]) == (0, [])


def test_editing_the_backends_in_campaign_yaml(campaign: Path, run) -> None:
    policy = campaign / "campaign.yaml"
    policy.write_text(policy.read_text().replace("[local, generic-slurm]", "[generic-slurm]"))

    result = check(run)

    assert result.code == 1
    assert result.where() == [(*begin(campaign / "AGENTS.md", "backends"), "VIEW001")]
    assert result.json()["findings"][0]["message"] == (
        "view 'backends' is out of sync with campaign.yaml and backend pages"
    )


def test_editing_a_backend_page(campaign: Path, run) -> None:
    page = campaign / "backends" / "local.md"
    page.write_text(page.read_text().replace("verified: 2026-11", "verified: 2026-10"))
    assert check(run).where() == [(*begin(campaign / "AGENTS.md", "backends"), "VIEW001")]


def test_editing_failures_yaml(campaign: Path, run) -> None:
    catalog = campaign / "failures.yaml"
    catalog.write_text(catalog.read_text().replace("verified: 2026-10", "verified: 2026-11"))

    result = check(run)

    assert result.where() == [(*begin(campaign / "FAILURES.md", "failures"), "VIEW001")]
    assert "failures.yaml" in str(result.json()["findings"][0]["message"])


def test_a_ledger_append_puts_both_status_views_out_of_sync(campaign: Path, run) -> None:
    record = {
        "v": 1,
        "kind": "intent",
        "ledger_id": "L-000001",
        "time": "2026-11-20T10:00:00Z",
        "backend": "local",
        "stage": "smoke",
        "targets": ["lr0.1_s1"],
    }
    (campaign / ".campaign" / "ledger.jsonl").write_text(json.dumps(record) + "\n")
    status = campaign / "STATUS.md"

    result = check(run)

    assert result.where() == [
        (*begin(status, "stages"), "VIEW001"),
        (*begin(status, "jobs"), "VIEW001"),
    ]
    assert {f["message"] for f in result.json()["findings"]} == {
        "view 'stages' is out of sync with .campaign/ledger.jsonl and the smoked targets' "
        "manifests, queues, configs, scripts",
        "view 'jobs' is out of sync with .campaign/ledger.jsonl",
    }


def test_a_hand_edit_inside_a_block(campaign: Path, run) -> None:
    status = campaign / "STATUS.md"
    status.write_text(status.read_text().replace("| no jobs yet |  |  |  |\n", "| x |\n", 1))
    assert check(run).where() == [(*begin(status, "stages"), "VIEW001")]


def test_render_then_check_is_clean(campaign: Path, run) -> None:
    (campaign / "campaign.yaml").write_text(
        (campaign / "campaign.yaml").read_text().replace("[local, generic-slurm]", "[local]")
    )
    (campaign / "failures.yaml").write_text("version: 1\nfailures: []\n")
    assert len(findings(run)) == 2

    assert run("render").code == 0

    result = check(run)
    assert (result.code, result.json()["findings"]) == (0, [])


NOTES = """\
# Notes
<!-- campaign:begin jobs -->
<!-- campaign:end jobs -->
text
<!-- campaign:end stages -->
<!-- campaign:begin costs -->
<!-- campaign:end costs -->
<!-- campaign:begin stages -->
<!-- campaign:begin jobs -->
<!-- campaign:end jobs -->
<!-- campaign:end stages -->
<!-- campaign:begin failures -->
<!-- campaign:end backends -->
   <!-- campaign:begin -->
<!-- campaign:begin backends -->
"""


def test_each_marker_defect_at_its_line(campaign: Path, run) -> None:
    (campaign / "NOTES.md").write_text(NOTES)

    result = check(run)

    assert result.code == 1
    got = [(f["path"], f["line"], f["col"], f["message"]) for f in result.json()["findings"]]
    assert got == [
        ("NOTES.md", 2, 1, "view 'jobs' is out of sync with .campaign/ledger.jsonl"),
        ("NOTES.md", 5, 1, "end of view 'stages' without a begin marker"),
        ("NOTES.md", 6, 1, "unknown view 'costs'"),
        ("NOTES.md", 9, 1, "view 'jobs' begins inside view 'stages' (line 8); blocks do not nest"),
        ("NOTES.md", 13, 1, "end of view 'backends' closes view 'failures' (begun at line 12)"),
        ("NOTES.md", 14, 4, "malformed view marker: <!-- campaign:begin -->"),
        ("NOTES.md", 15, 1, "view 'backends' has no end marker"),
    ]
    assert {f["id"] for f in result.json()["findings"][1:]} == {"VIEW002"}
    assert "NAME is one of backends, failures, stages, jobs, budget" in str(
        result.json()["findings"][1]["hint"]
    )


def test_examples_in_fenced_code_are_not_blocks(campaign: Path, run) -> None:
    (campaign / "README.md").write_text(
        "Example:\n\n```markdown\n<!-- campaign:begin costs -->\n```\n"
    )
    assert findings(run) == []


@pytest.mark.parametrize(
    ("path", "content", "view", "problem"),
    [
        (
            "failures.yaml",
            "version: 1\nfailures: [\n",
            "failures",
            "failures.yaml: not valid YAML (line 3, column 1",
        ),
        (
            "backends/local.md",
            "---\nkind: [local\n---\n",
            "backends",
            "backends/local.md: front matter is not valid YAML (line 3",
        ),
    ],
)
def test_unrenderable_source_is_view003_at_the_marker(
    campaign: Path, run, path: str, content: str, view: str, problem: str
) -> None:
    (campaign / path).write_text(content)
    home = {"failures": "FAILURES.md", "backends": "AGENTS.md"}[view]

    result = check(run)

    assert result.code == 1
    assert result.where() == [(*begin(campaign / home, view), "VIEW003")]
    finding = result.json()["findings"][0]
    assert str(finding["message"]).startswith(f"view {view!r} cannot be rendered: {problem}")
    assert finding["hint"] == f"fix {path}, then run campaign render"


def test_missing_failure_catalog_is_view003(campaign: Path, run) -> None:
    (campaign / "failures.yaml").unlink()
    result = check(run)
    assert result.where() == [(*begin(campaign / "FAILURES.md", "failures"), "VIEW003")]
    assert result.json()["findings"][0]["message"] == (
        "view 'failures' cannot be rendered: failures.yaml: no such file"
    )


def test_passing_only_a_source_checks_the_views_built_from_it(repo: Path, run) -> None:
    catalog = repo / "failures.yaml"
    catalog.write_text(catalog.read_text().replace("verified: 2026-10", "verified: 2026-11"))
    changed = git(repo, "diff", "--name-only").split()
    assert changed == ["failures.yaml"]

    assert check(run, *changed).where() == [(*begin(repo / "FAILURES.md", "failures"), "VIEW001")]
    # A Markdown file alone is checked alone, against sources read from the root.
    assert check(run, "FAILURES.md").where() == [
        (*begin(repo / "FAILURES.md", "failures"), "VIEW001")
    ]
    assert check(run, "AGENTS.md").where() == []


def test_a_ledger_torn_inside_a_character_is_still_rendered(campaign: Path, run) -> None:
    torn = '{"v": 1, "kind": "intent", "ledger_id": "L-000001", "targets": ["é'.encode()[:-1]
    (campaign / ".campaign" / "ledger.jsonl").write_bytes(torn)

    result = check(run)

    assert result.code == 1  # findings, not an unreadable input
    status = campaign / "STATUS.md"
    assert result.where() == [(*begin(status, "jobs"), "VIEW001")]
    assert run("render").code == 0
    assert "- .campaign/ledger.jsonl line 1 skipped: not valid UTF-8 (torn last line)" in (
        status.read_text()
    )
    assert check(run).where() == []
