//! The published JSON Schema agrees with the parser.

use serde_json::Value;

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&loopdbg_engine::schema::session_schema()).expect("a valid schema")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[test]
fn every_shipped_session_validates() {
    let v = validator();
    for name in crate::common::shipped_names() {
        let path =
            std::path::PathBuf::from(format!("{}/sessions/{name}", env!("CARGO_MANIFEST_DIR")));
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
    }
}

#[test]
fn shape_errors_the_parser_rejects_fail_the_schema_too() {
    let v = validator();
    for name in [
        "unknown_top_key",
        "user_not_string",
        "missing_model",
        "bad_finish_reason",
        "round_zero",
        "bad_stop_rule",
        "empty_model",
        "call_without_id",
        "parameters_not_object",
        "max_rounds_zero",
        "not_an_object",
    ] {
        let doc: Value =
            serde_json::from_str(&read(&format!("tests/fixtures/bad/{name}.json"))).unwrap();
        assert!(!v.is_valid(&doc), "{name} should not validate");
    }
}
