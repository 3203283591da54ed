"""`campaign split`: one queue file into K by cost, so K instances finish near together."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from campaignops.cli import contract
from campaignops.core import atomic, layout, safetext
from campaignops.core.errors import InputError, UsageError
from campaignops.model import queuefile, queueparts, splitting
from campaignops.model.queuefile import Cell


def _number(value: float) -> int | float:
    """A figure for JSON and text: an integer when it is one, else two decimals."""
    rounded = round(value, 2)
    return int(rounded) if rounded == int(rounded) else rounded


def _read_cells(path: Path, shown: str) -> list[Cell]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(
            path=shown, message=f"cannot read: {exc.strerror}", hint="pass a queue file"
        ) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            path=shown, message=f"not UTF-8 at byte {exc.start}", hint="save it as UTF-8"
        ) from None
    parsed = queuefile.parse(text)
    if parsed.problems:
        first = parsed.problems[0]
        raise InputError(
            path=shown,
            message=f"line {first.line}, column {first.col}: {first.message}",
            hint="fix the line first (campaign check lists every such line: QUEUE001)",
        )
    seen: dict[str, Cell] = {}
    for cell in parsed.cells:
        if cell.name in seen:
            raise InputError(
                path=shown,
                message=f"lines {seen[cell.name].line} and {cell.line} are both cell "
                f"{cell.name!r}: two instances would write the same outputs",
                hint="give each config its own file name (QUEUE003)",
            )
        seen[cell.name] = cell
    return list(parsed.cells)


def _campaign_of(queue: Path) -> Path | None:
    """The campaign holding the queue file (wherever the command runs from)."""
    return layout.find_root(Path(os.path.normpath(Path.cwd() / queue)).parent)


def _costs(args: argparse.Namespace, cells: Sequence[Cell], root: Path | None) -> splitting.Costs:
    if args.cost == "epochs":
        return splitting.epoch_costs(cells, args.default_epochs)
    if root is None:
        raise UsageError(
            message=f"{args.queue} is in no campaign (no {layout.POLICY_FILE} above it): "
            "--cost history reads the campaign's ledger",
            hint="split a queue file inside the campaign, or use --cost epochs",
        )
    from campaignops.model import ledger

    elapsed = splitting.elapsed_by_cell(ledger.read(root).jobs)
    return splitting.history_costs(cells, elapsed, args.default_epochs)


def _source_name(raw: str, root: Path | None) -> str:
    """The queue as the header names it: relative to its campaign's root when in one (the
    QUEUE checks match a part to its queue by that path)."""
    if root is not None:
        try:
            return layout.root_relative(raw, root=root, cwd=Path.cwd(), hint="")
        except InputError:
            pass
    return Path(raw).as_posix()


def _write(parts: Sequence[tuple[Path, str]], *, dry_run: bool) -> list[str]:
    """Write each part unless it already holds the same bytes; refuse, before writing any,
    when one exists with other content: an instance may be reading it."""
    differing = []
    for path, text in parts:
        try:
            old = path.read_bytes() if path.exists() else None
        except OSError as exc:
            raise InputError(path=str(path), message=f"cannot read: {exc.strerror}") from None
        if old is not None and old != text.encode("utf-8"):
            differing.append(path.as_posix())
    if differing:
        raise UsageError(
            message=f"{', '.join(differing)} already exist(s) with other content: a queue "
            "an instance may be reading is never overwritten",
            hint="write elsewhere with --out-dir DIR, or delete the old parts once no "
            "instance runs them",
        )
    written = []
    for path, text in parts:
        if dry_run or (path.exists() and path.read_bytes() == text.encode("utf-8")):
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(
                path=path.parent.as_posix(),
                message=f"cannot create the directory: {exc.strerror}",
                hint="pass an --out-dir that is a directory you can write",
            ) from None
        atomic.write_atomic(path, text.encode("utf-8"))
        written.append(path.as_posix())
    return written


def _split(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    queue = Path(layout.guard_length(args.queue))
    cells = _read_cells(queue, args.queue)
    splitting.check_k(len(cells), args.n)
    root = _campaign_of(queue)
    costs = _costs(args, cells, root)
    result = splitting.split(costs.values, args.n)
    source = _source_name(args.queue, root)
    out_dir = Path(layout.guard_length(args.out_dir)) if args.out_dir else queue.parent
    stem = queue.name.rsplit(".", 1)[0] if "." in queue.name[1:] else queue.name
    how = args.cost
    if args.default_epochs is not None and costs.estimated:
        how += f" --default-epochs {args.default_epochs}"
    queues: list[dict[str, Any]] = []
    parts: list[tuple[Path, str]] = []
    for i, members in enumerate(result.queues, start=1):
        path = out_dir / queueparts.part_name(stem, i, args.n)
        lines = [queueparts.cell_line(cells[m]) for m in members]
        text = queueparts.part_text(source=source, part=i, k=args.n, cost=how, lines=lines)
        parts.append((path, text))
        queues.append(
            {"path": path.as_posix(), "cost": _number(result.loads[i - 1]), "lines": lines}
        )
    written = _write(parts, dry_run=args.dry_run)
    if args.format == "json":
        doc = {
            "bound": _number(result.bound),
            "makespan": _number(result.makespan),
            "queues": queues,
            "dry_run": args.dry_run,
            "written": written,
        }
        contract.emit(out, args.command_name, doc)
        return 0
    _text(args, out, cells=cells, costs=costs, result=result, queues=queues, written=written)
    return 0


def _text(
    args: argparse.Namespace,
    out: TextIO,
    *,
    cells: Sequence[Cell],
    costs: splitting.Costs,
    result: splitting.Split,
    queues: Sequence[dict[str, Any]],
    written: Sequence[str],
) -> None:
    unit = costs.unit
    lines = [f"{args.queue}: {len(cells)} cell(s), cost in {unit}, into {args.n} queues"]
    if costs.note:
        lines.append(f"  note: {costs.note}")
    width = max(len(q["path"]) for q in queues)
    for q in queues:
        lines.append(f"  {q['path']:<{width}}  {len(q['lines']):>4} cell(s)  {q['cost']} {unit}")
    total = math.fsum(costs.values)
    ratio = result.makespan / result.bound if result.bound else 1.0
    lines.append(
        f"makespan {_number(result.makespan)} {unit}; lower bound {_number(result.bound)} "
        f"= max(total {_number(total)} / {args.n}, largest cell "
        f"{_number(max(costs.values))}); {ratio:.3f} x the bound"
    )
    sharper = splitting.pigeonhole_bound(costs.values, args.n)
    if sharper > result.bound * (1 + 1e-12):
        lines.append(
            f"  no split of these cells does better than {_number(sharper)} {unit} "
            "(some queue must take several of the largest cells)"
        )
    if args.dry_run:
        lines.append("dry run: nothing written")
    elif written:
        lines.append(f"wrote {', '.join(written)}")
    else:
        lines.append("the parts already hold this split: nothing written")
    for line in lines:
        # File names are the user's: one stays one line and cannot pass for a CI command.
        print(safetext.plain_line(line), file=out)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive integer")
    return value


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cmd = sub.add_parser(
        "split",
        help="split a queue file into K queue files by cost, one per instance",
        description="Split a queue file's cells across K instances by cost, not count, so the "
        "queues finish near together: longest first onto the least loaded queue, improved by "
        "exchanges between queues (docs/runner.md, Splitting a queue). Writes "
        "<stem>.part<i>of<K>.txt next to the queue (or in --out-dir) and prints the makespan "
        "(the longest queue's cost) and the lower bound max(total/K, largest cell). "
        "Every cell lands in exactly one part; a part that exists with other content is "
        "never overwritten.",
        epilog="exit codes: 0 split (or the parts already hold it), 2 a queue file that does "
        "not parse, -n below 1 or above the number of cells, a part that exists with other "
        "content, or no cost to split by.",
    )
    cmd.add_argument("queue", metavar="QUEUE", help="the queue file, e.g. queues/example.txt")
    cmd.add_argument("-n", type=int, required=True, metavar="K", help="number of queues")
    cmd.add_argument(
        "--cost",
        choices=("epochs", "history"),
        default="epochs",
        help="epochs (default): the line's epochs field; history: each cell's last run time "
        "outside smoke in the ledger (run from inside the campaign)",
    )
    cmd.add_argument(
        "--default-epochs",
        type=_positive,
        metavar="N",
        help="the cost of a line without epochs (the epochs your work runs by default)",
    )
    cmd.add_argument(
        "--out-dir", metavar="DIR", help="where to write the parts (default: the queue's directory)"
    )
    contract.add_dry_run(cmd, help="print the split, write nothing")
    contract.add_format(
        cmd,
        "text",
        "json",
        help="text (default) or json: {bound, makespan, queues: [{path, cost, lines}]}",
    )
    cmd.set_defaults(handler=_split)
