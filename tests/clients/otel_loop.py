"""One agent loop through a real SDK, traced by a real instrumentation
library, exported as OTLP JSON Lines (the OpenTelemetry Python JSON file
exporter), as OTLP protobuf (the SDK's own encoder) and as the SDK's
console exporter prints them (OUT.console.json).

    otel_loop.py LIBRARY BASE_URL all|first OUT.jsonl OUT.pb

LIBRARY picks the SDK and the instrumentation, each writing its own
dialect of the GenAI conventions:

- openinference-openai: `openai` + openinference-instrumentation-openai
  (`llm.input_messages.N.message.*`)
- openinference-anthropic: `anthropic` + openinference-instrumentation-anthropic
- openllmetry-anthropic: `anthropic` + opentelemetry-instrumentation-anthropic
  (OpenLLMetry: `gen_ai.prompt.N.*` / `gen_ai.completion.N.*`)
- otel-openai-v2: `openai` + opentelemetry-instrumentation-openai-v2 with
  the latest experimental conventions (`gen_ai.input.messages`)
- openllmetry-openai: `openai` + opentelemetry-instrumentation-openai
  (OpenLLMetry; 0.47 still writes `gen_ai.prompt.N.*`)
- otel-openai-v2-events: `openai` + opentelemetry-instrumentation-openai-v2
  with the conventions of 1.36 and earlier: each message a GenAI event
  (`gen_ai.user.message`, `gen_ai.choice`, …) emitted through the Logs
  API, not on the span; the events go to OUT.logs.jsonl beside OUT.jsonl
  (the JSON file exporter's logs). The library's own wrapper for those
  conventions (`chat_completions_create_v_old`) is installed by hand: the
  opentelemetry-util-genai it pins always reports the latest conventions.

The loop asks the fake for the weather and an exchange rate; the fake
answers with two parallel calls. `all` answers both, `first` only the
first, so the second request is the one the provider refuses (the SDK
raises; the span is still exported). Each tool run is an
`execute_tool` span carrying `gen_ai.tool.call.id`, as the conventions
(>= 1.37) ask an application to write it.
"""

import json
import os
import sys

LIBRARY, BASE, MODE, OUT_JSON, OUT_PB = sys.argv[1:6]

EVENTS = LIBRARY == "otel-openai-v2-events"
if not EVENTS:
    # The >= 1.37 conventions, with the messages on the span itself.
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
os.environ.setdefault("TRACELOOP_TRACE_CONTENT", "true")

from opentelemetry import trace  # noqa: E402
from opentelemetry.exporter.otlp.json.file import FileSpanExporter  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

provider = TracerProvider(resource=Resource.create({"service.name": "otel-loop"}))
memory = InMemorySpanExporter()
provider.add_span_processor(SimpleSpanProcessor(memory))
with open(OUT_JSON, "w", encoding="utf-8") as out:
    pass
provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(OUT_JSON)))
# The same spans as the SDK's console exporter prints them (one pretty JSON
# object per span), in OUT.console.json.
from opentelemetry.sdk.trace.export import ConsoleSpanExporter  # noqa: E402

console = open(OUT_JSON.removesuffix(".jsonl") + ".console.json", "w", encoding="utf-8")
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=console)))
trace.set_tracer_provider(provider)
tracer = trace.get_tracer("otel-loop")
logger_provider = None
if EVENTS:
    from opentelemetry.exporter.otlp.json.file._log_exporter import FileLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

    OUT_LOGS = OUT_JSON.removesuffix(".jsonl") + ".logs.jsonl"
    with open(OUT_LOGS, "w", encoding="utf-8") as out:
        pass
    logger_provider = LoggerProvider(resource=Resource.create({"service.name": "otel-loop"}))
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(FileLogExporter(OUT_LOGS)))

