"""YAML on libyaml: a fast loader for every file, and a node locator only for failing ones.

The fast path keeps every scalar JSON-shaped (no timestamp resolution, so ``2026-06-01`` stays a
string as it would in JSON), refuses duplicate keys (PyYAML silently keeps the last one), and
refuses documents whose aliases add more than a node budget or that nest too deeply, because the
validators walk the expanded tree and a billion-laughs file would otherwise hang them.

Nesting is bounded *before* libyaml composes: its composer recurses in C once per level, so
``'[' * 30000`` overflows the C stack (SIGSEGV) where no RecursionError can catch it. Every
collection is opened by one indicator character of its own (``[ { - : ?``), so a text with fewer
than ``_SCAN_FROM`` of them cannot nest that deep and loads directly; any other text is first
walked as a stream of parser events (libyaml's parser keeps its states on a heap stack, no
recursion), which finds the first collection past MAX_DEPTH with its line and column.
"""

from __future__ import annotations

import copy
import re
import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Any

import yaml

from campaignops.core.errors import InputError, YamlSyntaxError

# Nodes that aliases may add to a document (its expanded tree minus the nodes written out).
MAX_ALIAS_NODES = 200_000
MAX_DEPTH = 64
# Below this many indicator characters a text cannot nest deep enough to exhaust the C stack
# (libyaml's composer overflowed an 8 MiB stack between 20,000 and 25,000 levels).
_SCAN_FROM = 1000
_INDICATORS = "[{-:?"
_DEPTH_HINT = "flatten the document; campaign files never need deep nesting"
# Documents already loaded, by their text, the most recent last: one command reads a file
# through several readers (the failure catalog, ~200 KB, takes ~30 ms to walk and load, and
# each check family and view reads it), and a process may run many commands (`campaign mcp`).
# A copy costs ~1/20 of a load; only loads that succeeded are kept, so every error is raised
# as before, with its own path. A text is kept the second time it is loaded, not the first: a
# check of a thousand manifests loads each once and pays no copy (bench/checks.py).
_LOADED: OrderedDict[str, Any] = OrderedDict()
# The texts loaded once, by hash (a collision only keeps a tree early), the most recent last.
_SEEN: OrderedDict[int, None] = OrderedDict()
_SEEN_MAX = 256
_LOADED_MAX = 16
_LOADED_MAX_CHARS = 512 * 1024
_LOADED_LOCK = threading.Lock()  # ssh queries run in threads
_NOT_KEPT = object()
_IMMUTABLE = frozenset({str, int, float, bool})  # what the JSON-shaped fast loader builds

_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _JsonLoader(_Base):  # type: ignore[valid-type,misc]
    """Safe loader without timestamp resolution and with duplicate-key detection."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        # Merged-in keys (`<<: *base`) may be overridden by explicit ones: only two explicit keys
        # are a duplicate.
        explicit = {id(k) for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge"}
        self.flatten_mapping(node)
        if (
            len(explicit) == len(node.value)
            and all(
                type(k.value) is str and k.tag == "tag:yaml.org,2002:str" for k, _ in node.value
            )
            and len({k.value for k, _ in node.value}) == len(node.value)
        ):
            # Plain distinct string keys (the usual case): nothing to check key by key.
            return dict(super().construct_mapping(node, deep=deep))
        seen: dict[Hashable, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                # JSON has only string keys; YAML 1.1 reads `on:` as True and `1:` as an int.
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f'mapping key {key!r} is not a string; quote it ("{key_node.value}")',
                    key_node.start_mark,
                )
            if key in seen and id(key_node) in explicit and id(seen[key]) in explicit:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r}",
                    key_node.start_mark,
                )
            seen[key] = key_node
        result: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return result


_JsonLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _Base.yaml_implicit_resolvers.items()
}
_JsonLoader.add_constructor(
    "tag:yaml.org,2002:map",
    _JsonLoader.construct_mapping,
)
# Types JSON does not have are refused (an unknown tag is a syntax error with its position).
_JsonLoader.yaml_constructors = {
    tag: fn
    for tag, fn in _JsonLoader.yaml_constructors.items()
    if tag
    not in {
        "tag:yaml.org,2002:binary",
        "tag:yaml.org,2002:set",
        "tag:yaml.org,2002:omap",
        "tag:yaml.org,2002:pairs",
        "tag:yaml.org,2002:timestamp",
    }
}


class YamlLimitError(InputError):
    """A document past one of this module's limits, at ``line``:``col`` of its file."""

    def __init__(self, *, path: str, line: int, col: int, message: str, hint: str) -> None:
        super().__init__(path=path, message=message, hint=hint)
        self.line = line
        self.col = col
        self.message = f"{path}:{line}:{col}: {message}"
        self.args = (self.message,)


def _too_deep(path: str, where: tuple[int, int] | None, line_offset: int) -> InputError:
    message = f"YAML nests deeper than {MAX_DEPTH} levels, the limit of this tool"
    if where is None:  # only aliases nest this deep: no single place in the text does
        return InputError(path=path, message=f"{message} (through aliases)", hint=_DEPTH_HINT)
    return YamlLimitError(
        path=path, line=where[0] + line_offset, col=where[1], message=message, hint=_DEPTH_HINT
    )


