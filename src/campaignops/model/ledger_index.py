"""The ledger's per-target index: each target's attempts, and the jobs still live.

The gates ask about the targets of one submission (smoke_first: a passed smoke of the current
config; the breaker: the last finished attempts of it), and the views about each target's
latest job per stage and the jobs still live. Walking every job's every task for that cost a
campaign with 25,000 jobs seconds per command, so the fold keeps this index beside the jobs:

- ``attempts``: per target, one small Attempt per job that ran it (ledger id, stage, the
  target's fingerprint, its task's outcome, its failure signature), in submission order; the
  questions walk it from the newest end and stop at their answer;
- ``live``: the ledger ids of jobs that may still change state (``Job.open``); ``placed``,
  those placed on ssh boxes (what the meter reads); ``counts``: jobs per stage and state.

It is a pure function of the folded jobs: ``build`` makes it from them, ``updated`` from the
previous index and the jobs one fold step changed (each changed job's attempts replaced), and
ledger_snapshot keeps it in the snapshot, rebuilt whenever the snapshot is (stale, missing, a
merge): a cache of the records, never trusted over them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from campaignops.model.ledger_job import Job, succeeded
from campaignops.model.states import FINISHED, STATE_CATEGORIES

# An attempt's outcome: its task still live (or not started), COMPLETED with exit 0, CANCELLED
# (a person's decision: says nothing of the config), or any other end.
OPEN, PASSED, CANCELLED, FAILED = 0, 1, 2, 3


class Attempt(NamedTuple):
    """One target's task in one job, as the gates and views ask about it."""

    ledger_id: str
    stage: str | None
    fingerprint: str | None
    outcome: int
    signature: str | None  # FAILED attempts only: what the breaker compares


def signature_of(job: Job, target: str | None = None) -> str:
    """The recorded signature (the target's task's, else the job's), else the state and exit
    code (a failure never analysed)."""
    task = job.task(target) if target is not None else None
    if task is not None and task.state is not None:
        code = task.exit_code
        return task.signature or f"{task.state}:{'-' if code is None else code}"
    code = job.exit_code
    return job.text("signature") or f"{job.state}:{'-' if code is None else code}"


def attempt_of(job: Job, target: str) -> Attempt:
    state, code = job.end(target) or (None, None)
    if state not in FINISHED:
        outcome = OPEN
    elif succeeded(state, code):
        outcome = PASSED
    else:
        outcome = CANCELLED if state == "CANCELLED" or _preempted(job, target, state) else FAILED
    signature = signature_of(job, target) if outcome == FAILED else None
    return Attempt(job.ledger_id, job.stage, job.target_fingerprint(target), outcome, signature)


def _preempted(job: Job, target: str, state: str | None) -> bool:
    """A preemption (its state's category, or its diagnosis): like a cancel, it says nothing
    about the config, so the breaker never counts it (issue 19, one retry rule)."""
    preempted = STATE_CATEGORIES["PREEMPTED"]
    if STATE_CATEGORIES.get(state or "") == preempted:
        return True
    task = job.task(target)
    return task is not None and task.category == preempted


Key = tuple[str, str | None]  # a target and its fingerprint in one job


class Before(NamedTuple):
    """A changed job as the index last saw it: its targets' keys, its submission order, and
    what it counted as (its stage and Job.state_shown)."""

    pairs: tuple[Key, ...]
    key: Any
    counted: Counted


Counted = tuple[str | None, str]  # a job's stage and state as shown: what ``counts`` counts


HEADS = ("smoke", "single", "production", "passed")  # per target: latest job per stage, smoke


