"""A Bedrock Converse tool loop as people write it with boto3: ask, run
every tool the model names, send one toolResult per toolUse, ask again.
`first` answers only the first call (the classic bug). Prints each trip's
stop reason and content, or the ValidationException boto3 raised, as JSON.
Usage: bedrock_loop.py ENDPOINT stream|plain all|first"""
import sys, json, boto3
from botocore.config import Config
endpoint, stream, first_only = sys.argv[1], sys.argv[2] == "stream", sys.argv[3] == "first"
c = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=endpoint,
    aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="sk-SECRET-not-real",
    config=Config(retries={"max_attempts": 1}))
model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
tools = {"tools": [{"toolSpec": {"name": n, "inputSchema": {"json": {"type": "object"}}}} for n in ("get_weather", "get_fx_rate")]}
messages = [{"role": "user", "content": [{"text": "weather and fx"}]}]
out = []
for trip in range(3):
    try:
        if stream:
            r = c.converse_stream(modelId=model, messages=messages, toolConfig=tools)
            content, cur, stop = [], None, None
            for ev in r["stream"]:
                if "contentBlockStart" in ev:
                    tu = ev["contentBlockStart"]["start"]["toolUse"]; cur = {"toolUseId": tu["toolUseId"], "name": tu["name"], "input": ""}
                elif "contentBlockDelta" in ev:
                    d = ev["contentBlockDelta"]["delta"]
                    if "text" in d:
                        if not content or "text" not in content[-1]: content.append({"text": ""})
                        content[-1]["text"] += d["text"]
                    else: cur["input"] += d["toolUse"]["input"]
                elif "contentBlockStop" in ev and cur:
                    cur["input"] = json.loads(cur["input"] or "{}"); content.append({"toolUse": cur}); cur = None
                elif "messageStop" in ev: stop = ev["messageStop"]["stopReason"]
        else:
            r = c.converse(modelId=model, messages=messages, toolConfig=tools)
            content, stop = r["output"]["message"]["content"], r["stopReason"]
    except c.exceptions.ValidationException as e:
        out.append(["ValidationException", str(e)]); break
    out.append([stop, content])
    if stop != "tool_use": break
    messages.append({"role": "assistant", "content": content})
    calls = [b["toolUse"] for b in content if "toolUse" in b]
    if first_only: calls = calls[:1]
    messages.append({"role": "user", "content": [{"toolResult": {"toolUseId": t["toolUseId"], "content": [{"text": "ok"}]}} for t in calls]})
print(json.dumps(out, ensure_ascii=False))
