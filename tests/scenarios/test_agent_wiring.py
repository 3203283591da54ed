"""The generated campaign wires the agent tools: `.claude/settings.json` runs `campaign guard`
as a PreToolUse hook in the shape Claude Code reads, and `.mcp.json` registers `campaign mcp`;
both are committed in the campaign's first commit, and the hook, run as configured, denies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema

from tests.conftest import git

GUARD = Path(__file__).resolve().parents[1] / "data" / "guard"
# Claude Code's hook settings as its hooks reference describes them: per event, a list of
# matchers, each with a list of hooks of type "command" (docs/decisions.md, issue 21).
HOOK_SETTINGS = {
    "type": "object",
    "required": ["hooks"],
    "properties": {
        "hooks": {
            "type": "object",
            "required": ["PreToolUse"],
            "additionalProperties": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["hooks"],
                    "additionalProperties": False,
                    "properties": {
                        "matcher": {"type": "string"},
                        "hooks": {
                            "type": "array",
                            "minItems": 1,
                            "items": {
                                "type": "object",
                                "required": ["type", "command"],
                                "additionalProperties": False,
                                "properties": {
                                    "type": {"const": "command"},
                                    "command": {"type": "string", "minLength": 1},
                                    "timeout": {"type": "number", "exclusiveMinimum": 0},
                                },
                            },
                        },
                    },
                },
            },
        }
    },
}


def _on_path() -> dict[str, str]:
    """The environment with this interpreter's `campaign` first on PATH, as a user's venv."""
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}


def test_the_guard_is_a_pretooluse_hook_on_bash_and_denies_as_configured(camp: Path) -> None:
    settings = json.loads((camp / ".claude" / "settings.json").read_text(encoding="utf-8"))
    jsonschema.validate(settings, HOOK_SETTINGS)
    (entry,) = settings["hooks"]["PreToolUse"]
    assert entry["matcher"] == "Bash"
    (hook,) = entry["hooks"]
    assert hook["command"] == "campaign guard --format hook"
    committed = git(camp, "ls-files", ".claude/settings.json", ".mcp.json").split()
    assert committed == [".claude/settings.json", ".mcp.json"]

    def as_claude_runs_it(sample: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            hook["command"],
            shell=True,
            cwd=camp,
            input=(GUARD / sample).read_text(encoding="utf-8"),
            capture_output=True,
            text=True,
            env=_on_path(),
            timeout=60,
            check=False,
        )

    denied = as_claude_runs_it("deny-23-ssh-sbatch.json")
    assert denied.returncode == 0, denied.stderr
    decision = json.loads(denied.stdout)["hookSpecificOutput"]
    assert (decision["hookEventName"], decision["permissionDecision"]) == ("PreToolUse", "deny")
    allowed = as_claude_runs_it("allow-01-campaign-submit-smoke.json")
    assert (allowed.returncode, allowed.stdout) == (0, "")


def test_the_mcp_server_is_registered_as_a_stdio_server(camp: Path) -> None:
    servers = json.loads((camp / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]
    assert servers == {"campaignops": {"type": "stdio", "command": "campaign", "args": ["mcp"]}}
