"""`campaign guard`: allow or deny a coding agent's proposed shell command, before it runs.

What a campaign does to compute goes through its own commands, so that the six gates judge it
and the ledger records it. An agent that types the scheduler's or a provider's command itself
walks around both; so does one that rewrites the ledger's history or overrides a gate that a
person should decide on. The guard denies those, each with the campaign command to use instead,
and allows everything else: it subtracts from what an agent may run, it never approves
(docs/runner.md, "Agents"; what it does not enforce is listed in the generated AGENTS.md).

Read as a Claude Code PreToolUse hook's input (``tool_input.command`` of a Bash call) or as one
command line; the shell is read by campaignops.gitops.shellwords.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from campaignops.backends.registry import KINDS
from campaignops.core.errors import UsageError
from campaignops.gitops import shellwords
from campaignops.gitops.shellwords import Simple

SUBMIT = "campaign submit MANIFEST --stage smoke|single|production (the six gates judge it, the ledger records it)"
CANCEL = "campaign cancel JOB [--targets ID ...] --reason TEXT (the ledger records who stopped it and why)"
RELEASE = (
    "campaign pull, then campaign release INSTANCE (results home first; the teardown is recorded)"
)
PUSH = "git pull --rebase, then git push (the ledger is append-only: its history is the campaign's record)"
ASK = "ask a person: an override passes a gate that refused for a reason, and a person decides that (they run campaign submit ... --override REASON themselves)"
READ = "write the command so that its quoting closes and its nesting stays shallow"

# The scheduler commands that submit or stop jobs outside the campaign's gates and ledger: each
# registered backend names its own (backends/base.py Kind), so a new scheduler brings its words.
RAW_SUBMIT = frozenset().union(*(kind.raw_submit for kind in KINDS))
RAW_CANCEL = frozenset().union(*(kind.raw_cancel for kind in KINDS))
# A command that asks for an allocation → the variables that say it already runs inside one.
ALLOCATIONS = dict(kind.allocation for kind in KINDS if kind.allocation)
# Rented instances: the provider command's words that tear one down.
TEARDOWN = {
    "vastai": frozenset({"destroy"}),
    "runpodctl": frozenset({"remove", "delete"}),
    "lambda": frozenset({"terminate"}),
    "lambda-cloud": frozenset({"terminate"}),
    "lambdacloud": frozenset({"terminate"}),
    "lambdalabs": frozenset({"terminate"}),
}
# Lambda's teardown as an HTTP call (its cloud API has no official command line).
LAMBDA_TERMINATE = "instance-operations/terminate"
HTTP_CLIENTS = frozenset({"curl", "wget", "http", "https", "xh"})
# git's options before its subcommand that take a value as the next word.
GIT_VALUED = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"})


@dataclass(frozen=True)
class Denial:
    """One simple command the guard refuses: which rule, why, and what to run instead."""

    command: str
    rule: str
    reason: str
    instead: str


@dataclass(frozen=True)
class Decision:
    command: str
    denied: tuple[Denial, ...]

    @property
    def allowed(self) -> bool:
        return not self.denied


def _shown(simple: Simple) -> str:
    words = " ".join(simple.words)
    return " via ".join([words, *reversed(simple.via)]) if simple.via else words


def _git_push_forced(args: Sequence[str]) -> bool:
    """`git [global options] push …` with --force, -f (alone or in a bundle), --force-with-lease,
    --force-if-includes, --mirror, a refspec starting with '+', or a deletion (--delete, -d,
    ':branch'): each rewrites or removes history the ledger is part of."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in GIT_VALUED else 1
    if i >= len(args) or args[i] != "push":
        return False
    for word in args[i + 1 :]:
        if word in ("--force", "--mirror", "--delete") or word.startswith(
            ("--force-with-lease", "--force-if")
        ):
            return True
        if word.startswith("-") and not word.startswith("--") and set(word[1:]) & {"f", "d"}:
            return True
        if word.startswith(("+", ":")):
            return True
    return False


def _campaign_words(simple: Simple) -> Sequence[str] | None:
    """The words after `campaign` (or `python -m campaignops`), else None."""
    if simple.program == "campaign":
        return simple.args
    if simple.program.startswith("python") and simple.args[:2] == ("-m", "campaignops"):
        return simple.args[2:]
    return None


