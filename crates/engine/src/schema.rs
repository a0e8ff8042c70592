//! The session format as a JSON Schema (draft 2020-12), printed by
//! `loopdbg schema` so editors can validate session files. A test checks
//! every shipped session against it, and that it rejects what the parser
//! rejects for shape (unknown keys, wrong types).

use serde_json::{Value, json};

/// The JSON Schema of a session file.
pub fn session_schema() -> Value {
    let names = json!({"type": "array", "items": {"type": "string"}});
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://loopdbg.dev/schema/session.json",
        "title": "loopdbg session",
        "description": "A stub scenario for loopdbg: the user prompt, tools backed by lookup tables, a scripted model and the opening strategy.",
        "type": "object",
        "additionalProperties": false,
        "required": ["user", "model"],
        "properties": {
            "title": {"type": "string", "description": "Short title for headers and tables."},
            "walkthrough": {"type": "boolean", "description": "Show the walkthrough of the two trips of one call in the debugger (other sessions show the loop's code)."},
            "user": {"type": "string", "description": "The user's prompt: the first message."},
            "system": {"type": ["string", "null"], "description": "Optional system prompt."},
            "tools": {
                "type": "array",
                "description": "Tools offered to the model; tool names must be unique.",
                "items": {"$ref": "#/$defs/tool"}
            },
            "model": {
                "type": "object",
                "description": "Named stub-model behaviors in file order; the first rule whose `when` holds replies.",
                "minProperties": 1,
                "additionalProperties": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/rule"}}
            },
            "strategy": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "extract": {"enum": ["first", "all"]},
                    "stop": {"enum": ["content", "finish-reason", "finish_reason", "tool-calls", "tool_calls", "robust"]},
                    "max_rounds": {"type": "integer", "minimum": 1, "maximum": crate::strategy::MAX_ROUNDS_LIMIT},
                    "behavior": {"type": "string", "description": "A key of `model`."},
                    "closure": {"enum": ["leave", "synthesize", "strip"], "description": "What happens to calls left without a result."}
                }
            },
            "executor": {
                "type": "object",
                "additionalProperties": false,
                "properties": {"timeout_ms": {"type": "integer", "minimum": 0, "description": "Per-call timeout in virtual milliseconds."}}
            },
            "faults": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "interrupt": {
                        "type": "object", "additionalProperties": false, "required": ["round"],
                        "properties": {"round": {"type": "integer", "minimum": 1}, "at_ms": {"type": "integer", "minimum": 0}}
                    },
                    "fallback": {
                        "type": "object", "additionalProperties": false, "required": ["round"],
                        "properties": {"round": {"type": "integer", "minimum": 1}, "after_calls": {"type": "integer", "minimum": 1}, "at_ms": {"type": "integer", "minimum": 0}}
                    }
                }
            }
        },
        "$defs": {
            "tool": {
                "type": "object",
                "additionalProperties": false,
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "description": {"type": "string"},
                    "parameters": {"type": "object", "description": "JSON Schema of the arguments, as sent to the model."},
                    "table": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "additionalProperties": false,
                            "required": ["args", "result"],
                            "properties": {"args": {}, "result": {}}
                        }
                    },
                    "miss": {"description": "Returned as an error result when no row matches."},
                    "latency_ms": {"type": "integer", "minimum": 0},
                    "fails": {"type": "string", "description": "Every call fails with this error text."},
                    "hard": {"type": "boolean", "description": "A failure cancels the other calls of the turn."},
                    "timeout_ms": {"type": "integer", "minimum": 0},
                    "agent": {"type": "string", "description": "A session file run as a sub-agent (relative path)."},
                    "background": {"type": "boolean", "description": "With agent: launch it in the background (status async_launched)."}
                }
            },
            "rule": {
                "type": "object",
                "additionalProperties": false,
                "required": ["reply"],
                "properties": {
                    "when": {
                        "type": "object",
                        "additionalProperties": false,
                        "properties": {
                            "round": {"type": "integer", "minimum": 1},
                            "missing": names.clone(),
                            "answered": names
                        }
                    },
                    "reply": {
                        "type": "object",
                        "additionalProperties": false,
                        "properties": {
                            "text": {"type": ["string", "null"]},
                            "tool_calls": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "additionalProperties": false,
                                    "required": ["id", "name"],
                                    "properties": {
                                        "id": {"type": "string"},
                                        "name": {"type": "string"},
                                        "args": {},
                                        "arguments": {"type": "string", "description": "Raw arguments text, as a model sent it."}
                                    }
                                }
                            },
                            "finish_reason": {"enum": [
                                "stop", "tool_calls", "length", "content_filter",
                                "end_turn", "tool_use", "max_tokens", "refusal"
                            ]},
                            "model": {"type": "string", "description": "The model that wrote the reply: what its tokens are priced as."},
                            "usage": {
                                "type": "object",
                                "description": "The tokens of this trip, as a provider reports them: shown per trip, per tool and priced.",
                                "additionalProperties": false,
                                "properties": {
                                    "input": {"type": "integer", "minimum": 0},
                                    "output": {"type": "integer", "minimum": 0},
                                    "cache_read": {"type": "integer", "minimum": 0},
                                    "cache_write": {"type": "integer", "minimum": 0}
                                }
                            }
                        }
                    }
                }
            }
        }
    })
}
