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
/// `sk-ant-…`, `sk-proj-…`, `AIza…`, xAI's `xai-…`, Groq's `gsk_…`,
/// Perplexity's `pplx-…`, Replicate's `r8_…`, Google OAuth's `ya29.…`),
/// payment keys (`sk_live_…`, `rk_test_…`), code hosts' and registries'
/// tokens (`ghp_…`, `github_pat_…`, `glpat-…`, `hf_…`, `npm_…`), Slack and
/// AWS keys (an access key id, a secret access key where it is named),
/// PEM private keys, bearer and basic credentials, JWTs, a password in a
/// URL's user info, `password=` pairs, environment assignments of keys
/// (`ANTHROPIC_API_KEY=…`) and JSON members named for a secret
/// (`"api_key": "…"`).
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
        // Long-lived (AKIA) and temporary (ASIA) access keys, and the
        // other prefixes AWS issues (gitleaks' aws-access-token).
        r"|(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?-u:\b)",
        r"|xai-[A-Za-z0-9]{20,}",
        r"|gsk_[A-Za-z0-9]{20,}",
        r"|pplx-[A-Za-z0-9]{20,}",
        r"|r8_[A-Za-z0-9]{20,}",
        r"|glpat-[A-Za-z0-9_\-]{20,}",
        r"|npm_[A-Za-z0-9]{30,}",
        r"|ya29\.[A-Za-z0-9_\-]{20,}",
        r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
        // A key cut before its END line (a truncated tool result): its
        // base64 lines, their breaks raw or a JSON string's escapes (once
        // or more: a message's JSON inside a span attribute's string).
        r"|-----BEGIN [A-Z ]*PRIVATE KEY-----(?:[A-Za-z0-9+/=]|\\+[nr]|[\r\n])*",
        r"|(?i:aws_?secret_?access_?key|secretaccesskey)[\x22'\s:=\\]+[A-Za-z0-9/+=]{40}",
        r"|(?i:[a-z][a-z0-9+.\-]*)://[^/\s:@\x22']+:[^@\s/\x22']+@",
        // `KEY=value`, `KEY="value"` (a shell's or a .env file's quotes,
        // raw or escaped in JSON).
        r#"|[A-Z][A-Z0-9_]*(?:API_KEY|SECRET|TOKEN|PASSWORD)[A-Z0-9_]*=(?:\\?"[^\s"\\]{8,}\\?"|'[^\s']{8,}'|[^\s"'\\&;]{8,})"#,
        r#"|\\?"(?i:api[_-]?key|apikey|access[_-]?token|refresh[_-]?token|client[_-]?secret|secret[_-]?key|private[_-]?key|auth[_-]?token|password)\\?"\s*:\s*\\?"[^"\\]{8,}\\?""#,
        r"|(?i:bearer|basic)\s+[A-Za-z0-9+/=._\-]{12,}",
        r"|eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
        r"|(?i:password|passwd|pwd)=[^&\s;]+",
        // `db_password: hunter2`, `secret = …` in YAML, INI or prose.
        r#"|(?i:[a-z_]*(?:password|passwd|secret))\s*(?::\s+|\s*=\s*)[^\s&;,"'\\]{4,})"#
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

/// Headers that carry a credential, by lower-case name: providers' keys,
/// Azure API Management's, gateways' (Portkey), AWS's session token.
const SECRET_HEADERS: [&str; 11] = [
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "openai-api-key",
    "cookie",
    "ocp-apim-subscription-key",
    "x-amz-security-token",
    "x-auth-token",
    "x-portkey-api-key",
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
                for (k, item) in map.iter_mut() {
                    // A member named for a secret is one, whatever its shape.
                    match item {
                        Value::String(s) if is_secret_member(k) && s.chars().count() >= 8 => {
                            *s = MASK.to_string();
                        }
                        _ => self.mask_value(item),
                    }
                }
            }
            _ => {}
        }
    }
}

