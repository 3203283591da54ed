"""One tool call: the command's words, run as `campaign` runs them, and its answer.

The command runs in this process through the CLI's own ``run`` (handed over by campaignops.cli:
the same parser, handler and error mapping), with ``--format json`` when it speaks JSON; the
document it prints is the tool's structured content. A command that does not speak JSON yet
answers with its text in a small document of its own (TEXT_SCHEMA).
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from campaignops.core.errors import CampaignError
from campaignops.mcp import tools

Run = Callable[[Sequence[str] | None, TextIO, TextIO], int]

TEXT_SCHEMA = "campaignops/mcp-text/v1"
# What a refused mutating tool tells the agent, beside the command's own document.
ASK_A_PERSON = (
    "campaign {command} answered exit 1: {what}. A gate's refusal is for a person to decide: "
    "tell them what it says and ask them; this server never passes --override, and no tool "
    "here can."
)
REFUSED = "refused by a gate, nothing was submitted or changed"
UNSURE = (
    "a gate or the backend refused, or a step after the change failed (the document says which)"
)


@dataclass(frozen=True)
class Answer:
    exit_code: int
    document: dict[str, Any]  # the structured content
    text: str  # the text content: the document, after the advice for the agent if any
    error: bool  # exit 2: bad input, or a backend this machine cannot reach


def _document(stdout: str) -> dict[str, Any] | None:
    try:
        doc = json.loads(stdout)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _refused(doc: Mapping[str, Any]) -> bool:
    error = doc.get("error")
    return isinstance(error, dict) and error.get("kind") == "refused"


def answer(tool: tools.Tool, code: int, stdout: str, stderr: str) -> Answer:
    """The tool's answer to a run that ended with ``code`` and printed ``stdout``/``stderr``."""
    command = " ".join(tool.spec.command)
    doc = _document(stdout) if tool.speaks_json else None
    # A command that speaks JSON but printed no document did not finish its answer: an error,
    # which the client does not hold to the command's output schema.
    unanswered = tool.speaks_json and doc is None
    if doc is None:
        doc = {
            "schema": TEXT_SCHEMA,
            "command": command,
            "exit_code": code,
            "stdout": stdout,
            "stderr": stderr,
        }
    parts = []
    if code == 1 and (tool.spec.mutating or tool.spec.fixed == ("--dry-run",)):
        what = REFUSED if _refused(doc) else UNSURE
        parts.append(ASK_A_PERSON.format(command=command, what=what))
    parts.append(json.dumps(doc, indent=2, ensure_ascii=False))
    if tool.speaks_json and stderr.strip():
        parts.append(f"stderr:\n{stderr.strip()}")
    error = code >= 2 or unanswered
    return Answer(exit_code=code, document=doc, text="\n\n".join(parts), error=error)


def call(tool: tools.Tool, arguments: Mapping[str, Any] | None, run: Run) -> Answer:
    """Run the tool's command with ``arguments`` (a usage error when they do not fit)."""
    try:
        words = tools.argv(tool, arguments)
    except CampaignError as exc:
        lines = f"campaign: error: {exc.message}\n  hint: {exc.hint}\n"
        return answer(tool, exc.exit_code, "", lines)
    out, err = io.StringIO(), io.StringIO()
    # argparse writes its usage errors to sys.stderr, then exits: both caught here.
    with contextlib.redirect_stderr(err):
        try:
            code = run(words, out, err)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    return answer(tool, code, out.getvalue(), err.getvalue())
