//! The MCP server's tools, called as an agent calls them, on any input:
//! the first byte picks the tool. `check_request` takes the rest as its
//! arguments (JSON), or as a body's text when they are not; `check_file`
//! and `repair_session` (written, forced) take it as a session in an
//! agent's store; `explain_finding` as a kind. No panic, and a repair
//! never leaves the store's folder with anything but the session and its
//! backup.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loopdbg_corpus::stores::Places;
use loopdbg_mcp_server::{CheckFile, CheckRequest, ExplainFinding, Loopdbg, RepairSession};
use rmcp::handler::server::wrapper::Parameters;
use std::sync::OnceLock;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&tool, rest)) = data.split_first() else {
        return;
    };
    let Ok(home) = tempfile::tempdir() else {
        return;
    };
    let server = Loopdbg::with_places(Places::new(Some(home.path().as_os_str().to_owned()), |_| None));
    let text = String::from_utf8_lossy(rest).into_owned();
    runtime().block_on(async {
        match tool % 4 {
            0 => {
                let args = serde_json::from_slice::<CheckRequest>(rest).unwrap_or(CheckRequest {
                    body: serde_json::Value::String(text),
                    provider: None,
                    repair: Some("synthesize".into()),
                });
                let _ = server.check_request(Parameters(args)).await;
            }
            1 => {
                let _ = server.explain_finding(Parameters(ExplainFinding { kind: text })).await;
            }
            _ => {
                let folder = home.path().join(".claude/projects/-work-app");
                let _ = std::fs::create_dir_all(&folder);
                let session = folder.join("6c1f0d52-8a0e-4d7b-9a51-2f3c8b1e0a77.jsonl");
                if std::fs::write(&session, rest).is_err() {
                    return;
                }
                let path = session.display().to_string();
                let _ = server
                    .check_file(Parameters(CheckFile { path: path.clone(), format: None }))
                    .await;
                let _ = server
                    .repair_session(Parameters(RepairSession { path, write: true, force: true }))
                    .await;
                for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    assert!(name.starts_with("6c1f0d52-8a0e-4d7b-9a51-2f3c8b1e0a77.jsonl"), "{name}");
                }
            }
        }
    });
});
