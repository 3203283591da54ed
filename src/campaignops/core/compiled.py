"""A JSON Schema compiled to nested closures: a fast yes/no for the fast path.

jsonschema is the reference: it is what reports *why* a document is invalid, and every schema
here is checked against it in the tests (agreement on generated documents). This module only
answers "valid?" for the keyword subset our schemas use, several times faster than jsonschema's
generic descent, because most files in a campaign are valid and need no more than that answer.
A keyword it does not know makes compile() raise, so a schema change can never be half-checked.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

# Annotations: they never affect validity.
_IGNORED = frozenset({"$schema", "$id", "title", "description", "default", "examples", "$comment"})


class UnsupportedSchema(Exception):
    """The schema uses a keyword this compiler does not implement."""


def _is_number(x: Any) -> bool:
    """A JSON number: never a bool, nor YAML's .nan or .inf (JSON has neither, and a bound
    cannot judge NaN: NaN < 0 and NaN > 100 are both false). schema.py's reporter agrees."""
    if isinstance(x, float):
        return math.isfinite(x)
    return isinstance(x, int) and not isinstance(x, bool)


_TYPES: Mapping[str, Check] = {
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "string": lambda x: isinstance(x, str),
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
    "number": _is_number,
    # Draft 2020-12: 1.0 is an integer.
    "integer": lambda x: _is_number(x) and (isinstance(x, int) or float(x).is_integer()),
}


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1, and 1 equals 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    return type(a) is type(b) and a == b


def _unique(items: list[Any]) -> bool:
    seen: set[tuple[str, Any]] = set()
    rest: list[Any] = []
    for x in items:
        if isinstance(x, bool):
            key: tuple[str, Any] = ("b", x)
        elif _is_number(x):
            key = ("n", x)
        elif isinstance(x, str) or x is None:
            key = ("s", x)
        else:
            if any(_equal(x, y) for y in rest):
                return False
            rest.append(x)
            continue
        if key in seen:
            return False
        seen.add(key)
    return True


def _on(kind: type | tuple[type, ...], test: Callable[[Any], bool]) -> Check:
    """Apply ``test`` only to instances of ``kind``: other types pass (JSON Schema semantics)."""

    def check(x: Any) -> bool:
        return not isinstance(x, kind) or test(x)

    return check


def _all(fns: list[Check]) -> Check:
    def check(x: Any) -> bool:
        return all(f(x) for f in fns)

    return check


def _type(value: Any, _: _Compiler) -> Check:
    fns = [_TYPES[n] for n in ([value] if isinstance(value, str) else value)]

    def check(x: Any) -> bool:
        return any(f(x) for f in fns)

    return check


def _enum(value: Any, _: _Compiler) -> Check:
    def check(x: Any) -> bool:
        return any(_equal(x, e) for e in value)

    return check


def _const(value: Any, _: _Compiler) -> Check:
    def check(x: Any) -> bool:
        return _equal(x, value)

    return check


def _pattern(value: Any, _: _Compiler) -> Check:
    rx = re.compile(value)
    return _on(str, lambda x: bool(rx.search(x)))


def _minimum(value: Any, _: _Compiler) -> Check:
    return lambda x: not _is_number(x) or bool(x >= value)


def _maximum(value: Any, _: _Compiler) -> Check:
    return lambda x: not _is_number(x) or bool(x <= value)


def _exclusive_minimum(value: Any, _: _Compiler) -> Check:
    return lambda x: not _is_number(x) or bool(x > value)


def _items(value: Any, c: _Compiler) -> Check:
    item = c.compile(value)
    return _on(list, lambda x: all(map(item, x)))


def _dependent_required(value: Any, _: _Compiler) -> Check:
    deps = {k: list(v) for k, v in value.items()}
    return _on(dict, lambda x: all(all(r in x for r in deps[k]) for k in deps if k in x))


def _property_names(value: Any, c: _Compiler) -> Check:
    name = c.compile(value)
    return _on(dict, lambda x: all(map(name, x)))


