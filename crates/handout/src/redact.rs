//! Masking what should not leave the machine in a handout: strings that
//! look like credentials, e-mail addresses and home folders.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::Handout;

#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a constant pattern"
)]
static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}").expect("a valid pattern")
});

#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a constant pattern"
)]
static HOME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:/home/|/Users/|[A-Za-z]:\\Users\\)[^/\\\s]+").expect("a valid pattern")
});

/// `text` with secrets, e-mail addresses and home folders masked.
pub fn text(s: &str) -> String {
    // The credential shapes are the proxy's too: one list for all.
    let s = loopdbg_formats::secrets::mask_shapes(s);
    let s = EMAIL.replace_all(&s, "[email]");
    HOME.replace_all(&s, "~").into_owned()
}

/// Every string of `v` (keys included) masked.
pub fn value(v: &mut Value) {
    match v {
        Value::String(s) => *s = text(s),
        Value::Array(items) => items.iter_mut().for_each(value),
        Value::Object(map) => {
            let old = std::mem::take(map);
            for (k, mut item) in old {
                value(&mut item);
                map.insert(text(&k), item);
            }
        }
        _ => {}
    }
}

/// Every string of a handout masked.
pub fn handout(h: &mut Handout) {
    for s in [&mut h.title, &mut h.origin, &mut h.end] {
        *s = text(s);
    }
    if let Some(t) = h.final_text.as_mut() {
        *t = text(t);
    }
    h.warnings.iter_mut().for_each(|w| *w = text(w));
    h.steps.iter_mut().for_each(|w| *w = text(w));
    for r in &mut h.requests {
        value(&mut r.body);
        r.paired.iter_mut().for_each(|w| *w = text(w));
        r.unpaired.iter_mut().for_each(|w| *w = text(w));
    }
    for t in &mut h.tool_returns {
        value(&mut t.args);
        value(&mut t.result);
        t.id = text(&t.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_emails_and_homes_are_masked() {
        let s = "key sk-ant-api03-abcdefghijklmnopqrstuv, mail ada@example.com, file /home/ada/notes.txt, Bearer abcdefghijklmnopqrstu";
        let out = text(s);
        assert_eq!(
            out,
            "key [secret], mail [email], file ~/notes.txt, [secret]"
        );
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        let s = "北京 18°C, call_w1, toolu_f1, sk-short";
        assert_eq!(text(s), s);
    }

    #[test]
    fn values_are_masked_deeply() {
        let mut v = serde_json::json!({"a": ["C:\\Users\\ada\\x", {"b": "ghp_abcdefghijklmnopqrstuvwxyz"}]});
        value(&mut v);
        assert_eq!(v, serde_json::json!({"a": ["~\\x", {"b": "[secret]"}]}));
    }
}
