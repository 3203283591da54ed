"""Fuzzing the YAML loader, the MAN family and the CLI: only the documented outcomes, ever.

yamldoc.load returns or raises YamlSyntaxError/InputError; check_document yields Findings;
`campaign check` exits 0, 1 or 2 whatever a campaign file contains.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from campaignops.checks import manifests
from campaignops.checks.finding import Finding
from campaignops.core import yamldoc
from campaignops.core.errors import InputError, YamlSyntaxError
from campaignops.core.yamldoc import Locator
from campaignops.model import manifest

BOUNDED = settings(max_examples=200, deadline=None, database=None)
FIXTURE = settings(
    BOUNDED, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)

# --- strategies ---------------------------------------------------------------------------------

# PyYAML's emitter writes NEL and the Unicode line separators unquoted, and they read back as
# line breaks: a dumper quirk, not ours, so text that is dumped and reloaded leaves them out.
plain = st.characters(blacklist_characters="\x85\u2028\u2029", blacklist_categories=("Cs",))
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(plain, max_size=12)
)
json_like = st.recursive(
    scalars,
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(plain, max_size=8), kids, max_size=4)
    ),
    max_leaves=24,
)
# What YAML gives as keys besides strings: `1:`, `null:`, and YAML 1.1 booleans such as `on:`.
any_key = st.text(plain, max_size=5) | st.integers(-2, 2) | st.none() | st.booleans()

# Fragments that drive libyaml into its corners: anchors, explicit tags with bad values,
# merge keys, directives, block scalars, flow collections, tabs and odd line breaks.
# fmt: off
TOKENS = [
    "a", "id", "jobs", ":", ": ", " ", "\n", "  ", "- ", "[", "]", "{", "}", ",", "? ",
    "&x ", "*x", "&y ", "*y", "<<: ", "'", '"', "# c", "---\n", "...\n", "%YAML 1.1\n",
    "%TAG ! tag:x,2000:\n", "|\n", ">-\n", "!!int ", "!!float ", "!!bool ", "!!timestamp ",
    "!!str ", "!!map ", "!!seq ", "!!set ", "!!binary ", "!!omap ", "!!pairs ", "!!null ",
    "!!python/tuple ", "!local ", "2026-13-45", "2026-06-01", "0x", "0b2", "1_0", "_", "~",
    ".nan", "-.inf", "\t", "\\", "${a}", "\r\n", "\r", "\x85", "\u2028", "\ufeff", "\x00",
]
# fmt: on
yamlish = st.lists(st.sampled_from(TOKENS) | st.text(max_size=3), max_size=40).map("".join)

ident = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._+=-]{0,6}", fullmatch=True) | st.text(max_size=4)
grid_key = st.sampled_from(["a", "b", "N", "seed", "lr"]) | st.text(max_size=3)
pieces = st.sampled_from(["${a}", "${b}", "${N}", "${}", "${HOME}", "${a", "out/", "/", "x", "$"])
templated = st.lists(pieces | ident, max_size=5).map("".join)
grid_value = st.none() | st.booleans() | st.integers(-3, 3) | st.floats() | ident
grid = st.dictionaries(grid_key, st.lists(grid_value, max_size=3), max_size=3)
args = st.dictionaries(grid_key | any_key, templated | scalars, max_size=3)
backend = st.sampled_from(["local", "generic-slurm", "vast-ai", ""]) | st.text(max_size=4)
template = st.fixed_dictionaries(
    {},
    optional={
        "id": templated,
        "cmd": templated,
        "output": templated,
        "output_check": templated,
        "args": args,
        "resources": json_like,
    },
)
job = st.fixed_dictionaries(
    {"id": ident},
    optional={"args": args, "cmd": templated, "output": templated, "backend": backend},
)
phase_name = st.sampled_from(["p1", "p2", "p3"]) | ident
phase = st.fixed_dictionaries(
    {"name": phase_name},
    optional={
        "depends_on": phase_name | st.lists(phase_name, max_size=3),
        "grid": grid,
        "template": template,
        "jobs": st.lists(job, max_size=3),
    },
)
wellformed_manifest = st.fixed_dictionaries(
    {},
    optional={
        "project": ident,
        "backend": backend,
        "stage": st.sampled_from(["smoke", "single", "production", "bogus"]),
        "jobs": st.lists(job, max_size=4),
        "grid": grid,
        "template": template,
        "phases": st.lists(phase, max_size=4),
        "x-note": json_like,
    },
)
# Manifest keys with arbitrary values: the schema must catch these before the model sees them.
KEYS = ["jobs", "grid", "template", "phases", "backend", "project", "smoke", "resources", "gpus"]
loose_manifest = st.dictionaries(st.sampled_from(KEYS) | any_key, json_like, max_size=5)
documents = wellformed_manifest | loose_manifest | json_like

HUGE_GRID: dict[str, Any] = {
    "grid": {k: list(range(11)) for k in "abcde"},
    "template": {"id": "c${a}${b}", "output": "o"},
}
PHASE_CYCLE: dict[str, Any] = {
    "phases": [
        {"name": "p1", "depends_on": "p2", "jobs": [{"id": "a", "output": "o"}]},
        {"name": "p2", "depends_on": ["p1", "p9"], "jobs": [{"id": "a", "output": "o"}]},
        {"name": "p1", "grid": {"a": [1]}, "template": {"cmd": "${zz}"}},
    ]
}


def dump(doc: Any) -> str:
    return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)


# --- (1) the loader -----------------------------------------------------------------------------


KEY_TYPES = (str, int, float, bool, type(None))


def json_shaped(value: Any) -> bool:
    """Only what JSON has (plus the scalar keys YAML writes plainly): no bytes, sets, dates."""
    if isinstance(value, dict):
        return all(isinstance(k, KEY_TYPES) and json_shaped(v) for k, v in value.items())
    if isinstance(value, list):
        return all(json_shaped(v) for v in value)
    return isinstance(value, KEY_TYPES)


def only_documented_outcomes(text: str) -> None:
    try:
        data = yamldoc.load(text, path="fuzz.yaml")
    except (YamlSyntaxError, InputError) as exc:
        assert exc.path == "fuzz.yaml"
    else:
        assert json_shaped(data), repr(data)


@BOUNDED
@given(st.text())
def test_load_any_text(text: str) -> None:
    only_documented_outcomes(text)


@BOUNDED
@given(yamlish)
@example("a: !!int abc")
@example("a: !!float 1:x")
@example("a: !!timestamp 2026-13-45")
@example("a: !!bool maybe")
@example("a: !!map [1]")
@example("a: !!int _")
@example("!!timestamp ")
@example("!!binary :")
@example("a: !!set {x}")
@example("a: !!timestamp 2001-12-14")
@example("a: !!omap [{x: 1}]")
def test_load_yamlish_text(text: str) -> None:
    only_documented_outcomes(text)


@BOUNDED
@given(json_like)
def test_load_round_trips_json_like_documents(doc: Any) -> None:
    assert yamldoc.load(dump(doc), path="fuzz.yaml") == doc


# --- (2) the MAN family on parsed documents -----------------------------------------------------


@BOUNDED
@given(documents)
@example(HUGE_GRID)
@example(PHASE_CYCLE)
@example({"grid": {"a": [1, 2]}, "template": {"id": "c${a}", "output": "${a}"}})
@example({"grid": {"a": [math.nan, math.inf]}, "template": {"id": "${a}", "output": "${a}"}})
@example({True: "push", "jobs": []})
@example({"jobs": [{"id": "a", 1: "x"}]})
def test_check_document_yields_only_findings(doc: Any) -> None:
    text = dump(doc)
    lines = text.count("\n") + 1
    for f in manifests.check_document("manifests/f.yaml", doc, Locator(text), authorized={"local"}):
        assert isinstance(f, Finding)
        assert f.path == "manifests/f.yaml"
        assert f.id in manifests.CODES
        assert 1 <= f.line <= lines
        assert f.col >= 1


def test_huge_grid_is_reported_not_expanded() -> None:
    assert manifest.grid_size(HUGE_GRID["grid"]) > manifest.MAX_TARGETS
    found = list(
        manifests.check_document("m.yaml", HUGE_GRID, Locator(dump(HUGE_GRID)), authorized=None)
    )
    assert [f.id for f in found] == ["MAN009"]


# --- (3) the whole CLI on a random campaign file ------------------------------------------------

texts = st.text() | yamlish | documents.map(dump)


def frontmatter(body: str) -> str:
    return f"---\n{body}\n---\n# page\n"


@pytest.fixture
def check(campaign: Path, run):  # type: ignore[no-untyped-def]
    def _check(rel: str, data: str | bytes, fmt: str) -> int:
        path = campaign / rel
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8", errors="surrogatepass")
        code: int = run("check", "--format", fmt).code
        return code

    return _check


FORMATS = st.sampled_from(["text", "json", "github"])


@FIXTURE
@given(data=texts | st.binary(max_size=200), fmt=FORMATS)
@example(data="jobs:\n  - id: !!int abc\n", fmt="text")
@example(data="grid: {a: [1, 2]}\ntemplate: {id: c${a}, output: '${a}'}\n", fmt="json")
@example(data="on: push\njobs: []\n", fmt="github")
def test_cli_on_random_manifest(check, data: str | bytes, fmt: str) -> None:  # type: ignore[no-untyped-def]
    assert check("manifests/fuzz.yaml", data, fmt) in {0, 1, 2}


@FIXTURE
@given(
    target=st.sampled_from(["campaign.yaml", "failures.yaml", "backends/local.md"]),
    body=texts,
    fmt=FORMATS,
)
@example(target="campaign.yaml", body="!!binary :", fmt="text")
def test_cli_on_random_policy_catalog_or_page(check, target: str, body: str, fmt: str) -> None:  # type: ignore[no-untyped-def]
    data = frontmatter(body) if target.endswith(".md") else body
    assert check(target, data, fmt) in {0, 1, 2}
