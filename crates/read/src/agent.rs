//! The agents whose stores loopdbg reads: one table, one row an agent.
//!
//! A row says what the agent is called (in reports, in `--format`, in
//! JSON), which provider's rules judge what it sends, whether its store is
//! a log of events, whether the doctor repairs it, and what the agent
//! does to its stored history before it sends it (its *send model*, with
//! the source it was read from). Every place that names an agent takes
//! the name from here; a `match` on [`Agent`] elsewhere is exhaustive, so
//! an agent added here is a compile error wherever it still needs a
//! decision (the readers, where its sessions are kept, the doctor's
//! repair). ARCHITECTURE.md says how to add one.

use loopdbg_formats::provider::Format;

/// An agent whose sessions loopdbg reads.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Agent {
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// OpenAI's Codex CLI.
    Codex,
    /// Google's Gemini CLI.
    GeminiCli,
    /// GitHub Copilot CLI.
    CopilotCli,
    /// The Cline extension (and its CLI).
    Cline,
    /// The Roo Code extension.
    RooCode,
    /// The Kilo Code extension.
    KiloCode,
    /// opencode.
    Opencode,
    /// Moonshot AI's Kimi Code CLI.
    KimiCode,
    /// Charm's Crush.
    Crush,
}

/// One agent's row of [`TABLE`].
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// Whose row.
    pub agent: Agent,
    /// The name JSON and `--format` use (`claude-code`).
    pub key: &'static str,
    /// Other spellings `--format` takes.
    pub aliases: &'static [&'static str],
    /// The name its makers write (`Claude Code`).
    pub name: &'static str,
    /// What its store is, as a sentence names it (`a Claude Code log`).
    pub store: &'static str,
    /// The provider whose rules judge what it sends.
    pub provider: Format,
    /// Whether its store is a log of events, read whole as JSON Lines.
    pub log: bool,
    /// Whether its store is the provider's own message list (a task
    /// history): its content is read as that provider's, and cannot tell
    /// which extension kept it, so `--format` and the scan may say.
    pub plain: bool,
    /// Whether the doctor repairs its store (the others' sessions are
    /// checked and named, not changed).
    pub repaired: bool,
    /// What it does to its stored history before it sends it, and where
    /// that was read. The readers and the check apply it (see each
    /// agent's reader); this is what the docs and `--explain` say.
    pub sends: &'static str,
}

