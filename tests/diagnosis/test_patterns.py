from __future__ import annotations

import time

import pytest

from campaignops.model import failure_patterns as patterns


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"^(a+)+$", "repeat inside a repeat"),
        (r"(x*y?)*z", "repeat inside a repeat"),
        (r"(?:\w+\s)+done", "repeat inside a repeat"),
        ("a{4294967296}", "not a valid regular expression"),
        ("a{5000}", "repeats more than"),
        ("(" * 300 + "a" + ")" * 300, "nested more than"),
        ("(unclosed", "not a valid regular expression"),
        ("x" * 1001, "longer than"),
    ],
)
def test_unsafe_or_invalid_matchers_are_refused_with_the_reason(pattern: str, why: str) -> None:
    found = patterns.problem(pattern)
    assert found is not None and why in found


@pytest.mark.parametrize(
    "pattern",
    [
        r"CUDA out of memory\. Tried to allocate",
        r"tasks? [0-9-]+: Out Of Memory",
        r"Detected \d+ oom[-_]kill events?",
        r"(?:HIP|CUDA) out of memory",
        r"\$'\\r': command not found",
        r"a{2,1000}",
        r"(ab)?c+",
    ],
)
def test_catalog_style_matchers_pass(pattern: str) -> None:
    assert patterns.problem(pattern) is None


def test_the_catastrophic_pattern_is_refused_before_it_could_run() -> None:
    # The reason the guard exists: this pattern on this line backtracks for minutes.
    started = time.perf_counter()
    assert patterns.problem(r"^(a+)+$") is not None
    assert time.perf_counter() - started < 5  # the check itself never runs the pattern


@pytest.mark.parametrize(
    ("pattern", "length"),
    [
        ("RuntimeError", 12),
        (r"CUDA out of memory\. Tried to allocate", 37),
        (r"tasks? \d+: Out Of Memory", len("task : Out Of Memory")),
        (r"(?:HIP|CUDA) out of memory", len("HIP out of memory")),
        (r"x{3}y", 4),
        (r".*", 0),
    ],
)
def test_anchor_length_counts_the_literal_characters_every_match_holds(
    pattern: str, length: int
) -> None:
    assert patterns.anchor_length(pattern) == length
