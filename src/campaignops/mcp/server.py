"""`campaign mcp`: the campaign's commands as Model Context Protocol tools, over stdio.

The SDK's low-level server (the official `mcp` package, the optional extra campaignops[mcp]):
tools/list answers campaignops.mcp.tools' tools for campaign.yaml as HEAD holds it, asked
again at every request, so a tool the policy does not allow is neither listed nor callable;
tools/call runs one command (campaignops.mcp.calls) in a worker thread, one call at a time (the
commands read the current directory and hold the campaign's locks). The annotations are hints
for the client; what an agent may do is decided here and in the commands' own gates.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from campaignops import __version__
from campaignops.mcp import calls, tools

INSTRUCTIONS = (
    "The tools are campaignops' `campaign` commands run in this campaign; each answers with the "
    "command's JSON document. Read-only tools are always here; submit, cancel, release, "
    "lesson_add and pull only when campaign.yaml's agents.may (committed) lists them. A tool "
    "that answers with a gate's refusal has done nothing: ask a person, do not work around it "
    "(no tool takes --override, and raw scheduler commands are for people)."
)
NO_TOOL = (
    "no tool {name!r} here: the tools are {names}; a mutating one (submit, cancel, release, "
    "lesson_add, pull) is offered only when campaign.yaml's agents.may, as committed, names it "
    "(a person decides that)"
)


def _described(tool: tools.Tool) -> types.Tool:
    spec = tool.spec
    return types.Tool(
        name=spec.name,
        title=spec.summary.split(":", 1)[0],
        description=(spec.summary + ". " + (tool.parser.description or "")).strip(),
        input_schema=tools.input_schema(tool),
        output_schema=tools.output_schema(tool),
        annotations=types.ToolAnnotations(
            read_only_hint=not (spec.mutating or spec.writes),
            destructive_hint=spec.destructive,
            idempotent_hint=not spec.mutating,
            open_world_hint=spec.open_world,
        ),
    )


def _server(root: Path, parser: argparse.ArgumentParser, run: calls.Run) -> Server:
    lock = anyio.Lock()

    def current() -> dict[str, tools.Tool]:
        return {t.spec.name: t for t in tools.offered(parser, tools.allowed(root))}

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_described(t) for t in current().values()])

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        offered = current()
        tool = offered.get(params.name)
        if tool is None:
            text = NO_TOOL.format(name=params.name, names=", ".join(offered))
            return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
        async with lock:
            done = await anyio.to_thread.run_sync(calls.call, tool, params.arguments, run)
        return types.CallToolResult(
            content=[types.TextContent(text=done.text)],
            structured_content=done.document,
            is_error=done.error,
        )

    return Server(
        "campaignops",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def serve(*, root: Path, parser: argparse.ArgumentParser, run: calls.Run) -> None:
    """Serve until the client closes standard input."""
    server = _server(root, parser, run)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