def first_too_deep(text: str) -> tuple[int, int] | None:
    """1-based line:col of the first collection nested past MAX_DEPTH, or None (also when the
    text stops parsing before one: the loader reports that syntax error with its position).

    Walks libyaml's events, which needs no recursion at any depth. libyaml 0.2.6 (PyYAML
    6.0.4) refuses a flow nesting past its own limit (1,000) while it scans ahead, before the
    first event; then the pure-Python parser, which has no such limit, walks the same events."""
    try:
        return _walk(text, _Base)
    except yaml.YAMLError as exc:
        if "maximum nesting depth" not in str(exc) or _Base is yaml.SafeLoader:
            return None
    try:
        return _walk(text, yaml.SafeLoader)
    except yaml.YAMLError:
        return None


def _walk(text: str, loader: type[yaml.SafeLoader]) -> tuple[int, int] | None:
    depth = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            mark = event.start_mark
            if depth > MAX_DEPTH and mark is not None:
                return (mark.line + 1, mark.column + 1)
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1
    return None


def _may_nest_deeply(text: str) -> bool:
    return sum(text.count(c) for c in _INDICATORS) >= _SCAN_FROM


def load(text: str, *, path: str, line_offset: int = 0) -> Any:
    """Parse one YAML document from ``text``. Raises YamlSyntaxError or InputError (hostile).

    ``line_offset`` places limit errors in the file when ``text`` starts after its first line
    (front matter); syntax errors stay relative to ``text``, as callers expect.
    Each call returns a tree of its own, which the caller may change."""
    with _LOADED_LOCK:
        kept = _LOADED.get(text, _NOT_KEPT)
        if kept is not _NOT_KEPT:
            _LOADED.move_to_end(text)
    if kept is not _NOT_KEPT:
        return _copied(kept)
    data = _load(text, path=path, line_offset=line_offset)
    if len(text) <= _LOADED_MAX_CHARS and _seen_before(text):
        kept = _copied(data)
        with _LOADED_LOCK:
            _LOADED[text] = kept
            if len(_LOADED) > _LOADED_MAX:
                _LOADED.popitem(last=False)
    return data


def _copied(data: Any) -> Any:
    """A tree of the caller's own, several times faster than deepcopy: dicts and lists are
    copied, immutable nodes kept; a node an alias shares, or of another kind, and deepcopy
    copies it all (keeping the sharing the alias limits were measured with)."""
    try:
        return _tree(data, set())
    except TypeError:
        return copy.deepcopy(data)


def _tree(node: Any, seen: set[int]) -> Any:
    if type(node) is dict or type(node) is list:
        if id(node) in seen:
            raise TypeError("shared")
        seen.add(id(node))
        if isinstance(node, list):
            return [_tree(v, seen) for v in node]
        return {k: _tree(v, seen) for k, v in node.items()}
    if node is None or type(node) in _IMMUTABLE:
        return node
    raise TypeError(type(node).__name__)


def _seen_before(text: str) -> bool:
    """Whether ``text`` was loaded before (and now is remembered as loaded)."""
    key = hash(text)
    with _LOADED_LOCK:
        if key in _SEEN:
            del _SEEN[key]
            return True
        _SEEN[key] = None
        if len(_SEEN) > _SEEN_MAX:
            _SEEN.popitem(last=False)
        return False


