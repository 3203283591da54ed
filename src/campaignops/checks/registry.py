"""The check families, selection by family or ID, and one run over a context."""

from __future__ import annotations

import dataclasses
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from campaignops.checks import eol, lessons, manifests, policy, queues, stale, views, wrappers
from campaignops.checks.context import CheckContext
from campaignops.checks.finding import Code, Finding
from campaignops.core.errors import InputError, UsageError


@dataclass(frozen=True)
class Family:
    name: str
    summary: str
    codes: Mapping[str, Code]
    check: Callable[[CheckContext], Iterable[Finding]]


FAMILIES: Mapping[str, Family] = MappingProxyType(
    {
        m.FAMILY: Family(name=m.FAMILY, summary=m.SUMMARY, codes=m.CODES, check=m.check)
        for m in (manifests, stale, eol, wrappers, queues, views, policy, lessons)
    }
)
ALL_CODES: Mapping[str, Code] = MappingProxyType(
    {cid: code for fam in FAMILIES.values() for cid, code in fam.codes.items()}
)


@dataclass(frozen=True)
class Report:
    findings: tuple[Finding, ...]
    problems: tuple[InputError, ...]


def _expand(tokens: Sequence[str], *, option: str) -> set[str]:
    ids: set[str] = set()
    for raw in tokens:
        for token in filter(None, (t.strip().upper() for t in raw.split(","))):
            if token in FAMILIES:
                ids.update(FAMILIES[token].codes)
            elif token in ALL_CODES:
                ids.add(token)
            else:
                raise UsageError(
                    message=f"{option} {token}: no such check family or ID",
                    hint="families are " + ", ".join(FAMILIES) + "; IDs look like MAN001",
                )
    return ids


def selected_ids(*, select: Sequence[str] = (), ignore: Sequence[str] = ()) -> frozenset[str]:
    chosen = _expand(select, option="--select") if select else set(ALL_CODES)
    return frozenset(chosen - _expand(ignore, option="--ignore"))


def run(ctx: CheckContext, *, select: Sequence[str] = (), ignore: Sequence[str] = ()) -> Report:
    """Run every family with at least one selected ID; keep only selected findings."""
    ids = selected_ids(select=select, ignore=ignore)
    ctx = dataclasses.replace(ctx, selected=ids)
    found: set[Finding] = set()
    for family in FAMILIES.values():
        if ids.isdisjoint(family.codes):
            continue
        found.update(f for f in family.check(ctx) if f.id in ids)
    problems = tuple(ctx.reader.problems[k] for k in sorted(ctx.reader.problems))
    return Report(findings=tuple(sorted(found)), problems=problems)


def readable(template: str) -> str:
    """A code's message template as `campaign checks` shows it: each field a ``<name>``
    (``'<name>'`` where the message quotes it), braces unescaped, format specs dropped."""
    parts: list[str] = []
    for literal, field, _spec, conversion in string.Formatter().parse(template):
        parts.append(literal)
        if field is not None:
            shown = f"<{field}>"
            parts.append(f"'{shown}'" if conversion == "r" else shown)
    return "".join(parts)


def listing(family: Family) -> tuple[tuple[str, str], ...]:
    """(id, readable message) of each code of ``family``, in id order (MAN009 before MAN010:
    ids are the family and three digits)."""
    return tuple((cid, readable(family.codes[cid].message)) for cid in sorted(family.codes))
