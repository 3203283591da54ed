"""The backend page: where a backend's page lives (backends/NAME.md), which names can have one,
and its front matter read from the page's text.

Written once, here: backends/base.py reads a page from the checkout through it (``page``),
checks and views read it through their own file readers, and every message that names a page
names it with ``path_of``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from campaignops.core import yamldoc
from campaignops.core.errors import InputError, UsageError, YamlSyntaxError
from campaignops.model import frontmatter

DIR = "backends"
# What a backend name may be: one file name under backends/ (no "/", no leading "." that could
# climb out), short enough to open. The policy's own pattern is stricter; this one only keeps
# a name from --backend or the ledger from reading outside backends/.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")


def is_name(name: object) -> bool:
    """Whether ``name`` can name a page (a name that cannot has none)."""
    return isinstance(name, str) and NAME.match(name) is not None


def checked_name(name: str) -> str:
    """``name``, or UsageError (exit 2) when it cannot be a backend page's name."""
    if not is_name(name):
        raise UsageError(
            message=f"{name[:80]!r} is not a backend name (letters, digits and . _ -, at most "
            "128, starting with a letter or digit)",
            hint="a backend named by --backend, a manifest or a ledger record must be one of "
            "campaign.yaml's backends (each has a page backends/NAME.md)",
        )
    return name


def path_of(name: str) -> str:
    """Where the page of ``name`` lives, as a message names it (the name as given, unchecked)."""
    return f"{DIR}/{name}.md"


def page_path(name: str) -> str:
    """Where the page of ``name`` lives, for reading it: UsageError when ``name`` cannot be one."""
    return path_of(checked_name(name))


def front_matter(text: str, *, path: str) -> dict[str, Any]:
    """A backend page's front matter as a mapping ({} when the page has none)."""
    found = frontmatter.split(text)
    if found is None:
        return {}
    try:
        data = yamldoc.load(found.text, path=path, line_offset=found.first_line - 1)
    except YamlSyntaxError as exc:
        raise InputError(
            path=path,
            message=f"front matter is not valid YAML "
            f"(line {exc.line + found.first_line - 1}: {exc.problem})",
            hint="fix the front matter, then run campaign render",
        ) from None
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class SelfStop:
    """A ``kind: ssh`` page's ``self_stop``: the command that stops an instance from inside it,
    which the box executor runs once the box has been idle for ``budgets.idle_stop_minutes``;
    ``irreversible``: it deletes the instance or its disk (``self_stop_irreversible``, else the
    page's ``meter_stop_irreversible``: a page that does not say is read as the worse case)."""

    command: str
    irreversible: bool


def self_stop(page: Mapping[str, Any] | None) -> SelfStop | None:
    """The page's self-stop, or None when it gives no usable command (its schema says why)."""
    command = (page or {}).get("self_stop")
    if not isinstance(command, str) or not command.strip():
        return None
    said = (page or {}).get("self_stop_irreversible")
    worst = (page or {}).get("meter_stop_irreversible") is True
    return SelfStop(command=command, irreversible=said if isinstance(said, bool) else worst)
