"""A finished fold's job kept compact: its LIGHT fields as objects, the rest as its JSON bytes.

A year of an agent's jobs is 25,000 folded records; as dicts of strings they took ~6 KiB each
and a cold read (no snapshot) peaked at ~440 MiB. A job the fold is done with is packed: the
fields every command asks of every job (LIGHT) stay decoded, the whole record stays JSON (the
bytes the snapshot writes, so writing it copies nothing) and is decoded on first use of any
other field. A snapshot's jobs are the same thing, their bytes read from the mapped snapshot.
Below the fold (campaignops.model.ledger_fold) and the snapshot (ledger_snapshot), which make
them.
"""

from __future__ import annotations

import json
import mmap
from collections.abc import Iterator, Mapping
from typing import Any

# The fields every job's row carries: what commands ask of every job (its state, ids, stage,
# where it ran, its charge and placement) without looking into its targets and tasks.
LIGHT = frozenset(
    {
        "kind", "backend", "stage", "state", "job_id", "error", "outcome", "submitted",
        "exit_code", "manifest", "charge", "placement", "attempt",
    }
)  # fmt: skip

_ENCODER = json.JSONEncoder(separators=(",", ":"))  # one, not one per job written


def dump(value: object) -> bytes:
    """``value`` as compact JSON bytes (the form a packed record and the snapshot keep)."""
    return _ENCODER.encode(value).encode()


class Packed(Mapping[str, Any]):
    """A job's fields: the LIGHT ones at once, the whole record decoded from its JSON bytes
    (``body[span]``) on first use of any other, then kept decoded."""

    __slots__ = ("_body", "_fields", "_span")

    def __init__(
        self, light: dict[str, Any], body: bytes | mmap.mmap, span: tuple[int, int]
    ) -> None:
        self._fields = light
        self._body: bytes | mmap.mmap | None = body
        self._span = span

    @classmethod
    def of(cls, fields: Mapping[str, Any]) -> Packed:
        """``fields`` packed (their LIGHT values shared, not copied)."""
        raw = dump(fields if isinstance(fields, dict) else dict(fields))  # JSON takes dicts
        return cls({k: fields[k] for k in LIGHT if k in fields}, raw, (0, len(raw)))

    def _whole(self) -> dict[str, Any]:
        if self._body is not None:
            self._fields = self.unpacked()
            self._body = None
        return self._fields

    def unpacked(self) -> dict[str, Any]:
        """The whole record, decoded anew, the caller's own, and not kept (a one-off look
        into every job, as building the per-target index is, would otherwise leave them all
        decoded; the fold updates what it unpacks)."""
        found = json.loads(self.raw())
        if not isinstance(found, dict):
            raise ValueError("a packed record is not a JSON object")
        return found

    @property
    def decoded(self) -> bool:
        """Whether the whole record was decoded (and is kept so)."""
        return self._body is None

    def light(self) -> dict[str, Any]:
        """The LIGHT fields (what the snapshot's row of the job carries)."""
        fields = self._fields
        return fields if self._body is not None else {k: fields[k] for k in LIGHT if k in fields}

    def __getitem__(self, key: str) -> Any:
        return (self._fields if key in LIGHT else self._whole())[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._whole())

    def __len__(self) -> int:
        return len(self._whole())

    def get(self, key: str, default: Any = None) -> Any:
        # Mapping's own get goes through __getitem__ and an exception per missing key: this
        # one is called for every field a command reads.
        return (self._fields if key in LIGHT else self._whole()).get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in (self._fields if key in LIGHT else self._whole())

    def size(self) -> int:
        """The length of ``raw()`` (without copying the bytes out of a mapped snapshot)."""
        if self._body is not None:
            start, end = self._span
            return end - start
        return len(self.raw())

    def raw(self) -> bytes:
        """The whole record as JSON, without decoding it when it was never used (the bytes
        themselves when they are the packed record's own)."""
        if self._body is not None:
            start, end = self._span
            body = self._body
            if isinstance(body, bytes) and (start, end) == (0, len(body)):
                return body
            return body[start:end]
        return dump(self._fields)
