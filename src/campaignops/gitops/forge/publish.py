"""The idempotent part of publishing: which comment or issue is ours, and what to do with it.

Identity is a hidden marker ``<!-- campaignops:NAME -->`` at the end of the body AND an author
that is the publishing token's own user (``Note.mine``): a human who quotes the marker, or a
comment pasted from elsewhere, is never taken over. The decisions are pure functions over the
listed items; ``comment`` and ``issue`` list, decide, and make at most the writes decided.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from campaignops.core.errors import CampaignError, InputError, UsageError
from campaignops.gitops.forge.http import ApiError

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
NOT_OURS_HINT = (
    "the job lacks the permission to write (docs/gitops.md, Tokens), or the comment is not by "
    "the account the token posts as: on GitHub, --author must name that account "
    "(github-actions[bot] for GITHUB_TOKEN)"
)


@dataclass(frozen=True)
class Note:
    """A pull-request comment or merge-request note (system notes are never listed)."""

    id: int
    body: str
    mine: bool
    url: str = ""


@dataclass(frozen=True)
class Issue:
    """An open issue with the label (pull requests are never listed). ``number``: GitLab's iid."""

    number: int
    title: str
    body: str
    mine: bool
    url: str = ""


@dataclass(frozen=True)
class Posted:
    id: int
    url: str = ""
    labels: tuple[str, ...] = ()  # a created issue's labels, as the API answered


class LabelDropped(CampaignError):
    """An issue was created without its label: later runs could not find it again."""


class Forge(Protocol):
    platform: str  # "GitHub", "GitLab": for messages
    body_limit: int  # characters a comment or issue body may have

    def notes(self, number: int) -> list[Note]: ...
    def create_note(self, number: int, body: str) -> Posted: ...
    def update_note(self, number: int, note_id: int, body: str) -> Posted: ...
    def issues(self, label: str) -> list[Issue]: ...
    def create_issue(self, *, title: str, body: str, label: str) -> Posted: ...
    def update_issue(self, number: int, *, title: str, body: str) -> Posted: ...
    def close_issue(self, number: int) -> Posted: ...


@dataclass(frozen=True)
class Outcome:
    """What happened: created, updated, unchanged, closed, nothing (closed with none open)."""

    action: str
    kind: str  # "comment", "note", "issue"
    id: int = 0
    url: str = ""


def check_name(name: str, *, option: str) -> str:
    if not _NAME.fullmatch(name):
        raise UsageError(
            message=f"{option} {name!r} is not a marker name",
            hint="use letters, digits, '.', '_' and '-' (e.g. campaign-review); it becomes "
            "the hidden <!-- campaignops:NAME --> line",
        )
    return name


def marker(name: str) -> str:
    return f"<!-- campaignops:{name} -->"


def truncation_note(total: int, limit: int) -> str:
    return (
        f"\n\n> **Truncated**: the report has {total:,} characters and this platform accepts "
        f"{limit:,}: the rest is cut. Run the same command locally for the full report."
    )


def fit(body: str, *, name: str, limit: int) -> str:
    """``body`` with the marker appended, cut (with a note) so the whole stays within ``limit``."""
    tail = "\n\n" + marker(name) + "\n"
    text = body.rstrip("\n")
    if len(text) + len(tail) <= limit:
        return text + tail
    note = truncation_note(len(text), limit)
    keep = max(0, limit - len(tail) - len(note))
    cut = text[:keep]
    # Cut at a line end when one is near, so a table row or a code fence is not split midway.
    newline = cut.rfind("\n")
    at_line_end = text[keep : keep + 1] == "\n"
    if not at_line_end and newline > 0 and newline >= keep - 2000:
        cut = cut[:newline]
    return cut + note + tail


def pick_note(notes: Sequence[Note], *, name: str) -> Note | None:
    """Ours: the oldest note by this author that carries the marker (a lost race's twin stays)."""
    tag = marker(name)
    ours = [n for n in notes if n.mine and tag in n.body]
    return min(ours, key=lambda n: n.id) if ours else None


@dataclass(frozen=True)
class IssuePlan:
    create: bool = False
    update: Issue | None = None
    close: tuple[Issue, ...] = ()


def plan_issue(issues: Sequence[Issue], *, name: str, state: str) -> IssuePlan:
    """open: update the oldest of ours, else create one; closed: close every open one of ours."""
    tag = marker(name)
    ours = sorted((i for i in issues if i.mine and tag in i.body), key=lambda i: i.number)
    if state == "closed":
        return IssuePlan(close=tuple(ours))
    if ours:
        return IssuePlan(update=ours[0])
    return IssuePlan(create=True)


def comment(forge: Forge, *, number: int, name: str, body: str, kind: str) -> Outcome:
    """Create the marked comment on change request ``number``, or update the one there."""
    text = fit(body, name=name, limit=forge.body_limit)
    existing = pick_note(forge.notes(number), name=name)
    if existing is None:
        made = forge.create_note(number, text)
        return Outcome(action="created", kind=kind, id=made.id, url=made.url)
    if existing.body == text:
        return Outcome(action="unchanged", kind=kind, id=existing.id, url=existing.url)
    try:
        done = forge.update_note(number, existing.id, text)
    except ApiError as exc:
        if exc.status != 403:
            raise
        raise ApiError(
            status=exc.status, message=exc.message, hint=NOT_OURS_HINT, api_message=exc.api_message
        ) from None
    return Outcome(action="updated", kind=kind, id=existing.id, url=done.url or existing.url)


def issue(
    forge: Forge, *, label: str, name: str, title: str, body: str, state: str
) -> list[Outcome]:
    """Bring the one labelled, marked issue to ``state`` (open with ``body``, or closed)."""
    plan = plan_issue(forge.issues(label), name=name, state=state)
    if plan.create:
        text = fit(body, name=name, limit=forge.body_limit)
        made = forge.create_issue(title=title, body=text, label=label)
        # Label names match case-insensitively: an existing `Campaign-Audit` is applied as is.
        if label.casefold() not in {given.casefold() for given in made.labels}:
            # GitHub drops the labels of a new issue silently when the token may not set them;
            # unlabelled, it is invisible to the next run, which would open another one.
            where = made.url or f"#{made.id}"
            raise LabelDropped(
                message=f"{forge.platform} created issue {where} without the label {label!r}: "
                "the next run would not find it and would open another",
                hint=f"create the label {label!r} in the repository once, give the token the "
                "right to label issues (docs/gitops.md, Tokens), then label or close that issue",
            )
        return [Outcome(action="created", kind="issue", id=made.id, url=made.url)]
    if plan.update is not None:
        text = fit(body, name=name, limit=forge.body_limit)
        old = plan.update
        if (old.title, old.body) == (title, text):
            return [Outcome(action="unchanged", kind="issue", id=old.number, url=old.url)]
        forge.update_issue(old.number, title=title, body=text)
        return [Outcome(action="updated", kind="issue", id=old.number, url=old.url)]
    outcomes = []
    for old in plan.close:
        forge.close_issue(old.number)
        outcomes.append(Outcome(action="closed", kind="issue", id=old.number, url=old.url))
    return outcomes or [Outcome(action="nothing", kind="issue")]


def append_summary(path: Path, body: str) -> None:
    """Leave ``body`` in the job summary (GITHUB_STEP_SUMMARY) when it cannot be posted."""
    try:
        with path.open("a", encoding="utf-8") as summary:
            summary.write(body.rstrip("\n") + "\n")
    except OSError as exc:
        raise InputError(
            path=str(path), message=f"cannot append to the job summary ({exc.strerror})"
        ) from None
