"""A forge answer checked before use: each field read has the JSON type its endpoint documents.

An API answer is network input (a proxy, an API change or a hostile server can send any JSON):
a wrong type is an ApiError that names the request, the item and the field (never its value,
which could be anything), not a KeyError or TypeError. Optional text (a body, a URL) that is
missing or null reads as ""; an id must be a positive integer (``true`` is not one).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from campaignops.gitops.forge.http import ApiError, Client


@dataclass(frozen=True)
class Shape:
    """Reads one request's answer; ``shown`` is the request (``GET /repos/o/r/issues``)."""

    client: Client
    shown: str

    def wrong(self, where: str, what: str) -> ApiError:
        return self.client.shape_error(self.shown, f"{where} {what}")

    def record(self, data: Any, where: str = "the answer") -> dict[str, Any]:
        if not isinstance(data, dict):
            raise self.wrong(where, "is not a JSON object")
        return data

    def records(self, items: list[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        """Each item of a list answer as ("item N", the object)."""
        for number, item in enumerate(items, start=1):
            where = f"item {number}"
            yield where, self.record(item, where)

    def ident(self, item: dict[str, Any], key: str, where: str = "the answer") -> int:
        value = item.get(key)
        if type(value) is not int or value < 1:
            raise self.wrong(where, f"has no positive integer {key!r}")
        return value

    def text(self, item: dict[str, Any], key: str, where: str = "the answer") -> str:
        value = item.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.wrong(where, f"has a {key!r} that is not text")
        return value

    def url(self, item: dict[str, Any], key: str, where: str = "the answer") -> str:
        """A link the command prints (``html_url``, ``web_url``): text, the token masked."""
        return self.client.redact(self.text(item, key, where))

    def flag(self, item: dict[str, Any], key: str, where: str = "the answer") -> bool:
        value = item.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self.wrong(where, f"has a {key!r} that is not true or false")
        return value

    def inner(self, item: dict[str, Any], key: str, where: str) -> dict[str, Any] | None:
        """A nested object (``user``, ``author``), or None when missing or null."""
        value = item.get(key)
        if value is None:
            return None
        return self.record(value, f"{where}'s {key!r}")

    def labels(self, item: dict[str, Any], where: str = "the answer") -> tuple[str, ...]:
        """A ``labels`` list: names (GitLab) or objects with a ``name`` (GitHub)."""
        value = item.get("labels")
        if not isinstance(value, list):
            raise self.wrong(where, "has no 'labels' list")
        names = []
        for label in value:
            name = label.get("name") if isinstance(label, dict) else label
            if not isinstance(name, str):
                raise self.wrong(where, "has a label that is neither a name nor {'name': …}")
            names.append(name)
        return tuple(names)
