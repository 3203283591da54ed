"""The manifest model: phases and targets expanded from jobs, grids and templates.

Functions here assume a schema-valid document (the MAN checks validate first) and never run
anything: expansion is string substitution of ``${name}`` placeholders by grid values.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from campaignops.model.queuefile import Cell

PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
# ${UPPER_CASE} names that are not grid keys are left to the shell (environment variables).
ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*\Z")
MAX_TARGETS = 100_000
# A target id: one word, safe in a job name, a file name and a #LOCAL/#SBATCH line. The schema
# holds this pattern for written ids; ids a grid expands to are checked against it (fullmatch:
# the schema's `$` lets a trailing newline through in Python's re).
ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=-]*")
MAX_ID = 200
# An args key goes on the command line unquoted, as `--key`: an option name, nothing a shell reads.
OPTION = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
ID_FORM = "letters, digits and . _ + = -, starting with a letter or digit"
OPTION_FORM = "letters, digits and _ . -, starting with a letter or _"

Where = tuple[str | int, ...]


@dataclass(frozen=True)
class Target:
    id: str
    phase: str | None
    args: Mapping[str, Any]
    cmd: str | None
    output: str | None
    cell: Mapping[str, Any]
    id_at: Where  # YAML path of the node that produced the id
    output_at: Where | None
    # Queue cells: the args are the fields of a queue line, passed in order, not as --key value.
    positional: bool = False


@dataclass(frozen=True)
class Phase:
    name: str
    depends_on: tuple[str, ...]
    at: Where


@dataclass(frozen=True)
class Block:
    """One source of targets: top-level jobs, a top-level grid, or a phase."""

    at: Where
    phase: str | None
    grid: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    template: Mapping[str, Any] = field(default_factory=dict)
    jobs: Sequence[Mapping[str, Any]] = ()


def placeholders(value: Any) -> Iterator[tuple[str, Where]]:
    """Every ``${name}`` inside ``value`` (strings, nested in lists and mappings), with its path."""
    if isinstance(value, str):
        for m in PLACEHOLDER.finditer(value):
            yield m.group(1), ()
    elif isinstance(value, Mapping):
        for k, v in value.items():
            for name, sub in placeholders(v):
                yield name, (k, *sub)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            for name, sub in placeholders(v):
                yield name, (i, *sub)


def substitute(value: Any, cell: Mapping[str, Any]) -> Any:
    """Replace grid placeholders; a string that is exactly one placeholder takes the value's type."""
    if isinstance(value, str):
        whole = PLACEHOLDER.fullmatch(value)
        if whole and whole.group(1) in cell:
            return cell[whole.group(1)]
        return PLACEHOLDER.sub(
            lambda m: str(cell[m.group(1)]) if m.group(1) in cell else m.group(0), value
        )
    if isinstance(value, Mapping):
        return {k: substitute(v, cell) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, cell) for v in value]
    return value


def grid_size(grid: Mapping[str, Sequence[Any]]) -> int:
    return math.prod(len(v) for v in grid.values()) if grid else 0


def id_problem(value: str) -> str | None:
    """Why ``value`` cannot be a target id, or None."""
    if len(value) > MAX_ID:
        return f"is {len(value)} characters long; ids have at most {MAX_ID}"
    if not ID.fullmatch(value):
        return f"is not an id ({ID_FORM})"
    return None


def option_problem(key: object) -> str | None:
    """Why ``key`` cannot be an args key (``--key`` on the command line), or None."""
    if not isinstance(key, str) or not OPTION.fullmatch(key):
        return f"is not an option name ({OPTION_FORM})"
    return None


def arg_keys(doc: Mapping[str, Any]) -> Iterator[tuple[Where, Any]]:
    """Every args key the runner puts on a command line, with its YAML path: jobs', templates'
    and ``smoke.args``'s."""
    for block in blocks(doc):
        jobs_at: Where = (*block.at, "jobs") if block.phase else ("jobs",)
        for j, job in enumerate(block.jobs):
            for key in _mapping(job.get("args")):
                yield (*jobs_at, j, "args", key), key
        for key in _mapping(block.template.get("args")):
            yield (*block.at, "template", "args", key), key
    smoke = doc.get("smoke")
    for key in _mapping(smoke.get("args") if isinstance(smoke, Mapping) else None):
        yield ("smoke", "args", key), key


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def blocks(doc: Mapping[str, Any]) -> list[Block]:
    out: list[Block] = []
    if doc.get("jobs"):
        out.append(Block(at=("jobs",), phase=None, jobs=doc["jobs"]))
    if doc.get("grid"):
        out.append(Block(at=(), phase=None, grid=doc["grid"], template=doc.get("template", {})))
    for i, ph in enumerate(doc.get("phases") or ()):
        out.append(
            Block(
                at=("phases", i),
                phase=ph["name"],
                grid=ph.get("grid") or {},
                template=ph.get("template") or {},
                jobs=ph.get("jobs") or (),
            )
        )
    return out


