"""The tools `campaign mcp` offers: which commands, each one's input schema read from the
command's own argparse parser, and a tool call's arguments turned back into that command's
words (docs/runner.md, "Agents").

Read-only tools are always offered; a mutating one only when campaign.yaml, as HEAD holds it,
names its command under ``agents: {may: [...]}`` (a change an agent cannot make by editing the
working tree). No tool offers ``--override``, ``--watch`` or ``check --fix``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from campaignops.core import gitrefs, layout, yamldoc
from campaignops.core.errors import CampaignError, UsageError
from campaignops.model import policy as policy_mod

if TYPE_CHECKING:  # importlib.resources.abc from Python 3.11; this name is read by mypy only
    from importlib.abc import Traversable

# Options no tool offers: the output format is the tool's (json), and these take a person.
NEVER = frozenset({"help", "format", "override", "watch", "interval", "fix"})
OUTPUT_DIR = "output"


@dataclass(frozen=True)
class Spec:
    """One tool: the command it runs, and the arguments it fixes or hides."""

    name: str
    command: tuple[str, ...]
    summary: str
    mutating: bool = False  # offered only when agents.may names it
    destructive: bool = False  # may stop or tear down what exists (cancel, release, pull)
    writes: bool = False  # a read-only tool that still records (status's refresh: the ledger)
    open_world: bool = False  # talks to schedulers or boxes
    fixed: tuple[str, ...] = ()  # words always passed (a read-only submit's --dry-run)
    hidden: frozenset[str] = frozenset()  # dests the tool does not offer

    @property
    def policy_name(self) -> str:
        """The name campaign.yaml's agents.may uses: the command's words (``lesson add``)."""
        return " ".join(self.command)


READ_ONLY = (
    Spec("check", ("check",), "campaign check: the campaign's files against its rules"),
    Spec(
        "status",
        ("status",),
        "campaign status: the ledger's jobs (refresh: ask each backend, record what changed)",
        writes=True,
        open_world=True,
    ),
    Spec("diagnose", ("diagnose",), "campaign diagnose: what a failed task's log and verdict say"),
    Spec("review", ("review",), "campaign review: what the change from BASE to HEAD does"),
    Spec("audit", ("audit",), "campaign audit: stamps due and the standing checks"),
    Spec("report", ("report",), "campaign report"),
    Spec(
        "split",
        ("split",),
        "campaign split, as a plan: the parts and their makespan; nothing written",
        fixed=("--dry-run",),
        hidden=frozenset({"dry_run", "out_dir"}),
    ),
    Spec(
        "submit_dry_run",
        ("submit",),
        "campaign submit --dry-run: every gate's verdict and the scripts; nothing submitted",
        fixed=("--dry-run",),
        hidden=frozenset({"dry_run", "commit"}),
        open_world=True,
    ),
)
MUTATING = (
    Spec(
        "submit",
        ("submit",),
        "campaign submit: through the six gates (never --override)",
        mutating=True,
        open_world=True,
    ),
    Spec(
        "cancel",
        ("cancel",),
        "campaign cancel: stop a recorded job",
        mutating=True,
        destructive=True,
        open_world=True,
    ),
    Spec(
        "release",
        ("release",),
        "campaign release: tear down an SSH instance",
        mutating=True,
        destructive=True,
        open_world=True,
    ),
    Spec("lesson_add", ("lesson", "add"), "campaign lesson add: one lesson", mutating=True),
    Spec(
        "pull",
        ("pull",),
        "campaign pull: results home from SSH boxes",
        mutating=True,
        destructive=True,
        open_world=True,
    ),
)


@dataclass(frozen=True)
class Tool:
    spec: Spec
    parser: argparse.ArgumentParser  # the command's own
    speaks_json: bool  # the command has --format json

    @property
    def arguments(self) -> tuple[argparse.Action, ...]:
        hidden = NEVER | self.spec.hidden
        return tuple(
            a
            for a in self.parser._actions
            if a.dest not in hidden
            and a.dest != argparse.SUPPRESS
            and not isinstance(a, (argparse._SubParsersAction, argparse._HelpAction))
        )


def allowed(root: Path) -> tuple[str, ...]:
    """agents.may of campaign.yaml as HEAD holds it (none: no commit, or no usable file)."""
    try:
        blob = gitrefs.show(root, ref="HEAD", rel=layout.POLICY_FILE)
        data = yamldoc.load(blob.decode("utf-8"), path=layout.POLICY_FILE) if blob else None
    except (CampaignError, UnicodeDecodeError):
        return ()
    return policy_mod.from_data(data).agents_may


def _command_parser(
    parser: argparse.ArgumentParser, words: Sequence[str]
) -> argparse.ArgumentParser | None:
    current = parser
    for word in words:
        subs = [a for a in current._actions if isinstance(a, argparse._SubParsersAction)]
        child = subs[0].choices.get(word) if subs else None
        if child is None:
            return None
        current = child
    return current


def offered(parser: argparse.ArgumentParser, may: Sequence[str]) -> tuple[Tool, ...]:
    """The tools for this parser and policy: the read-only ones, and the mutating ones ``may``
    names; a command the parser does not have (report, before it exists) is left out."""
    specs = [*READ_ONLY, *(s for s in MUTATING if s.policy_name in may)]
    tools = []
    for spec in specs:
        own = _command_parser(parser, spec.command)
        if own is None:
            continue
        fmt = next((a for a in own._actions if a.dest == "format"), None)
        speaks = fmt is not None and "json" in (fmt.choices or ())
        tools.append(Tool(spec=spec, parser=own, speaks_json=bool(speaks)))
    return tuple(tools)


def _value_type(action: argparse.Action) -> str:
    """The JSON type of one value: what argparse's ``type`` makes of "1" (int, float), else
    a string argparse itself checks (a date, a choice)."""
    if action.type is None or action.choices:
        return "string"
    try:
        probe = action.type("1")  # type: ignore[operator]
    except (TypeError, ValueError, argparse.ArgumentTypeError):
        return "string"
    return (
        "integer" if isinstance(probe, int) else "number" if isinstance(probe, float) else "string"
    )


def _property(action: argparse.Action) -> dict[str, Any]:
    if isinstance(action, argparse._StoreTrueAction):
        prop: dict[str, Any] = {"type": "boolean", "default": False}
    else:
        prop = {"type": _value_type(action)}
        if action.choices:
            prop["enum"] = [str(c) for c in action.choices]
        if isinstance(action, argparse._AppendAction) or action.nargs in ("+", "*"):
            prop = {"type": "array", "items": prop}
            if action.nargs == "+":
                prop["minItems"] = 1
        elif action.default is not None and action.default != argparse.SUPPRESS:
            prop["default"] = (
                action.default if isinstance(action.default, (int, float)) else str(action.default)
            )
    if action.help and action.help != argparse.SUPPRESS:
        prop["description"] = action.help.replace("%%", "%")
    return prop


def input_schema(tool: Tool) -> dict[str, Any]:
    """The tool's arguments as a JSON Schema object, one property per argparse dest."""
    props = {a.dest: _property(a) for a in tool.arguments}
    required = [a.dest for a in tool.arguments if a.required]
    schema: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def output_schema(tool: Tool, schemas: Traversable | None = None) -> dict[str, Any] | None:
    """The command's shipped output schema (``schemas``, default the package's schemas/output/:
    <command>.v1.schema.json), when the command speaks JSON and the file exists; else None (the
    tool has no outputSchema)."""
    name = "-".join(tool.spec.command)
    folder = schemas or resources.files("campaignops.schemas").joinpath(OUTPUT_DIR)
    path = folder.joinpath(f"{name}.v1.schema.json")
    if not tool.speaks_json or not path.is_file():
        return None
    schema: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return schema if "type" in schema else {"type": "object", **schema}