TABLE = {
    "get_weather": {"city": "北京", "temp_c": 18},
    "get_fx_rate": {"pair": "USD/CNY", "rate": 7.12},
}
PROMPT = "What's the weather in Beijing, and the fx rate USD/CNY?"


def run_tool(name, call_id):
    with tracer.start_as_current_span(f"execute_tool {name}") as span:
        span.set_attribute("gen_ai.operation.name", "execute_tool")
        span.set_attribute("gen_ai.tool.name", name)
        span.set_attribute("gen_ai.tool.call.id", call_id)
        return json.dumps(TABLE[name], ensure_ascii=False)


def openai_loop():
    import openai

    if LIBRARY == "openinference-openai":
        from openinference.instrumentation.openai import OpenAIInstrumentor
    elif LIBRARY == "openllmetry-openai":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor
    else:
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    if EVENTS:
        from opentelemetry._logs import get_logger
        from opentelemetry.instrumentation.openai_v2.instruments import Instruments
        from opentelemetry.instrumentation.openai_v2.patch import chat_completions_create_v_old
        from opentelemetry.metrics import get_meter
        from wrapt import wrap_function_wrapper

        wrapper = chat_completions_create_v_old(
            trace.get_tracer("opentelemetry.instrumentation.openai_v2", tracer_provider=provider),
            get_logger("opentelemetry.instrumentation.openai_v2", logger_provider=logger_provider),
            Instruments(get_meter("opentelemetry.instrumentation.openai_v2")),
            True,
        )
        wrap_function_wrapper("openai.resources.chat.completions", "Completions.create", wrapper)
    else:
        OpenAIInstrumentor().instrument(tracer_provider=provider)
    client = openai.OpenAI(base_url=BASE + "/v1", api_key="sk-test-not-a-key", max_retries=0)
    tools = [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
        for n in TABLE
    ]
    messages = [{"role": "user", "content": PROMPT}]
    for _ in range(4):
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        calls = message.tool_calls if MODE == "all" else message.tool_calls[:1]
        for call in calls:
            content = run_tool(call.function.name, call.id)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})


def anthropic_loop():
    import anthropic

    if LIBRARY == "openinference-anthropic":
        from openinference.instrumentation.anthropic import AnthropicInstrumentor
    else:
        from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor
    AnthropicInstrumentor().instrument(tracer_provider=provider)
    client = anthropic.Anthropic(base_url=BASE, api_key="sk-ant-test-not-a-key", max_retries=0)
    tools = [{"name": n, "input_schema": {"type": "object"}} for n in TABLE]
    messages = [{"role": "user", "content": PROMPT}]
    for _ in range(4):
        reply = client.messages.create(
            model="claude-sonnet-4-5", max_tokens=1024, messages=messages, tools=tools
        )
        messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
        uses = [b for b in reply.content if b.type == "tool_use"]
        if not uses:
            return "".join(b.text for b in reply.content if b.type == "text")
        uses = uses if MODE == "all" else uses[:1]
        results = [
            {"type": "tool_result", "tool_use_id": u.id, "content": run_tool(u.name, u.id)}
            for u in uses
        ]
        messages.append({"role": "user", "content": results})


outcome = {"library": LIBRARY, "mode": MODE}
with tracer.start_as_current_span("invoke_agent otel-loop") as root:
    root.set_attribute("gen_ai.operation.name", "invoke_agent")
    try:
        answer = openai_loop() if "openai" in LIBRARY else anthropic_loop()
        outcome["answer"] = answer
    except Exception as error:  # the provider's 400, as the SDK raised it
        outcome["error"] = type(error).__name__
        outcome["status"] = getattr(error, "status_code", None)
provider.force_flush()
if logger_provider is not None:
    logger_provider.force_flush()
console.close()
with open(OUT_PB, "wb") as out:
    out.write(encode_spans(memory.get_finished_spans()).SerializeToString())
outcome["spans"] = len(memory.get_finished_spans())
print(json.dumps(outcome, ensure_ascii=False))
