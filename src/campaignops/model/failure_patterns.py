"""Catalog matchers come from users' files: which are safe to run, and how specific each is.

Python's ``re`` backtracks, so a matcher such as ``^(a+)+$`` takes time doubling with each
character of a line that almost matches (34 characters ran for minutes), ``a{4294967296}``
overflows and a thousand nested groups exhaust the recursion limit. A matcher is inspected once,
from the parse tree ``re`` itself builds, and refused when it has a repeat inside a repeat, a
repeat count above ``MAX_REPEAT``, nesting deeper than ``MAX_DEPTH`` or more than
``MAX_LENGTH`` characters. With those out, a match costs at most polynomial time in the line,
and lines are cut to ``logtext.MAX_LINE`` characters before matching.

``anchor_length`` measures specificity: how many characters every match must contain
literally. ``CUDA out of memory. Tried to allocate`` (37) beats ``RuntimeError`` (12), whatever
the order of the entries in the file.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Sequence
from typing import Any

# The parser ``re.compile`` itself uses (re._parser since 3.11, sre_parse before; untyped).
sre: Any = importlib.import_module("re._parser" if hasattr(re, "_parser") else "sre_parse")

MAX_LENGTH = 1000
MAX_REPEAT = 1000
MAX_DEPTH = 20

# Possessive repeats and atomic groups exist from Python 3.11 on.
_REPEATS = {sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", sre.MAX_REPEAT)}
_BRANCHING = {sre.BRANCH}
_ATOMIC = getattr(sre, "ATOMIC_GROUP", sre.SUBPATTERN)
_GROUPING = {sre.SUBPATTERN, _ATOMIC, sre.ASSERT, sre.ASSERT_NOT}


# Remembered per pattern: one command reads the catalog more than once (its check, its views),
# and the merged catalogs hold more patterns than re's own cache, so each read parsed and
# compiled every matcher again (~8 % of an in-process `campaign check` on a generated campaign).
@functools.lru_cache(maxsize=4096)
def problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a matcher (not a regex, or unsafe to run), else None."""
    if len(pattern) > MAX_LENGTH:
        return f"longer than {MAX_LENGTH} characters"
    try:
        tree = sre.parse(pattern, re.IGNORECASE)
    except (re.error, OverflowError, RecursionError) as exc:
        return f"not a valid regular expression ({exc})"
    try:
        found = _unsafe(list(tree), depth=0, in_repeat=False)
    except RecursionError:
        found = f"nested more than {MAX_DEPTH} levels"
    if found is not None:
        return found
    try:
        re.compile(pattern, re.IGNORECASE)
    except (re.error, OverflowError, RecursionError) as exc:
        return f"not a valid regular expression ({exc})"
    return None


def _unsafe(items: Sequence[tuple[Any, Any]], *, depth: int, in_repeat: bool) -> str | None:
    if depth > MAX_DEPTH:
        return f"nested more than {MAX_DEPTH} levels"
    for op, av in items:
        if op in _REPEATS:
            low, high, body = av
            if (high != sre.MAXREPEAT and high > MAX_REPEAT) or low > MAX_REPEAT:
                return f"repeats more than {MAX_REPEAT} times"
            variable = high == sre.MAXREPEAT or high > 1
            if variable and in_repeat:
                return "has a repeat inside a repeat (like (a+)+), which can take exponential time"
            found = _unsafe(list(body), depth=depth + 1, in_repeat=in_repeat or variable)
        elif op in _BRANCHING:
            found = None
            for branch in av[1]:
                found = found or _unsafe(list(branch), depth=depth + 1, in_repeat=in_repeat)
        elif op in _GROUPING:
            body = av[-1]
            found = _unsafe(list(body), depth=depth + 1, in_repeat=in_repeat)
        elif op is sre.GROUPREF_EXISTS:
            found = None
            for branch in av[1:]:
                if branch is not None:
                    found = found or _unsafe(list(branch), depth=depth + 1, in_repeat=in_repeat)
        else:
            found = None
        if found is not None:
            return found
    return None


def anchor_length(pattern: str) -> int:
    """The number of literal characters every match of ``pattern`` contains (a lower bound:
    optional parts and alternatives count for what they are sure to contribute)."""
    try:
        tree = sre.parse(pattern, re.IGNORECASE)
    except (re.error, OverflowError, RecursionError):
        return 0
    return _literal(list(tree))


def _literal(items: Sequence[tuple[Any, Any]]) -> int:
    total = 0
    for op, av in items:
        if op is sre.LITERAL:
            total += 1
        elif op in _REPEATS:
            low, _high, body = av
            total += min(low, MAX_REPEAT) * _literal(list(body))
        elif op in _BRANCHING:
            total += min(_literal(list(branch)) for branch in av[1])
        elif op is sre.SUBPATTERN or op is _ATOMIC:
            total += _literal(list(av[-1]))
    return total
