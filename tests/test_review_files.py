"""The file-level comparisons of a review: queue lines, wrappers, policy keys, facts, entries."""

from __future__ import annotations

from campaignops.gitops.review.files import (
    EntryChange,
    FactChange,
    Line,
    PolicyChange,
    QueueChange,
    WrapperChange,
    entry_changes,
    fact_changes,
    policy_changes,
    queue_change,
    wrapper_changes,
)

QUEUE = "# cells\nconfigs/a.yaml train 5\nconfigs/b.yaml train\n"


def test_appended_cells_are_listed_with_their_line_comments_and_blanks_are_not() -> None:
    new = QUEUE + "\n# more\nconfigs/c.yaml eval 2\n"
    assert queue_change("queues/q.txt", QUEUE, new) == QueueChange(
        "queues/q.txt", (Line(6, "configs/c.yaml eval 2"),)
    )


def test_an_unchanged_queue_or_a_commented_out_line_is_no_change() -> None:
    assert queue_change("q.txt", QUEUE, QUEUE) is None
    assert queue_change("q.txt", QUEUE, QUEUE.replace("configs/b", "# configs/b")) is None


def test_an_edited_line_is_an_edit_and_lines_past_the_old_end_are_still_appended() -> None:
    new = QUEUE.replace("train 5", "train 6") + "configs/c.yaml eval\n"
    assert queue_change("q.txt", QUEUE, new) == QueueChange(
        "q.txt",
        (Line(4, "configs/c.yaml eval"),),
        (Line(2, "line 2 was changed (it was 'configs/a.yaml train 5')"),),
    )


def test_a_new_queue_appends_every_cell_and_a_deleted_one_is_an_edit() -> None:
    assert queue_change("q.txt", None, QUEUE) == QueueChange(
        "q.txt", (Line(2, "configs/a.yaml train 5"), Line(3, "configs/b.yaml train"))
    )
    assert queue_change("q.txt", QUEUE, None) == QueueChange(
        "q.txt", (), (Line(1, "queue file was deleted"),)
    )


def test_a_new_wrapper_version_names_the_one_before_and_edits_in_place_are_changes() -> None:
    before = {
        "scripts/run.v1.sh": b"a",
        "scripts/run.v2.sh": b"b",
        "scripts/prep.v1.sh": b"c",
        "scripts/helper.sh": b"d",
    }
    after = {
        "scripts/run.v1.sh": b"a",
        "scripts/run.v2.sh": b"b",
        "scripts/run.v3.sh": b"b2",
        "scripts/prep.v1.sh": b"c, edited",
        "scripts/fresh.v1.sh": b"e",
        "scripts/helper.sh": b"d, edited",
    }
    assert wrapper_changes(before, after) == [
        WrapperChange("scripts/fresh.v1.sh", "added", None),
        WrapperChange("scripts/prep.v1.sh", "changed"),
        WrapperChange("scripts/run.v3.sh", "added", "scripts/run.v2.sh"),
    ]
    assert wrapper_changes(after, before) == [
        WrapperChange("scripts/fresh.v1.sh", "removed"),
        WrapperChange("scripts/prep.v1.sh", "changed"),
        WrapperChange("scripts/run.v3.sh", "removed"),
    ]


def test_policy_changes_are_dotted_keys_and_lists_compare_whole() -> None:
    old = {"backends": ["a", "b"], "budgets": {"cloud_usd": 0}, "stages": {"requeue": True}}
    new = {"backends": ["b", "a"], "budgets": {"cloud_usd": 50, "allocations": {"x": 10}}}
    assert policy_changes(old, new) == [
        PolicyChange("backends", ["a", "b"], ["b", "a"]),
        PolicyChange("budgets.allocations.x", None, 10),
        PolicyChange("budgets.cloud_usd", 0, 50),
        PolicyChange("stages.requeue", True, None),
    ]
    assert policy_changes(old, old) == []


PAGE = """\
---
kind: slurm
verified: 2026-10
---

# Site

Login host: login.example.org (verified https://example.org/login 2026-10).
Scratch is purged after 30 days (verified https://example.org/fs 2026-10).
Prose without a stamp.
"""


def test_facts_added_changed_removed_and_reverified_by_stamped_line() -> None:
    new = (
        PAGE.replace("verified: 2026-10", "verified: 2026-11")
        .replace("example.org/login 2026-10", "example.org/login 2026-11")
        .replace("after 30 days", "after 60 days")
        .replace("Prose without a stamp.", "Prose, edited.")
        + "GPUs: 4 per node (verified https://example.org/nodes 2026-11).\n"
    )
    assert fact_changes("backends/site.md", PAGE, new) == [
        FactChange("backends/site.md", 3, "re-verified", "verified: 2026-11", None,
                   "verified: 2026-10", "verified: 2026-11"),
        FactChange("backends/site.md", 8, "re-verified",
                   "Login host: login.example.org (verified https://example.org/login 2026-11).",
                   None, "verified https://example.org/login 2026-10",
                   "verified https://example.org/login 2026-11"),
        FactChange("backends/site.md", 9, "changed",
                   "Scratch is purged after 60 days (verified https://example.org/fs 2026-10).",
                   "Scratch is purged after 30 days (verified https://example.org/fs 2026-10).",
                   "verified https://example.org/fs 2026-10",
                   "verified https://example.org/fs 2026-10"),
        FactChange("backends/site.md", 11, "added",
                   "GPUs: 4 per node (verified https://example.org/nodes 2026-11).", None, None,
                   "verified https://example.org/nodes 2026-11"),
    ]  # fmt: skip
    assert fact_changes("p.md", new, PAGE)[-1] == FactChange(
        "p.md", 11, "removed", "GPUs: 4 per node (verified https://example.org/nodes 2026-11).",
        None, "verified https://example.org/nodes 2026-11", None,
    )  # fmt: skip
    assert fact_changes("p.md", PAGE, PAGE) == []


def _catalog(*entries: dict[str, object]) -> dict[str, object]:
    return {"version": 1, "failures": list(entries)}


def test_catalog_entries_by_id() -> None:
    kept = {"id": "kept", "fix": "x", "verified": "2026-10"}
    renewed = {"id": "renewed", "fix": "y", "verified": "2026-10"}
    edited = {"id": "edited", "fix": "z", "verified": "2026-10"}
    gone = {"id": "gone", "fix": "w", "verified": "2026-10"}
    old = _catalog(kept, renewed, edited, gone)
    new = _catalog(
        kept,
        {**renewed, "verified": "2026-11"},
        {**edited, "fix": "z, better"},
        {"id": "fresh", "fix": "v", "verified": "2026-11"},
    )
    assert entry_changes("failures.yaml", old, new) == [
        EntryChange("failures.yaml", "edited", "changed", "2026-10", "2026-10"),
        EntryChange("failures.yaml", "fresh", "added", None, "2026-11"),
        EntryChange("failures.yaml", "gone", "removed", "2026-10", None),
        EntryChange("failures.yaml", "renewed", "re-verified", "2026-10", "2026-11"),
    ]
    assert entry_changes("failures.yaml", None, _catalog(kept)) == [
        EntryChange("failures.yaml", "kept", "added", None, "2026-10")
    ]
