"""The compiled fast-path validator agrees with jsonschema on every schema we ship.

Documents are valid examples of each format, mutated at random paths (a value replaced by any
JSON value, a key deleted, an unknown key added), so every keyword is exercised on both sides.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from campaignops.core import compiled, schema, yamldoc
from campaignops.model import frontmatter

CLEAN = Path(__file__).parent / "fixtures" / "clean"


def _load(rel: str) -> Any:
    text = (CLEAN / rel).read_text()
    if rel.endswith(".md"):
        fm = frontmatter.split(text)
        assert fm is not None
        text = fm.text
    return yamldoc.load(text, path=rel)


MANIFEST_PHASES = {
    "project": "p",
    "stage": "smoke",
    "gpus": [0, 1],
    "oom_retry": {"delay": 120, "max_attempts": 3},
    "phases": [
        {"name": "a", "grid": {"N": [1, 2]}, "template": {"cmd": "run ${N}"}},
        {"name": "b", "depends_on": ["a"], "jobs": [{"id": "x", "args": {"k": 1}}]},
    ],
    "jobs": [{"id": "j1", "resources": {"time": "01:00:00", "mem": "4G", "gpus": 1}}],
}
LEDGER = {
    "v": 1,
    "kind": "intent",
    "ledger_id": "L20261121-0001",
    "time": "2026-11-21T10:00:00Z",
    "backend": "local",
    "stage": "smoke",
    "targets": ["a"],
    "fingerprint": "sha256:" + "0" * 64,
    "commit": "a" * 40,
    "manifest": "manifests/x.yaml",
    "wrappers": {"scripts/run_one.v1.sh": "sha256:" + "1" * 64},
    "exit_code": None,
    "state": "PENDING",
}
EXAMPLES: dict[str, list[Any]] = {
    schema.MANIFEST: [_load("manifests/smoke.yaml"), MANIFEST_PHASES],
    schema.POLICY: [_load("campaign.yaml")],
    schema.BACKEND: [_load("backends/generic-slurm.md"), _load("backends/local.md")],
    schema.FAILURES: [_load("failures.yaml")],
    schema.LEDGER_RECORD: [LEDGER, {**LEDGER, "kind": "state"}],
}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([0.5, 1.0, 2.0, -1.5, math.nan, math.inf, -math.inf])  # YAML's .nan/.inf
    | st.sampled_from(["", "x", "smoke", "01:00:00", "2026-06", "sha256:" + "0" * 64, "x-a", "4G"])
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(doc: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [here]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*here, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*here, i))
    return out


def _mutate(doc: Any, path: tuple[Any, ...], op: str, value: Any, key: str) -> Any:
    if not path:
        if op == "add" and isinstance(doc, dict):
            return {**doc, key: value}
        return value if op == "replace" else doc
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        if op == "delete" and not rest:
            return {k: v for k, v in doc.items() if k != head}
        return {k: (_mutate(v, rest, op, value, key) if k == head else v) for k, v in doc.items()}
    if op == "delete" and not rest:
        return [v for i, v in enumerate(doc) if i != head]
    return [(_mutate(v, rest, op, value, key) if i == head else v) for i, v in enumerate(doc)]


@pytest.mark.parametrize("name", schema.NAMES)
def test_examples_are_valid_for_both(name: str) -> None:
    fast = compiled.compile_schema(schema.load(name))
    reference = Draft202012Validator(schema.load(name))
    for doc in EXAMPLES[name]:
        assert reference.is_valid(doc), list(reference.iter_errors(doc))
        assert fast(doc)


@pytest.mark.parametrize("name", schema.NAMES)
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_compiled_agrees_with_jsonschema(name: str, data: st.DataObject) -> None:
    doc = data.draw(st.sampled_from(EXAMPLES[name]))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(doc)))
        op = data.draw(st.sampled_from(["replace", "delete", "add"]))
        key = data.draw(st.sampled_from(["x-tool", "bogus", "stage", "id", "verified", "name"]))
        doc = _mutate(doc, path, op, data.draw(json_values), key)
    # The reference is what reports the errors: Draft 2020-12 with finite numbers (schema.py).
    reference = schema._validator(name)
    assert compiled.compile_schema(schema.load(name))(doc) == reference.is_valid(doc)


def test_unknown_keyword_is_refused_not_skipped() -> None:
    with pytest.raises(compiled.UnsupportedSchema):
        compiled.compile_schema({"type": "object", "maxProperties": 2})


@pytest.mark.parametrize(
    ("sch", "doc", "valid"),
    [
        ({"const": 1}, True, False),  # true is not 1 in JSON
        ({"enum": [1]}, 1.0, True),  # 1.0 equals 1
        ({"type": "integer"}, 2.0, True),  # draft 2020-12
        ({"type": "integer"}, False, False),
        ({"uniqueItems": True}, [1, True], True),
        ({"uniqueItems": True}, [[1], [1.0]], False),
        ({"$defs": {"n": {"items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}, [[[1]]], True),
    ],
)
def test_json_semantics(sch: dict[str, Any], doc: Any, valid: bool) -> None:
    assert compiled.compile_schema(sch)(doc) is valid
    assert Draft202012Validator(sch).is_valid(doc) is valid
