"""The official MCP Python SDK's client, for tests/mcp.rs: starts the server
command given on the command line over stdio (or, with `--http URL`, a
Streamable HTTP server), initializes, lists the tools,
calls each, and prints what it got as one JSON document, so a run through
`loopdbg mcp` can be compared with a direct one."""

import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def transport(command: str, args: list[str]):
    # `mcp_client.py --http URL`: a Streamable HTTP server at URL.
    if command == "--http":
        return streamable_http_client(args[0])
    return stdio_client(StdioServerParameters(command=command, args=args))


async def main(command: str, args: list[str]) -> None:
    async with transport(command, args) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            weather = await session.call_tool("get_weather", {"city": "北京"})
            broken = await session.call_tool("broken", {"reason": "no table"})
    print(
        json.dumps(
            {
                "server": init.server_info.name,
                "tools": sorted(t.name for t in tools.tools),
                "weather": [c.model_dump(exclude_none=True) for c in weather.content],
                "weather_error": weather.is_error,
                "broken": [c.model_dump(exclude_none=True) for c in broken.content],
                "broken_error": broken.is_error,
            },
            ensure_ascii=False,
            sort_keys=True,
        )
    )


anyio.run(main, sys.argv[1], sys.argv[2:])
