"""Untrusted text in a Markdown comment or issue that GitHub and GitLab both render inertly.

Why code spans, not backslashes: GitHub and GitLab find mentions (``@user``), references
(``#12``, ``!3``, ``org/repo#4``, commit SHAs), bare-URL and ``www.`` autolinks and emoji in the
rendered HTML's text, after the Markdown parser has removed every backslash, so ``\\@user`` is a
live mention again. Both skip text inside ``<code>`` (and ``<pre>``, ``<a>``), and the
autolink extension of GFM and GLFM does not run inside a code span either. So each untrusted
string becomes one inline code span: fenced by more backticks than its longest run of them,
padded with a space where the renderer would otherwise strip one, on one line. Control
characters, bidi overrides and isolates included, become visible escapes first
(``safetext.one_line``), since a code span shows them raw. In a table cell a ``|`` is written
``\\|``: GFM splits rows before it parses code spans and unescapes ``\\|`` inside them.
Zero-width joiners or look-alike ``＠`` would also break mentions, but they change what a reader
copies and leave every other reference form to enumerate; a code span copies as the text itself.
"""

from __future__ import annotations

import re

from campaignops.core import safetext

_TICKS = re.compile(r"`+")


def code(text: object) -> str:
    """``text`` as one inline code span: nothing in it links, mentions or refers ("" stays "")."""
    value = safetext.one_line(str(text))
    if not value:
        return ""
    fence = "`" * (max((len(run) for run in _TICKS.findall(value)), default=0) + 1)
    # CommonMark strips one space from each end of a span that begins AND ends with one, and a
    # span's content cannot begin or end with a backtick next to the fence: pad both cases.
    edge = value[0] + value[-1]
    spaced = value[0] == " " and value[-1] == " " and value.strip(" ")
    pad = " " if "`" in edge or spaced else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def spans(text: str) -> list[tuple[int, int]]:
    """Where the code spans of ``text`` start and end, as CommonMark pairs backtick runs."""
    found: list[tuple[int, int]] = []
    runs = list(_TICKS.finditer(text))
    index = 0
    while index < len(runs):
        opening = runs[index]
        closing = next(
            (j for j in range(index + 1, len(runs)) if len(runs[j][0]) == len(opening[0])), None
        )
        if closing is None:
            index += 1
            continue
        found.append((opening.start(), runs[closing].end()))
        index = closing + 1
    return found


def cut(cell: str, limit: int) -> str:
    """``cell`` cut to about ``limit`` characters, ending in "…". A code span the cut falls in is
    cut inside and closed again: an open fence would turn the rest of the comment into code."""
    if len(cell) <= limit:
        return cell
    for start, stop in spans(cell):
        if start < limit < stop:
            fence = len(cell[start:]) - len(cell[start:].lstrip("`"))
            inner = cell[start + fence : stop - fence]
            if inner[:1] == inner[-1:] == " " and inner.strip(" "):
                inner = inner[1:-1]  # the padding code() added
            room = max(0, limit - start - 2 * fence - 4)
            return cell[:start] + code(inner[:room].rstrip() + " …")
    return cell[:limit].rstrip() + " …"


def cell(text: str) -> str:
    """Rendered Markdown as a GFM table cell: every ``|`` escaped, in a code span or not."""
    return text.replace("|", "\\|")
