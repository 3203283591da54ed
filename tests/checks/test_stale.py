"""STALE: stamps aged against --today and the policy, malformed stamps, unstamped backend pages."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from campaignops.core import gitrefs
from tests.conftest import Result, git

Run = Callable[..., Result]

# Line numbers are part of the assertions below: keep them in step with this text.
PLAYBOOK = """\
# HPC playbook

At the time limit Slurm sends SIGTERM (verified slurm.schedmd.com/sbatch.html 2026-04).
The array limit is MaxArraySize (verified 2026-05).
Spot instances get two minutes' notice (verified aws.amazon.com/ec2/spot 2026-12).
The GPU quota is four per user (verified 2026-13).
We verified that it works, and verified by hand the 2026-01 results.
Verified Jnue 2026 on the cluster wiki.
Tomorrow's maintenance window (verified 2026-11-22) and today's (verified 2026-11-21).
The scratch purge is 30 days (verified docs.example.org/scratch
+ purge.html Jun 2025).
"""
PLAYBOOK_FINDINGS = [
    ("HPC_PLAYBOOK.md", 3, "STALE001"),
    ("HPC_PLAYBOOK.md", 5, "STALE004"),
    ("HPC_PLAYBOOK.md", 6, "STALE002"),
    ("HPC_PLAYBOOK.md", 8, "STALE002"),
    ("HPC_PLAYBOOK.md", 9, "STALE004"),
    ("HPC_PLAYBOOK.md", 10, "STALE001"),
]


def stale(run: Run, *args: str) -> Result:
    return run("check", "--select", "STALE", "--format", "json", *args)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


def test_clean_fixture_is_silent(campaign: Path, run: Run) -> None:
    result = stale(run)
    assert result.code == 0, result.out + result.err
    assert result.json()["findings"] == []


def test_planted_stamps_are_caught_at_their_lines(campaign: Path, run: Run) -> None:
    (campaign / "HPC_PLAYBOOK.md").write_text(PLAYBOOK)
    result = stale(run)
    assert result.code == 1
    assert sorted(result.where()) == PLAYBOOK_FINDINGS


def test_messages_name_the_stamp_its_age_and_the_limit(campaign: Path, run: Run) -> None:
    (campaign / "HPC_PLAYBOOK.md").write_text(PLAYBOOK)
    by_line = {int(str(f["line"])): f for f in stale(run).json()["findings"]}
    old = by_line[3]
    assert old["col"] == 40
    assert old["message"] == (
        "stamp 'verified slurm.schedmd.com/sbatch.html 2026-04' is 7 months old (policy allows 6)"
    )
    assert "slurm.schedmd.com/sbatch.html" in str(old["hint"])
    assert "2026-11" in str(old["hint"])
    assert "verified 2026-13" in str(by_line[6]["message"])
    assert "2026-11-21" in str(by_line[5]["message"])
    # A stamp wrapped over two lines is reported where it starts, whole.
    assert "docs.example.org/scratch + purge.html Jun 2025" in str(by_line[10]["message"])


def test_today_changes_the_verdict(campaign: Path, run: Run) -> None:
    (campaign / "HPC_PLAYBOOK.md").write_text(PLAYBOOK)
    later = stale(run, "--today", "2027-01-05")
    assert sorted(later.where()) == [
        ("HPC_PLAYBOOK.md", 3, "STALE001"),  # 9 months
        ("HPC_PLAYBOOK.md", 4, "STALE001"),  # 8 months
        ("HPC_PLAYBOOK.md", 6, "STALE002"),
        ("HPC_PLAYBOOK.md", 8, "STALE002"),
        ("HPC_PLAYBOOK.md", 10, "STALE001"),
    ]
    earlier = stale(run, "--today", "2026-06-10")
    assert ("HPC_PLAYBOOK.md", 3, "STALE001") not in earlier.where()
    # The fixture's own backend stamps (2026-10, 2026-11) are in the future on that date.
    assert ("backends/local.md", 14, "STALE004") in earlier.where()
    assert ("failures.yaml", 11, "STALE004") in earlier.where()


def test_age_limit_is_exclusive(campaign: Path, run: Run) -> None:
    (campaign / "NOTES.md").write_text("a (verified 2026-05)\nb (verified 2026-04)\n")
    assert stale(run).where() == [("NOTES.md", 2, "STALE001")]


def test_policy_age_changes_the_verdict(campaign: Path, run: Run) -> None:
    today = ("--today", "2026-12-21")
    assert stale(run, *today).where() == []
    edit(campaign / "campaign.yaml", "stale_after_months: 6", "stale_after_months: 1")
    result = stale(run, *today)
    assert result.code == 1
    assert sorted(result.where()) == [
        ("backends/generic-slurm.md", 19, "STALE001"),
        ("backends/generic-slurm.md", 25, "STALE001"),
        ("failures.yaml", 11, "STALE001"),
    ]
    assert "2 months old (policy allows 1)" in str(result.json()["findings"][0]["message"])


def test_backend_page_without_a_stamp(campaign: Path, run: Run) -> None:
    page = campaign / "backends" / "local.md"
    edit(page, "verified: 2026-11\n", "")
    assert stale(run).where() == []  # the body's stamp still counts
    edit(page, " (verified 2026-11)", "")
    result = stale(run)
    assert result.code == 1
    assert result.where() == [("backends/local.md", 1, "STALE003")]


def test_backend_page_with_only_a_malformed_stamp(campaign: Path, run: Run) -> None:
    page = campaign / "backends" / "local.md"
    edit(page, "verified: 2026-11\n", "verified: last month\n")
    edit(page, " (verified 2026-11)", "")
    assert sorted(stale(run).where()) == [
        ("backends/local.md", 1, "STALE003"),
        ("backends/local.md", 14, "STALE002"),
    ]


def test_stale_and_future_backend_stamps_still_count_as_stamps(campaign: Path, run: Run) -> None:
    page = campaign / "backends" / "local.md"
    edit(page, "verified: 2026-11\n", "verified: 2027-02\n")
    edit(page, " (verified 2026-11)", "")
    assert stale(run).where() == [("backends/local.md", 14, "STALE004")]


def test_backend_template_placeholders_are_not_stamps(campaign: Path, run: Run) -> None:
    (campaign / "backends" / "TEMPLATE.md").write_text(
        "---\nplatform: NAME\nverified: YYYY-MM\n---\n\nFacts (verified <source> YYYY-MM).\n"
    )
    assert stale(run).where() == []
    (campaign / "docs").mkdir()
    (campaign / "docs" / "TEMPLATE.md").write_text("(verified YYYY-MM)\n")
    assert stale(run).where() == [("docs/TEMPLATE.md", 1, "STALE002")]


def test_front_matter_key_without_a_date_is_malformed(campaign: Path, run: Run) -> None:
    page = campaign / "backends" / "generic-slurm.md"
    edit(page, "verified: 2026-10\n", "verified: TBD\n")
    result = stale(run)
    assert result.where() == [("backends/generic-slurm.md", 19, "STALE002")]
    assert str(result.json()["findings"][0]["hint"]).startswith("write verified: YYYY-MM")
    # In the body the same line is prose, not a stamp.
    (campaign / "NOTES.md").write_text("# Notes\n\nverified: TBD\nVerified: by hand\n")
    assert stale(run).where() == [("backends/generic-slurm.md", 19, "STALE002")]


def test_failure_catalog_is_read_as_yaml(campaign: Path, run: Run) -> None:
    catalog = campaign / "failures.yaml"
    catalog.write_text(
        catalog.read_text()
        + "  - id: killwait\n"  # line 12
        + "    category: walltime\n"
        + '    fix: "checkpoint on SIGTERM (verified slurm.schedmd.com 2025-01)"\n'  # line 14
        + "    verified: soon\n"  # line 15
        + "  - id: old\n"
        + '    verified: "2026-02"\n'  # line 17
    )
    assert sorted(stale(run).where()) == [
        ("failures.yaml", 14, "STALE001"),
        ("failures.yaml", 15, "STALE002"),
        ("failures.yaml", 17, "STALE001"),
    ]


def test_explicit_paths_check_only_those_files(campaign: Path, run: Run) -> None:
    (campaign / "HPC_PLAYBOOK.md").write_text(PLAYBOOK)
    (campaign / "NOTES.md").write_text("(verified 2020-01)\n")
    result = stale(run, "NOTES.md")
    assert result.where() == [("NOTES.md", 1, "STALE001")]
    page = campaign / "backends" / "local.md"
    page.write_text(re.sub(r"verified:? [0-9-]+", "checked", page.read_text()))
    assert stale(run, "backends/local.md").where() == [("backends/local.md", 1, "STALE003")]


def test_crlf_and_unreadable_files(campaign: Path, run: Run) -> None:
    (campaign / "NOTES.md").write_bytes(b"a\r\nb (verified 2026-13)\r\n")
    (campaign / "BINARY.md").write_bytes(b"verified 2020-01\x00")
    result = stale(run)
    assert result.code == 2  # the binary file is refused, the other one still checked
    assert result.where() == [("NOTES.md", 2, "STALE002")]


def test_select_single_id(campaign: Path, run: Run) -> None:
    (campaign / "HPC_PLAYBOOK.md").write_text(PLAYBOOK)
    result = run("check", "--select", "STALE004", "--format", "json")
    assert sorted(result.where()) == [
        ("HPC_PLAYBOOK.md", 5, "STALE004"),
        ("HPC_PLAYBOOK.md", 9, "STALE004"),
    ]


# With --base, STALE judges only the files a change touches (docs/formats.md, "Stamps at
# commit time"); the rest are the scheduled audit's.
LATER = ("--today", "2027-06-01")


def test_base_reports_stale_stamps_only_in_touched_files(repo: Path, run: Run) -> None:
    (repo / "HPC_PLAYBOOK.md").write_text(PLAYBOOK)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "playbook")
    everything = stale(run, *LATER)
    assert {path for path, _, _ in everything.where()} == {
        "HPC_PLAYBOOK.md",
        "backends/generic-slurm.md",
        "backends/local.md",
        "failures.yaml",
    }
    nothing_touched = stale(run, *LATER, "--base", "HEAD")
    assert nothing_touched.code == 0, nothing_touched.out
    assert nothing_touched.where() == []
    # An unstaged edit, a staged one and an untracked file are each part of the change.
    edit(repo / "backends" / "local.md", "# ", "#  ")
    assert {p for p, _, _ in stale(run, *LATER, "--base", "HEAD").where()} == {"backends/local.md"}
    edit(repo / "failures.yaml", "version: 1", "version: 1 ")
    git(repo, "add", "failures.yaml")
    (repo / "NOTES.md").write_text("(verified 2020-01)\n")
    touched = stale(run, *LATER, "--base", "HEAD")
    assert touched.code == 1
    assert {p for p, _, _ in touched.where()} == {"backends/local.md", "failures.yaml", "NOTES.md"}
    # What each file reports is what the full run reports for it.
    assert sorted(w for w in touched.where() if w[0] != "NOTES.md") == sorted(
        w for w in everything.where() if w[0] in ("backends/local.md", "failures.yaml")
    )


def test_base_scope_covers_every_stale_code_and_a_staged_then_reverted_edit(
    repo: Path, run: Run
) -> None:
    page = repo / "backends" / "local.md"
    original = page.read_text()
    edit(page, "verified: 2026-11\n", "")
    edit(page, " (verified 2026-11)", "")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "unstamped page")
    assert stale(run, "--base", "HEAD").where() == []
    assert stale(run).where() == [("backends/local.md", 1, "STALE003")]
    # Staged, then put back in the work tree: the commit being made still changes the page.
    page.write_text(original)
    git(repo, "add", "-A")
    page.write_text(original.replace("verified: 2026-11\n", "").replace(" (verified 2026-11)", ""))
    assert stale(run, "--base", "HEAD").where() == [("backends/local.md", 1, "STALE003")]


def test_base_leaves_other_families_as_they_were(repo: Path, run: Run) -> None:
    (repo / "scripts" / "helper.sh").write_text("#!/bin/bash\necho hi\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "unversioned wrapper")
    result = run("check", "--format", "json", "--base", "HEAD", *LATER)
    assert result.code == 1
    assert result.where() == [("scripts/helper.sh", 1, "WRAP001")]


def test_changed_files_are_relative_to_a_campaign_in_a_subdirectory(tmp_path: Path) -> None:
    top = tmp_path / "top"
    (top / "camp").mkdir(parents=True)
    (top / "camp" / "a.md").write_text("a\n")
    (top / "b.md").write_text("b\n")
    git(top, "init", "-q")
    git(top, "add", "-A")
    git(top, "commit", "-qm", "one")
    (top / "camp" / "a.md").write_text("a2\n")
    (top / "b.md").write_text("b2\n")
    (top / "camp" / "new.md").write_text("n\n")
    (top / "camp" / "gone.md").write_text("x\n")
    (top / ".gitignore").write_text("camp/ignored.md\n")
    (top / "camp" / "ignored.md").write_text("i\n")
    assert gitrefs.changed_files(top / "camp", ref="HEAD") == {"a.md", "new.md", "gone.md"}
    (top / "camp" / "a.md").unlink()
    assert gitrefs.changed_files(top / "camp", ref="HEAD") == {"new.md", "gone.md"}


def test_a_branch_is_measured_from_where_it_left_its_base(repo: Path, run: Run) -> None:
    git(repo, "branch", "-M", "main")
    git(repo, "checkout", "-qb", "topic")
    edit(repo / "backends" / "local.md", "# ", "#  ")
    git(repo, "commit", "-qam", "topic edits the local page")
    git(repo, "checkout", "-q", "main")
    edit(repo / "failures.yaml", "version: 1", "version: 1 ")
    git(repo, "commit", "-qam", "main edits the catalog")
    git(repo, "checkout", "-q", "topic")
    # The catalog differs from main, but the branch never touched it: as a pull request's diff.
    assert {p for p, _, _ in stale(run, *LATER, "--base", "main").where()} == {"backends/local.md"}


def test_base_that_does_not_resolve_is_a_usage_error(repo: Path, run: Run) -> None:
    result = stale(run, "--base", "no-such-ref")
    assert result.code == 2
    assert "--base no-such-ref: cannot resolve base" in result.err


def test_base_head_before_the_first_commit_is_a_full_check(campaign: Path, run: Run) -> None:
    """copier copy, git init, pre-commit install, git commit: the hook's `--base HEAD` has no
    HEAD yet; everything is new, so everything is checked (never exit 2)."""
    git(campaign, "init", "-q")
    git(campaign, "add", "-A")
    first = stale(run, *LATER, "--base", "HEAD")
    assert first.code == 1, first.err
    assert {p for p, _, _ in first.where()} == {p for p, _, _ in stale(run, *LATER).where()}
    assert stale(run, "--base", "main").code == 2  # any other ref still has to resolve
