"""Text that reaches a terminal or a CI log: file names and users' text cannot forge lines.

GitHub's runner reads workflow commands from every line a step prints, on stdout and stderr: a
line that starts with ``::`` (after leading spaces) is a command, and the legacy ``##[command]``
form is recognized anywhere in a line (actions/runner, src/Runner.Common/ActionCommand.cs). A
file named ``x\\n::error::forged`` would otherwise add an annotation, and ``::stop-commands::tok``
would switch annotations off for the rest of the step. So:

- in annotations, data escapes ``%``, CR and LF (``%25``, ``%0D``, ``%0A``) and properties also
  ``:`` and ``,`` (``%3A``, ``%2C``), as the runner unescapes them;
- in plain text, control characters (bidi ones included) are shown as escapes (one message
  stays one line), ``##[`` becomes ``##\\[``, and a line that would start with ``::`` gets a
  backslash in front.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# C0 and C1 controls, DEL, the Unicode line and paragraph separators, and the bidi marks,
# embeddings, overrides and isolates (U+061C, U+200E/F, U+202A-E, U+2066-9), which reorder what
# a reader sees around them ("Trojan Source"); tab is kept.
_CONTROL = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
_NAMED = {"\n": "\\n", "\r": "\\r"}
LEGACY_PREFIX = "##["


def escape_data(value: str) -> str:
    """A workflow command's message (after the second ``::``)."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """A workflow command's property value (``file=…``, ``title=…``)."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def annotation(kind: str, message: str, properties: Mapping[str, str] | None = None) -> str:
    """One ``::kind props::message`` line; every value escaped."""
    props = ",".join(f"{k}={escape_property(v)}" for k, v in (properties or {}).items())
    head = f"{kind} {props}" if props else kind
    return f"::{head}::{escape_data(message)}"


def _escape_control(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def one_line(value: str) -> str:
    """``value`` for plain text output: no line breaks, no terminal controls, no ``##[``."""
    return _CONTROL.sub(_escape_control, value).replace(LEGACY_PREFIX, "##\\[")


def plain_line(value: str) -> str:
    """A whole output line: ``one_line``, and never taken for a workflow command."""
    line = one_line(value)
    stripped = line.lstrip()
    if stripped.startswith("::"):
        return line[: len(line) - len(stripped)] + "\\" + stripped
    return line


def error_lines(fmt: str, message: str, *, path: str = "", hint: str = "") -> list[str]:
    """The lines that report one error on stderr, in the run's ``--format``.

    ``github``: one ``::error`` annotation (file property when there is a path), so the error
    shows on the pull request and nothing in it can start a command. Otherwise: ``campaign:
    error: PATH: MESSAGE`` and a hint line, each a ``plain_line`` (the path on one line).
    """
    if fmt == "github":
        body = f"{message} (hint: {hint})" if hint else message
        props = {"file": path, "title": "campaign"} if path else {"title": "campaign"}
        return [annotation("error", body, props)]
    where = f"{one_line(path)}: " if path else ""
    first, *rest = message.split("\n")
    lines = [plain_line(f"campaign: error: {where}{first}"), *(plain_line(r) for r in rest)]
    if hint:
        head, *more = hint.split("\n")
        lines.extend([plain_line(f"  hint: {head}"), *(plain_line(f"  {m}") for m in more)])
    return lines
