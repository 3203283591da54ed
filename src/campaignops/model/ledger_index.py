"""The ledger's per-target index: each target's attempts, and the jobs still live.

The gates ask about the targets of one submission (smoke_first: a passed smoke of the current
config; the breaker: the last finished attempts of it), and the views about each target's
latest job per stage and the jobs still live. Walking every job's every task for that cost a
campaign with 25,000 jobs seconds per command, so the fold keeps this index beside the jobs:

- ``attempts``: per target, one small Attempt per job that ran it (ledger id, stage, the
  target's fingerprint, its task's outcome, its failure signature), in submission order; the
  questions walk it from the newest end and stop at their answer;
- ``live``: the ledger ids of jobs that may still change state (``Job.open``).

It is a pure function of the folded jobs: ``build`` makes it from them, ``updated`` from the
previous index and the jobs one fold step changed (each changed job's attempts replaced), and
ledger_snapshot keeps it in the snapshot, rebuilt whenever the snapshot is (stale, missing, a
merge): a cache of the records, never trusted over them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from campaignops.model.ledger_job import Job

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
    task = job.task(target)
    if task is None or not task.finished:
        outcome = OPEN
    elif task.succeeded:
        outcome = PASSED
    else:
        outcome = CANCELLED if task.state == "CANCELLED" else FAILED
    signature = signature_of(job, target) if outcome == FAILED else None
    return Attempt(job.ledger_id, job.stage, job.target_fingerprint(target), outcome, signature)


class Index:
    """See the module's docstring. Never changed once made: ``updated`` returns a new one that
    shares every target's list it did not touch. A target's attempts loaded from a snapshot
    stay encoded (``raw``: JSON rows of numbers into ``words``) until asked for."""

    def __init__(
        self,
        attempts: dict[str, list[Attempt]],
        live: frozenset[str],
        *,
        raw: dict[str, str] | None = None,
        words: tuple[str | None, ...] = (None,),
    ) -> None:
        self._attempts = attempts
        self._raw = raw or {}
        self._words = words
        self.live = live

    @classmethod
    def build(cls, jobs: Iterable[Job]) -> Index:
        """The index of ``jobs`` (in submission order, as a Ledger holds them)."""
        attempts: dict[str, list[Attempt]] = {}
        live: set[str] = set()
        for job in jobs:
            if job.open:
                live.add(job.ledger_id)
            for target in dict.fromkeys(job.targets):
                attempts.setdefault(target, []).append(attempt_of(job, target))
        return cls(attempts, frozenset(live))

    def updated(
        self,
        changed: Iterable[tuple[Job, Sequence[str]]],
        key: Callable[[str], Any],
    ) -> Index:
        """This index with each changed job's attempts replaced: ``changed`` pairs a job as it
        is now with the targets it had before (none: a new job); ``key`` is a ledger id's
        submission order (Job.sort_key), where a job's attempts are put back."""
        attempts, raw = dict(self._attempts), dict(self._raw)
        live = set(self.live)
        own: set[str] = set()  # targets whose list is already the new index's own copy
        for job, before in changed:
            lid = job.ledger_id
            (live.add if job.open else live.discard)(lid)
            for target in dict.fromkeys([*before, *job.targets]):
                if target not in own:
                    attempts[target] = list(self.of(target))
                    raw.pop(target, None)
                    own.add(target)
                mine = attempts[target]
                _drop(mine, lid)
                if target in job.targets:
                    _insert(mine, attempt_of(job, target), key)
        for target in own:
            if not attempts[target]:
                del attempts[target]
        return Index(attempts, frozenset(live), raw=raw, words=self._words)

    # ------------------------------------------------------------------ the questions asked

    def targets(self) -> list[str]:
        """Every target any job ran."""
        return [*self._attempts, *self._raw]

    def of(self, target: str) -> Sequence[Attempt]:
        """``target``'s attempts, oldest first."""
        found = self._attempts.get(target)
        if found is not None:
            return found
        encoded = self._raw.get(target)
        if encoded is None:
            return ()
        words = self._words
        decoded = [
            Attempt(words[lid], words[stage], words[fp], int(outcome), words[sig])
            for lid, stage, fp, outcome, sig in json.loads(encoded)
        ]
        self._attempts[target] = decoded  # a cache: the index's content does not change
        del self._raw[target]
        return decoded

    def latest(self, target: str, stage: str) -> str | None:
        """The ledger id of the latest job at ``stage`` that ran ``target``."""
        for attempt in reversed(self.of(target)):
            if attempt.stage == stage:
                return attempt.ledger_id
        return None

    def smoked(self, target: str, fingerprint: str | None) -> str | None:
        """The ledger id of a smoke in which ``target``'s own task COMPLETED with exit 0: of
        the config ``fingerprint`` names, or (None) of any config."""
        for attempt in reversed(self.of(target)):
            passed = attempt.stage == "smoke" and attempt.outcome == PASSED
            if passed and fingerprint in (None, attempt.fingerprint):
                return attempt.ledger_id
        return None

    def finished(self, target: str, fingerprint: str | None, count: int) -> list[Attempt]:
        """``target``'s last ``count`` finished attempts, oldest first, at any stage, not
        CANCELLED, of the config ``fingerprint`` names (None: of any)."""
        found: list[Attempt] = []
        for attempt in reversed(self.of(target)):
            if attempt.outcome in (OPEN, CANCELLED):
                continue
            if fingerprint is not None and attempt.fingerprint != fingerprint:
                continue
            found.append(attempt)
            if len(found) == count:
                break
        return found[::-1]

    # ------------------------------------------------------------------ kept in the snapshot

    def dumps(self) -> bytes:
        """One line of JSON: the live ids, and per target its attempts as JSON text of rows of
        numbers into one table of the strings they use (ledger ids, stages, fingerprints,
        signatures). Targets never decoded are written as they were read."""
        words = list(self._words)
        number = {w: n for n, w in enumerate(words)}

        def word(text: str | None) -> int:
            found = number.get(text)
            if found is None:
                found = number[text] = len(words)
                words.append(text)
            return found

        rows = {
            target: json.dumps(
                [[word(a.ledger_id), word(a.stage), word(a.fingerprint), a.outcome,
                  word(a.signature)] for a in found],
                separators=(",", ":"),
            )
            for target, found in self._attempts.items()
        }  # fmt: skip
        data = {"words": words[1:], "live": sorted(self.live), "targets": rows | self._raw}
        return json.dumps(data, separators=(",", ":")).encode()

    @classmethod
    def loads(cls, line: bytes) -> Index:
        """The index ``dumps`` wrote (ValueError, KeyError, TypeError when it is damaged)."""
        data = json.loads(line)
        words: tuple[str | None, ...] = (None, *(str(w) for w in data["words"]))
        raw = {str(t): str(rows) for t, rows in data["targets"].items()}
        live = frozenset(str(lid) for lid in data["live"])
        return cls({}, live, raw=raw, words=words)


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
