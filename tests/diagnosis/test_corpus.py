"""The catalog on the held-out corpus (tests/data/diagnose/): the targets of bench/diagnose.py
as assertions, so a catalog edit that mislabels a real error or claims a healthy line fails."""

from __future__ import annotations

from types import ModuleType

from tests.diagnosis.test_blind_corpus import URL


def test_the_corpus_is_big_enough_and_held_out(bench: ModuleType) -> None:
    errors, benign = bench.tuning_cases(), bench.cases("benign")
    assert len(errors) >= 120 and len(benign) >= 200
    assert all(c.source.startswith("https://") for c in (*errors, *benign))
    samples = bench.samples()
    assert [c.id for c in (*errors, *benign) if c.text.strip() in samples] == []


def test_no_healthy_line_is_claimed(bench: ModuleType) -> None:
    score = bench.score(bench.engine_matcher(), [], bench.cases("benign"), 1)
    assert [(c.text, got) for c, got in score.benign] == []


def test_no_real_error_gets_a_wrong_category_and_nine_in_ten_are_right(bench: ModuleType) -> None:
    score = bench.score(bench.engine_matcher(), bench.tuning_cases(), [], 1)
    assert [(c.id, c.category, got) for c, got in score.wrong] == []
    assert score.rate >= bench.TARGET_RIGHT, [c.id for c in score.missed]


def test_the_held_out_part_is_big_enough_and_split_by_source(bench: ModuleType) -> None:
    every = [case for _, held in bench.held_out_sets() for case in held]
    assert len(every) >= bench.HELD_OUT_CASES
    assert len({case.source for case in every}) >= bench.HELD_OUT_SOURCES
    assert len(bench.cases("benign")) >= bench.HELD_OUT_BENIGN
    pooled = bench.cases("errors_", bench.POOL)
    tuning = {c.source for c in bench.tuning_cases()}
    held = {c.source for c in pooled if bench.held_out(c.source)}
    assert held and tuning & held == set()


def test_no_held_out_pooled_source_is_cited_by_the_catalog(bench: ModuleType) -> None:
    cited = set(URL.findall(bench.TEMPLATE.read_text(encoding="utf-8")))
    pooled = [c for c in bench.cases("errors_", bench.POOL) if bench.held_out(c.source)]
    assert [c.id for c in pooled if c.source in cited] == []


def test_the_held_out_part_meets_its_targets(bench: ModuleType) -> None:
    # Issue 23's figure that counts. A failure names categories and counts only: the held-out
    # texts are not read while matchers are written (tests/data/diagnose/README.md).
    every = [case for _, held in bench.held_out_sets() for case in held]
    score = bench.score(bench.engine_matcher(), every, [], 1)
    assert sorted(c.category for c, _ in score.wrong) == []
    missed = sorted(c.category or "" for c in score.missed)
    assert score.rate >= bench.HELD_OUT_RIGHT, missed
