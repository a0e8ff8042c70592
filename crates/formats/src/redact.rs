//! Personal data masked before a session is shared (`--redact`): the same
//! value becomes the same placeholder everywhere in one output
//! (`[email-1]` twice is one address), so the redacted handout or session
//! still reads as the run it was, and a count says what was masked. Ids,
//! tool names and numbers that are not personal data are kept: a redacted
//! handout still teaches.
//!
//! Credentials are masked first, as everything loopdbg writes masks them
//! ([`crate::secrets`]); then e-mail addresses, phone numbers, IP addresses
//! (loopback kept; IPv6 in full or shortened), payment card numbers
//! (their Luhn sum checked), US social security numbers, home folders
//! (the user name in them), host names in URLs and outside them (three
//! labels or more, or a name on an organisation's own domain such as
//! `.internal`, `.corp`; the providers' hosts and the bare documentation
//! domains kept), and any pattern the user adds.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// What a placeholder stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum What {
    /// A credential (masked as `[secret]`, as in captures).
    Secret,
    /// An e-mail address.
    Email,
    /// A phone number.
    Phone,
    /// An IP address.
    Ip,
    /// A user name, from a home folder.
    User,
    /// A host name, in a URL or named outside one.
    Host,
    /// A payment card number (its Luhn sum holds).
    Card,
    /// A national identity number (a US social security number).
    Id,
    /// A pattern the user gave.
    Pattern,
}

impl What {
    fn word(self) -> &'static str {
        match self {
            What::Secret => "secret",
            What::Email => "email",
            What::Phone => "phone",
            What::Ip => "ip",
            What::User => "user",
            What::Host => "host",
            What::Card => "card",
            What::Id => "id",
            What::Pattern => "redacted",
        }
    }
}

macro_rules! pattern {
    ($name:ident, $re:expr) => {
        #[allow(
            clippy::unwrap_used,
            clippy::expect_used,
            reason = "a constant pattern, compiled by the tests"
        )]
        static $name: LazyLock<Regex> = LazyLock::new(|| Regex::new($re).expect("a valid pattern"));
    };
}

pattern!(EMAIL, r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}");
// International (+CC …) or North American ((555) 123-4567, 555-123-4567)
// forms: a bare run of digits is a number, not a phone.
pattern!(
    PHONE,
    r"\+\d{1,3}[\s.\-]?\(?\d{1,4}\)?(?:[\s.\-]?\d{2,4}){2,4}|\(\d{3}\)\s?\d{3}-\d{4}|(?-u:\b)\d{3}-\d{3}-\d{4}(?-u:\b)"
);
pattern!(
    IPV4,
    r"(?-u:\b)(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}(?-u:\b)"
);
pattern!(
    IPV6,
    r"(?-u:\b)(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}(?-u:\b)"
);
// The user name of a home folder: `/home/NAME`, `/Users/NAME`,
// `C:\Users\NAME` (a JSON text may carry its backslashes doubled).
pattern!(
    HOME,
    r"(/home/|/Users/|[A-Za-z]:\\{1,2}Users\\{1,2})([^/\\\s\x22']+)"
);
pattern!(
    URL_HOST,
    r"(?-u:\b)([a-z][a-z0-9+.\-]*://)([A-Za-z0-9.\-]+)"
);
// Addresses in IPv6's shortened form (`fe80::1`, `2001:db8::8a2e:370:7334`):
// a `::` with hexadecimal groups on either side.
pattern!(
    IPV6_SHORT,
    r"(?i)(?:(?-u:\b)[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,6})?::(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,6}(?-u:\b))?"
);
// A host named outside a URL (`ssh db7.corp.example.com`): three labels
// or more under a top-level domain, or two under one only an
// organisation's own network uses. File names (`notes.txt`,
// `config.prod.yaml`) end in no such domain.
pattern!(
    BARE_HOST,
    r"(?i)(?-u:\b)(?:(?:[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?\.){2,}(?:com|net|org|io|dev|app|ai|co|cloud|gov|edu|mil|int|biz|info|us|uk|de|fr|jp|cn|in|au|ca|eu|ch|nl|se|es|it|br|internal|corp|local|lan|intra|intranet|private|home|arpa)|(?:[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?\.)+(?:internal|corp|local|lan|intra|intranet|private))(?-u:\b)"
);
// Card numbers, kept unless their Luhn sum holds: spaced or dashed in
// fours, or a plain run of 13–19 digits opening as the card networks'
// numbers do (3–6). A timestamp in milli-, micro- or nanoseconds opens
// with 1 this century and is no card (an OTLP span's start time was
// masked as one). US social security numbers.
pattern!(
    CARD,
    r"(?-u:\b)(?:\d{4}[ \-]\d{4}[ \-]\d{4}[ \-]\d{1,7}|[3-6]\d{12,18})(?-u:\b)"
);
pattern!(SSN, r"(?-u:\b)\d{3}-\d{2}-\d{4}(?-u:\b)");

