//! What tokens cost: a price table kept as data (`data/prices.json`, with
//! the date its prices are from), which the user can replace
//! (`--prices FILE`). A model is priced by the longest name in the table
//! that its own name starts with (`claude-sonnet-4-5-20250929` by
//! `claude-sonnet-4-5`), after a provider prefix (`anthropic/`,
//! `models/`) is taken off. A model the table does not name has tokens
//! and no cost: never a guessed price.

use indexmap::IndexMap;
use loopdbg_engine::message::Usage;
use serde::Deserialize;

/// The table shipped with loopdbg.
pub const BUILTIN: &str = include_str!("../data/prices.json");

/// A price table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// The date the prices are from.
    pub as_of: String,
    /// The currency (`USD`).
    pub currency: String,
    /// How many tokens a price is for (1,000,000).
    pub per: f64,
    /// Where the prices come from and what they leave out.
    #[serde(default)]
    pub note: String,
    /// Prices by model name (a prefix of the names the providers report).
    pub models: IndexMap<String, Price>,
}

/// One model's prices, per [`Prices::per`] tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Prompt tokens at the full rate.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Prompt tokens read from the cache (the input price when absent).
    #[serde(default)]
    pub cache_read: Option<f64>,
    /// Prompt tokens written to the cache (the input price when absent).
    #[serde(default)]
    pub cache_write: Option<f64>,
}

/// Why a price table could not be read: where, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PricesError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl Prices {
    /// The table shipped with loopdbg.
    #[allow(
        clippy::unwrap_used,
        clippy::expect_used,
        reason = "the shipped table is a constant, parsed by a test"
    )]
    pub fn builtin() -> Prices {
        Prices::parse(BUILTIN).expect("the shipped price table parses")
    }

    /// A table from its JSON text.
    pub fn parse(text: &str) -> Result<Prices, PricesError> {
        let prices: Prices = serde_json::from_str(text).map_err(|e| PricesError {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        let negative = prices.models.iter().find(|(_, p)| {
            [Some(p.input), Some(p.output), p.cache_read, p.cache_write]
                .into_iter()
                .flatten()
                .any(|v| !v.is_finite() || v < 0.0)
        });
        if let Some((name, _)) = negative {
            return Err(PricesError {
                line: text
                    .lines()
                    .position(|l| l.contains(&format!("\"{name}\"")))
                    .map_or(1, |l| l + 1),
                column: 1,
                message: format!("the prices of `{name}` must be numbers of at least 0"),
            });
        }
        if !(prices.per.is_finite() && prices.per > 0.0) {
            return Err(PricesError {
                line: 1,
                column: 1,
                message: "`per` must be a number of tokens above 0".into(),
            });
        }
        Ok(prices)
    }

    /// The table's name for `model` and its price, when the table has one.
    pub fn of(&self, model: &str) -> Option<(&str, &Price)> {
        let bare = model.rsplit('/').next().unwrap_or(model);
        self.models
            .iter()
            .filter(|(name, _)| bare.starts_with(name.as_str()))
            .max_by_key(|(name, _)| name.len())
            .map(|(name, price)| (name.as_str(), price))
    }

    /// What `usage` cost on `model`, when the table prices it.
    pub fn cost(&self, model: &str, usage: &Usage) -> Option<f64> {
        let (_, p) = self.of(model)?;
        Some(self.cost_at(p, usage))
    }

    /// What `usage` cost at `price` (one of this table's).
    pub fn cost_at(&self, price: &Price, usage: &Usage) -> f64 {
        let tokens = |n: u64, rate: f64| n as f64 * rate / self.per;
        tokens(usage.input, price.input)
            + tokens(usage.output, price.output)
            + tokens(usage.cache_read, price.cache_read.unwrap_or(price.input))
            + tokens(usage.cache_write, price.cache_write.unwrap_or(price.input))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_is_priced_by_the_longest_name_it_starts_with() {
        let prices = Prices::builtin();
        assert_eq!(
            prices.of("claude-sonnet-4-5-20250929").unwrap().0,
            "claude-sonnet-4-5"
        );
        assert_eq!(
            prices.of("claude-sonnet-4-20250514").unwrap().0,
            "claude-sonnet-4"
        );
        assert_eq!(prices.of("gpt-5-mini-2025-08-07").unwrap().0, "gpt-5-mini");
        assert_eq!(
            prices.of("models/gemini-2.5-flash-lite").unwrap().0,
            "gemini-2.5-flash-lite"
        );
        assert_eq!(
            prices.of("anthropic/claude-haiku-4-5").unwrap().0,
            "claude-haiku-4-5"
        );
        assert!(prices.of("my-local-llama").is_none());
    }

    #[test]
    fn cost_adds_each_kind_of_token_at_its_own_price() {
        let prices = Prices::builtin();
        let usage = Usage {
            input: 1_000_000,
            output: 100_000,
            cache_read: 2_000_000,
            cache_write: 0,
        };
        let cost = prices.cost("claude-sonnet-4-5", &usage).unwrap();
        assert!((cost - (3.0 + 1.5 + 0.6)).abs() < 1e-9, "{cost}");
        assert_eq!(prices.cost("unknown-model", &usage), None);
    }

    #[test]
    fn a_bad_table_says_where() {
        let e = Prices::parse("{\"as_of\": \"x\",\n \"currency\": 3}").unwrap_err();
        assert_eq!(e.line, 2);
        let e = Prices::parse(
            r#"{"as_of":"x","currency":"USD","per":1,"models":{"m":{"input":-1,"output":1}}}"#,
        )
        .unwrap_err();
        assert!(e.message.contains("`m`"), "{}", e.message);
    }
}
