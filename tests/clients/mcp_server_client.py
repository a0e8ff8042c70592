"""The official MCP Python SDK's client driving `loopdbg mcp-server`, for
tests/clients.rs: argv[1] is the loopdbg binary, argv[2] a home folder
holding a Gemini CLI chat its agent cannot resume (the server is started
with HOME there, so the scan finds it), argv[3] that chat's path. It
initializes, lists the tools, calls each as an agent would (check a broken
request body and ask for its repair, explain the finding, scan the home,
plan the chat's repair, then write it) and prints what it got as one JSON
document."""

import json
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

BROKEN = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "messages": [
        {"role": "user", "content": "weather and fx"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_weather", "name": "get_weather", "input": {}},
                {"type": "tool_use", "id": "toolu_fx", "name": "get_fx_rate", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_weather", "content": "18C"}],
        },
    ],
}


def texts(result) -> list[str]:
    return [c.text for c in result.content]


async def main(loopdbg: str, home: str, chat: str) -> None:
    env = {"HOME": home, "PATH": os.environ.get("PATH", "")}
    server = StdioServerParameters(command=loopdbg, args=["mcp-server"], env=env)
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            checked = await session.call_tool(
                "check_request", {"body": BROKEN, "repair": "synthesize"}
            )
            explained = await session.call_tool("explain_finding", {"kind": "unanswered_call"})
            unknown = await session.call_tool("explain_finding", {"kind": "no_such_kind"})
            scanned = await session.call_tool("list_unresumable_sessions", {})
            planned = await session.call_tool("repair_session", {"path": chat})
            with open(chat, "rb") as f:
                after_plan = f.read()
            written = await session.call_tool("repair_session", {"path": chat, "write": True, "force": True})
            again = await session.call_tool("check_file", {"path": chat})
    print(
        json.dumps(
            {
                "server": init.server_info.name,
                "instructions": init.instructions,
                "tools": sorted(t.name for t in tools.tools),
                "checked": texts(checked),
                "checked_error": checked.is_error,
                "explained": texts(explained),
                "unknown": texts(unknown),
                "unknown_error": unknown.is_error,
                "scanned": texts(scanned),
                "planned": texts(planned),
                "plan_wrote": len(after_plan),
                "written": texts(written),
                "again": texts(again),
            },
            ensure_ascii=False,
            sort_keys=True,
        )
    )


anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