class Index:
    """See the module's docstring. A target's attempts are kept per fingerprint (``lists``:
    what the breaker and smoke_first ask for is the current config's), each list in submission
    order; its ``heads`` name its latest job at each stage and its latest passed smoke of any
    config. Lists loaded from a snapshot stay encoded (JSON rows of numbers into ``words``)
    until asked for. Never changed once made (decoding aside): ``updated`` returns a new one
    that shares every list it did not touch."""

    def __init__(
        self,
        lists: dict[str, dict[str | None, list[Attempt] | str]],
        heads: dict[str, dict[str, str]],
        live: frozenset[str],
        words: tuple[str | None, ...] = (None,),
        counts: dict[Counted, int] | None = None,
        placed: frozenset[str] = frozenset(),
    ) -> None:
        self._lists = lists
        self._heads = heads
        self._words = words
        self.live = live
        self.placed = placed  # jobs with a placement (ssh boxes): what the meter reads
        # Jobs per stage and state: what a bounded view says of the jobs it does not list.
        self.counts: Mapping[Counted, int] = counts or {}

    @classmethod
    def build(cls, jobs: Iterable[Job]) -> Index:
        """The index of ``jobs`` (in submission order, as a Ledger holds them)."""
        lists: dict[str, dict[str | None, list[Attempt] | str]] = {}
        heads: dict[str, dict[str, str]] = {}
        live: set[str] = set()
        counts: dict[Counted, int] = {}
        placed: set[str] = set()
        words: dict[str, str] = {}  # each stage, fingerprint and signature kept once
        for job in jobs:
            if job.open:
                live.add(job.ledger_id)
            if "placement" in job.record:
                placed.add(job.ledger_id)
            shown = (job.stage, job.state_shown)
            counts[shown] = counts.get(shown, 0) + 1
            for target in dict.fromkeys(job.targets):
                attempt = _shared(attempt_of(job, target), words)
                mine = lists.setdefault(target, {}).setdefault(attempt.fingerprint, [])
                assert isinstance(mine, list)
                mine.append(attempt)
                _head(heads.setdefault(target, {}), attempt)
        return cls(lists, heads, frozenset(live), counts=counts, placed=frozenset(placed))

    def updated(
        self, changed: Iterable[tuple[Job, Before | None]], key: Callable[[str], Any]
    ) -> Index:
        """This index with each changed job's attempts replaced: ``changed`` pairs a job as it
        is now with what it was before (Before: its (target, fingerprint) pairs and its sort
        key; None: a new job); ``key`` is a ledger id's submission order (Job.sort_key), where
        its attempts are put back."""
        lists, heads = dict(self._lists), dict(self._heads)
        live, placed = set(self.live), set(self.placed)
        counts = dict(self.counts)
        mine_targets: set[str] = set()  # targets whose map is already the new index's own
        mine_lists: set[Key] = set()  # lists already the new index's own copies
        for job, before in changed:
            lid = job.ledger_id
            (live.add if job.open else live.discard)(lid)
            (placed.add if "placement" in job.record else placed.discard)(lid)
            _count(counts, before.counted if before is not None else None, job)
            now = {t: attempt_of(job, t) for t in dict.fromkeys(job.targets)}
            pairs = before.pairs if before is not None else ()
            for target, fp in [*pairs, *((t, a.fingerprint) for t, a in now.items())]:
                if target not in mine_targets:
                    lists[target] = dict(lists.get(target, {}))
                    mine_targets.add(target)
                if (target, fp) not in mine_lists:
                    lists[target][fp] = list(self._decoded(target, fp))
                    mine_lists.add((target, fp))
                _drop(_listed(lists[target][fp]), lid)
            for target, attempt in now.items():
                _insert(_listed(lists[target][attempt.fingerprint]), attempt, key)
            moved_back = before is not None and key(lid) < before.key
            for target in {t for t, _ in pairs} | set(now):
                was = heads.get(target, {})
                if moved_back or (lid in was.values() and not _still(was, now.get(target))):
                    heads[target] = self._recounted(lists.get(target, {}), key)
                else:
                    heads[target] = dict(was)
                    if target in now:
                        _head(heads[target], now[target], key)
        for target, fp in mine_lists:
            if not lists[target][fp]:
                del lists[target][fp]
        for target in mine_targets:
            if not lists[target]:
                del lists[target]
                heads.pop(target, None)
        return Index(lists, heads, frozenset(live), self._words, counts, frozenset(placed))

    def _recounted(
        self, by_fp: Mapping[str | None, list[Attempt] | str], key: Callable[[str], Any]
    ) -> dict[str, str]:
        """A target's heads from every one of its lists (a job that was a head changed so
        that it may be one no longer)."""
        every = [a for fp, found in by_fp.items() for a in self._as_list(found, fp)]
        heads: dict[str, str] = {}
        for attempt in sorted(every, key=lambda a: key(a.ledger_id)):
            _head(heads, attempt)
        return heads

    def _as_list(self, found: list[Attempt] | str, fp: str | None) -> Sequence[Attempt]:
        return self._decode(found, fp) if isinstance(found, str) else found

    def _decoded(self, target: str, fp: str | None) -> Sequence[Attempt]:
        """``target``'s attempts of config ``fp``, decoded (and kept so) on first use."""
        found = self._lists.get(target, {}).get(fp)
        if isinstance(found, str):
            decoded = self._decode(found, fp)
            self._lists[target][fp] = decoded  # a cache: the content does not change
            return decoded
        return found or ()

    def _decode(self, encoded: str, fp: str | None) -> list[Attempt]:
        words = self._words
        return [
            Attempt(words[lid], words[stage], fp, int(outcome), words[sig])
            for lid, stage, outcome, sig in json.loads(encoded)
        ]

    # ------------------------------------------------------------------ the questions asked

    def targets(self) -> list[str]:
        """Every target any job ran."""
        return list(self._lists)

    def latest(
        self,
        target: str,
        stage: str,
        accept: Callable[[str], bool] | None = None,
        key: Callable[[str], Any] | None = None,
    ) -> str | None:
        """The ledger id of the latest job at ``stage`` that ran ``target``; with ``accept``,
        of those whose ledger id it takes (then, unless it takes the latest, every list of the
        target is read, and ``key``, the submission order, picks the latest of their ends)."""
        head = self._heads.get(target, {}).get(stage)
        if head is None or accept is None or accept(head):
            return head
        found: list[str] = []
        for fp in list(self._lists.get(target, {})):
            for attempt in reversed(self._decoded(target, fp)):
                if attempt.stage == stage and accept(attempt.ledger_id):
                    found.append(attempt.ledger_id)
                    break
        return max(found, key=key, default=None)

    def smoked(self, target: str, fingerprint: str | None) -> str | None:
        """The ledger id of a smoke in which ``target``'s own task COMPLETED with exit 0: of
        the config ``fingerprint`` names, or (None) of any config."""
        if fingerprint is None:
            return self._heads.get(target, {}).get("passed")
        for attempt in reversed(self._decoded(target, fingerprint)):
            if attempt.stage == "smoke" and attempt.outcome == PASSED:
                return attempt.ledger_id
        return None

    def finished(
        self,
        target: str,
        fingerprint: str | None,
        count: int,
        key: Callable[[str], Any] | None = None,
    ) -> list[Attempt]:
        """``target``'s last ``count`` finished attempts, oldest first, at any stage, not
        CANCELLED, of the config ``fingerprint`` names; None: of any config (each list's last
        ones, put in submission order by ``key``, a ledger id's Job.sort_key)."""
        if fingerprint is not None:
            return self._finished(target, fingerprint, count)
        every = [a for fp in list(self._lists.get(target, {}))
                 for a in self._finished(target, fp, count)]  # fmt: skip
        every.sort(key=lambda a: key(a.ledger_id) if key is not None else a.ledger_id)
        return every[-count:]

    def _finished(self, target: str, fingerprint: str | None, count: int) -> list[Attempt]:
        found: list[Attempt] = []
        for attempt in reversed(self._decoded(target, fingerprint)):
            if attempt.outcome in (OPEN, CANCELLED):
                continue
            found.append(attempt)
            if len(found) == count:
                break
        return found[::-1]

    # ------------------------------------------------------------------ kept in the snapshot

    def dumps(self) -> bytes:
        """One line of JSON: the live ids, and per target its heads and its attempts per
        fingerprint, each list as JSON text of rows of numbers into one table of the strings
        they use. Lists never decoded are written as they were read."""
        words = list(self._words)
        number = {w: n for n, w in enumerate(words)}

        def word(text: str | None) -> int:
            found = number.get(text)
            if found is None:
                found = number[text] = len(words)
                words.append(text)
            return found

        def encoded(found: list[Attempt] | str) -> str:
            if isinstance(found, str):
                return found
            rows = [[word(a.ledger_id), word(a.stage), a.outcome, word(a.signature)]
                    for a in found]  # fmt: skip
            return json.dumps(rows, separators=(",", ":"))

        targets = {
            target: [
                self._heads.get(target, {}),
                [[word(fp), encoded(found)] for fp, found in by_fp.items()],
            ]
            for target, by_fp in self._lists.items()
        }
        counts = [[stage, shown, n] for (stage, shown), n in self.counts.items()]
        data = {
            "words": words[1:],
            "live": sorted(self.live),
            "placed": sorted(self.placed),
            "counts": counts,
            "targets": targets,
        }
        return json.dumps(data, separators=(",", ":")).encode()

    @classmethod
    def loads(cls, line: bytes) -> Index:
        """The index ``dumps`` wrote (ValueError, KeyError, TypeError when it is damaged)."""
        data = json.loads(line)
        words: tuple[str | None, ...] = (None, *(str(w) for w in data["words"]))
        lists: dict[str, dict[str | None, list[Attempt] | str]] = {}
        heads: dict[str, dict[str, str]] = {}
        for target, (head, by_fp) in data["targets"].items():
            heads[str(target)] = {str(k): str(v) for k, v in head.items()}
            lists[str(target)] = {words[fp]: str(rows) for fp, rows in by_fp}
        live = frozenset(str(lid) for lid in data["live"])
        counts = {(stage, str(shown)): int(n) for stage, shown, n in data["counts"]}
        placed = frozenset(str(lid) for lid in data["placed"])
        return cls(lists, heads, live, words, counts, placed)


