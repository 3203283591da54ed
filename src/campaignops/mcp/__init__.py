"""`campaign mcp`: the campaign's commands as tools for coding agents (Model Context Protocol).

Thin like cli/: a tool call becomes the command's words, the command runs through the CLI's
own ``run`` (handed over by campaignops.cli, which sits on top), and its JSON document is the
tool's answer. The SDK is the optional extra campaignops[mcp]; only server.py imports it.
"""
