"""A stdio MCP server built with the official MCP Python SDK (mcp 2.x's
MCPServer), for tests/mcp.rs: one tool that answers from a table, and one
that fails, so both a result and an error result cross the tap. Over
stdio, or with `http PORT` over Streamable HTTP."""

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
    import sys

    # `mcp_server.py http PORT`: the same server over Streamable HTTP.
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
