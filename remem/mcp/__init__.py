"""The MCP server (``remem mcp``): memory tools, resources and prompts for coding agents.

Needs the MCP Python SDK (``pip install "remem[server]"``); it is imported only when a
server is built, so ``import remem`` works without it.
"""

from .server import INSTRUCTIONS, build_server, serve

__all__ = ["INSTRUCTIONS", "build_server", "serve"]
