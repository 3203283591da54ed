"""The catalog on the held-out corpus (tests/data/diagnose/): the targets of bench/diagnose.py
as assertions, so a catalog edit that mislabels a real error or claims a healthy line fails."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "diagnose.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_diagnose", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_corpus_is_big_enough_and_held_out(bench: ModuleType) -> None:
    errors, benign = bench.cases("errors_"), bench.cases("benign")
    assert len(errors) >= 120 and len(benign) >= 200
    assert all(c.source.startswith("https://") for c in (*errors, *benign))
    samples = bench.samples()
    assert [c.id for c in (*errors, *benign) if c.text.strip() in samples] == []


def test_no_healthy_line_is_claimed(bench: ModuleType) -> None:
    score = bench.score(bench.engine_matcher(), [], bench.cases("benign"), 1)
    assert [(c.text, got) for c, got in score.benign] == []


def test_no_real_error_gets_a_wrong_category_and_nine_in_ten_are_right(bench: ModuleType) -> None:
    score = bench.score(bench.engine_matcher(), bench.cases("errors_"), [], 1)
    assert [(c.id, c.category, got) for c, got in score.wrong] == []
    assert score.rate >= bench.TARGET_RIGHT, [c.id for c in score.missed]
