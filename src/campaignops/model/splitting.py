"""Splitting a queue's cells across K instances by cost, so the queues finish together.

The problem is makespan scheduling on K identical machines (NP-hard); the split is heuristic:

1. two starting assignments, each with a known guarantee:
   - LPT (longest processing time first): cells by decreasing cost, each onto the least loaded
     queue; at most 4/3 - 1/(3K) of the optimum (Graham 1969);
   - Karmarkar-Karp's largest differencing method, K-way: often much closer on few big cells,
     where LPT is weakest;
2. on each, a local search between the most loaded queue and each other queue: move one cell,
   or swap two, when that lowers the larger of the two loads (the sum of squared loads then
   drops strictly, so the search ends); the better result wins, LPT's on a tie;
3. up to EXACT_CELLS cells, when that result is above the pigeonhole bound, a branch and bound
   (at most EXACT_NODES nodes) looks for a strictly better split;
4. an empty queue (cells of cost 0 can leave one) takes a cell from the fullest queue.

``bound`` is what no split can beat, max(total/K, largest cell); ``pigeonhole_bound`` is a
sharper one (among the jK+1 largest cells, one queue holds j+1), used to tell a gap that is the
split's from one that is the cells' own (3 equal cells on 2 queues: 1.33 x the plain bound).

Everything is pure and deterministic: ties go to the lower input index and the lower queue.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from campaignops.core.errors import UsageError
from campaignops.model.ledger import Job, parse_time
from campaignops.model.queuefile import Cell

Assignment = tuple[tuple[int, ...], ...]
# Few cells are where the heuristics fall furthest short and where a search is cheap: up to
# this many cells a bounded branch and bound looks for a better split.
EXACT_CELLS = 40
EXACT_NODES = 50_000


@dataclass(frozen=True)
class Split:
    """K queues of input indices (each in input order), their loads, makespan and bounds."""

    queues: Assignment
    loads: tuple[float, ...]
    makespan: float
    bound: float
    method: str  # "lpt" or "kk" (the start the local search improved), or "exact" (the search)


def check_k(count: int, k: int) -> None:
    """UsageError unless 1 <= k <= count (an empty queue file is a queue of no one)."""
    if k < 1:
        raise UsageError(message=f"-n {k}: the number of queues must be at least 1", hint="-n 2")
    if k > count:
        raise UsageError(
            message=f"-n {k} queues for {count} cell(s): at least one queue would be empty",
            hint=f"use -n {count} or fewer" if count else "add cells to the queue file first",
        )


def bound(costs: Sequence[float], k: int) -> float:
    """max(total/K, largest cell): no split of these cells on K queues finishes sooner."""
    if not costs:
        return 0.0
    return max(sum(costs) / k, max(costs))


def pigeonhole_bound(costs: Sequence[float], k: int) -> float:
    """A sharper lower bound: among the jK+1 largest cells some queue holds j+1, so the
    makespan is at least the sum of the j+1 smallest of those, for every j >= 1."""
    ordered = sorted(costs, reverse=True)
    best = bound(costs, k)
    j = 1
    while j * k + 1 <= len(ordered):
        top = j * k + 1
        best = max(best, sum(ordered[top - j - 1 : top]))
        j += 1
    return best


def _tolerance(costs: Sequence[float]) -> float:
    """What a difference of loads must exceed to be more than rounding: loads are correctly
    rounded sums (fsum), so a few ulps of the total; far below one epoch or one second."""
    return 64 * math.ulp(max(math.fsum(costs), 1.0))


def loads_of(costs: Sequence[float], queues: Assignment) -> tuple[float, ...]:
    return tuple(math.fsum(costs[i] for i in q) for q in queues)


def round_robin(costs: Sequence[float], k: int) -> Assignment:
    """Cell i onto queue i mod K: a split by count, the baseline the benchmark compares with."""
    return tuple(tuple(range(q, len(costs), k)) for q in range(k))


def _by_cost(costs: Sequence[float]) -> list[int]:
    return sorted(range(len(costs)), key=lambda i: (-costs[i], i))


def lpt(costs: Sequence[float], k: int) -> Assignment:
    """Longest processing time first: each cell, largest first, onto the least loaded queue."""
    heap = [(0.0, 0, q) for q in range(k)]  # (load, cells, queue): fewer cells first on a tie
    members: list[list[int]] = [[] for _ in range(k)]
    for i in _by_cost(costs):
        load, count, q = heapq.heappop(heap)
        members[q].append(i)
        heapq.heappush(heap, (load + costs[i], count + 1, q))
    return tuple(tuple(sorted(m)) for m in members)


def karmarkar_karp(costs: Sequence[float], k: int) -> Assignment:
    """Largest differencing, K-way: merge the two partial splits whose spread (max - min load)
    is largest, pairing one's heaviest part with the other's lightest, until one split is left."""
    # Entry: (-spread, tie, parts); parts sorted heaviest first, each (load, members).
    heap: list[tuple[float, int, tuple[tuple[float, tuple[int, ...]], ...]]] = []
    for tie, i in enumerate(_by_cost(costs)):
        parts = ((costs[i], (i,)), *(((0.0, ()),) * (k - 1)))
        heap.append((-costs[i], tie, parts))
    heapq.heapify(heap)
    tie = len(heap)
    while len(heap) > 1:
        _, _, a = heapq.heappop(heap)
        _, _, b = heapq.heappop(heap)
        merged = [(a[p][0] + b[k - 1 - p][0], a[p][1] + b[k - 1 - p][1]) for p in range(k)]
        merged.sort(key=lambda part: -part[0])
        heapq.heappush(heap, (-(merged[0][0] - merged[-1][0]), tie, tuple(merged)))
        tie += 1
    parts = heap[0][2] if heap else tuple((0.0, ()) for _ in range(k))
    return tuple(tuple(sorted(members)) for _, members in parts)


def _best_exchange(
    costs: Sequence[float], heavy: list[int], light: list[int], gap: float, tol: float
) -> tuple[float, int | None, int | None] | None:
    """The move (light cell None) or swap between two queues that leaves the smaller larger
    load, as (that load above the light queue's old load, heavy cell, light cell), or None.

    Moving a net d from the heavy queue to the light one helps when 0 < d < gap; the best d is
    the one nearest gap/2. For each heavy cell the light cells are searched by bisection.
    """
    pool = sorted((costs[j], j) for j in light)
    values = [0.0] + [c for c, _ in pool]  # 0.0: take nothing back (a move)
    owners: list[int | None] = [None] + [j for _, j in pool]
    best: tuple[float, int | None, int | None] | None = None
    for i in sorted(heavy):
        x = costs[i]
        at = bisect.bisect_left(values, x - gap / 2)
        for pos in (at - 1, at):
            if not 0 <= pos < len(values):
                continue
            d = x - values[pos]
            if not tol < d < gap - tol:
                continue
            worse = max(gap - d, d)  # the pair's new larger load, above the light queue's
            if best is None or worse < best[0]:
                best = (worse, i, owners[pos])
    return best


def improve(costs: Sequence[float], queues: Assignment) -> Assignment:
    """Local search: while the most loaded queue can hand a cell to, or swap one with, another
    queue so that both end below its load, do the best such exchange."""
    members = [list(q) for q in queues]
    k = len(members)
    loads = [math.fsum(costs[i] for i in q) for q in members]
    # Float seconds: an exchange must gain more than rounding, or two could undo each other.
    tol = _tolerance(costs)
    floor = bound(costs, k) + tol
    # Each exchange lowers the sum of squared loads, so the search ends; the cap bounds its time.
    for _ in range(8 * (len(costs) + k)):
        heavy = min(range(k), key=lambda q: (-loads[q], q))
        if loads[heavy] <= floor:
            break
        best: tuple[float, int, int | None, int] | None = None
        for q in sorted(range(k), key=lambda q: (loads[q], q)):
            gap = loads[heavy] - loads[q]
            if q == heavy or gap <= 2 * tol:
                continue
            found = _best_exchange(costs, members[heavy], members[q], gap, tol)
            if found is None:
                continue
            worse, i, j = found
            after = loads[q] + worse
            if i is not None and (best is None or after < best[0]):
                best = (after, i, j, q)
        if best is None:
            break
        _, i, j, q = best
        members[heavy].remove(i)
        members[q].append(i)
        if j is not None:
            members[q].remove(j)
            members[heavy].append(j)
        loads[heavy] = math.fsum(costs[c] for c in members[heavy])
        loads[q] = math.fsum(costs[c] for c in members[q])
    return tuple(tuple(sorted(m)) for m in members)


def exact(
    costs: Sequence[float], k: int, incumbent: float, *, nodes: int = EXACT_NODES
) -> Assignment | None:
    """A split with a makespan below ``incumbent`` found by depth-first branch and bound (cells
    largest first; a cell never goes to a second queue of the same load, an empty one
    included), or None when there is none or the search ran out of ``nodes``."""
    order = _by_cost(costs)
    tol = _tolerance(costs)
    floor = pigeonhole_bound(costs, k) + tol
    loads = [0.0] * k
    place = [0] * len(order)
    best: list[int] | None = None
    limit = incumbent - tol
    budget = nodes

    def search(pos: int, top: float) -> bool:
        # True: stop (a split at the lower bound was found, or the budget is spent).
        nonlocal best, limit, budget
        if pos == len(order):
            best, limit = place.copy(), top - tol
            return top <= floor
        budget -= 1
        if budget < 0:
            return True
        cost = costs[order[pos]]
        seen: set[float] = set()
        for q in sorted(range(k), key=lambda q: (loads[q], q)):
            if loads[q] in seen or loads[q] + cost > limit:
                continue
            seen.add(loads[q])
            loads[q] += cost
            place[pos] = q
            stop = search(pos + 1, max(top, loads[q]))
            loads[q] -= cost
            if stop:
                return True
        return False

    search(0, 0.0)
    if best is None:
        return None
    members: list[list[int]] = [[] for _ in range(k)]
    for pos, q in enumerate(best):
        members[q].append(order[pos])
    return tuple(tuple(sorted(m)) for m in members)


def split(costs: Sequence[float], k: int) -> Split:
    """Every cell (by its index in ``costs``) in exactly one of ``k`` queues, none empty, by
    cost."""
    check_k(len(costs), k)
    if any(c < 0 for c in costs):
        raise UsageError(message="a cell's cost is negative", hint="costs are epochs or seconds")
    queues, method = lpt(costs, k), "lpt"
    makespan = math.inf
    for name, start in (("lpt", queues), ("kk", karmarkar_karp(costs, k))):
        improved = improve(costs, start)
        top = max(loads_of(costs, improved))
        if top < makespan:
            queues, method, makespan = improved, name, top
    if len(costs) <= EXACT_CELLS and makespan > pigeonhole_bound(costs, k) + _tolerance(costs):
        found = exact(costs, k, makespan)
        if found is not None:
            queues, method = found, "exact"
    queues = fill_empty(costs, queues)
    loads = loads_of(costs, queues)
    return Split(queues, loads, max(loads), bound(costs, k), method)


def fill_empty(costs: Sequence[float], queues: Assignment) -> Assignment:
    """No empty queue (cells of cost 0 can leave one): each gets the cheapest cell of the queue
    with the most cells. The makespan cannot grow: the cell costs at most its old queue's load."""
    members = [list(q) for q in queues]
    for q in range(len(members)):
        if members[q]:
            continue
        donor = max(range(len(members)), key=lambda d: (len(members[d]), -d))
        if len(members[donor]) < 2:
            break
        cell = min(members[donor], key=lambda i: (costs[i], -i))
        members[donor].remove(cell)
        members[q].append(cell)
    return tuple(tuple(sorted(m)) for m in members)


# -- costs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Costs:
    """One cost per cell (in the cells' order), the unit, and how the unknown ones were made."""

    values: tuple[float, ...]
    unit: str  # "epochs", "cells" (every cell the same: a split by count) or "seconds"
    estimated: tuple[str, ...] = ()  # cells whose cost is an estimate (names)
    note: str = ""


def _shown_lines(cells: Sequence[Cell]) -> str:
    shown = ", ".join(str(c.line) for c in cells[:5])
    return shown + (f" and {len(cells) - 5} more" if len(cells) > 5 else "")


def epoch_costs(cells: Sequence[Cell], default: int | None) -> Costs:
    """Each cell's epochs field; a line without one costs ``default``. The wrapper passes no
    epochs then and the work runs its own default, which only the user knows: a queue that
    mixes both needs ``default``; a queue where no line gives epochs is split by count."""
    missing = [c for c in cells if c.epochs is None]
    if not missing:
        return Costs(tuple(float(c.epochs or 0) for c in cells), "epochs")
    if default is not None:
        values = tuple(float(c.epochs if c.epochs is not None else default) for c in cells)
        note = f"{len(missing)} line(s) without epochs counted as --default-epochs {default}"
        return Costs(values, "epochs", tuple(c.name for c in missing), note)
    if len(missing) == len(cells):
        note = "no line gives epochs: every cell costs the same (a split by count)"
        return Costs((1.0,) * len(cells), "cells", note=note)
    raise UsageError(
        message=f"line(s) {_shown_lines(missing)} give no epochs, others do: a cell without "
        "epochs runs the work's own default, which campaign split cannot see",
        hint="pass --default-epochs N, the epochs your work runs when the line gives none "
        "(the template's scripts/smoke_task.py runs 3)",
    )


def elapsed_by_cell(jobs: Iterable[Job]) -> dict[str, float]:
    """Each target's run time in seconds in its latest successful task outside smoke (a smoke
    runs fewer epochs, so its time says little of the cell's), by the ledger's fold per task."""
    latest: dict[str, float] = {}
    for job in sorted(jobs, key=Job.sort_key):
        if job.stage == "smoke":
            continue
        for target in dict.fromkeys(job.targets):
            task = job.task(target)
            if task is None or not task.succeeded:
                continue
            seconds = task.run_time_s
            began, ended = parse_time(task.started), parse_time(task.ended)
            if seconds is None and began is not None and ended is not None and ended >= began:
                seconds = (ended - began).total_seconds()
            if seconds is not None:
                latest[target] = seconds
    return latest


def history_costs(
    cells: Sequence[Cell], elapsed: Mapping[str, float], default: int | None
) -> Costs:
    """Each cell's last run time (by its name, from :func:`elapsed_by_cell`). A cell never run
    is estimated: its epochs times the known cells' seconds per epoch when every cell's epochs
    are known (the line's, else ``default``), else the known cells' mean."""
    known = [(c, elapsed[c.name]) for c in cells if c.name in elapsed]
    if not known:
        raise UsageError(
            message=f"none of the {len(cells)} cell(s) has a finished run outside smoke in the "
            "ledger, so there is no history to split by",
            hint="split by --cost epochs, or run campaign status --refresh after a run",
        )
    unknown = [c for c in cells if c.name not in elapsed]
    if not unknown:
        return Costs(tuple(elapsed[c.name] for c in cells), "seconds")
    epochs = {c.name: c.epochs if c.epochs is not None else default for c in cells}
    if all(e is not None for e in epochs.values()):
        rate = math.fsum(s for _, s in known) / sum(epochs[c.name] or 0 for c, _ in known)

        def guess(cell: Cell) -> float:
            return (epochs[cell.name] or 0) * rate

        how = f"estimated from their epochs at {rate:.1f} s per epoch (the run cells' rate)"
    else:
        mean = math.fsum(s for _, s in known) / len(known)

        def guess(cell: Cell) -> float:
            return mean

        how = f"given the mean of the run cells, {mean:.1f} s"
    values = tuple(elapsed[c.name] if c.name in elapsed else guess(c) for c in cells)
    note = f"{len(unknown)} cell(s) without a finished run in the ledger: {how}"
    return Costs(values, "seconds", tuple(c.name for c in unknown), note)
