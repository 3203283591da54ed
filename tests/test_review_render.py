"""review_render: the JSON contract and the Markdown comment, from hand-made Reviews."""

from __future__ import annotations

import json

from campaignops.checks.finding import Finding
from campaignops.core.mdsafe import spans
from campaignops.gitops.review.files import (
    EntryChange,
    FactChange,
    Line,
    PolicyChange,
    QueueChange,
    WrapperChange,
)
from campaignops.gitops.review.render import MAX_ROWS, markdown, md, to_json
from campaignops.gitops.review.run import FieldChange, Resmoke, Review, TargetChange, TargetRef
from campaignops.gitops.review.targets import Cost

BASE, HEAD = "a" * 40, "b" * 40
M = "manifests/m.yaml"


def test_an_empty_review_is_a_headline_only() -> None:
    assert markdown(Review(base=BASE, head=HEAD, ref="main")) == (
        "<!-- campaign-review -->\n"
        "### campaign review: `main` (aaaaaaaaaaaa) → HEAD (bbbbbbbbbbbb)\n"
        "\n"
        "**targets: 0 added, 0 removed, 0 changed · 0 to re-smoke · findings: 0 introduced, "
        "0 fixed**\n"
    )


FULL = Review(
    base=BASE,
    head=HEAD,
    ref="origin/main",
    removed=(TargetRef(M, "old", "train"),),
    changed=(
        TargetChange(
            M,
            "t",
            None,
            (FieldChange("args.lr", 0.1, 0.2), FieldChange("file c.yaml", "sha256:" + "1" * 64, None)),
        ),
    ),
    resmoke=(Resmoke(M, "t", None, ("args.lr",)),),
    cost_before=(Cost(M, "production", "polaris", 2, 4.0, 16.0, 4.0, "node-hours"),),
    cost_after=(Cost(M, "production", "polaris", 1, None, None, None, "node-hours"),),
    queues=(QueueChange("queues/q.txt", (), (Line(2, "line 2 was deleted"),)),),
    wrappers=(WrapperChange("scripts/run.v2.sh", "added", "scripts/run.v1.sh"),),
    policy=(PolicyChange("backends", ["a"], ["a", "b"]),),
    facts=(FactChange("backends/p.md", 9, "added", "GPUs: 4 (verified x 2026-11)", None, None, "verified x 2026-11"),),
    entries=(EntryChange("failures.yaml", "oom", "re-verified", "2026-10", "2026-11"),),
    introduced=(Finding("queues/q.txt", 2, 1, "QUEUE004", "line 2 was deleted", "restore it"),),
    fixed=(Finding("m.yaml", 1, 1, "MAN001", "bad <b>", "fix"),),
    unread={"manifests/x.yaml": "queue unreadable"},
)  # fmt: skip


def test_every_section_in_full() -> None:
    assert (
        markdown(FULL)
        == """\
<!-- campaign-review -->
### campaign review: `origin/main` (aaaaaaaaaaaa) → HEAD (bbbbbbbbbbbb)

**targets: 0 added, 1 removed, 1 changed · 1 to re-smoke · cost changed in 1 manifest stage · \
findings: 1 introduced, 1 fixed**

#### Targets

| manifest | target | change |
|---|---|---|
| `manifests/m.yaml` | `old` (`train`) | removed |
| `manifests/m.yaml` | `t` | `args.lr`: `0.1` → `0.2`; `file c.yaml`: sha256 `111111111111` → — |

#### Need a new smoke (fingerprint changed)

| manifest | target | because |
|---|---|---|
| `manifests/m.yaml` | `t` | `args.lr` |

#### Cost at the time limits (every target once)

| manifest | stage | backend | before | after |
|---|---|---|---|---|
| `manifests/m.yaml` | production | `polaris` | 2 tasks, 4 node-hours, 16 gpu-hours, charged 4 node-hours \
| 1 task, no time limit |

#### Queues

| file | line | change | text |
|---|---|---|---|
| `queues/q.txt` | 2 | **not an append** | `line 2 was deleted` |

#### Wrappers

| wrapper | change | previous version |
|---|---|---|
| `scripts/run.v2.sh` | added | `scripts/run.v1.sh` |

#### Policy (campaign.yaml)

| setting | before | after |
|---|---|---|
| `backends` | `["a"]` | `["a", "b"]` |

#### Knowledge

| file | line / entry | change | fact |
|---|---|---|---|
| `backends/p.md` | 9 | added | `GPUs: 4 (verified x 2026-11)` |
| `failures.yaml` | `oom` | re-verified | verified `2026-10` → `2026-11` |

#### Findings introduced

| where | id | message |
|---|---|---|
| `queues/q.txt:2` | QUEUE004 | `line 2 was deleted` |

#### Findings fixed

| where | id | message |
|---|---|---|
| `m.yaml:1` | MAN001 | `bad <b>` |

#### Manifests not read at HEAD

| manifest | why |
|---|---|
| `manifests/x.yaml` | `queue unreadable` |
"""
    )