/// Every agent, in the order the scan reads their stores.
pub const TABLE: [Row; 10] = [
    Row {
        agent: Agent::ClaudeCode,
        key: "claude-code",
        aliases: &["claude_code"],
        name: "Claude Code",
        store: "a Claude Code log",
        provider: Format::Anthropic,
        log: true,
        plain: false,
        repaired: true,
        sends: "the live chain from the newest leaf, parallel siblings recovered; recent builds repair pairing as a last resort before each request (`ensureToolResultPairing` in src/utils/messages.ts, which it logs), so a finding in its log stands as a 400 only while nothing in the log contradicts it (a reply to a later request that carried it)",
    },
    Row {
        agent: Agent::Codex,
        key: "codex",
        aliases: &["codex-cli"],
        name: "Codex",
        store: "a Codex CLI rollout",
        provider: Format::Responses,
        log: true,
        plain: false,
        repaired: true,
        sends: "fills an `aborted` output for every call without one and drops every output whose call is gone, before each request (codex-rs `normalize_history`)",
    },
    Row {
        agent: Agent::GeminiCli,
        key: "gemini-cli",
        aliases: &["gemini_cli"],
        name: "Gemini CLI",
        store: "a Gemini CLI chat recording",
        provider: Format::Gemini,
        log: true,
        plain: false,
        repaired: true,
        sends: "on resume, the folded records as they stand: each model record's calls, then every part of each call's `result`, then every user record (its response records too), neighbouring turns of one role joined (packages/core/src/utils/sessionUtils.ts `convertSessionToClientHistory`, geminiChat.ts `coalesceConsecutiveRoles`); no pairing repair",
    },
    Row {
        agent: Agent::CopilotCli,
        key: "copilot-cli",
        aliases: &["copilot_cli", "copilot"],
        name: "Copilot CLI",
        store: "a GitHub Copilot CLI session log",
        provider: Format::Openai,
        log: true,
        plain: false,
        repaired: false,
        sends: "the Chat Completions history rebuilt from its events, validated before each request",
    },
    Row {
        agent: Agent::Cline,
        key: "cline",
        aliases: &[],
        name: "Cline",
        store: "a Cline task history",
        provider: Format::Anthropic,
        log: false,
        plain: true,
        repaired: false,
        sends: "the task's `api_conversation_history.json` with, before every request, each call's results moved to the front of the next user message in call order, a \"result missing\" result for each call without one and duplicates collapsed (ContextManager `ensureToolResultsFollowToolUse`, native tool calling, Oct 2025 - Jun 2026; the SDK build's `sanitizeInitialMessagesForSessionStart` does the same on resume); a task stopped mid-tool is resumed with \"Task was interrupted before this tool call could be completed.\" as each open call's result",
    },
    Row {
        agent: Agent::RooCode,
        key: "roo-code",
        aliases: &["roo_code", "roo"],
        name: "Roo Code",
        store: "a Roo Code task history",
        provider: Format::Anthropic,
        log: false,
        plain: true,
        repaired: false,
        sends: "the task's history without its reasoning items, the messages a condense summary replaced and those a truncation marker hides; results are paired as they are stored (`validateAndFixToolResultIds` when a user message is added); a task stopped mid-tool is resumed with \"Task was interrupted before this tool call could be completed.\"",
    },
    Row {
        agent: Agent::KiloCode,
        key: "kilo-code",
        aliases: &["kilo_code", "kilo"],
        name: "Kilo Code",
        store: "a Kilo Code task history",
        provider: Format::Anthropic,
        log: false,
        plain: true,
        repaired: false,
        sends: "as Roo Code, whose fork it is",
    },
    Row {
        agent: Agent::Opencode,
        key: "opencode",
        aliases: &[],
        name: "opencode",
        store: "an opencode session export",
        // opencode sends each call's result right after it, whatever the
        // provider; Chat's rules say the same of that shape.
        provider: Format::Openai,
        log: false,
        plain: false,
        repaired: false,
        sends: "each call's result right after it (`toModelMessages`); a part still `pending` or `running` is sent with the error \"[Tool execution was interrupted]\"",
    },
    Row {
        agent: Agent::KimiCode,
        key: "kimi-code",
        aliases: &["kimi_code", "kimi", "kimi-cli"],
        name: "Kimi Code",
        store: "a Kimi Code context file",
        // Moonshot's API, and the others kosong speaks to, in Chat
        // Completions' shape.
        provider: Format::Openai,
        log: true,
        plain: false,
        repaired: true,
        sends: "the context file's messages as they stand (its `_system_prompt`, `_checkpoint` and `_usage` records aside), neighbouring user messages joined (src/kimi_cli/soul/dynamic_injection.py `normalize_history`); no pairing repair. A step's reply and its tool results are appended together after the tools end (kimisoul.py `_grow_context`), so only a process killed between the two leaves calls open",
    },
    Row {
        agent: Agent::Crush,
        key: "crush",
        aliases: &[],
        name: "Crush",
        store: "a Crush session",
        // Crush speaks to each provider through charm.land/fantasy, a
        // call's results in a `tool` message after it: Chat's rules.
        provider: Format::Openai,
        log: false,
        plain: false,
        repaired: false,
        sends: "the session's messages from its summary on, with each result whose call is gone dropped (since v0.57.0) and, right after each assistant message, the error \"tool call was interrupted and did not produce a result, …\" for each of its calls no `tool` message answers (since v0.59.0; internal/agent/agent.go `preparePrompt`, `filterOrphanedToolResults`, `syntheticToolResultsForOrphanedCalls`); older builds sent the stored messages as they stand",
    },
];
impl Agent {
    /// Every agent, in the order of [`TABLE`].
    pub const ALL: [Agent; 10] = {
        let mut all = [Agent::ClaudeCode; 10];
        let mut i = 0;
        while i < TABLE.len() {
            all[i] = TABLE[i].agent;
            i += 1;
        }
        all
    };

    /// Its row of [`TABLE`].
    pub fn row(self) -> &'static Row {
        // The table is in the enum's order (a test holds it).
        &TABLE[self as usize]
    }

    /// The name JSON and `--format` use (`claude-code`).
    pub fn key(self) -> &'static str {
        self.row().key
    }

    /// The name its makers write (`Claude Code`).
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// The provider whose rules judge what it sends.
    pub fn provider(self) -> Format {
        self.row().provider
    }

    /// Whether the doctor repairs its store.
    pub fn repaired(self) -> bool {
        self.row().repaired
    }

    /// The agent `--format` names by `key` or an alias.
    pub fn named(name: &str) -> Option<Agent> {
        TABLE
            .iter()
            .find(|r| r.key == name || r.aliases.contains(&name))
            .map(|r| r.agent)
    }

    /// The names of every agent the doctor repairs, joined for a sentence.
    pub fn repaired_names() -> String {
        let names: Vec<&str> = TABLE
            .iter()
            .filter(|r| r.repaired)
            .map(|r| r.name)
            .collect();
        match names.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => String::new(),
        }
    }
}

impl std::fmt::Display for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_the_enums_order_and_every_name_is_its_own() {
        for (i, row) in TABLE.iter().enumerate() {
            assert_eq!(row.agent as usize, i, "{} out of place", row.key);
            assert_eq!(Agent::named(row.key), Some(row.agent));
            for alias in row.aliases {
                assert_eq!(Agent::named(alias), Some(row.agent));
            }
            assert_eq!(
                serde_json::to_value(row.agent).unwrap(),
                serde_json::Value::from(row.key)
            );
        }
        let mut keys: Vec<&str> = TABLE
            .iter()
            .flat_map(|r| std::iter::once(r.key).chain(r.aliases.iter().copied()))
            .collect();
        let n = keys.len();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), n, "a name given to two agents");
        assert_eq!(
            Agent::repaired_names(),
            "Claude Code, Codex, Gemini CLI and Kimi Code"
        );
    }
}