/// Hosts kept: the providers' own (any name under them) and the
/// documentation domains themselves (`example.com`, `www.example.com`:
/// `db7.corp.example.com` names a machine, and is masked).
fn kept_host(host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    const PROVIDERS: &[&str] = &[
        "localhost",
        "anthropic.com",
        "openai.com",
        "googleapis.com",
        "amazonaws.com",
        "azure.com",
        "github.com",
        "json-schema.org",
        "schemastore.org",
    ];
    const DOCUMENTATION: &[&str] = &["example.com", "example.org", "example.net", "example.test"];
    PROVIDERS
        .iter()
        .any(|k| host == *k || host.ends_with(&format!(".{k}")))
        || DOCUMENTATION
            .iter()
            .any(|k| host == *k || host == format!("www.{k}") || host == format!("api.{k}"))
        // An address: masked (or kept, loopback) as an IP already.
        || host.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// An IPv6 match that is an address: two groups or more, a digit among
/// them (`::` is Rust's and C++'s path separator: `a::b`, `de::Error`),
/// and not loopback.
fn kept_ipv6(ip: &str) -> bool {
    ip == "::1"
        || ip.split(':').filter(|g| !g.is_empty()).count() < 2
        || !ip.chars().any(|c| c.is_ascii_digit())
}

/// A run of digits that is no card: its Luhn sum does not hold.
fn kept_card(digits: &str) -> bool {
    let digits: Vec<u32> = digits.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&digits.len()) {
        return true;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| match i % 2 {
            1 if d * 2 > 9 => d * 2 - 9,
            1 => d * 2,
            _ => d,
        })
        .sum();
    !sum.is_multiple_of(10)
}

/// Loopback and unspecified addresses say nothing about anyone.
fn kept_ip(ip: &str) -> bool {
    ip.starts_with("127.") || ip == "0.0.0.0"
}

/// Masks personal data, one placeholder per distinct value, and counts.
#[derive(Debug, Default)]
pub struct Redactor {
    seen: HashMap<(What, String), usize>,
    next: BTreeMap<What, usize>,
    masked: BTreeMap<What, usize>,
    patterns: Vec<Regex>,
}

impl Redactor {
    /// A redactor that also masks each of `patterns` (regular expressions,
    /// the user's `--redact-pattern`).
    pub fn new(patterns: &[String]) -> Result<Redactor, regex::Error> {
        Ok(Redactor {
            patterns: patterns
                .iter()
                .map(|p| Regex::new(p))
                .collect::<Result<_, _>>()?,
            ..Redactor::default()
        })
    }

    /// The placeholder of `value` as a `what`: the same each time.
    fn placeholder(&mut self, what: What, value: &str) -> String {
        *self.masked.entry(what).or_default() += 1;
        if what == What::Secret {
            return crate::secrets::MASK.to_string();
        }
        let key = (what, value.to_string());
        let n = match self.seen.get(&key) {
            Some(n) => *n,
            None => {
                let n = self.next.entry(what).or_default();
                *n += 1;
                let n = *n;
                self.seen.insert(key, n);
                n
            }
        };
        format!("[{}-{n}]", what.word())
    }

    fn replace(&mut self, text: &str, re: &Regex, what: What, keep: fn(&str) -> bool) -> String {
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for m in re.find_iter(text) {
            if keep(m.as_str()) {
                continue;
            }
            out.push_str(&text[last..m.start()]);
            out.push_str(&self.placeholder(what, m.as_str()));
            last = m.end();
        }
        out.push_str(&text[last..]);
        out
    }

    /// `text` with credentials and personal data masked.
    pub fn text(&mut self, text: &str) -> String {
        let secrets = crate::secrets::mask_shapes(text);
        let found = secrets.matches(crate::secrets::MASK).count()
            - text.matches(crate::secrets::MASK).count();
        *self.masked.entry(What::Secret).or_default() += found;
        let mut s = secrets.into_owned();
        s = self.replace(&s, &EMAIL, What::Email, |_| false);
        s = self.replace(&s, &PHONE, What::Phone, |_| false);
        s = self.replace(&s, &IPV4, What::Ip, kept_ip);
        s = self.replace(&s, &IPV6, What::Ip, |_| false);
        s = self.replace(&s, &IPV6_SHORT, What::Ip, kept_ipv6);
        s = self.replace(&s, &CARD, What::Card, kept_card);
        s = self.replace(&s, &SSN, What::Id, |_| false);
        s = self.second_group(&s, &HOME, What::User, |_| false);
        s = self.second_group(&s, &URL_HOST, What::Host, kept_host);
        s = self.replace(&s, &BARE_HOST, What::Host, kept_host);
        for i in 0..self.patterns.len() {
            let re = self.patterns[i].clone();
            s = self.replace(&s, &re, What::Pattern, |_| false);
        }
        s
    }

