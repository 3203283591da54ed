"""Reading a campaign for `campaign audit`: its stamps (with the sources their YAML names), its
ledger, and the standing check findings; campaignops.gitops.upkeep.run judges them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from campaignops.checks import context, registry, stale
from campaignops.core import layout, yamldoc
from campaignops.core.errors import InputError
from campaignops.gitops.upkeep.run import DEFAULT_DUE_WITHIN_DAYS, Audit, StampedFile, audit
from campaignops.model import frontmatter, ledger

# The check IDs the audit runs as standing checks: the wrappers lock, and the stamp findings
# that are not about age (an undated stamp, a page without one, a date in the future), which
# with --base only fail the commits that touch their files.
STANDING = ("WRAP", "STALE002", "STALE003", "STALE004")

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Gathered:
    audit: Audit
    root: Path
    problems: tuple[InputError, ...]


def _source_of(node: yaml.Node) -> str | None:
    if isinstance(node, yaml.ScalarNode):
        return str(node.value).strip() or None
    if isinstance(node, yaml.SequenceNode):
        items = [str(n.value).strip() for n in node.value if isinstance(n, yaml.ScalarNode)]
        return "; ".join(i for i in items if i) or None
    return None


def _walk(root: yaml.Node) -> Iterator[tuple[yaml.MappingNode, str | None]]:
    """Every mapping with the source it inherits from the nearest enclosing mapping that has
    one (iteratively: the nesting is already bounded, but recursion need not be trusted)."""
    stack: list[tuple[yaml.Node, str | None]] = [(root, None)]
    seen: set[int] = set()
    while stack:
        node, inherited = stack.pop()
        # An alias is the node it names, composed once: walked once, or a billion laughs
        # would be walked in full.
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            own = inherited
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value in ("source", "sources"):
                    own = _source_of(value) or own
            yield node, own
            stack.extend((v, own) for _, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((v, inherited) for v in node.value)


def key_sources(text: str, *, line_offset: int = 0) -> dict[int, str]:
    """For each ``verified:`` key (by its 1-based line in the file), the ``source`` or
    ``sources`` of its own mapping, else of the nearest enclosing one. A catalog entry names
    its source next to its stamp; a backend page's front matter lists ``sources``. Text that
    does not parse, or nests past yamldoc's limit, yields nothing."""
    if "verified" not in text or yamldoc.first_too_deep(text) is not None:
        return {}
    try:
        root = yaml.compose(text, Loader=_Loader)
    except (yaml.YAMLError, RecursionError):
        return {}
    if root is None:
        return {}
    found: dict[int, str] = {}
    for mapping, source in _walk(root):
        if source is None:
            continue
        for key, _ in mapping.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "verified":
                found[key.start_mark.line + 1 + line_offset] = source
    return found


def _stamped(ctx: context.CheckContext) -> Iterator[StampedFile]:
    catalogs = set(ctx.of(layout.FAILURES))
    for rel, text, stamps in stale.stamped_files(ctx):
        sources: dict[int, str] = {}
        if any(s.key_line and s.source is None for s in stamps):
            if rel in catalogs:
                sources = key_sources(text)
            elif (front := frontmatter.split(text)) is not None:
                sources = key_sources(front.text, line_offset=front.first_line - 1)
        yield StampedFile(path=rel, stamps=tuple(stamps), sources=sources)


def gather(
    *,
    cwd: Path,
    today: dt.date,
    now: dt.datetime,
    due_within_days: int = DEFAULT_DUE_WITHIN_DAYS,
) -> Gathered:
    """Audit the campaign found at or above ``cwd`` as of ``today`` (stamps) and ``now`` (jobs).
    Files that cannot be read are returned as problems (the CLI exits 2 on them, as check
    does)."""
    ctx = context.build(cwd=cwd, today=today)
    files = list(_stamped(ctx))
    findings = registry.run(ctx, select=STANDING).findings
    result = audit(
        files,
        ledger=ledger.read(ctx.root),
        findings=findings,
        today=today,
        now=now,
        limit_months=ctx.policy.stale_after_months,
        due_within_days=due_within_days,
    )
    problems = tuple(ctx.reader.problems[k] for k in sorted(ctx.reader.problems))
    return Gathered(audit=result, root=ctx.root, problems=problems)
