"""upkeep_render: the audit as text, JSON and the Markdown issue body, compared in full."""

from __future__ import annotations

import datetime as dt

from campaignops.checks.finding import Finding
from campaignops.gitops.upkeep import render
from campaignops.gitops.upkeep.run import Audit, DueStamp

STALE = (
    DueStamp(
        path="backends/a.md",
        line=3,
        stamp="verified docs.example.org/q 2026-10",
        source="docs.example.org/q",
        expires=dt.date(2027, 5, 1),
    ),
    DueStamp(
        path="backends/a.md",
        line=9,
        stamp="verified 2026-11",
        source=None,
        expires=dt.date(2027, 6, 1),
    ),
    DueStamp(
        path="failures.yaml",
        line=27,
        stamp="verified: '2026-11'",
        source="https://github.com/o/r/issues/1 (bash); see `man 1 bash`",
        expires=dt.date(2027, 6, 1),
    ),
)
DUE = (
    DueStamp(
        path="failures.yaml",
        line=40,
        stamp="verified: '2026-12'",
        source="https://example.org/p",
        expires=dt.date(2027, 7, 1),
    ),
)
STANDING = (
    Finding(
        path=".campaign/ledger.jsonl",
        line=4,
        col=1,
        id="AUDIT001",
        message="the ledger's last line is torn (not valid JSON): a write was cut short",
        hint="run campaign status --refresh",
    ),
)


def _audit(**changes: object) -> Audit:
    fields: dict[str, object] = {
        "today": dt.date(2027, 6, 1),
        "due_within_days": 30,
        "stale_after_months": 6,
        "stale": STALE,
        "due": DUE,
        "standing": STANDING,
    } | changes
    return Audit(**fields)  # type: ignore[arg-type]


MARKDOWN = """\
<!-- campaign-audit -->
## Campaign audit, 2027-06-01

3 stale stamps, 1 stamp due within 30 days, 1 standing finding.

Re-check each fact against its source, then update its stamp to `verified 2027-06` (or the month you checked it; policy: stale after 6 months).

### Stale now

**`backends/a.md`**

- line 3: `verified docs.example.org/q 2026-10`: re-check [docs.example.org/q](https://docs.example.org/q)
- line 9: `verified 2026-11`: no source named: find one

**`failures.yaml`**

- line 27: `verified: '2026-11'`: re-check <https://github.com/o/r/issues/1> (bash); see \\`man 1 bash\\`

### Due by 2027-07-01

**`failures.yaml`**

- line 40: `verified: '2026-12'` (stale from 2027-07-01): re-check <https://example.org/p>

### Standing checks

- `.campaign/ledger.jsonl:4` **AUDIT001** the ledger's last line is torn (not valid JSON): a write was cut short. run campaign status --refresh"""


def test_markdown_is_the_issue_body_grouped_per_file() -> None:
    assert render.markdown(_audit()) == MARKDOWN


def test_markdown_of_a_clean_audit_says_there_is_nothing_to_do() -> None:
    assert render.markdown(_audit(stale=(), due=(), standing=())) == (
        "<!-- campaign-audit -->\n## Campaign audit, 2027-06-01\n\n"
        "0 stale stamps, 0 stamps due within 30 days, 0 standing findings.\n\n"
        "Nothing to do: every stamp is fresh and every standing check passes."
    )


def test_users_text_cannot_open_tags_links_or_close_a_code_span() -> None:
    hostile = DueStamp(
        path="x`y.md",
        line=1,
        stamp="verified `a` 2026-01",
        source="<!-- --> [x](javascript:1) **b**\n# h",
        expires=dt.date(2026, 8, 1),
    )
    body = render.markdown(_audit(stale=(hostile,), due=(), standing=()))
    assert body.splitlines()[-3:] == [
        "**``x`y.md``**",
        "",
        "- line 1: ``verified `a` 2026-01``: re-check \\<\\!-- --\\> \\[x\\](javascript:1) "
        "\\*\\*b\\*\\*\\\\n\\# h",
    ]


def test_a_long_list_is_cut_below_the_issue_size_limit() -> None:
    many = tuple(
        DueStamp(
            path="failures.yaml",
            line=i,
            stamp="verified: '2026-11'",
            source="https://example.org/" + "p" * 200,
            expires=dt.date(2027, 6, 1),
        )
        for i in range(1, 1001)
    )
    body = render.markdown(_audit(stale=many, due=(), standing=()))
    assert len(body) <= render.MAX_MARKDOWN
    listed = sum(1 for line in body.splitlines() if line.startswith("- line "))
    assert 0 < listed < 1000
    assert body.endswith(
        f"… and {1000 - listed} more: run `campaign audit` in the campaign for the whole list."
    )


def test_json_keys_and_values() -> None:
    assert render.to_json(_audit(stale=STALE[1:2]), display=lambda p: f"sub/{p}") == {
        "stale": [
            {"path": "sub/backends/a.md", "line": 9, "stamp": "verified 2026-11", "source": None}
        ],
        "due": [
            {
                "path": "sub/failures.yaml",
                "line": 40,
                "stamp": "verified: '2026-12'",
                "source": "https://example.org/p",
            }
        ],
        "standing": [
            {
                "path": "sub/.campaign/ledger.jsonl",
                "line": 4,
                "col": 1,
                "id": "AUDIT001",
                "message": "the ledger's last line is torn (not valid JSON): a write was cut short",
                "hint": "run campaign status --refresh",
            }
        ],
    }


def test_text_lists_sections_and_a_summary() -> None:
    assert render.text(_audit(stale=STALE[:2])) == (
        "stale on 2027-06-01 (policy: stale after 6 months):\n"
        "backends/a.md:3: verified docs.example.org/q 2026-10  (re-check: docs.example.org/q)\n"
        "backends/a.md:9: verified 2026-11  (re-check: no source named)\n"
        "due by 2027-07-01:\n"
        "failures.yaml:40: verified: '2026-12'  (stale from 2027-07-01; re-check: "
        "https://example.org/p)\n"
        "standing checks:\n"
        ".campaign/ledger.jsonl:4:1: AUDIT001 the ledger's last line is torn (not valid JSON): "
        "a write was cut short\n"
        "  hint: run campaign status --refresh\n"
        "2 stale stamps, 1 stamp due within 30 days, 1 standing finding."
    )