    /// `re`'s second group masked as a `what`, its first kept: a home
    /// folder keeps its shape (`/home/[user-1]`), a URL its scheme
    /// (`https://[host-1]`); a value `keep` says is not personal stays.
    fn second_group(
        &mut self,
        text: &str,
        re: &Regex,
        what: What,
        keep: fn(&str) -> bool,
    ) -> String {
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for c in re.captures_iter(text) {
            let (Some(whole), Some(kept), Some(value)) = (c.get(0), c.get(1), c.get(2)) else {
                continue;
            };
            if keep(value.as_str()) {
                continue;
            }
            out.push_str(&text[last..whole.start()]);
            out.push_str(kept.as_str());
            out.push_str(&self.placeholder(what, value.as_str()));
            last = whole.end();
        }
        out.push_str(&text[last..]);
        out
    }

    /// Every string of `v`, keys included, masked.
    pub fn value(&mut self, v: &mut Value) {
        match v {
            Value::String(s) => *s = self.text(s),
            Value::Array(items) => items.iter_mut().for_each(|i| self.value(i)),
            Value::Object(map) => {
                let old = std::mem::take(map);
                for (k, mut item) in old {
                    self.value(&mut item);
                    map.insert(self.text(&k), item);
                }
            }
            _ => {}
        }
    }

    /// What was masked, e.g. `2 email(s), 1 user(s)`; empty when nothing.
    pub fn counts(&self) -> String {
        self.masked
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(what, n)| format!("{n} {}(s)", what.word()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_value_is_the_same_placeholder() {
        let mut r = Redactor::new(&[]).unwrap();
        let out = r.text(
            "ada@corp.io wrote to bob@corp.io, then ada@corp.io again; call +44 20 7946 0958 or (555) 123-4567",
        );
        assert_eq!(
            out,
            "[email-1] wrote to [email-2], then [email-1] again; call [phone-1] or [phone-2]"
        );
        assert_eq!(r.counts(), "3 email(s), 2 phone(s)");
    }

    #[test]
    fn addresses_homes_hosts_and_patterns() {
        let mut r = Redactor::new(&["ACME-\\d+".to_string()]).unwrap();
        let out = r.text(
            "10.1.2.3 and 127.0.0.1; /home/ada/x and /Users/ada/y; C:\\\\Users\\\\bo\\\\z; https://db.corp.internal/x https://api.anthropic.com/v1 ACME-42 sk-ant-api03-abcdefghijklmnopqrstuv",
        );
        assert_eq!(
            out,
            "[ip-1] and 127.0.0.1; /home/[user-1]/x and /Users/[user-1]/y; C:\\\\Users\\\\[user-2]\\\\z; https://[host-1]/x https://api.anthropic.com/v1 [redacted-1] [secret]"
        );
        assert_eq!(
            r.counts(),
            "1 secret(s), 1 ip(s), 3 user(s), 1 host(s), 1 redacted(s)"
        );
    }

    #[test]
    fn hosts_outside_urls_short_ipv6_cards_and_ssns() {
        let mut r = Redactor::new(&[]).unwrap();
        let out = r.text(
            "ssh db7.corp.example.com; ping build.internal and fe80::1ff:fe23:4567:890a; card 4111 1111 1111 1111; ssn 078-05-1120; api.example.com ok; 5500005555555559",
        );
        assert_eq!(
            out,
            "ssh [host-1]; ping [host-2] and [ip-1]; card [card-1]; ssn [id-1]; api.example.com ok; [card-2]"
        );
        // A card number whose sum fails, timestamps, `::` paths, files,
        // versions: kept.
        let s = "order 4111 1111 1111 1112; at 1733500000000000000 and 1733500000000; 4111111111111112; std::io::Read; use a::b; de::Error; f64::EPSILON; notes.txt config.prod.yaml v1.2.3 api.anthropic.com";
        assert_eq!(r.text(s), s);
    }

    #[test]
    fn what_teaches_is_kept() {
        let mut r = Redactor::new(&[]).unwrap();
        let s =
            "北京 18°C, USD/CNY 7.12, call_w1, toolu_f1, 2024-10-21 12:30:45, version 1.2.3, 42";
        assert_eq!(r.text(s), s);
        assert_eq!(r.counts(), "");
    }
}