def _overrides(words: Sequence[str]) -> bool:
    command = [w for w in words if not w.startswith("-")][:1]
    return command == ["submit"] and any(
        w == "--override" or w.startswith("--override=") for w in words
    )


def _rule(simple: Simple, env: Mapping[str, str]) -> tuple[str, str, str] | None:
    """(rule, reason, instead) for a simple command the guard denies, else None."""
    program, args = simple.program, simple.args
    if program in RAW_SUBMIT:
        return "raw-submit", f"{program} submits outside the six gates and the ledger", SUBMIT
    if program in RAW_CANCEL:
        return "raw-cancel", f"{program} stops a job the ledger then never hears of", CANCEL
    if program in ALLOCATIONS and not any(env.get(v) for v in ALLOCATIONS[program]):
        why = f"{program} outside an allocation asks the scheduler for one, outside the gates"
        return f"{program}-outside-allocation", why, SUBMIT
    if program in TEARDOWN and TEARDOWN[program] & set(args):
        why = (
            f"{program} tears down a rented instance before campaign pull brought its results home"
        )
        return "provider-teardown", why, RELEASE
    if program in HTTP_CLIENTS and any(LAMBDA_TERMINATE in a for a in args):
        why = "a call to Lambda's terminate endpoint tears down a rented instance"
        return "provider-teardown", why, RELEASE
    if program == "git" and _git_push_forced(args):
        why = "a forced push (or a deletion) rewrites the branch that holds the ledger (.campaign/ledger.jsonl)"
        return "force-push", why, PUSH
    words = _campaign_words(simple)
    if words is not None and _overrides(words):
        return "override", "an agent does not override a gate: --override is a person's call", ASK
    return None


def decide(command: str, *, env: Mapping[str, str]) -> Decision:
    """The guard's decision on one command line (``env``: where it would run, for srun)."""
    try:
        simples = list(shellwords.commands(command))
    except (ValueError, shellwords.TooDeep) as exc:
        why = "unclosed quoting" if isinstance(exc, ValueError) else "wrappers nested too deep"
        denial = Denial(
            command=command, rule="unreadable", reason=f"cannot read it: {why}", instead=READ
        )
        return Decision(command=command, denied=(denial,))
    denied = []
    for simple in simples:
        found = _rule(simple, env)
        if found is not None:
            rule, reason, instead = found
            denied.append(Denial(command=_shown(simple), rule=rule, reason=reason, instead=instead))
    return Decision(command=command, denied=tuple(denied))


NOT_A_HOOK = "the standard input is not a hook's JSON object: {problem}"
NOT_A_HOOK_HINT = (
    'pipe a PreToolUse hook input ({{"tool_name": "Bash", "tool_input": {{"command": '
    "...}}}}), or pass the command as an argument: campaign guard 'COMMAND'"
)


def hook_command(data: Any) -> str | None:
    """The shell command of a hook input, or None for a call of another tool (nothing to judge).
    A Bash call without a string command is bad input (UsageError)."""
    if not isinstance(data, dict):
        raise UsageError(message=NOT_A_HOOK.format(problem="not an object"), hint=NOT_A_HOOK_HINT)
    if data.get("tool_name") != "Bash":
        return None
    tool_input = data.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str):
        problem = "a Bash call without tool_input.command"
        raise UsageError(message=NOT_A_HOOK.format(problem=problem), hint=NOT_A_HOOK_HINT)
    return command


def reason(decision: Decision) -> str:
    """One paragraph for the agent: each denied command, why, and what to run instead."""
    parts = [
        f"campaign guard denied `{d.command}`: {d.reason}. Use instead: {d.instead}."
        for d in decision.denied
    ]
    return " ".join(parts) or "campaign guard: allowed"


def hook_output(decision: Decision) -> dict[str, Any] | None:
    """What a PreToolUse hook prints: a deny with its reason, or None for an allow, which
    leaves the decision to the agent's own permission rules (the guard only subtracts)."""
    if decision.allowed:
        return None
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason(decision),
        }
    }


def document(decision: Decision) -> dict[str, Any]:
    """`campaign guard --format json`: the decision and each denial."""
    return {
        "schema": "campaignops/guard/v1",
        "decision": "allow" if decision.allowed else "deny",
        "command": decision.command,
        "denied": [
            {"command": d.command, "rule": d.rule, "reason": d.reason, "instead": d.instead}
            for d in decision.denied
        ],
    }
