//! What a request body's fields say of its format, without reading it:
//! shared by the one detector (`detect`, over a `Value`) and the format
//! readers' fast path (over typed bodies), so both lean the same way.
//! A leaf: it imports no other module of the crate.

/// Top-level keys that make a body something other than a request of the
/// format tried: another provider's fields, an agent log's or a capture
/// record's. Each reader passes over its own; any other sends the line to
/// the general path, where `detect` tells them apart.
pub(crate) const OTHER_FORMATS_KEYS: &[&str] = &[
    "input",
    "contents",
    "uuid",
    "sessionId",
    "info",
    "meta",
    "functions",
    "thinking",
    "mcp_servers",
    "toolConfig",
    "inferenceConfig",
    "modelId",
    "additionalModelRequestFields",
    "loopdbg",
    "additional_tools",
    "previous_response_id",
    "conversation",
    "systemInstruction",
    "system_instruction",
    "function_declarations",
];

/// Whether a body whose messages and tools say nothing of their format
/// leans to OpenAI Chat: it has no `max_tokens` (which Anthropic requires)
/// and its model is not Claude, or its model is one only OpenAI-shaped
/// endpoints serve (OpenAI's own, and the open models behind
/// OpenAI-compatible ones). The readers' fast path asks the same
/// question of its typed bodies.
pub(crate) fn leans_openai(model: Option<&str>, has_max_tokens: bool) -> bool {
    const OPENAI_SHAPED: [&str; 12] = [
        "gpt-", "o1", "o3", "o4", "chatgpt", "llama", "gemini-", "gemma", "mistral", "mixtral",
        "qwen", "deepseek",
    ];
    let model = model.map(str::to_ascii_lowercase);
    match model.as_deref() {
        Some(m) if m.contains("claude") => false,
        _ if !has_max_tokens => true,
        Some(m) => {
            let name = m.rsplit('/').next().unwrap_or(m);
            OPENAI_SHAPED.iter().any(|p| name.starts_with(p))
        }
        None => false,
    }
}
