"""Drives the service's /mcp endpoint with the official MCP Python SDK.

Usage: mcp_client.py URL [KEY]  (steps as JSON on stdin: [{"tool": name, "args": {...}}])

Initializes a session over the streamable HTTP transport, lists the tools,
pings, then calls each step's tool in order. Prints one JSON object: the
server's info, the tools, and each call's outcome (the structured result,
or the JSON-RPC error the SDK raised), with what the tool's advertised
inputSchema says of the call's arguments (`schemaErrors`, as a client that
validates before calling would find them).
"""

import asyncio
import json
import sys

import jsonschema

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


async def main(url, key, steps):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    out = {"calls": []}
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                out["protocolVersion"] = init.protocol_version
                out["serverInfo"] = {"name": init.server_info.name, "version": init.server_info.version}
                listed = await session.list_tools()
                out["tools"] = [
                    {
                        "name": t.name,
                        "hasInputSchema": t.input_schema is not None and t.input_schema.get("type") == "object",
                        "hasOutputSchema": t.output_schema is not None,
                        "readOnly": t.annotations.read_only_hint if t.annotations else None,
                    }
                    for t in listed.tools
                ]
                await session.send_ping()
                out["ping"] = True
                schemas = {t.name: t.input_schema for t in listed.tools}
                for step in steps:
                    args = step.get("args", {})
                    schema = schemas.get(step["tool"]) or {}
                    validator = jsonschema.validators.validator_for(schema)(schema)
                    said = sorted(e.message for e in validator.iter_errors(args))
                    try:
                        result = await session.call_tool(step["tool"], args)
                        call = {"isError": result.is_error, "structured": result.structured_content}
                    except MCPError as e:
                        call = {"rpcError": {"code": e.code, "message": e.message, "data": e.data}}
                    call["schemaErrors"] = said
                    out["calls"].append(call)
    print(json.dumps(out))


if __name__ == "__main__":
    url = sys.argv[1]
    key = sys.argv[2] if len(sys.argv) > 2 else ""
    asyncio.run(main(url, key, json.load(sys.stdin)))
