"""A stdio MCP server built with the official MCP Python SDK (mcp 2.x's
MCPServer), for tests/mcp.rs: one tool that answers from a table, and one
that fails, so both a result and an error result cross the tap."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("weather")

TABLE = {"Paris": "21°C, clear", "北京": "18°C, haze"}


@server.tool()
def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return TABLE[city]


@server.tool()
def broken(reason: str) -> str:
    """Always fails, with the reason given."""
    raise ValueError(reason)


if __name__ == "__main__":
    server.run("stdio")
