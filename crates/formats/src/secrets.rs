//! Credentials kept out of everything loopdbg records or prints, however
//! they are spelled: the request's own key values wherever they turn up
//! (an upstream's 404 that repeats the URL, a body that carries them), and
//! strings shaped like the keys providers and code hosts issue.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// What a masked credential reads as.
pub const MASK: &str = "[secret]";

/// Strings shaped like credentials: provider API keys (`sk-…`,
/// `sk-ant-…`, `sk-proj-…`, `AIza…`), payment keys (`sk_live_…`,
/// `rk_test_…`), code hosts' tokens (`ghp_…`, `github_pat_…`, `hf_…`),
/// Slack and AWS keys, bearer and basic credentials, JWTs and
/// `password=` pairs.
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a constant pattern, compiled by every test that masks"
)]
static SHAPES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?:sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}",
        r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}",
        r"|AIza[0-9A-Za-z_\-]{30,}",
        r"|github_pat_[A-Za-z0-9_]{20,}",
        r"|gh[pousr]_[A-Za-z0-9]{20,}",
        r"|hf_[A-Za-z0-9]{20,}",
        r"|xox[abpr]-[A-Za-z0-9\-]{10,}",
        r"|AKIA[0-9A-Z]{16}",
        r"|(?i:bearer|basic)\s+[A-Za-z0-9+/=._\-]{12,}",
        r"|eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
        r"|(?i:password|passwd|pwd)=[^&\s;]+)"
    ))
    .expect("a valid pattern")
});

/// `text` with every credential-shaped string masked.
pub fn mask_shapes(text: &str) -> Cow<'_, str> {
    SHAPES.replace_all(text, MASK)
}

/// The credential values one request carried, to be masked wherever they
/// appear in what is recorded about it.
#[derive(Debug, Clone, Default)]
pub struct Known(Vec<String>);

/// Headers that carry a credential, by lower-case name.
const SECRET_HEADERS: [&str; 7] = [
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "openai-api-key",
    "cookie",
];

impl Known {
    /// The values of `headers` (lower-case name, value) that carry
    /// credentials, and of the query's credential parameters (as
    /// [`crate::route::redacted_path`] judges them). A `Bearer`/`Basic`
    /// scheme is dropped so the bare token is found too. Values shorter
    /// than 8 characters are not kept: masking `key=1` everywhere would
    /// mask every `1`.
    pub fn of_request<'a>(
        headers: impl Iterator<Item = (&'a str, &'a str)>,
        path_and_query: &str,
    ) -> Known {
        let mut values = Vec::new();
        for (name, value) in headers {
            if !SECRET_HEADERS.contains(&name) {
                continue;
            }
            let value = value.trim();
            values.push(value.to_string());
            if let Some((_, token)) = value.split_once(' ') {
                values.push(token.trim().to_string());
            }
        }
        if let Some((_, query)) = path_and_query.split_once('?') {
            for pair in query.split(['&', ';']) {
                if !crate::route::is_secret_param(pair) {
                    continue;
                }
                if let Some((_, value)) = form_urlencoded::parse(pair.as_bytes()).next() {
                    values.push(value.into_owned());
                }
                if let Some((_, raw)) = pair.split_once('=') {
                    values.push(raw.to_string());
                }
            }
        }
        values.retain(|v| v.chars().count() >= 8);
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Known(values)
    }

    /// `text` with the known values and every credential shape masked.
    pub fn mask<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out: Cow<'t, str> = Cow::Borrowed(text);
        for value in &self.0 {
            if out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), MASK));
            }
        }
        match mask_shapes(&out) {
            Cow::Borrowed(_) => out,
            Cow::Owned(masked) => Cow::Owned(masked),
        }
    }

    /// Every string of `v`, keys included, masked.
    pub fn mask_value(&self, v: &mut Value) {
        match v {
            Value::String(s) => {
                if let Cow::Owned(masked) = self.mask(s) {
                    *s = masked;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| self.mask_value(i)),
            Value::Object(map) => {
                let needs = map.keys().any(|k| matches!(self.mask(k), Cow::Owned(_)));
                if needs {
                    let old = std::mem::take(map);
                    for (k, item) in old {
                        map.insert(self.mask(&k).into_owned(), item);
                    }
                }
                map.values_mut().for_each(|i| self.mask_value(i));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_is_masked_and_ordinary_text_is_not() {
        for key in [
            "sk-ant-api03-abcdefghijklmnopqrstuv",
            "sk-proj-abcdefghijklmnopqrstuv",
            "sk_live_abcdefghij0123",
            "rk_test_abcdefghij0123",
            "AIzaSyA-abcdefghijklmnopqrstuvwxyz0123",
            "github_pat_11ABCDEFG0123456789_abcdefghij",
            "ghp_abcdefghijklmnopqrstuvwxyz",
            "hf_abcdefghijklmnopqrstuvwxyz",
            "Bearer abcdefghijklmnopqrstu",
            "Basic dXNlcjpwYXNzd29yZDEyMw==",
            "password=hunter2hunter2",
        ] {
            let text = format!("before {key} after");
            assert_eq!(mask_shapes(&text), "before [secret] after", "{key}");
        }
        let plain = "北京 18°C, call_w1, toolu_f1, sk-short, basic idea";
        assert!(matches!(mask_shapes(plain), Cow::Borrowed(_)));
    }

    #[test]
    fn a_requests_own_key_is_masked_wherever_it_appears() {
        let headers = [
            ("api-key", "0123456789abcdef0123456789abcdef"),
            ("authorization", "Bearer plain-token-no-shape-42"),
            ("content-type", "application/json"),
        ];
        let known = Known::of_request(
            headers.iter().copied(),
            "/v1/x?k%65y=query-secret-value&Api-Key=azure-query-value&model=m",
        );
        let mut v = serde_json::json!({
            "error": "no route for /v1/x?key=query-secret-value",
            "echo": ["0123456789abcdef0123456789abcdef", "plain-token-no-shape-42"],
            "azure-query-value": "as a key too",
            "model": "m"
        });
        known.mask_value(&mut v);
        let text = v.to_string();
        for secret in [
            "query-secret-value",
            "0123456789abcdef",
            "plain-token",
            "azure-query-value",
        ] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(text.contains("\"model\":\"m\""));
    }
}
