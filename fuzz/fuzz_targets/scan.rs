//! `doctor --scan` over a home whose stores hold the input: the bytes are
//! split at 0xFF into the files every agent's store reads first (a Claude
//! Code log, a Codex rollout, a Gemini CLI chat and its `.project_root`,
//! a Copilot CLI log and its `workspace.yaml`, Cline's task history and
//! Kimi Code's context). No panic; every session listed is one of them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loopdbg_corpus::scan::{self, Options};
use loopdbg_corpus::stores::Places;

/// Where each piece goes, under the home.
const FILES: [&str; 8] = [
    ".claude/projects/-work-app/6c1f0d52-8a0e-4d7b-9a51-2f3c8b1e0a77.jsonl",
    ".codex/sessions/2026/12/07/rollout-2026-12-07T01-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl",
    ".gemini/tmp/app/chats/session-2026-12-07T01-00-6a20c2cd.jsonl",
    ".gemini/tmp/app/.project_root",
    ".copilot/session-state/4f1c2d3e-5a6b-4c7d-8e9f-0a1b2c3d4e5f/events.jsonl",
    ".copilot/session-state/4f1c2d3e-5a6b-4c7d-8e9f-0a1b2c3d4e5f/workspace.yaml",
    ".cline/data/tasks/1733500000000/api_conversation_history.json",
    ".kimi/sessions/0cc175b9c0f1b6a831c399e269772661/4f1c2d3e/context.jsonl",
];

fuzz_target!(|data: &[u8]| {
    let Ok(home) = tempfile::tempdir() else {
        return;
    };
    for (name, piece) in FILES.iter().zip(data.split(|&b| b == 0xFF)) {
        let path = home.path().join(name);
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(&path, piece);
    }
    let places = Places::new(Some(home.path().as_os_str().to_owned()), |_| None);
    let found = scan::examine_all(&places, Options::default(), &|_| {});
    for session in &found.unresumable {
        assert!(session.path.starts_with(home.path()), "{:?}", session.path);
    }
    let mut out = Vec::new();
    scan::report(&found, Options::default(), &mut out);
});