def _any_of(value: Any, c: _Compiler) -> Check:
    subs = [c.compile(s) for s in value]
    return lambda x: any(f(x) for f in subs)


def _all_of(value: Any, c: _Compiler) -> Check:
    return _all([c.compile(s) for s in value])


def _one_of(value: Any, c: _Compiler) -> Check:
    subs = [c.compile(s) for s in value]
    return lambda x: sum(1 for f in subs if f(x)) == 1


KEYWORDS: Mapping[str, Callable[[Any, _Compiler], Check]] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "$ref": lambda v, c: c.ref(v),
    "pattern": _pattern,
    "minLength": lambda v, _: _on(str, lambda x: len(x) >= v),
    "maxLength": lambda v, _: _on(str, lambda x: len(x) <= v),
    "minimum": _minimum,
    "maximum": _maximum,
    "exclusiveMinimum": _exclusive_minimum,
    "minItems": lambda v, _: _on(list, lambda x: len(x) >= v),
    "uniqueItems": lambda v, _: _on(list, _unique) if v else (lambda x: True),
    "items": _items,
    "required": lambda v, _: _on(dict, lambda x: all(k in x for k in v)),
    "minProperties": lambda v, _: _on(dict, lambda x: len(x) >= v),
    "dependentRequired": _dependent_required,
    "propertyNames": _property_names,
    "anyOf": _any_of,
    "allOf": _all_of,
    "oneOf": _one_of,
}
# Compiled together with a sibling keyword, not on their own.
_GROUPED = frozenset(
    {"properties", "patternProperties", "additionalProperties", "if", "then", "else", "$defs"}
)


class _Compiler:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.refs: dict[str, Check] = {}

    def ref(self, pointer: str) -> Check:
        if pointer not in self.refs:
            if not pointer.startswith("#/"):
                raise UnsupportedSchema(f"$ref {pointer!r}")
            target: Any = self.root
            for part in pointer[2:].split("/"):
                target = target[part]
            # A forwarding slot first, so recursive definitions terminate.
            slot: list[Check] = []
            self.refs[pointer] = lambda x: slot[0](x)
            slot.append(self.compile(target))
        return self.refs[pointer]

    def compile(self, schema: Any) -> Check:
        if schema is True or schema == {}:
            return lambda x: True
        if schema is False:
            return lambda x: False
        checks: list[Check] = []
        for key, value in schema.items():
            if key in _IGNORED or key in _GROUPED:
                continue
            if key not in KEYWORDS:
                raise UnsupportedSchema(f"keyword {key!r}")
            checks.append(KEYWORDS[key](value, self))
        if "if" in schema:
            cond = self.compile(schema["if"])
            then = self.compile(schema.get("then", True))
            other = self.compile(schema.get("else", True))
            checks.append(lambda x: then(x) if cond(x) else other(x))
        if any(k in schema for k in ("properties", "patternProperties", "additionalProperties")):
            checks.append(self._object(schema))
        return checks[0] if len(checks) == 1 else _all(checks)

    def _object(self, schema: Mapping[str, Any]) -> Check:
        props = {k: self.compile(v) for k, v in schema.get("properties", {}).items()}
        patterns = [
            (re.compile(p), self.compile(s)) for p, s in schema.get("patternProperties", {}).items()
        ]
        extra_schema = schema.get("additionalProperties", True)
        extra = self.compile(extra_schema)
        open_extra = extra_schema is True or extra_schema == {}

        def check(x: Any) -> bool:
            if not isinstance(x, dict):
                return True
            for k, v in x.items():
                known = k in props
                if known and not props[k](v):
                    return False
                matched = False
                for rx, f in patterns:
                    if rx.search(k):
                        matched = True
                        if not f(v):
                            return False
                if not known and not matched and not open_extra and not extra(v):
                    return False
            return True

        return check


def compile_schema(schema: Mapping[str, Any]) -> Check:
    """A function that says whether a JSON-shaped document is valid. Raises UnsupportedSchema."""
    return _Compiler(schema).compile(schema)
