"""`campaign mcp` in a generated campaign, driven by the MCP SDK's own client over stdio: the
tools and their schemas, status, diagnose of a failed task, a dry-run submit; a mutating tool
absent under the default policy and present once campaign.yaml (committed) allows it; a
submit that smoke_first refuses comes back as structured content, and nothing is submitted.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="campaign mcp needs the optional extra campaignops[mcp]")
if os.environ.get("CI") == "true":  # under CI the extra is part of the test install: a must
    import mcp  # noqa: F401

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from campaignops.core import layout
from campaignops.mcp import tools as mcp_tools
from tests.conftest import git
from tests.scenarios.conftest import Life
from tests.scenarios.test_diagnose import MANIFEST, TRAIN

READ_ONLY = {"check", "status", "diagnose", "review", "audit", "report", "split", "submit_dry_run"}
MUTATING = {"submit", "cancel", "release", "lesson_add", "pull"}


def _session(root: Path, steps: Callable[[ClientSession], Awaitable[None]]) -> None:
    """Start the server ``root``'s .mcp.json registers (`campaign mcp`), with this
    interpreter's `campaign` first on PATH, and run ``steps`` with the SDK's client."""
    registered = json.loads((root / ".mcp.json").read_text(encoding="utf-8"))
    config = registered["mcpServers"]["campaignops"]
    path = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    server = StdioServerParameters(
        command=config["command"],
        args=config["args"],
        env={**os.environ, "PATH": path},
        cwd=str(root),
    )

    async def main() -> None:
        with anyio.fail_after(240):
            async with stdio_client(server) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                await steps(s)

    anyio.run(main)


async def _tools(s: ClientSession) -> dict[str, Any]:
    return {t.name: t for t in (await s.list_tools()).tools}


def _failed_smoke(life: Life) -> str:
    life.write("scripts/train.py", TRAIN, commit=False)
    life.write("configs/train.yaml", "batch: 512\n", commit=False)
    life.write("manifests/train.yaml", MANIFEST)
    done = life.submit("manifests/train.yaml", "smoke")
    assert done.code == 0, done.err
    job = life.wait()
    assert job.job_id is not None and job.task("train").state == "FAILED"  # type: ignore[union-attr]
    return job.job_id


def test_an_agent_reads_the_campaign_and_is_refused_what_a_person_decides(
    camp: Path, run: Any
) -> None:
    life = Life(root=camp, backend="local", run=run)
    failed = _failed_smoke(life)
    ledger = camp / layout.LEDGER_FILE
    seen: dict[str, Any] = {}

    async def read_only(s: ClientSession) -> None:
        offered = await _tools(s)
        assert set(offered) == READ_ONLY, sorted(offered)  # no mutating tool by default
        for tool in offered.values():
            assert tool.input_schema["type"] == "object" and "properties" in tool.input_schema
            assert "override" not in tool.input_schema["properties"]
        assert offered["check"].annotations.read_only_hint is True
        assert offered["submit_dry_run"].input_schema["required"] == ["manifest", "stage"]
        stage = offered["submit_dry_run"].input_schema["properties"]["stage"]
        assert stage["enum"] == ["smoke", "single", "production"]

        status = await s.call_tool("status", {})
        assert not status.is_error, status.content
        assert [j["job_id"] for j in status.structured_content["jobs"]] == [failed]

        told = await s.call_tool("diagnose", {"job": failed, "today": "2026-11-21"})
        assert not told.is_error, told.content
        seen["diagnose"] = told.structured_content
        assert "cuda-oom" in json.dumps(told.structured_content)

        preview = await s.call_tool(
            "submit_dry_run", {"manifest": "manifests/train.yaml", "stage": "smoke"}
        )
        assert not preview.is_error, preview.content
        assert "smoke_first" in json.dumps(preview.structured_content)

        absent = await s.call_tool("submit", {"manifest": "manifests/train.yaml", "stage": "smoke"})
        assert absent.is_error and "agents.may" in absent.content[0].text

    before = ledger.read_bytes()
    _session(camp, read_only)
    assert ledger.read_bytes() == before  # a dry run and the reads submitted nothing

    # A person allows submit, in a commit: the same server process would now offer it.
    policy = camp / layout.POLICY_FILE
    policy.write_text(policy.read_text() + "agents:\n  may: [submit]\n", encoding="utf-8")
    assert life.run("check", layout.POLICY_FILE).code == 0
    git(camp, "commit", "-qam", "agents may submit")

    async def allowed(s: ClientSession) -> None:
        offered = await _tools(s)
        assert set(offered) == READ_ONLY | {"submit"}, sorted(offered)
        submit = offered["submit"]
        assert submit.annotations.read_only_hint is False
        assert "override" not in submit.input_schema["properties"]

        # production before a completed smoke of this fingerprint: smoke_first refuses.
        refused = await s.call_tool(
            "submit",
            {"manifest": "manifests/train.yaml", "stage": "production", "backend": "local"},
        )
        assert not refused.is_error, refused.content
        assert "smoke_first" in json.dumps(refused.structured_content)
        assert "ask them" in refused.content[0].text and "--override" in refused.content[0].text

        sneaked = await s.call_tool(
            "submit",
            {"manifest": "manifests/train.yaml", "stage": "production", "override": "agent"},
        )
        assert sneaked.is_error and "no argument override" in sneaked.content[0].text

    before = ledger.read_bytes()
    _session(camp, allowed)
    assert ledger.read_bytes() == before  # nothing submitted, nothing recorded


def test_every_mutating_tool_is_a_command_the_policy_can_name() -> None:
    from campaignops.model import policy

    assert {s.policy_name for s in mcp_tools.MUTATING} == set(policy.AGENT_MAY)
    assert {s.name for s in mcp_tools.MUTATING} == MUTATING
