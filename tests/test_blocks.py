"""The marker grammar: blocks found, defects located, content spliced without touching the rest."""

from __future__ import annotations

import itertools
import re

from hypothesis import given
from hypothesis import strategies as st

from campaignops.model import blocks

KNOWN = ("jobs", "stages")


def parse(text: str) -> blocks.Parsed:
    return blocks.parse(text, known=KNOWN)


def defects(text: str) -> list[tuple[int, int, str]]:
    return [(d.line, d.col, d.problem) for d in parse(text).defects]


def test_blocks_are_found_with_their_lines_and_content_range() -> None:
    text = "intro\n  <!-- campaign:begin jobs -->  \nold\n<!--campaign:end jobs-->\nafter\n"
    parsed = parse(text)

    assert parsed.defects == ()
    (block,) = parsed.blocks
    assert (block.name, block.begin, block.col, block.end, block.eol) == ("jobs", 2, 3, 4, "\n")
    assert text[block.start : block.stop] == "old\n"


def test_begin_without_end() -> None:
    text = "a\n<!-- campaign:begin jobs -->\nb\n"
    assert parse(text).blocks == ()
    assert defects(text) == [(2, 1, "view 'jobs' has no end marker")]


def test_end_without_begin() -> None:
    assert defects("a\n\n<!-- campaign:end jobs -->\n") == [
        (3, 1, "end of view 'jobs' without a begin marker")
    ]


def test_nested_blocks_are_reported_and_neither_is_a_block() -> None:
    text = (
        "<!-- campaign:begin jobs -->\n"
        "<!-- campaign:begin stages -->\n"
        "<!-- campaign:end stages -->\n"
        "<!-- campaign:end jobs -->\n"
    )
    assert parse(text).blocks == ()
    assert defects(text) == [
        (2, 1, "view 'stages' begins inside view 'jobs' (line 1); blocks do not nest")
    ]


def test_nested_block_missing_its_end_is_reported_once_more() -> None:
    text = (
        "<!-- campaign:begin jobs -->\n<!-- campaign:begin stages -->\n<!-- campaign:end jobs -->\n"
    )
    assert parse(text).blocks == ()
    assert defects(text) == [
        (2, 1, "view 'stages' begins inside view 'jobs' (line 1); blocks do not nest"),
        (2, 1, "view 'stages' has no end marker"),
    ]


def test_mismatched_end_name() -> None:
    text = "x\n<!-- campaign:begin jobs -->\n<!-- campaign:end stages -->\n"
    assert parse(text).blocks == ()
    assert defects(text) == [(3, 1, "end of view 'stages' closes view 'jobs' (begun at line 2)")]


def test_unknown_name_is_reported_at_its_begin_marker_only() -> None:
    text = "<!-- campaign:begin costs -->\n<!-- campaign:end costs -->\n"
    assert parse(text).blocks == ()
    assert defects(text) == [(1, 1, "unknown view 'costs'")]


def test_malformed_marker() -> None:
    text = "ok\n<!-- campaign:begin -->\n<!-- campaign:end jobs extra -->\n"
    assert defects(text) == [
        (2, 1, "malformed view marker: <!-- campaign:begin -->"),
        (3, 1, "malformed view marker: <!-- campaign:end jobs extra -->"),
    ]


def test_malformed_marker_inside_a_block_keeps_the_block_from_being_rewritten() -> None:
    text = "<!-- campaign:begin jobs -->\n<!-- campaign:end -->\n<!-- campaign:end jobs -->\n"
    assert parse(text).blocks == ()
    assert defects(text) == [(2, 1, "malformed view marker: <!-- campaign:end -->")]


def test_markers_in_prose_or_fenced_code_are_not_markers() -> None:
    text = (
        "Put `<!-- campaign:begin jobs -->` on its own line.\n"
        "```markdown\n"
        "<!-- campaign:begin jobs -->\n"
        "~~~\n"
        "```\n"
        "~~~~\n"
        "<!-- campaign:end stages -->\n"
        "~~~~\n"
        "<!-- campaign:begin stages -->\n"
        "<!-- campaign:end stages -->\n"
    )
    parsed = parse(text)
    assert parsed.defects == ()
    assert [(b.name, b.begin) for b in parsed.blocks] == [("stages", 9)]


def test_refresh_replaces_only_block_content_and_keeps_crlf() -> None:
    text = "head\r\n<!-- campaign:begin jobs -->\r\nstale\r\n<!-- campaign:end jobs -->\r\ntail"
    new = blocks.refresh(text, parse(text), lambda name: f"| {name} |\n| --- |")
    assert new == (
        "head\r\n<!-- campaign:begin jobs -->\r\n"
        "\r\n| jobs |\r\n| --- |\r\n\r\n"
        "<!-- campaign:end jobs -->\r\ntail"
    )


_free_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200).filter(
    lambda s: "campaign:" not in s and "```" not in s and "~~~" not in s
)


@given(before=_free_text, between=_free_text, after=_free_text, body=_free_text)
def test_refresh_keeps_every_byte_outside_the_blocks(
    before: str, between: str, after: str, body: str
) -> None:
    head = before + "\n" if before else ""
    text = (
        f"{head}<!-- campaign:begin jobs -->\nold\n<!-- campaign:end jobs -->\n{between}\n"
        f"<!-- campaign:begin stages -->\n<!-- campaign:end stages -->\n{after}"
    )
    parsed = parse(text)
    assert [b.name for b in parsed.blocks] == ["jobs", "stages"]
    new = blocks.refresh(text, parsed, lambda name: body)
    rendered = blocks.content(body)
    assert new == (
        f"{head}<!-- campaign:begin jobs -->\n{rendered}<!-- campaign:end jobs -->\n{between}\n"
        f"<!-- campaign:begin stages -->\n{rendered}<!-- campaign:end stages -->\n{after}"
    )
    # Idempotent: a second pass over its own output changes nothing.
    assert blocks.refresh(new, parse(new), lambda name: body) == new


_pieces = st.sampled_from(
    [
        "<!-- campaign:begin jobs -->",
        "<!-- campaign:end jobs -->",
        "<!-- campaign:begin stages -->",
        "<!-- campaign:end stages -->",
        "<!-- campaign:begin other -->",
        "<!-- campaign:begin -->",
        "```",
        "~~~",
        "text",
        "",
        "\r",
        " ",
    ]
)


@given(st.lists(_pieces, max_size=30))
def test_any_arrangement_of_markers_parses_and_renders_stably(pieces: list[str]) -> None:
    text = "\n".join(pieces)
    parsed = parse(text)
    spans = [(b.start, b.stop) for b in parsed.blocks]
    assert all(0 <= a <= b <= len(text) for a, b in spans)
    assert all(prev[1] <= nxt[0] for prev, nxt in itertools.pairwise(spans))
    new = blocks.refresh(text, parsed, lambda name: f"| {name} |")
    again = parse(new)

    # Rendering shifts lines but never creates, hides or changes a defect.
    def shapes(found: blocks.Parsed) -> list[str]:
        return [re.sub(r"line \d+", "line N", d.problem) for d in found.defects]

    assert shapes(again) == shapes(parsed)
    assert blocks.refresh(new, again, lambda name: f"| {name} |") == new
