"""Parses OTLP JSON files with the OpenTelemetry project's own protobuf
schema (opentelemetry-proto's generated ExportTraceServiceRequest),
strictly: an unknown field, a wrong type or a bad enum fails.

    otlp_validate.py FILE...

OTLP JSON differs from protobuf's canonical JSON mapping in one way: ids
are hex, not base64 (the OTLP specification's "JSON Protobuf Encoding").
They are turned into base64 first, and checked to be 16 and 8 bytes.
Prints, per file, the number of exports and spans, and each span's name.
"""

import base64
import json
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)


def hex_ids_to_base64(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str):
                raw = bytes.fromhex(value)
                assert len(raw) in (0, 8, 16), (key, value)
                node[key] = base64.b64encode(raw).decode()
            else:
                hex_ids_to_base64(value)
    elif isinstance(node, list):
        for item in node:
            hex_ids_to_base64(item)


result = []
for path in sys.argv[1:]:
    exports, names = 0, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            doc = json.loads(line)
            hex_ids_to_base64(doc)
            message = json_format.ParseDict(doc, ExportTraceServiceRequest())
            exports += 1
            for rs in message.resource_spans:
                for ss in rs.scope_spans:
                    names.extend(s.name for s in ss.spans)
    result.append({"file": path, "exports": exports, "spans": names})
print(json.dumps(result))