BAD_ARGUMENT = "tool {tool}: {problem}"
BAD_ARGUMENT_HINT = "call tools/list for the tool's input schema"


def _bad(tool: Tool, problem: str) -> UsageError:
    return UsageError(
        message=BAD_ARGUMENT.format(tool=tool.spec.name, problem=problem), hint=BAD_ARGUMENT_HINT
    )


def _word(tool: Tool, action: argparse.Action, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise _bad(tool, f"{action.dest} takes a {_value_type(action)}, not {value!r}")
    word = str(value)
    if word.startswith("-") and not action.option_strings:
        raise _bad(tool, f"{action.dest} may not start with '-': {word!r}")
    return word


def _words_of(tool: Tool, action: argparse.Action, value: Any) -> list[str]:
    """One argument's words: a flag, `--opt=value` (a value may start with '-'), or a list."""
    flag = action.option_strings[-1] if action.option_strings else ""
    if isinstance(action, argparse._StoreTrueAction):
        if not isinstance(value, bool):
            raise _bad(tool, f"{action.dest} takes true or false, not {value!r}")
        return [flag] if value else []
    if isinstance(action, argparse._AppendAction) or action.nargs in ("+", "*"):
        if not isinstance(value, list):
            raise _bad(tool, f"{action.dest} takes a list, not {value!r}")
        words = [_word(tool, action, v) for v in value]
        if isinstance(action, argparse._AppendAction):
            return [f"{flag}={w}" for w in words]
        if any(w.startswith("-") for w in words):
            raise _bad(tool, f"{action.dest}: an item may not start with '-'")
        return [flag, *words] if flag and words else words
    word = _word(tool, action, value)
    if flag.startswith("--"):
        return [f"{flag}={word}"]
    return [f"{flag}{word}"] if flag else [word]  # `-n4`: argparse reads `-n=4` as "=4"


def argv(tool: Tool, arguments: Mapping[str, Any] | None) -> list[str]:
    """The command's words for a call: its name, positionals, options, the tool's fixed words,
    and ``--format json`` when the command speaks it. An argument the tool does not offer
    (``override`` among them) is a usage error, never passed on."""
    given = dict(arguments or {})
    known = {a.dest: a for a in tool.arguments}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise _bad(
            tool, f"no argument {', '.join(unknown)} (offered: {', '.join(known) or 'none'})"
        )
    positional: list[str] = [*tool.spec.command]
    optional: list[str] = []
    for dest, action in known.items():
        if given.get(dest) is None:
            continue
        words = _words_of(tool, action, given[dest])
        (optional if action.option_strings else positional).extend(words)
    fmt = ["--format", "json"] if tool.speaks_json else []
    return [*positional, *optional, *tool.spec.fixed, *fmt]
