//! The loop's strategy as plain data: how calls are taken from a reply, when
//! the loop stops, how many rounds it may take and which stub behavior
//! replies. Everything the TUI toggles lives here, so a toggle is a new value
//! and a re-run, never a mutation of the engine.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The largest `max_rounds` a session or flag may ask for.
pub const MAX_ROUNDS_LIMIT: u32 = 100_000;

/// An interrupt at virtual time `at_ms` of round `round`'s execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interrupt {
    /// 1-based round.
    pub round: u32,
    /// Milliseconds after the round's calls started.
    #[serde(default)]
    pub at_ms: u64,
}

/// How the loop takes tool calls from a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Extract {
    /// `content.find(b => b.type === 'tool_use')`: only the first call.
    First,
    /// `content.filter(...)`: every call.
    All,
}

/// When the loop stops (seed 001).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopRule {
    /// Non-empty reply text ends the loop.
    Content,
    /// `finish_reason == "stop"` ends the loop.
    #[serde(alias = "finish_reason")]
    FinishReason,
    /// A reply without tool calls ends the loop.
    #[serde(alias = "tool_calls")]
    ToolCalls,
    /// Seed 001's recommended loop: `length` / `content_filter` are errors
    /// before anything runs, no calls ends it, running out of rounds is an error.
    Robust,
}

impl Extract {
    /// Both values, in toggle order.
    pub const ALL: [Extract; 2] = [Extract::First, Extract::All];

    /// The flag spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Extract::First => "first",
            Extract::All => "all",
        }
    }

    /// The other value.
    pub fn toggled(self) -> Extract {
        match self {
            Extract::First => Extract::All,
            Extract::All => Extract::First,
        }
    }
}

impl StopRule {
    /// Every rule, in cycle order.
    pub const ALL: [StopRule; 4] = [
        StopRule::Content,
        StopRule::FinishReason,
        StopRule::ToolCalls,
        StopRule::Robust,
    ];

    /// The flag spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            StopRule::Content => "content",
            StopRule::FinishReason => "finish-reason",
            StopRule::ToolCalls => "tool-calls",
            StopRule::Robust => "robust",
        }
    }

    /// The next rule in cycle order.
    pub fn next(self) -> StopRule {
        let i = StopRule::ALL.iter().position(|r| *r == self).unwrap_or(0);
        StopRule::ALL[(i + 1) % StopRule::ALL.len()]
    }
}

macro_rules! display_and_parse {
    ($ty:ty, $what:literal) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                let normalized = s.replace('_', "-");
                <$ty>::ALL
                    .into_iter()
                    .find(|v| v.as_str() == normalized)
                    .ok_or_else(|| {
                        let names: Vec<_> = <$ty>::ALL.iter().map(|v| v.as_str()).collect();
                        format!(
                            "unknown {} `{s}` (expected one of: {})",
                            $what,
                            names.join(", ")
                        )
                    })
            }
        }
    };
}

display_and_parse!(Extract, "extraction");
display_and_parse!(StopRule, "stop rule");

/// What happens to calls left without a result (dropped by extraction,
/// cancelled, interrupted, discarded) before the next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Closure {
    /// Careless: they stay dangling (the next request gets a 400).
    Leave,
    /// A placeholder error result for each, as Claude Code does.
    Synthesize,
    /// Their tool_use blocks are removed before the history is sent.
    Strip,
}

impl Closure {
    /// Every policy, in cycle order.
    pub const ALL: [Closure; 3] = [Closure::Leave, Closure::Synthesize, Closure::Strip];

    /// The flag spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Closure::Leave => "leave",
            Closure::Synthesize => "synthesize",
            Closure::Strip => "strip",
        }
    }

    /// The next policy in cycle order.
    pub fn next(self) -> Closure {
        let i = Closure::ALL.iter().position(|c| *c == self).unwrap_or(0);
        Closure::ALL[(i + 1) % Closure::ALL.len()]
    }
}

display_and_parse!(Closure, "closure policy");

/// A complete strategy: what one run of the engine uses.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Strategy {
    /// How calls are taken.
    pub extract: Extract,
    /// When the loop stops.
    pub stop: StopRule,
    /// The round limit (model calls).
    pub max_rounds: u32,
    /// The stub behavior that replies.
    pub behavior: String,
    /// What happens to calls left without a result.
    #[serde(default = "default_closure")]
    pub closure: Closure,
    /// An interrupt the user causes (from the session's faults, or `x`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupt: Option<Interrupt>,
}

fn default_closure() -> Closure {
    Closure::Leave
}

/// Used when neither the session nor a flag sets it.
pub const DEFAULT_MAX_ROUNDS: u32 = 8;

impl Strategy {
    /// A one-line label: `all / robust / complete / 6 rounds`.
    pub fn label(&self) -> String {
        format!(
            "{} / {} / {} / {} rounds / closure {}",
            self.extract, self.stop, self.behavior, self.max_rounds, self.closure
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_both_spellings() {
        assert_eq!(
            "finish_reason".parse::<StopRule>(),
            Ok(StopRule::FinishReason)
        );
        assert_eq!("tool-calls".parse::<StopRule>(), Ok(StopRule::ToolCalls));
        assert!(
            "nope"
                .parse::<Extract>()
                .unwrap_err()
                .contains("first, all")
        );
    }

    #[test]
    fn stop_rule_cycles_through_all() {
        let mut r = StopRule::Content;
        for _ in 0..4 {
            r = r.next();
        }
        assert_eq!(r, StopRule::Content);
    }
}
