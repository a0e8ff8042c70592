//! A handout with personal data masked (`--redact`): credentials, e-mail
//! addresses, phone numbers, IP addresses, home folders' user names, host
//! names in URLs and the user's own patterns, each distinct value one
//! placeholder throughout the handout (`loopdbg_formats::redact`).

use loopdbg_formats::redact::Redactor;

use super::Handout;

/// Every string of a handout masked.
pub fn handout(h: &mut Handout, r: &mut Redactor) {
    for s in [&mut h.title, &mut h.origin, &mut h.end] {
        *s = r.text(s);
    }
    if let Some(t) = h.final_text.as_mut() {
        *t = r.text(t);
    }
    h.warnings.iter_mut().for_each(|w| *w = r.text(w));
    h.steps.iter_mut().for_each(|w| *w = r.text(w));
    for q in &mut h.requests {
        r.value(&mut q.body);
        q.paired.iter_mut().for_each(|w| *w = r.text(w));
        q.unpaired.iter_mut().for_each(|w| *w = r.text(w));
    }
    for t in &mut h.tool_returns {
        r.value(&mut t.args);
        r.value(&mut t.result);
        t.id = r.text(&t.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_emails_and_homes_are_masked() {
        let mut r = Redactor::new(&[]).unwrap();
        let s = "key sk-ant-api03-abcdefghijklmnopqrstuv, mail ada@example.com, file /home/ada/notes.txt, Bearer abcdefghijklmnopqrstu";
        assert_eq!(
            r.text(s),
            "key [secret], mail [email-1], file /home/[user-1]/notes.txt, [secret]"
        );
    }

    #[test]
    fn values_are_masked_deeply() {
        let mut r = Redactor::new(&[]).unwrap();
        let mut v = serde_json::json!({"a": ["C:\\Users\\ada\\x", {"b": "ghp_abcdefghijklmnopqrstuvwxyz"}]});
        r.value(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"a": ["C:\\Users\\[user-1]\\x", {"b": "[secret]"}]})
        );
    }
}
