"""The MCP endpoints: every operation that has a tool, served from the same catalog and dispatcher as HTTP.

`McpService` (in `service.py`) is composed once at start; `McpRoot` (in `asgi.py`) is the one ASGI callable in front
of the Quart-Trio app that routes the three MCP endpoints (and their protected-resource metadata) to it.
"""
