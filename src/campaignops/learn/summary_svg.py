"""A campaign report's picture: plain SVG text, which GitHub and GitLab show in place.

Per group, one row per attempt: a pale bar from submission to start (the queue wait) and a solid
bar from start to end (the run), red with a cross where the attempt failed, hatched grey while it
still runs; under the rows, the group's cost over time (what its finished attempts used, added
up at each end). Written by this code alone (no plotting library), from the ledger's figures
only, so the same ledger gives the same bytes (the tests compare them).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from xml.sax.saxutils import escape, quoteattr

from campaignops.backends.charging import amount
from campaignops.learn.summary import Attempt, Group
from campaignops.views.render import duration

WIDTH = 860
LABEL_W = 210  # the row labels' column
RIGHT = 20
ROW_H = 18
BAR_H = 12
COST_H = 90
TICKS = 6  # at most this many steps along the time axis, each a round duration
_MINUTES = (1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080, 20160, 43200)
STEPS = (1, 2, 5, 10, 15, 30, *(60 * m for m in _MINUTES), 86400 * 90, 86400 * 365)
COLOURS = {"queue": "#c9d3e3", "run": "#3f7fc7", "failed": "#c8423b", "live": "#9aa3ad"}
FAMILY = 'font-family="sans-serif"'
FONT = f'{FAMILY} font-size="11"'


def _f(x: float) -> str:
    """A coordinate with one decimal: the same on every machine."""
    return f"{x:.1f}"


class _Scale:
    """Seconds since the group's first submission → x, over the plot's width."""

    def __init__(self, start: dt.datetime, span_s: float) -> None:
        self.start, self.span = start, max(span_s, 1.0)
        self.width = WIDTH - LABEL_W - RIGHT

    def x(self, moment: dt.datetime) -> float:
        seconds = (moment - self.start).total_seconds()
        return LABEL_W + max(0.0, min(seconds, self.span)) * self.width / self.span


def _end(a: Attempt) -> dt.datetime | None:
    return a.ended or a.started or a.submitted


def _row(a: Attempt, y: float, scale: _Scale, last: dt.datetime) -> list[str]:
    label = f"{a.target} #{a.attempt}"
    tip = f"{a.target}, attempt {a.attempt} ({a.job}): {a.state or 'unknown'}"
    if a.diagnosis:
        tip += f", {a.diagnosis}"
    out = [
        f'<text x="{_f(LABEL_W - 6)}" y="{_f(y + BAR_H - 2)}" text-anchor="end" {FONT}>'
        f"{escape(label)}</text>",
        f"<g><title>{escape(tip)}</title>",
    ]
    if a.submitted is not None:
        queue_end = a.started or last
        x0, x1 = scale.x(a.submitted), scale.x(queue_end)
        out.append(_bar(x0, x1, y, COLOURS["queue"]))
    if a.started is not None:
        colour = COLOURS["failed" if a.failed else "run" if a.ended else "live"]
        x0, x1 = scale.x(a.started), scale.x(a.ended or last)
        out.append(_bar(x0, x1, y, colour))
        if a.failed:
            out.append(
                f'<text x="{_f(x1 + 3)}" y="{_f(y + BAR_H - 2)}" fill="{COLOURS["failed"]}" '
                f'{FONT} font-weight="bold">✕</text>'
            )
    out.append("</g>")
    return out


def _bar(x0: float, x1: float, y: float, colour: str) -> str:
    return (
        f'<rect x="{_f(x0)}" y="{_f(y)}" width="{_f(max(x1 - x0, 1.0))}" '
        f'height="{BAR_H}" fill="{colour}"/>'
    )


def _axis(y: float, scale: _Scale) -> list[str]:
    out = [f'<line x1="{LABEL_W}" y1="{_f(y)}" x2="{WIDTH - RIGHT}" y2="{_f(y)}" stroke="#555"/>']
    step = next((s for s in STEPS if scale.span / s <= TICKS), STEPS[-1])
    for n in range(int(scale.span // step) + 1):
        seconds = n * step
        x = LABEL_W + scale.width * seconds / scale.span
        out.append(
            f'<text x="{_f(x)}" y="{_f(y + 13)}" text-anchor="middle" {FONT}>'
            f"{escape(duration(seconds))}</text>"
        )
    return out


def _cost(group: Group, y: float, scale: _Scale) -> tuple[list[str], float]:
    """The cost line: what finished attempts used, summed at each end (one unit: the first);
    returns the parts and their height."""
    if not group.costs:
        text = "cost: not charged (no charging model on the backend's page)"
        return [f'<text x="{LABEL_W}" y="{_f(y + 14)}" {FONT}>{escape(text)}</text>'], 24.0
    unit = group.costs[0].unit
    ends = sorted((a.ended, a.cost) for a in group.attempts if a.ended and a.cost is not None)
    total = sum(c for _, c in ends)
    top, bottom = y + 16, y + COST_H - 4
    height = bottom - top
    points = [(_f(LABEL_W), _f(bottom))]
    spent = 0.0
    for moment, used in ends:
        x = scale.x(moment)
        points.append((_f(x), _f(bottom - (spent / total * height if total else 0))))
        spent += used
        points.append((_f(x), _f(bottom - (spent / total * height if total else 0))))
    points.append((_f(WIDTH - RIGHT), points[-1][1]))
    path = " ".join(f"{x},{y_}" for x, y_ in points)
    parts = [
        f'<text x="{LABEL_W - 6}" y="{_f(top + 8)}" text-anchor="end" {FONT}>'
        f"{escape(amount(total, unit))}</text>",
        f'<text x="{LABEL_W - 6}" y="{_f(bottom)}" text-anchor="end" {FONT}>cost over time</text>',
        f'<polyline points="{path}" fill="none" stroke="{COLOURS["run"]}" stroke-width="2"/>',
        f'<line x1="{LABEL_W}" y1="{_f(bottom)}" x2="{WIDTH - RIGHT}" y2="{_f(bottom)}" '
        'stroke="#555"/>',
    ]
    return parts, float(COST_H)


def _panel(group: Group, y: float) -> tuple[list[str], float]:
    """One group's rows, axis and cost line from ``y``; returns the parts and the next y."""
    title = f"{group.label} · {group.stage}"
    out = [f'<text x="8" y="{_f(y + 14)}" {FONT} font-weight="bold">{escape(title)}</text>']
    y += 22
    start = group.submitted
    ends = [e for a in group.attempts if (e := _end(a)) is not None]
    if start is None or not ends:
        out.append(f'<text x="{LABEL_W}" y="{_f(y + 12)}" {FONT}>no recorded times</text>')
        return out, y + 24
    last = max(ends)
    scale = _Scale(start, (last - start).total_seconds())
    rows = sorted(group.attempts, key=lambda a: (a.submitted or start, a.target, a.attempt))
    for a in rows:
        out += _row(a, y, scale, last)
        y += ROW_H
    out += _axis(y + 2, scale)
    y += 22
    cost, height = _cost(group, y, scale)
    return out + cost, y + height + 10


def _legend(y: float) -> list[str]:
    items = [("queue", "queue wait"), ("run", "run"), ("failed", "failed ✕"), ("live", "running")]
    out, x = [], float(LABEL_W)
    for key, text in items:
        out.append(f'<rect x="{_f(x)}" y="{_f(y)}" width="12" height="10" fill="{COLOURS[key]}"/>')
        out.append(f'<text x="{_f(x + 16)}" y="{_f(y + 9)}" {FONT}>{escape(text)}</text>')
        x += 110
    return out


def svg(groups: Sequence[Group], *, title: str) -> str:
    """The picture of ``groups``, stacked, as one SVG document (ends with a newline)."""
    parts = [
        f'<text x="8" y="18" {FAMILY} font-size="14" font-weight="bold">{escape(title)}</text>'
    ]
    parts += _legend(28)
    y = 48.0
    for group in groups:
        panel, y = _panel(group, y)
        parts += panel
    height = int(y) + 10
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label={quoteattr(title)}>'
    )
    background = f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>'
    return "\n".join([head, background, *parts, "</svg>"]) + "\n"