def test_user_strings_are_inert_code_spans() -> None:
    assert md("a|b") == "`a|b`"  # the table escapes the pipe (below)
    assert md("<img src=x onerror=alert(1)>") == "`<img src=x onerror=alert(1)>`"
    assert md("[x](https://evil.example)") == "`[x](https://evil.example)`"
    assert md("@octocat *bold* `code`\nsecond") == "``@octocat *bold* `code`\\nsecond``"
    assert md("`edge`") == "`` `edge` ``"  # padded: a span cannot start with its fence's tick
    assert md(" spaced ") == "`  spaced  `"  # padded: the renderer strips one space each side
    assert md("x\u202ey\u2066z\u200f") == "`x\\u202ey\\u2066z\\u200f`"
    assert md("") == ""
    table = markdown(
        Review(base=BASE, head=HEAD, ref="x|y", removed=(TargetRef("m|n.yaml", "t", None),))
    )
    assert "| `m\\|n.yaml` | `t` | removed |" in table.splitlines()
    assert "### campaign review: `x|y`" in table  # a heading is no table: no escape


def test_long_tables_stop_at_max_rows_and_point_to_json() -> None:
    many = tuple(TargetRef(M, f"t{i:03}", None) for i in range(MAX_ROWS + 5))
    text = markdown(Review(base=BASE, head=HEAD, ref="main", removed=many))
    assert f"| `manifests/m.yaml` | `t{MAX_ROWS - 1:03}` | removed |" in text
    assert f"t{MAX_ROWS:03}" not in text
    assert "… and 5 more rows (campaign review --format json)" in text


def test_json_has_the_documented_keys_sorted_and_stable() -> None:
    text = to_json(FULL)
    assert text == to_json(FULL)
    data = json.loads(text)
    assert list(data) == sorted(data)
    assert set(data) == {
        "base", "head", "targets", "resmoke", "cost", "queues", "wrappers", "policy",
        "knowledge", "findings", "unread",
    }  # fmt: skip
    assert set(data["targets"]) == {"added", "removed", "changed"}
    assert set(data["cost"]) == {"before", "after"}
    assert set(data["findings"]) == {"introduced", "fixed"}
    assert data["base"] == {"commit": BASE, "ref": "origin/main"}
    assert data["targets"]["removed"] == [{"manifest": M, "target": "old", "phase": "train"}]
    assert data["targets"]["changed"][0]["changes"][0] == {
        "field": "args.lr",
        "before": 0.1,
        "after": 0.2,
    }
    assert data["cost"]["before"] == [
        {
            "manifest": M,
            "stage": "production",
            "backend": "polaris",
            "tasks": 2,
            "node_hours": 4.0,
            "gpu_hours": 16.0,
            "charged": 4.0,
            "unit": "node-hours",
        }
    ]
    assert data["queues"] == [
        {
            "path": "queues/q.txt",
            "appended": [],
            "edits": [{"line": 2, "text": "line 2 was deleted"}],
        }
    ]
    assert data["knowledge"]["entries"] == [
        {
            "path": "failures.yaml",
            "id": "oom",
            "change": "re-verified",
            "verified_before": "2026-10",
            "verified_after": "2026-11",
        }
    ]
    assert data["findings"]["introduced"][0]["id"] == "QUEUE004"


def test_a_long_cell_is_cut_inside_its_code_span_which_stays_closed() -> None:
    from campaignops.gitops.review.render import MAX_CELL

    for text in ("x" * 1000, "x" * (MAX_CELL - 1) + "|" * 10, "|" * 1000, "`" * 5 + "y" * 999):
        table = markdown(Review(base=BASE, head=HEAD, ref="main", unread={"m.yaml": text}))
        row = table.splitlines()[-1]
        cell = row.removeprefix("| `m.yaml` | ").removesuffix(" |").replace("\\|", "|")
        assert spans(cell) == [(0, len(cell))], row  # one code span, closed
        assert len(cell) <= MAX_CELL + 2, row
        kept = cell.strip("`").removeprefix(" ").removesuffix(" ").removesuffix(" …")
        assert text.startswith(kept), row


def test_a_review_too_long_for_a_comment_is_cut_at_a_line() -> None:
    from campaignops.gitops.review.render import MAX_COMMENT

    long = "y" * 1000
    review = Review(
        base=BASE,
        head=HEAD,
        ref="main",
        facts=tuple(FactChange(f"backends/{i}{long}.md", i, "added", long) for i in range(30)),
        policy=tuple(PolicyChange(f"k{i}{long}", long, long) for i in range(30)),
        fixed=tuple(Finding(f"{i}{long}", 1, 1, "MAN001", long, "") for i in range(30)),
        introduced=tuple(Finding(f"{i}{long}", 1, 1, "MAN002", long, "") for i in range(30)),
        unread={f"m{i}{long}.yaml": long for i in range(30)},
    )
    text = markdown(review)
    assert MAX_COMMENT - 1000 < len(text) <= MAX_COMMENT
    assert text.startswith("<!-- campaign-review -->\n")
    assert text.endswith(
        "|\n\n… cut here: the review is longer than a comment may be (campaign review --format json)\n"
    )