def _head(heads: dict[str, str], attempt: Attempt, key: Callable[[str], Any] | None = None) -> None:
    """Take ``attempt`` into a target's heads: attempts come in submission order (no ``key``),
    or ``key`` says whether it is later than the head it would replace."""
    for name in _names(attempt):
        held = heads.get(name)
        if key is None or held is None or key(held) <= key(attempt.ledger_id):
            heads[name] = attempt.ledger_id


def _shared(attempt: Attempt, words: dict[str, str]) -> Attempt:
    # 100,000 attempts repeat a few stages and fingerprints, each decoded anew from its job.
    lid, stage, fp, outcome, sig = attempt
    stage, fp, sig = (t if t is None else words.setdefault(t, t) for t in (stage, fp, sig))
    return Attempt(lid, stage, fp, outcome, sig)


def _count(counts: dict[Counted, int], before: Counted | None, job: Job) -> None:
    if before is not None:
        counts[before] -= 1
        if not counts[before]:
            del counts[before]
    now = (job.stage, job.state_shown)
    counts[now] = counts.get(now, 0) + 1


def _listed(found: list[Attempt] | str) -> list[Attempt]:
    # A list updated() owns: decoded when it copied it.
    assert isinstance(found, list)
    return found


def _still(heads: Mapping[str, str], attempt: Attempt | None) -> bool:
    """The job's new attempt still holds every head it held (its stage, a passed smoke)."""
    if attempt is None:
        return False
    names = {n for n, lid in heads.items() if lid == attempt.ledger_id}
    return names <= set(_names(attempt))


def _names(attempt: Attempt) -> list[str]:
    names = [attempt.stage] if attempt.stage in HEADS else []
    if attempt.stage == "smoke" and attempt.outcome == PASSED:
        names.append("passed")
    return [str(n) for n in names]


def _drop(attempts: list[Attempt], ledger_id: str) -> None:
    # From the newest end: a job a fold step changes is most often a recent one.
    for n in range(len(attempts) - 1, -1, -1):
        if attempts[n].ledger_id == ledger_id:
            del attempts[n]
            return


def _insert(attempts: list[Attempt], attempt: Attempt, key: Callable[[str], Any]) -> None:
    mine = key(attempt.ledger_id)
    n = len(attempts)
    while n and key(attempts[n - 1].ledger_id) > mine:
        n -= 1
    attempts.insert(n, attempt)


def of(jobs: Sequence[Job], index: Index | None) -> Index:
    """``index`` when the fold kept one, else the index of ``jobs`` (in submission order)."""
    return index if index is not None else Index.build(jobs)
