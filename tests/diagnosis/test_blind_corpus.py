"""The held-out sets (tests/data/diagnose/blind/) keep their format and stay held out: every case
is well formed, and no source they cite is also cited by the development corpus, whose cases the
catalog was tuned on, or by a catalog entry, whose samples were written from its sources. That
split by source is the rule that makes tuning and held-out parts reproducible from the files. The
catalog's score on them is measured (bench/diagnose.py), never asserted here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from campaignops.core import yamldoc

DATA = Path(__file__).resolve().parents[1] / "data" / "diagnose"
BLIND = DATA / "blind" / "errors_blind.yaml"
HELD_OUT = sorted((DATA / "blind").glob("errors_*.yaml"))
POOL = DATA / "pool" / "errors_pool.yaml"
CATALOG = (
    Path(__file__).resolve().parents[2]
    / "template"
    / "{{cookiecutter.campaign_slug}}"
    / "failures.yaml"
)
URL = re.compile(r"https://[^\s;,)']+")
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
    cases = [case for path in (*HELD_OUT, POOL) for case in _cases(path)]
    ids = [case["id"] for case in cases]
    assert len(_cases(BLIND)) >= 80 and len(set(ids)) == len(ids)
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
    for path in HELD_OUT:
        assert {case["source"] for case in _cases(path)} & cited == set(), path.name


def test_no_held_out_source_is_cited_by_a_catalog_entry() -> None:
    # The catalog template is Jinja around YAML; its `source` values are read as text, which
    # covers every domain's entries at once.
    cited = set(URL.findall(CATALOG.read_text(encoding="utf-8")))
    for path in HELD_OUT:
        assert {case["source"] for case in _cases(path)} & cited == set(), path.name


def test_the_pool_is_new_to_every_other_corpus_file() -> None:
    # The pool is split by bench/diagnose.py (held_out): its tuning half may later give catalog
    # samples, so only its held-out half is kept out of the catalog (tests/diagnosis/
    # test_corpus.py); no pooled source may be one the other files already cite.
    cited = {case["source"] for path in (*DATA.glob("*.yaml"), *HELD_OUT) for case in _cases(path)}
    assert {case["source"] for case in _cases(POOL)} & cited == set()