def _load(text: str, *, path: str, line_offset: int) -> Any:
    if _may_nest_deeply(text):
        where = first_too_deep(text)
        if where is not None:
            raise _too_deep(path, where, line_offset)
    try:
        data = yaml.load(text, Loader=_JsonLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = " ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
        raise YamlSyntaxError(path=path, line=line, col=col, problem=problem) from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(path=path, line=1, col=1, problem=str(exc)) from None
    except RecursionError:
        raise _too_deep(path, first_too_deep(text), line_offset) from None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        # PyYAML's constructors raise plain exceptions for explicit tags with bad values
        # (`!!int abc`, `!!bool maybe`); they carry no position.
        raise YamlSyntaxError(
            path=path, line=1, col=1, problem=f"a tagged value cannot be built ({exc!r})"
        ) from None
    try:
        if "*" in text:
            _measure(data, path=path)
        else:  # no alias can be written without '*': nothing to add up, only the depth
            _depth(data)
    except _TooDeepError:
        raise _too_deep(path, first_too_deep(text), line_offset) from None
    return data


class _TooDeepError(Exception):
    """Raised by _measure; load() locates the nesting in the text (only on this failure path)."""


def _depth(data: Any) -> None:
    """_TooDeepError where a container sits deeper than MAX_DEPTH (the root is at 1), level by
    level: the whole of _measure for a text without aliases, at a fraction of its cost."""
    level = [data] if isinstance(data, (dict, list)) else []
    depth = 1
    while level:
        if depth > MAX_DEPTH:
            raise _TooDeepError
        nested: list[Any] = []
        for node in level:
            kids = node.values() if isinstance(node, dict) else node
            nested += [k for k in kids if isinstance(k, (dict, list))]
        level, depth = nested, depth + 1


def _measure(data: Any, *, path: str) -> None:
    """Check what aliases add to the tree the validators will walk, without expanding it.

    A document without aliases is as big as its text (bounded by the file size limit), however
    many nodes it has; only the nodes an alias adds beyond its anchor (``expanded - written``)
    count against MAX_ALIAS_NODES, so 51,000 explicit jobs load and a billion laughs does not."""
    sizes: dict[int, int] = {}  # expanded size of each distinct container
    written = 1  # the root, plus every child slot of every distinct container (an alias is one)
    on_stack: set[int] = set()
    stack: list[tuple[Any, int, bool]] = [(data, 1, False)]
    while stack:
        node, depth, children_done = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        key = id(node)
        kids = node.values() if isinstance(node, dict) else node
        if children_done:
            sizes[key] = 1 + sum(sizes.get(id(k), 1) for k in kids)
            written += len(node)
            on_stack.discard(key)
            continue
        if key in on_stack:
            raise InputError(
                path=path,
                message="YAML contains a recursive alias (a node that includes itself)",
                hint="remove the self-referencing anchor",
            )
        if key in sizes:
            continue
        if depth > MAX_DEPTH:
            raise _TooDeepError
        on_stack.add(key)
        stack.append((node, depth, True))
        stack.extend((k, depth + 1, False) for k in kids)
    added = sizes.get(id(data), 1) - written
    if added > MAX_ALIAS_NODES:
        raise InputError(
            path=path,
            message=f"YAML aliases add {added:,} nodes to the document; the limit is "
            f"{MAX_ALIAS_NODES:,} nodes added by aliases (an alias bomb?)",
            hint="remove the nested aliases; write the values out",
        )


_BREAK = re.compile(r"\r\n|\r|\n")
_OTHER_BREAKS = re.compile("[\x85\u2028\u2029]")  # YAML 1.1 breaks: leave them to libyaml


class _MarksLoader(_Base):  # type: ignore[valid-type,misc]
    """Composes without resolving tags (a third of composing): locating needs node kinds,
    scalar text and marks, never what a scalar means."""

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: Any) -> str:
        return "tag:yaml.org,2002:str"


# A plain key at the start of a line, then ':' and a blank or the end of the line.
_TOP_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]*):(?:[ \t]|$)")


class Locator:
    """Finds 1-based line:col of nodes, from libyaml's composed node graph, built on first use.

    Only built for files that already failed a check. Composing (nodes with their marks, no
    Python objects) with the same C parser the fast path uses is exact and cheap: ~0.3 ms per
    manifest, where ruamel.yaml's round-trip loader took ~9 ms (docs/decisions.md). A path that
    does not exist resolves to the deepest node reached.
    """

    def __init__(self, text: str, *, line_offset: int = 0) -> None:
        self._text = text
        self._offset = line_offset
        self._root: yaml.Node | None = None
        self._loaded = False
        self._starts: dict[str, int | None] | None = None  # top-level key -> 0-based line

    def _compose(self) -> yaml.Node | None:
        if not self._loaded:
            self._loaded = True
            if _may_nest_deeply(self._text) and first_too_deep(self._text) is not None:
                return None  # composing would recurse past the C stack
            try:
                self._root = yaml.compose(self._text, Loader=_MarksLoader)
            except (yaml.YAMLError, RecursionError):  # positions then fall back to the top
                self._root = None
        return self._root

    def _top_key(self, name: str) -> tuple[int, int] | None:
        """A top-level block key starts a line: found by its text, without composing (most
        findings of a manifest are at such keys). None when no line starts with it."""
        if self._loaded:
            return None
        if self._starts is None:
            self._starts = {}
            if not _OTHER_BREAKS.search(self._text):
                for i, line in enumerate(_BREAK.split(self._text)):
                    m = _TOP_KEY.match(line)
                    if m:  # a name seen twice maps to None: left to the composer
                        self._starts[m[1]] = None if m[1] in self._starts else i
        line = self._starts.get(name)
        return None if line is None else (line + 1 + self._offset, 1)

    def at(self, where: Sequence[str | int], *, key: bool = False) -> tuple[int, int]:
        if key and len(where) == 1 and isinstance(where[0], str):
            fast = self._top_key(where[0])
            if fast is not None:
                return fast
        node: Any = self._compose()
        pos = (1, 1)
        for i, step in enumerate(where):
            last = i == len(where) - 1
            found: Any = None
            nxt: Any = None
            if isinstance(node, yaml.MappingNode):
                # The last equal key wins, as in the loaded mapping; merged keys are not located.
                for k_node, v_node in node.value:
                    if isinstance(k_node, yaml.ScalarNode) and k_node.value == step:
                        found = k_node if (key and last) else v_node
                        nxt = v_node
            elif (
                isinstance(node, yaml.SequenceNode)
                and isinstance(step, int)
                and 0 <= step < len(node.value)
            ):
                found = nxt = node.value[step]
            if found is None:
                break
            pos = (found.start_mark.line + 1, found.start_mark.column + 1)
            node = nxt
        return (pos[0] + self._offset, pos[1])
