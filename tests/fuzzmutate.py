"""Mutations of a campaign's files for the fuzz suite (tests/fuzzkit.py): on bytes, or on the
parsed YAML, front matter, JSON or JSON-lines tree, with values that have broken parsers before.
"""

from __future__ import annotations

import copy
import json
import math
import random
from collections.abc import Iterator, Sequence
from typing import Any

import yaml

# Values that have broken parsers before: sizes past every limit, odd numbers, path tricks,
# line separators, shell and template syntax, deep nesting below libyaml's own stack limit.
LONG_NAME = "n" * 300  # one path component over NAME_MAX (255 bytes)
# fmt: off
VALUES: tuple[Any, ...] = (
    None, True, False, 0, -1, 2**63, -(2**63) - 1, 10**400, 1e308, math.inf, -math.inf, math.nan,
    "", " ", LONG_NAME, f"queues/{LONG_NAME}.txt", "../README", "../../../../etc/passwd",
    "/etc/passwd", "x\ny", "a\u2028b", "a\x85b", "\x00", "\ufeff", "\ud800", "${a}", "${", "%C",
    "$(touch pwned)", "; touch pwned; echo", "00:00:00", "99:99:99", "1-00:00:00", "-00:01:00",
    "2026-13-45", "2026-02-30T25:61:61Z", "*", "**/*", "~", "é🙂ﬀ", "\\", "'\"", "\t", "local",
    "generic-slurm", "smoke", "production", "COMPLETED", "FAILED", "local-1-000000", [], {},
    [None], {"": None}, {"x-": 1},
)
KEYS: tuple[str, ...] = (
    "jobs", "grid", "template", "phases", "backend", "backends", "project", "smoke", "resources",
    "queue", "default_cmd", "id", "cmd", "args", "output", "kind", "state", "job_id", "ledger_id",
    "targets", "run_time_s", "time", "paths", "budgets", "stages", "patterns", "charging",
    "x-junk", "",
)
# b"\xed\xa0\x80" is a lone surrogate encoded as UTF-8 would if it could.
TOKENS: tuple[bytes, ...] = (
    b"\x00", b"\xff", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\r",
    b"\r\n", b"\xe2\x80\xa8", b"\xc2\x85", b"\t", b"---\n", b"...\n", b"&a ", b"*a", b"<<: *a\n",
    b"!!python/object:os.system ", b"!!binary ", b"!!timestamp ", b"%YAML 1.1\n", b"? ", b": ",
    b"- ", b"{", b"}", b"[", b"]", b"'", b'"', b"#", b"<!-- campaign:begin jobs -->",
    b"<!-- campaign:end jobs -->", b"1e999", b"-1e999", b"NaN", b"Infinity", b'"\\ud800"',
    LONG_NAME.encode(), b"../", b"[" * 2000 + b"]" * 2000, b"{a: " * 100 + b"1" + b"}" * 100,
)
# fmt: on


# --- mutation -----------------------------------------------------------------------------------


def _bytes_op(rng: random.Random, data: bytes, corpus: Sequence[bytes]) -> bytes:
    n = len(data)
    at = rng.randint(0, n)
    end = min(n, at + rng.choice((1, 2, 8, 64, 512)))
    op = rng.randrange(10)
    if op == 0 and n:
        i = rng.randrange(n)
        return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :]
    if op == 1:
        return data[:at] + rng.randbytes(rng.randint(1, 16)) + data[at:]
    if op == 2:
        return data[:at] + data[end:]
    if op == 3:
        return data[:end] + data[at:end] * rng.randint(1, 50) + data[end:]
    if op == 4:
        return data[:at]
    if op == 5:
        other = rng.choice(corpus)
        i = rng.randint(0, len(other))
        return data[:at] + other[i : i + rng.randint(1, 400)] + data[end:]
    if op == 6:
        return data.replace(b"\n", b"\r\n") if rng.random() < 0.5 else data.replace(b"\n", b"\r")
    if op == 7:
        return b""
    if op == 8 and n:  # swap two lines
        lines = data.split(b"\n")
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return b"\n".join(lines)
    return data[:at] + rng.choice(TOKENS) + data[at:]


