//! `run --export`: a run, or a replayed capture, written as a handout
//! (Markdown, HTML, JSON) or as one OTLP JSON export, redacted when asked.

use loopdbg_engine::{Session, Trace};
use loopdbg_formats::provider::Format;

/// What `run --export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Export {
    /// Markdown, HTML or JSON (`loopdbg_handout`).
    Handout(loopdbg_handout::Kind),
    /// OTLP JSON: a span per trip and per tool run, findings as events.
    Otlp,
}

impl std::str::FromStr for Export {
    type Err = String;

    fn from_str(s: &str) -> Result<Export, String> {
        match s {
            "otlp" => Ok(Export::Otlp),
            s => s
                .parse()
                .map(Export::Handout)
                .map_err(|_| format!("unknown export `{s}` (expected md, html, json or otlp)")),
        }
    }
}

/// What to export and how.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The form written.
    pub export: Export,
    /// The provider format request bodies are written in.
    pub format: Format,
    /// The session's file, named in the heading or the spans.
    pub origin: &'a str,
    /// Whether the trace is a replayed capture rather than a run.
    pub replay: bool,
    /// `--redact`: the extra patterns to mask beside the built-in ones;
    /// `None` when nothing is masked.
    pub redact: Option<&'a [String]>,
}

/// The exported text, and what `--redact` masked (`2 email(s)`, empty for
/// nothing; `None` when not redacting).
#[derive(Debug, Clone)]
pub struct Exported {
    /// The handout or the OTLP export.
    pub text: String,
    /// What was masked, when redacting.
    pub masked: Option<String>,
}

/// Why an export was not made: a flag the user can change.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A `--redact-pattern` that is not a regular expression.
    #[error("--redact-pattern: {0}")]
    Pattern(String),
    /// `--export otlp` from a build without the `otlp` feature.
    #[error("--export otlp: this loopdbg was built without the `otlp` feature")]
    NotBuilt,
    /// The spans made were not JSON (a bug): nothing unmasked is written.
    #[error("the OTLP export could not be read back to mask it: {0}")]
    Unmasked(serde_json::Error),
}

/// `session`'s `trace` exported as `request` says.
pub fn export(
    session: &Session,
    trace: &Trace,
    request: &Request<'_>,
) -> Result<Exported, ExportError> {
    let patterns = request.redact.unwrap_or_default();
    // Refused at the flag, before any work.
    let mut redactor = loopdbg_formats::redact::Redactor::new(patterns)
        .map_err(|e| ExportError::Pattern(e.to_string()))?;
    match request.export {
        Export::Handout(kind) => {
            let prices = std::sync::Arc::new(crate::prices::prices().clone());
            let origin = request.origin.to_string();
            let redact = request.redact.is_some();
            let mut opts =
                loopdbg_handout::Options::new(kind, request.format, redact, origin, prices);
            opts.redact_patterns = patterns.to_vec();
            let (text, masked) = loopdbg_handout::render_counted(session, trace, &opts);
            Ok(Exported {
                text,
                masked: redact.then_some(masked),
            })
        }
        #[cfg(feature = "otlp")]
        Export::Otlp => {
            let spans = loopdbg_export::spans::run_json(
                session,
                trace,
                request.format,
                request.origin,
                crate::base_ns_now(),
                request.replay,
            );
            if request.redact.is_none() {
                return Ok(Exported {
                    text: spans,
                    masked: None,
                });
            }
            // Every string of the export masked, its structure kept.
            let mut doc: serde_json::Value =
                serde_json::from_str(&spans).map_err(ExportError::Unmasked)?;
            redactor.value(&mut doc);
            Ok(Exported {
                text: doc.to_string(),
                masked: Some(redactor.counts()),
            })
        }
        #[cfg(not(feature = "otlp"))]
        Export::Otlp => {
            let _ = (&mut redactor, request.replay);
            Err(ExportError::NotBuilt)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weather() -> (Session, Trace) {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../sessions/weather.json");
        let loaded = crate::sessions::session(std::path::Path::new(path), false).unwrap();
        let strategy = loopdbg_engine::Strategy::for_session(&loaded.session);
        let trace = loopdbg_engine::run(&loaded.session, &strategy);
        (loaded.session, trace)
    }

    fn request(export: Export, redact: Option<&[String]>) -> Request<'_> {
        Request {
            export,
            format: Format::Anthropic,
            origin: "weather.json",
            replay: false,
            redact,
        }
    }

    #[test]
    fn a_pattern_that_is_not_a_regular_expression_is_refused_before_any_work() {
        let (session, trace) = weather();
        let bad = ["(".to_string()];
        let md = Export::Handout(loopdbg_handout::Kind::Markdown);
        let refused = export(&session, &trace, &request(md, Some(&bad)));
        assert!(
            matches!(refused, Err(ExportError::Pattern(_))),
            "{refused:?}"
        );
    }

    #[test]
    fn a_redacted_export_says_what_it_masked_and_an_unredacted_one_says_nothing() {
        let (session, trace) = weather();
        let city = ["北京".to_string()];
        let md = Export::Handout(loopdbg_handout::Kind::Markdown);
        let plain = export(&session, &trace, &request(md, None)).unwrap();
        assert!(plain.masked.is_none());
        assert!(plain.text.contains("北京"));
        let masked = export(&session, &trace, &request(md, Some(&city))).unwrap();
        assert!(!masked.text.contains("北京"), "{}", masked.text);
        assert!(masked.masked.is_some_and(|m| !m.is_empty()));
    }

    #[cfg(feature = "otlp")]
    #[test]
    fn a_redacted_otlp_export_masks_every_string_and_stays_json() {
        let (session, trace) = weather();
        let city = ["北京".to_string()];
        let plain = export(&session, &trace, &request(Export::Otlp, None)).unwrap();
        assert!(plain.text.contains("北京"));
        let masked = export(&session, &trace, &request(Export::Otlp, Some(&city))).unwrap();
        assert!(!masked.text.contains("北京"));
        serde_json::from_str::<serde_json::Value>(&masked.text).unwrap();
    }

    #[test]
    fn every_export_name_parses_and_a_wrong_one_lists_them() {
        for name in ["md", "html", "json", "otlp"] {
            name.parse::<Export>().unwrap();
        }
        let wrong = "pdf".parse::<Export>().unwrap_err();
        assert!(wrong.contains("md, html, json or otlp"), "{wrong}");
    }
}
