"""The stamp grammar: what is a stamp, what is a malformed one, and what is only prose."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from campaignops.model.stamps import (
    Stamp,
    age_in_months,
    find_stamps,
    front_matter_end,
    is_future,
    markdown_stamps,
)

D = dt.date

# (text, source, date) of well-formed prose stamps.
GOOD = [
    ("verified 2026-06", None, D(2026, 6, 1)),
    ("verified 2026-06-14", None, D(2026, 6, 14)),
    ("verified Jun 2026", None, D(2026, 6, 1)),
    ("verified June 2026", None, D(2026, 6, 1)),
    ("verified Sept 2026", None, D(2026, 9, 1)),
    ("verified Sept. 2026", None, D(2026, 9, 1)),
    ("verified sep 2026", None, D(2026, 9, 1)),
    ("Verified December 2025", None, D(2025, 12, 1)),
    ("VERIFIED 2026-06", None, D(2026, 6, 1)),
    ("re-verified 2026-06", None, D(2026, 6, 1)),
    (
        "verified slurm.schedmd.com/sbatch.html + slurm.conf 2026-06",
        "slurm.schedmd.com/sbatch.html + slurm.conf",
        D(2026, 6, 1),
    ),
    ("verified docs.alcf.anl.gov/polaris/ 2026-06", "docs.alcf.anl.gov/polaris/", D(2026, 6, 1)),
    ("(verified slurm.schedmd.com 2026-06).", "slurm.schedmd.com", D(2026, 6, 1)),
    ("verified osc.edu, icer.msu.edu 2026-06", "osc.edu, icer.msu.edu", D(2026, 6, 1)),
    ("verified osc.edu & icer.msu.edu 2026-06", "osc.edu & icer.msu.edu", D(2026, 6, 1)),
    ("verified osc.edu and icer.msu.edu 2026-06", "osc.edu and icer.msu.edu", D(2026, 6, 1)),
    ("verified osc.edu / icer.msu.edu 2026-06", "osc.edu / icer.msu.edu", D(2026, 6, 1)),
    ("verified kubernetes.io Jobs doc 2026-06", "kubernetes.io Jobs doc", D(2026, 6, 1)),
    (
        "verified github.com/googlecolab/colabtools#2607 + #4426 2026-06",
        "github.com/googlecolab/colabtools#2607 + #4426",
        D(2026, 6, 1),
    ),
    ("verified https://slurm.schedmd.com/ Jun 2026", "https://slurm.schedmd.com/", D(2026, 6, 1)),
    (
        "verified [Slurm docs](https://slurm.schedmd.com/sbatch.html) 2026-06",
        "[Slurm docs](https://slurm.schedmd.com/sbatch.html)",
        D(2026, 6, 1),
    ),
    ("verified `sbatch --help` 2026-06", "`sbatch --help`", D(2026, 6, 1)),
    ("verified **`slurm.conf`** 2026-06", "`slurm.conf`", D(2026, 6, 1)),
    ("*verified 2026-06*", None, D(2026, 6, 1)),
    ("**verified 2026-06**", None, D(2026, 6, 1)),
    ("_verified 2026-06_", None, D(2026, 6, 1)),
    ("`verified 2026-06`", None, D(2026, 6, 1)),
    ("verified `2026-06`", None, D(2026, 6, 1)),
    ("*(verified slurm.conf 2026-06)*", "slurm.conf", D(2026, 6, 1)),
    ("(verified 2026-06),", None, D(2026, 6, 1)),
    ("(verified 2026-06);", None, D(2026, 6, 1)),
    ("**Verified:** 2026-06", None, D(2026, 6, 1)),
    ("Last verified: June 2026.", None, D(2026, 6, 1)),
    ("verified on 2026-06-14", None, D(2026, 6, 14)),
    ("verified in June 2026", None, D(2026, 6, 1)),
    # Hard-wrapped Markdown: a stamp may continue on the next line.
    (
        "(verified slurm.schedmd.com/sbatch.html\n+ slurm.conf 2026-06)",
        "slurm.schedmd.com/sbatch.html + slurm.conf",
        D(2026, 6, 1),
    ),
    ("verified kubernetes.io Jobs doc\n2026-06).", "kubernetes.io Jobs doc", D(2026, 6, 1)),
    ("verified\n2026-06", None, D(2026, 6, 1)),
]

# Date-shaped text after the word (and an optional source) that does not parse.
MALFORMED = [
    "verified 2026-13",
    "verified 2026-00",
    "verified 2026-02-30",
    "verified 2026-6",
    "verified 06/2026",
    "verified 2026/06",
    "verified 2026.06",
    "verified 2026-06-14T10:00",
    "verified 0000-01",
    "verified YYYY-MM",
    "verified yyyy-mm-dd",
    "verified MM/YYYY",
    "verified <YYYY-MM>",
    "verified Jnue 2026",
    "verified Jnu 2026",
    "verified Febuary 2026",
    "verified Setpember 2026",
    "verified June 14, 2026",
    "verified 14 June 2026",
    "verified Jun 26)",
    "verified Jun 0000",
    "(verified 2026)",
    "verified 2026.",
    "verified slurm.schedmd.com 2026-13",
    "verified slurm.schedmd.com/sbatch.html + slurm.conf 06/2026",
    "(verified slurm.schedmd.com 2026)",
    "verified in 2026-13",
]

# Prose that mentions the word but is no stamp.
PROSE = [
    "we verified that it works",
    "verified by hand",
    "the verified results from 2026-06-01",
    "verified the 2026-06 release",
    "unverified 2026-06",
    "verifiedly 2026-06",
    "verified_at 2026-06",
    "verified-by 2026-06",
    "verified in 2026",
    "verified for 2026",
    "verified mid 2026",
    "verified 2026 entries in the catalog",
    "verified May be wrong",
    "verified May 5 times",
    "verified e.g. that 2026-06",
    "verified — corrects the draft",
    "verified slurm.schedmd.com. In 2026-06 it changed",
    "verified slurm.schedmd.com (see 2026-06)",
    "verified x.org a b c d e f g 2026-06",
    "verified on slurm.schedmd.com 2026-06",
    "verified.",
    "verified",
    "Verified: by hand",
    "the results: verified: yes",
    "(verified jorijn.com / oneuptime.com\n\n2026-06)",
    "verified 2026-06"[:12],
]


@pytest.mark.parametrize(("text", "source", "date"), GOOD)
def test_well_formed_stamps(text: str, source: str | None, date: dt.date) -> None:
    [stamp] = find_stamps(text)
    assert (stamp.source, stamp.date, stamp.malformed) == (source, date, False)
    assert stamp.raw.lower().startswith("verified")
    assert "\n" not in stamp.raw


@pytest.mark.parametrize("text", MALFORMED)
def test_malformed_stamps(text: str) -> None:
    [stamp] = find_stamps(text)
    assert stamp.malformed
    assert stamp.date is None


@pytest.mark.parametrize("text", PROSE)
def test_prose_is_not_a_stamp(text: str) -> None:
    assert find_stamps(text) == []
    assert find_stamps(f"intro line\n{text}\noutro line") == []


def test_stamp_position_and_raw_text() -> None:
    text = "# Title\n\nKillWait is 30 s (verified slurm.schedmd.com/sbatch.html\n  + slurm.conf 2026-06).\n"
    assert find_stamps(text) == [
        Stamp(
            line=3,
            col=19,
            raw="verified slurm.schedmd.com/sbatch.html + slurm.conf 2026-06",
            source="slurm.schedmd.com/sbatch.html + slurm.conf",
            date=D(2026, 6, 1),
            malformed=False,
        )
    ]


def test_several_stamps_on_one_line_and_crlf() -> None:
    text = "a\r\nx (verified 2026-01) y (Verified Feb 2026) z (verified 2026-13)\r\n"
    stamps = find_stamps(text)
    assert [(s.line, s.col, s.date, s.malformed) for s in stamps] == [
        (2, 4, D(2026, 1, 1), False),
        (2, 25, D(2026, 2, 1), False),
        (2, 47, None, True),
    ]


def test_day_precision_is_kept() -> None:
    [month, day] = find_stamps("verified 2026-06 and verified 2026-06-01")
    assert (month.has_day, day.has_day) == (False, True)


def test_text_whose_lower_case_is_longer_keeps_columns() -> None:
    # "İ" lower-cases to two characters, so offsets come from a case-insensitive search instead.
    text = "İİ (verified 2026-06)\nVERIFIED 2026-07 and ünverified 2026-08"
    assert [(s.line, s.col, s.date) for s in find_stamps(text)] == [
        (1, 5, D(2026, 6, 1)),
        (2, 1, D(2026, 7, 1)),
    ]


def test_an_overlong_source_is_not_walked_past_the_window() -> None:
    assert find_stamps("verified x.org/" + "a" * 600 + " 2026-06") == []
    assert find_stamps("verified x.org " + "b " * 300 + "2026-06") == []


# --- the YAML key-line form --------------------------------------------------------------------

YAML_GOOD = [
    ("verified: 2026-06", D(2026, 6, 1), False),
    ('verified: "2026-06"', D(2026, 6, 1), False),
    ("verified: '2026-06-01'", D(2026, 6, 1), True),
    ("verified: 2026-06-01   # checked by Ada", D(2026, 6, 1), True),
    ("  - verified: 2026-06", D(2026, 6, 1), False),
    ('"verified": 2026-06', D(2026, 6, 1), False),
    ("verified: 2026-06\r", D(2026, 6, 1), False),
]
YAML_MALFORMED = [
    "verified:",
    "verified: ~",
    "verified: soon",
    "verified: 2026-13",
    "verified: 2026",
    "verified: slurm.schedmd.com 2026-06",
    "verified: YYYY-MM",
    "verified: Jun 2026",
    "  verified: [2026-06]",
]


@pytest.mark.parametrize(("line", "date", "has_day"), YAML_GOOD)
def test_yaml_key_line(line: str, date: dt.date, has_day: bool) -> None:
    for yaml_like in (True, False):
        [stamp] = find_stamps(f"id: x\n{line}\n", yaml_like=yaml_like)
        assert (stamp.line, stamp.date, stamp.has_day, stamp.malformed) == (2, date, has_day, False)
        assert stamp.key_line == yaml_like


@pytest.mark.parametrize("line", YAML_MALFORMED)
def test_yaml_key_line_without_a_date_is_malformed(line: str) -> None:
    [stamp] = find_stamps(f"id: x\n{line}\n", yaml_like=True)
    assert stamp.malformed
    assert stamp.line == 2
    assert stamp.col == line.index("verified") + 1


def test_key_line_values_are_iso_dates_as_in_the_schemas() -> None:
    [key] = find_stamps("verified: Jun 2026\n", yaml_like=True)
    [prose] = find_stamps("verified: Jun 2026\n")
    assert (key.key_line, key.malformed) == (True, True)
    assert (prose.key_line, prose.date) == (False, D(2026, 6, 1))


def test_prose_key_line_is_malformed_only_when_date_shaped() -> None:
    assert find_stamps("verified: soon\n") == []
    [stamp] = find_stamps("verified: 2026-13\n")
    assert stamp.malformed


def test_yaml_values_still_hold_prose_stamps() -> None:
    text = 'fix: "requeue (verified slurm.schedmd.com 2026-06)"\nnote: we verified it\n'
    [stamp] = find_stamps(text, yaml_like=True)
    assert (stamp.line, stamp.source, stamp.date) == (1, "slurm.schedmd.com", D(2026, 6, 1))


def test_markdown_front_matter_is_yaml_and_the_body_prose() -> None:
    text = "---\nplatform: x\nverified: nope\n---\n\nVerified: by hand\nverified: soon\n(verified 2026-06)\n"
    assert front_matter_end(text) == 4
    stamps = markdown_stamps(text)
    assert [(s.line, s.malformed) for s in stamps] == [(3, True), (8, False)]


def test_front_matter_needs_a_closing_line() -> None:
    assert front_matter_end("---\nverified: nope\n") == 0
    assert markdown_stamps("---\nverified: nope\n") == []
    assert front_matter_end("text\n---\nverified: x\n---\n") == 0
    assert front_matter_end("---\r\na: 1\r\n---\r\nbody") == 3


# --- ageing ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stamp", "today", "age"),
    [
        (D(2026, 11, 1), D(2026, 11, 30), 0),
        (D(2026, 10, 31), D(2026, 11, 1), 1),
        (D(2025, 12, 1), D(2026, 1, 1), 1),
        (D(2026, 5, 1), D(2026, 11, 21), 6),
        (D(2024, 11, 1), D(2026, 11, 21), 24),
    ],
)
def test_age_is_whole_calendar_months(stamp: dt.date, today: dt.date, age: int) -> None:
    assert age_in_months(stamp, today) == age


def test_future_month_and_future_day() -> None:
    today = D(2026, 11, 21)
    [this_month, next_month, tomorrow, today_stamp] = find_stamps(
        "verified 2026-11 verified 2026-12 verified 2026-11-22 verified 2026-11-21"
    )
    assert not is_future(this_month, today)
    assert is_future(next_month, today)
    assert is_future(tomorrow, today)
    assert not is_future(today_stamp, today)


# --- fuzzing -----------------------------------------------------------------------------------

# Fragments that exercise the grammar's corners; "|" separates them.
FRAGMENTS = (
    "verified|Verified|VERIFIED|verified:|2026-06|2026-13|Jun|June|2026|slurm.conf|+|and|,|(|)|.|`"
    "|**|-|\n|\n\n| |in|on|x.org/a|YYYY-MM|06/2026|Jnue|14|---\n|#|\"|'"
)
WORDS = st.sampled_from(FRAGMENTS.split("|"))


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.lists(WORDS, max_size=40).map(" ".join)), st.booleans())
def test_any_text_parses_without_error(text: str, yaml_like: bool) -> None:
    lines = text.split("\n")
    for stamp in find_stamps(text, yaml_like=yaml_like) + markdown_stamps(text):
        assert 1 <= stamp.line <= len(lines)
        line = lines[stamp.line - 1]
        assert line[stamp.col - 1 : stamp.col + 7].lower() == "verified"
        assert stamp.malformed == (stamp.date is None)


PLAIN = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200).filter(
    lambda s: "verif" not in s.lower() and "\n" not in s
)


@settings(max_examples=200, deadline=None)
@given(st.lists(PLAIN, max_size=6), st.lists(PLAIN, max_size=6), st.dates(D(1000, 1, 1)))
def test_a_stamp_on_its_own_line_is_found_among_any_text(
    before: list[str], after: list[str], date: dt.date
) -> None:
    text = "\n".join([*before, f"verified {date:%Y-%m}", *after])
    [stamp] = find_stamps(text)
    assert (stamp.line, stamp.col) == (len(before) + 1, 1)
    assert stamp.date == date.replace(day=1)


TAILS = (
    " |  |\t|\n|2026-06|2026-13|2026-06-31|2026-06-14|slurm.conf|x.org/a|yyyy/mm|a|ab.cd|e.g|)|)."
    "|,|`|*|_|x|(|[|#1|+|'|\"|>|:|0000-01"
)
FAST_PARTS = st.sampled_from(TAILS.split("|"))


@settings(max_examples=500, deadline=None)
@given(st.lists(FAST_PARTS, max_size=8).map("".join))
def test_fast_path_agrees_with_the_token_walk(tail: str) -> None:
    from campaignops.model.stamps import _prose, _walk_prose

    text = "verified" + tail
    assert _prose(text, len("verified")) == _walk_prose(text, len("verified"))
