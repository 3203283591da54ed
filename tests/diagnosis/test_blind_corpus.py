"""The blind test set (tests/data/diagnose/blind/) keeps its format and stays blind: every case is
well formed, and no source it cites is also cited by the development corpus, whose cases the
catalog was tuned on. The catalog's score on it is measured, never asserted here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from campaignops import yamldoc

DATA = Path(__file__).resolve().parents[1] / "data" / "diagnose"
BLIND = DATA / "blind" / "errors_blind.yaml"
SCHEMA = (
    Path(__file__).resolve().parents[2] / "src" / "campaignops" / "schemas" / "failures.schema.json"
)
BACKENDS = {
    "generic-slurm",
    "generic-pbs",
    "kubernetes",
    "polaris",
    "alpine",
    "local",
    "generic-ssh",
}


def _cases(path: Path) -> list[dict[str, Any]]:
    data = yamldoc.load(path.read_text(encoding="utf-8"), path=str(path))
    assert data["version"] == 1
    cases: list[dict[str, Any]] = data["cases"]
    return cases


def test_every_blind_case_is_well_formed() -> None:
    categories = set(json.loads(SCHEMA.read_text(encoding="utf-8"))["$defs"]["category"]["enum"])
    cases = _cases(BLIND)
    ids = [case["id"] for case in cases]
    assert len(cases) >= 80 and len(set(ids)) == len(ids)
    for case in cases:
        assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", case["id"]), case["id"]
        assert case["category"] in categories, case["id"]
        assert case["source"].startswith("https://"), case["id"]
        assert case["text"].strip() and case["text"].count("\n") < 30, case["id"]
        assert case.get("backend", "generic-slurm") in BACKENDS, case["id"]


def test_the_blind_set_covers_every_category_but_other() -> None:
    categories = set(json.loads(SCHEMA.read_text(encoding="utf-8"))["$defs"]["category"]["enum"])
    counts: dict[str, int] = {}
    for case in _cases(BLIND):
        counts[case["category"]] = counts.get(case["category"], 0) + 1
    assert {c for c in categories - {"other"} if counts.get(c, 0) < 2} == set()


def test_no_blind_source_is_cited_by_the_development_corpus() -> None:
    cited = {case["source"] for path in DATA.glob("*.yaml") for case in _cases(path)}
    assert {case["source"] for case in _cases(BLIND)} & cited == set()
