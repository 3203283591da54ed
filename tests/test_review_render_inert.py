"""The review comment carries nothing live from a pull request: a property over the renderer.

Every string a pull request controls (paths, ids, phases, fields, values, queue lines, facts,
finding messages, the base ref) is drawn from fragments that GitHub or GitLab would turn into
a mention, a reference, an autolink, a link, HTML, a broken table, or text reordered by a bidi
control. The rendered comment is then read as GFM does: table rows split at unescaped pipes,
``\\|`` unescaped, code spans paired by backtick runs; outside the code spans none of those
fragments may remain, and no bidi control may appear anywhere (a code span shows them raw).
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from campaignops.checks.finding import Finding
from campaignops.gitops.review.files import (
    EntryChange,
    FactChange,
    Line,
    PolicyChange,
    QueueChange,
    WrapperChange,
)
from campaignops.gitops.review.render import markdown
from campaignops.gitops.review.run import FieldChange, Resmoke, Review, TargetChange, TargetRef
from campaignops.gitops.review.targets import Cost

PROPERTY = settings(max_examples=300, deadline=None, database=None)
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
# fmt: off
FRAGMENTS = [
    "@alice", "@org/team", " @bob ", "(@carol)", "#12", " #7", "o/r#5", "!3", "GH-4", "o/r@deadbeefcafe1234",
    "https://evil.test/x", "http://e.vil", "www.evil.test", "a@b.co", "mailto:a@b.co",
    "[x](https://e.test)", "![i](https://e.test/i.png)", "<a href=x>", "<img src=x>", "<!--",
    "`", "``", "```", "|", "\\|", "\\", "\\\\|", "*", "_", "~~", ":smile:", "&#64;", "&amp;",
    " ", "\t", "\n", "\r\n", "\x1b[2J", "::error::x", *BIDI,
]
# fmt: on
HOSTILE = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=3), max_size=6).map("".join)
# What only a pull request's text holds: outside code spans, none may survive rendering.
LIVE = re.compile(
    r"@|https?:|www\.|mailto|GH-\d|#\d|!\d|!\[|\]\(|<[A-Za-z/!]|&#|&amp;|deadbeef|:smile:|`"
)


def unescaped_pipes(row: str) -> list[str]:
    """A GFM table row's cells: split at each ``|`` that is not ``\\|``, then ``\\|`` → ``|``."""
    cells, current, i = [], "", 0
    while i < len(row):
        if row.startswith("\\|", i):
            current, i = current + "|", i + 2
        elif row[i] == "|":
            cells.append(current)
            current, i = "", i + 1
        else:
            current, i = current + row[i], i + 1
    return [*cells, current][1:-1]  # a row starts and ends with a pipe


def outside_code(text: str) -> str:
    """``text`` without its code spans (CommonMark: a run of N backticks closes at the next run of
    exactly N; a run that never closes is literal)."""
    runs = list(re.finditer(r"`+", text))
    keep, start, i = [], 0, 0
    while i < len(runs):
        close = next((j for j in range(i + 1, len(runs)) if len(runs[j][0]) == len(runs[i][0])), 0)
        if close:
            keep.append(text[start : runs[i].start()])
            start, i = runs[close].end(), close + 1
        else:
            i += 1
    return "".join([*keep, text[start:]])


@st.composite
def reviews(draw: st.DrawFn) -> Review:
    h = lambda: draw(HOSTILE)  # noqa: E731 - one fresh hostile string per field
    return Review(
        base="a" * 40,
        head="b" * 40,
        ref=h(),
        added=(TargetRef(h(), h(), h() or None),),
        removed=(TargetRef(h(), h(), None),),
        changed=(TargetChange(h(), h(), h(), (FieldChange(h(), h(), [h(), {h(): h()}]),)),),
        resmoke=(Resmoke(h(), h(), h(), (h(), h())),),
        cost_before=(Cost(h(), "production", h(), 2, 4.0, 1.0, 3.0, "node-hours"),),
        cost_after=(Cost(h(), "smoke", h(), 1, None, None),),
        queues=(QueueChange(h(), (Line(1, h()),), (Line(2, h()),)),),
        wrappers=(WrapperChange(h(), "added", h()),),
        policy=(PolicyChange(h(), h(), [h()]),),
        facts=(FactChange(h(), 3, "added", h()),),
        entries=(EntryChange(h(), h(), "re-verified", h(), h()),),
        introduced=(Finding(h(), 1, 1, "MAN001", h(), h()),),
        fixed=(Finding(h(), 2, 1, "QUEUE004", h(), h()),),
        unread={h(): h()},
    )


@PROPERTY
@given(review=reviews())
def test_nothing_from_a_pull_request_is_live_in_the_comment(review: Review) -> None:
    text = markdown(review)
    assert not set(text) & set(BIDI), "a bidi control reached the comment"
    lines = text.splitlines()
    assert lines[0] == "<!-- campaign-review -->"
    width = 0
    for number, line in enumerate(lines[1:], start=2):
        if line.startswith("| "):
            cells = unescaped_pipes(line)
            if lines[number : number + 1] and lines[number].startswith("|---"):  # a header row
                width = len(cells)
            assert len(cells) == width, f"line {number}: the table row is broken: {line!r}"
            pieces = [outside_code(cell) for cell in cells]
        else:
            pieces = [outside_code(line)]
        for piece in pieces:
            assert not LIVE.search(piece), f"line {number}: live text {piece!r} in {line!r}"