/// Whether a JSON member's name says its value is a secret (`api_key`,
/// `clientSecret`, `password`, …), case and `-`/`_` aside.
fn is_secret_member(name: &str) -> bool {
    let folded: String = name
        .chars()
        .filter(|c| !matches!(c, '-' | '_'))
        .flat_map(char::to_lowercase)
        .collect();
    matches!(
        folded.as_str(),
        "apikey"
            | "xapikey"
            | "accesstoken"
            | "refreshtoken"
            | "clientsecret"
            | "secretkey"
            | "secretaccesskey"
            | "privatekey"
            | "authtoken"
            | "password"
            | "passwd"
    )
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
            "xai-abcdefghijklmnopqrstuvwxyz",
            "gsk_abcdefghijklmnopqrstuvwxyz",
            "pplx-abcdefghijklmnopqrstuvwxyz",
            "r8_abcdefghijklmnopqrstuvwxyz",
            "glpat-abcdefghijklmnopqrst",
            "npm_abcdefghijklmnopqrstuvwxyz0123456789",
            "ya29.a0AfH6SMabcdefghijklmnop",
            "-----BEGIN RSA PRIVATE KEY-----\\nMIIEow\\n-----END RSA PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----",
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "ANTHROPIC_API_KEY=notshapedbutnamed123",
            r#""api_key": "plain-value-1234""#,
            r#"\"client_secret\":\"plain-value-1234\""#,
            // Issue 59's survivors.
            "ASIAY34FZKBOKMUTVV7A",
            "-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\\nAAAAMwAAAAtzc2gtZW",
            "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk\nAoGCCqGSM49",
            r"-----BEGIN EC PRIVATE KEY-----\\nMHcCAQEEIBkg4LVWM9nuwNSk\\nAoGC",
            r#"OPENAI_API_KEY="sk-notshaped-but-quoted""#,
            r#"DB_PASSWORD=\"quoted-in-json-1\""#,
            "HTTPS://admin:Pa55word@",
            "db_password: hunter2",
            "db_password = hunter2",
        ] {
            let text = format!("before {key} after");
            assert_eq!(mask_shapes(&text), "before [secret] after", "{key}");
        }
        // A URL keeps its host; its user info goes.
        assert_eq!(
            mask_shapes("dsn postgres://app:s3cr3t-pass@db.internal:5432/x"),
            "dsn [secret]db.internal:5432/x"
        );
        // An access key beside text in another script is still one: the
        // boundary is ASCII's (Unicode's put the lazy DFA out of reach on
        // any non-ASCII text, and the backtracker took 82 % of a gateway's
        // CPU on a Chinese conversation).
        assert_eq!(mask_shapes("键AKIAIOSFODNN7EXAMPLE。"), "键[secret]。");
        assert_eq!(
            mask_shapes("XAKIAIOSFODNN7EXAMPLE"),
            "XAKIAIOSFODNN7EXAMPLE"
        );
        let plain = "北京 18°C, call_w1, toolu_f1, sk-short, basic idea, \"max_tokens\": 1024, \"token\": \"count\", https://example.com/a, TOKEN_LIMIT=8";
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

    #[test]
    fn a_member_named_for_a_secret_is_masked_whatever_its_value() {
        let mut v = serde_json::json!({
            "input": {"api_key": "plain-value-1234", "clientSecret": "another-plain-1",
                "password": "short", "max_tokens": 1024, "city": "北京"},
            "schema": {"api_key": {"type": "string"}}
        });
        Known::default().mask_value(&mut v);
        let text = v.to_string();
        assert!(
            !text.contains("plain-value") && !text.contains("another-plain"),
            "{text}"
        );
        assert!(
            text.contains("\"password\":\"short\""),
            "under 8 characters stays: {text}"
        );
        assert!(
            text.contains("\"type\":\"string\"") && text.contains("北京"),
            "{text}"
        );
    }
}