def phases(doc: Mapping[str, Any]) -> list[Phase]:
    out: list[Phase] = []
    for i, ph in enumerate(doc.get("phases") or ()):
        dep = ph.get("depends_on")
        deps = (dep,) if isinstance(dep, str) else tuple(dep or ())
        out.append(Phase(name=ph["name"], depends_on=deps, at=("phases", i)))
    return out


def _output(mapping: Mapping[str, Any]) -> tuple[str | None, str | None]:
    for key in ("output", "output_check"):
        if isinstance(mapping.get(key), str):
            return mapping[key], key
    return None, None


def default_id(prefix: object, keys: Sequence[str]) -> str:
    """The id template of a grid without ``template.id``: every grid key, so cells never collide."""
    head = prefix if isinstance(prefix, str) and prefix else "cell"
    return head + "".join(f"_{k}${{{k}}}" for k in keys)


_NO_ARGS: Mapping[str, Any] = MappingProxyType({})


def targets(
    doc: Mapping[str, Any], cells: Sequence[Cell] = (), *, named_only: bool = False
) -> Iterator[Target]:
    """Every target of the manifest, in document order (grids in row-major order), then the
    cells of its ``queue`` (read by the caller: this module never opens a file).
    ``named_only``: a grid cell's id, phase and output filled, its args and cmd not (empty,
    None): what the MAN checks read, at a fraction of a check's cost over many manifests."""
    for block in blocks(doc):
        jobs_at: Where = (*block.at, "jobs") if block.phase else ("jobs",)
        for j, job in enumerate(block.jobs):
            out, key = _output(job)
            yield Target(
                id=str(job["id"]),
                phase=block.phase,
                args=MappingProxyType(dict(job.get("args") or {})),
                cmd=job.get("cmd"),
                output=out,
                cell=MappingProxyType({}),
                id_at=(*jobs_at, j, "id"),
                output_at=(*jobs_at, j, key) if key else None,
            )
        if not block.grid:
            continue
        keys = list(block.grid)
        tpl_at: Where = (*block.at, "template")
        id_tpl = block.template.get("id") or default_id(block.phase or doc.get("project"), keys)
        out_tpl, out_key = _output(block.template)
        args_tpl = dict(block.template.get("args") or {})
        for values in itertools.product(*(block.grid[k] for k in keys)):
            cell = dict(zip(keys, values, strict=True))
            yield Target(
                id=str(substitute(id_tpl, cell)),
                phase=block.phase,
                args=_NO_ARGS if named_only else MappingProxyType(substitute(args_tpl, cell)),
                cmd=None if named_only else substitute(block.template.get("cmd"), cell),
                output=str(substitute(out_tpl, cell)) if out_tpl else None,
                cell=MappingProxyType(cell),
                id_at=(*tpl_at, "id") if "id" in block.template else tpl_at,
                output_at=(*tpl_at, out_key) if out_key else None,
            )
    yield from queue_targets(cells)


QUEUE_FIELDS = ("cfg", "task", "epochs")


def queue_targets(cells: Iterable[Cell]) -> Iterator[Target]:
    """The targets of a manifest's ``queue``: one per cell, named like the cell (its isolation
    key), with the line's fields as positional args, ``epochs`` only where the line gives it.
    A cell's output is its directory, ``${CAMPAIGN_OUT}/<name>``: the cell wrapper writes only
    there, so the output check (an entry in it after exit 0) and campaign pull (every file in
    it) need no key in the manifest."""
    for cell in cells:
        args: dict[str, Any] = {"cfg": cell.cfg, "task": cell.task}
        if cell.epochs is not None:
            args["epochs"] = cell.epochs
        yield Target(
            id=cell.name,
            phase=None,
            args=MappingProxyType(args),
            cmd=None,
            output=f"${{CAMPAIGN_OUT}}/{cell.name}",
            cell=MappingProxyType({}),
            id_at=("queue",),
            output_at=None,
            positional=True,
        )


def cycle(graph: Mapping[str, Sequence[str]]) -> list[str] | None:
    """One dependency cycle as [a, b, …, a], or None. Iterative DFS (no recursion limit)."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    for start in graph:
        if state.get(start):
            continue
        path: list[str] = []
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(graph.get(start, ())))]
        state[start] = 1
        path.append(start)
        while stack:
            node, children = stack[-1]
            nxt = next(children, None)
            if nxt is None:
                stack.pop()
                path.pop()
                state[node] = 2
            elif nxt not in graph:
                continue
            elif state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(graph.get(nxt, ()))))
    return None