def _nodes(tree: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _nodes(v, (*path, k))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from _nodes(v, (*path, i))


def _value(rng: random.Random) -> Any:
    value = rng.choice(VALUES)
    if rng.random() < 0.1:
        depth = rng.choice((10, 63, 64, 65, 200))
        for _ in range(depth):
            value = [value] if rng.random() < 0.5 else {"k": value}
    return value


def _tree_op(rng: random.Random, tree: Any) -> Any:
    """One edit of a parsed document: replace, delete, add, duplicate or wrap a node."""
    paths = list(_nodes(tree))
    path = rng.choice(paths)
    if not path:
        return _value(rng) if rng.random() < 0.2 else _tree_op_in(rng, tree)
    parent: Any = tree
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    op = rng.randrange(5)
    if op == 0:
        parent[last] = _value(rng)
    elif op == 1:
        del parent[last]
    elif op == 2:
        parent[last] = [parent[last]]
    elif op == 3 and isinstance(parent, list):
        parent.insert(last, json.loads(json.dumps(parent[last], default=str)))
    elif op == 3:
        parent[rng.choice(KEYS)] = parent[last]
    else:
        _tree_op_in(rng, parent[last])
    return tree


def _tree_op_in(rng: random.Random, node: Any) -> Any:
    if isinstance(node, dict):
        node[rng.choice(KEYS)] = _value(rng)
    elif isinstance(node, list):
        node.append(_value(rng))
    return node


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


# Trees already parsed, by text: most inputs start from one of the campaign's own files (the
# failure catalog is ~200 KB), so each is parsed once and copied (the mutation edits it).
_PARSED: dict[str, Any] = {}


def _load_yaml(text: str) -> Any:
    if text not in _PARSED:
        if len(_PARSED) >= 64:
            _PARSED.clear()
        _PARSED[text] = yaml.load(text, Loader=_LOADER)  # a safe loader: the C one when built
    return copy.deepcopy(_PARSED[text])


def _dump_yaml(tree: Any) -> bytes:
    try:
        text = yaml.dump(tree, Dumper=_DUMPER, allow_unicode=True, sort_keys=False)
    except Exception:  # a lone surrogate: the emitter escapes what it cannot write as UTF-8
        text = yaml.dump(tree, Dumper=yaml.SafeDumper, allow_unicode=False, sort_keys=False)
    return text.encode("utf-8", "surrogatepass")


def _structure_op(rng: random.Random, data: bytes, kind: str) -> bytes:
    text = data.decode("utf-8", "surrogateescape")
    try:
        if kind == "yaml":
            return _dump_yaml(_tree_op(rng, _load_yaml(text)))
        if kind == "frontmatter":
            _, head, body = text.split("---\n", 2)
            new = _dump_yaml(_tree_op(rng, _load_yaml(head))).decode("utf-8", "surrogatepass")
            return f"---\n{new}---\n{body}".encode("utf-8", "surrogatepass")
        if kind == "json":
            return json.dumps(_tree_op(rng, json.loads(text)), default=str).encode(
                "utf-8", "surrogatepass"
            )
        if kind == "jsonl":
            lines = text.splitlines()
            i = rng.randrange(len(lines))
            if rng.random() < 0.3:  # drop, duplicate or move a whole record
                record = lines.pop(i)
                if rng.random() < 0.7:
                    lines.insert(rng.randint(0, len(lines)), record)
                    if rng.random() < 0.5:
                        lines.insert(rng.randint(0, len(lines)), record)
            else:
                lines[i] = json.dumps(_tree_op(rng, json.loads(lines[i])), default=str)
            return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    except Exception:  # the harness's own parse: anything unparsable falls back to bytes
        pass  # an earlier mutation left nothing to parse: fall back to bytes
    lines = text.split("\n")
    i = rng.randrange(len(lines))
    fields = lines[i].split(" ")
    fields.insert(rng.randint(0, len(fields)), str(_value(rng)))
    lines[i] = " ".join(fields)
    return "\n".join(lines).encode("utf-8", "surrogatepass")


def mutate(rng: random.Random, data: bytes, kind: str, corpus: Sequence[bytes]) -> bytes:
    """One to three stacked edits of ``data``: bytes or, about half the time, structure."""
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        if rng.random() < 0.5:
            data = _structure_op(rng, data, kind)
        else:
            data = _bytes_op(rng, data, corpus)
    return data
