"""The shipped JSON Schemas (Draft 2020-12), loaded with importlib.resources, validators cached.

A validator is built once per schema and reused for every file: building one is what makes
per-file validation slow in tools that rebuild it for each file.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from campaignops.core.compiled import UnsupportedSchema, compile_schema

MANIFEST = "manifest"
POLICY = "policy"
BACKEND = "backend"
FAILURES = "failures"
LEDGER_RECORD = "ledger-record"
NAMES = (MANIFEST, POLICY, BACKEND, FAILURES, LEDGER_RECORD)


@dataclass(frozen=True)
class SchemaError:
    """One validation error: where in the document (``where``), and what is wrong."""

    where: tuple[str | int, ...]
    message: str
    on_key: bool  # point at the mapping key rather than its value (unknown-key errors)


@cache
def load(name: str) -> dict[str, Any]:
    text = resources.files("campaignops.schemas").joinpath(f"{name}.schema.json").read_text()
    data: dict[str, Any] = json.loads(text)
    return data


@cache
def _fast(name: str) -> Callable[[Any], bool]:
    """The compiled yes/no check; jsonschema's own when the compiler cannot take the schema."""
    try:
        return compile_schema(load(name))
    except UnsupportedSchema:
        validator = _validator(name)
        return lambda data: bool(validator.is_valid(data))


NOT_FINITE = (
    "{label}: {value!r} is not a finite number (NaN and infinity, YAML's .nan and .inf, are not "
    "numbers here); write a number"
)


def _finite_number(checker: Any, instance: Any) -> bool:
    if isinstance(instance, float):
        return math.isfinite(instance)
    return isinstance(instance, int) and not isinstance(instance, bool)


def _finite_integer(checker: Any, instance: Any) -> bool:
    # Draft 2020-12: 1.0 is an integer.
    return _finite_number(checker, instance) and (
        isinstance(instance, int) or float(instance).is_integer()
    )


@cache
def _validator(name: str) -> Any:
    """jsonschema's Draft 2020-12 validator, but a number is finite (compiled.py's rule): its
    own takes NaN as a number that every bound lets through."""
    from jsonschema import Draft202012Validator, validators

    checker = Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"number": _finite_number, "integer": _finite_integer}
    )
    extend: Callable[..., Any] = validators.extend  # untyped in jsonschema
    return extend(Draft202012Validator, type_checker=checker)(load(name))


def _describe(err: Any) -> tuple[tuple[str | int, ...], str, bool]:
    where = tuple(err.absolute_path)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = set(err.schema.get("properties", {}))
        extra = [k for k in err.instance if k not in allowed and not str(k).startswith("x-")]
        if extra:
            close = difflib.get_close_matches(str(extra[0]), allowed, n=1)
            known = (
                f"did you mean {close[0]!r}?" if close else "known: " + ", ".join(sorted(allowed))
            )
            return (*where, extra[0]), f"unknown key {extra[0]!r} ({known})", True
    if err.validator == "required":
        return where, err.message, False
    label = ".".join(str(p) for p in where) or "(top level)"
    finite = not isinstance(err.instance, float) or math.isfinite(err.instance)
    if err.validator == "type" and not finite:
        return where, NOT_FINITE.format(label=label, value=err.instance), False
    if err.validator == "pattern" and isinstance(err.schema.get("description"), str):
        # The form in words, not the regex a person cannot read (resources.time's walltime).
        return (
            where,
            f"{label}: {err.instance!r} is not in the form: {err.schema['description']}",
            False,
        )
    return where, f"{label}: {err.message}", False


def validate(name: str, data: Any) -> Iterator[SchemaError]:
    """Errors of ``data`` against schema ``name``; nothing when valid (checked fast first)."""
    try:
        if _fast(name)(data):
            return
    except TypeError:
        pass  # jsonschema's patternProperties assume string keys: reported just below
    validator = _validator(name)
    bad = _non_string_key(data, ())
    if bad is not None:
        yield SchemaError(
            where=bad[0], message=f"mapping key {bad[1]!r} is not a string", on_key=True
        )
        return
    for err in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
        # anyOf/oneOf report a summary; their most relevant sub-error says more.
        if err.context:
            from jsonschema.exceptions import best_match

            err = best_match(err.context) or err
        where, message, on_key = _describe(err)
        yield SchemaError(where=where, message=message, on_key=on_key)


def _non_string_key(
    data: Any, where: tuple[str | int, ...]
) -> tuple[tuple[str | int, ...], Any] | None:
    if isinstance(data, dict):
        for key, value in data.items():
            if not isinstance(key, str):
                return where, key
            found = _non_string_key(value, (*where, key))
            if found:
                return found
    elif isinstance(data, list):
        for i, value in enumerate(data):
            found = _non_string_key(value, (*where, i))
            if found:
                return found
    return None
