"""Stub: generated Markdown blocks (being written)."""

from __future__ import annotations

from pathlib import Path


def render_all(*, root: Path, write: bool) -> list[str]:
    raise NotImplementedError
