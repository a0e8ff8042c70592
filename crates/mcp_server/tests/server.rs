//! The server through the SDK's own client on an in-process pipe: what an
//! agent gets from each tool, and that the repair writes only when asked
//! (the real clients, the Python SDK's and Claude Code, are in the
//! workspace's end-to-end tests: tests/clients.rs, tests/agents.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::Path;

use loopdbg_corpus::stores::Places;
use loopdbg_mcp_server::{Loopdbg, serve};
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig};
use rmcp::service::RunningService;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

#[derive(Default)]
struct Agent;

impl ClientHandler for Agent {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }
}

/// A client connected to a server whose stores are under `home`.
async fn connect(home: &Path) -> RunningService<RoleClient, Agent> {
    let (server_end, client_end) = tokio::io::duplex(1 << 16);
    let places = Places::new(Some(home.as_os_str().to_owned()), |_| None);
    tokio::spawn(serve(Loopdbg::with_places(places), server_end));
    Agent.serve(client_end).await.unwrap()
}

async fn call(
    client: &RunningService<RoleClient, Agent>,
    tool: &str,
    args: Value,
) -> CallToolResult {
    let args = args.as_object().unwrap().clone();
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .unwrap()
}

fn text(result: &CallToolResult, i: usize) -> String {
    result.content[i].as_text().unwrap().text.clone()
}

/// A Gemini CLI chat `gemini --resume` cannot send, in a home's store.
fn planted_chat(home: &Path) -> (std::path::PathBuf, Vec<u8>) {
    let name = "session-2026-12-02T04-27-6a20c2cd.jsonl";
    let chats = home.join(".gemini/tmp/ann-app/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/transcripts/gemini_cli")
        .join(name);
    let original = std::fs::read(fixture).unwrap();
    std::fs::write(chats.join(name), &original).unwrap();
    (chats.join(name), original)
}

#[tokio::test]
async fn a_request_with_an_unanswered_call_gets_the_providers_400_and_a_repair() {
    let home = tempfile::tempdir().unwrap();
    let client = connect(home.path()).await;
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(
        names.len(),
        5,
        "check_request, check_file, explain_finding, list_unresumable_sessions, repair_session: {names:?}"
    );
    let body = json!({"model": "gpt-5", "messages": [
        {"role": "user", "content": "weather"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
        {"role": "user", "content": "and?"}]});
    let checked = call(
        &client,
        "check_request",
        json!({"body": body, "repair": "strip"}),
    )
    .await;
    assert_eq!(checked.is_error, Some(false));
    let said = text(&checked, 0);
    assert!(
        said.contains("(openai, 3 messages): 1 problem(s)"),
        "{said}"
    );
    assert!(said.contains("[call_1]"), "{said}");
    // OpenAI's own words for it.
    assert!(said.contains("tool_call_id"), "{said}");
    assert!(said.contains("checked again: no problems"), "{said}");
    let report: Value = serde_json::from_str(&text(&checked, 1)).unwrap();
    assert_eq!(report["problems"], 1);
    assert_eq!(report["repaired_clean"], true);
    // The same body as text reads the same.
    let as_text = call(&client, "check_request", json!({"body": body.to_string()})).await;
    assert_eq!(text(&as_text, 0).lines().next(), said.lines().next());
    // Bad arguments are failed calls the agent can correct.
    let bad = call(
        &client,
        "check_request",
        json!({"body": body, "provider": "nope"}),
    )
    .await;
    assert_eq!(bad.is_error, Some(true));
    let unreadable = call(
        &client,
        "check_request",
        json!({"body": "{\"messages\": ["}),
    )
    .await;
    assert_eq!(unreadable.is_error, Some(true), "{}", text(&unreadable, 0));
    assert!(
        text(&unreadable, 0).contains("request"),
        "{}",
        text(&unreadable, 0)
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn every_finding_kind_is_explained_and_an_unknown_one_lists_them() {
    let home = tempfile::tempdir().unwrap();
    let client = connect(home.path()).await;
    for kind in loopdbg_read::finding::Kind::ALL {
        let got = call(&client, "explain_finding", json!({"kind": kind.as_str()})).await;
        assert_eq!(got.is_error, Some(false), "{}", kind.as_str());
        assert!(text(&got, 0).starts_with(&format!("{}: {}", kind.as_str(), kind.description())));
    }
    let unknown = call(
        &client,
        "explain_finding",
        json!({"kind": "unanswerd_call"}),
    )
    .await;
    assert_eq!(unknown.is_error, Some(true));
    assert!(text(&unknown, 0).contains("unanswered_call"));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_session_is_found_planned_without_writing_then_repaired_with_a_backup() {
    let home = tempfile::tempdir().unwrap();
    let (chat, original) = planted_chat(home.path());
    let client = connect(home.path()).await;
    let scanned = call(&client, "list_unresumable_sessions", json!({})).await;
    assert!(
        text(&scanned, 0).contains("1 cannot be resumed"),
        "{}",
        text(&scanned, 0)
    );
    let found: Value = serde_json::from_str(&text(&scanned, 1)).unwrap();
    assert_eq!(found["unresumable"][0]["path"], chat.to_str().unwrap());
    assert_eq!(found["unresumable"][0]["standing"], "refused");
    // Only Codex's: none.
    let codex = call(
        &client,
        "list_unresumable_sessions",
        json!({"agent": "codex"}),
    )
    .await;
    let found: Value = serde_json::from_str(&text(&codex, 1)).unwrap();
    assert_eq!(found["unresumable"], json!([]));
    let no_agent = call(
        &client,
        "list_unresumable_sessions",
        json!({"agent": "cursor"}),
    )
    .await;
    assert_eq!(no_agent.is_error, Some(true));

    let planned = call(&client, "repair_session", json!({"path": chat})).await;
    assert!(text(&planned, 0).contains("would make it sendable"));
    assert!(text(&planned, 0).contains("call repair_session with write: true"));
    assert_eq!(
        std::fs::read(&chat).unwrap(),
        original,
        "a plan writes nothing"
    );
    let written = call(
        &client,
        "repair_session",
        json!({"path": chat, "write": true, "force": true}),
    )
    .await;
    assert_eq!(written.is_error, Some(false), "{}", text(&written, 0));
    assert!(text(&written, 0).contains("checked again: nothing keeps it from being sent"));
    let backup = chat.with_file_name(format!(
        "{}.loopdbg-bak",
        chat.file_name().unwrap().to_str().unwrap()
    ));
    assert_eq!(std::fs::read(backup).unwrap(), original);
    let again = call(&client, "check_file", json!({"path": chat})).await;
    assert!(
        text(&again, 0).contains("no problems"),
        "{}",
        text(&again, 0)
    );
    let missing = call(
        &client,
        "repair_session",
        json!({"path": home.path().join("none.jsonl")}),
    )
    .await;
    assert_eq!(missing.is_error, Some(true));
    client.cancel().await.unwrap();
}

/// A FIFO or a device passed to the file tools is refused at once: a FIFO
/// once held `check_file` until a writer came (cancelling did not end it),
/// and `repair_session` on `/dev/zero` read until memory ran out.
#[cfg(unix)]
#[tokio::test]
async fn a_fifo_or_a_device_is_refused_by_the_file_tools() {
    let home = tempfile::tempdir().unwrap();
    let store = home.path().join(".claude/projects/app");
    std::fs::create_dir_all(&store).unwrap();
    let fifo = store.join("session.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let client = connect(home.path()).await;
    let checked = call(&client, "check_file", json!({"path": fifo})).await;
    assert_eq!(checked.is_error, Some(true));
    assert!(
        text(&checked, 0).contains("not a regular file"),
        "{}",
        text(&checked, 0)
    );
    let repaired = call(
        &client,
        "repair_session",
        json!({"path": fifo, "write": true}),
    )
    .await;
    assert_eq!(repaired.is_error, Some(true));
    assert!(
        text(&repaired, 0).contains("not a regular file"),
        "{}",
        text(&repaired, 0)
    );
    // A device is outside every folder the tools reach.
    let zero = call(
        &client,
        "repair_session",
        json!({"path": "/dev/zero", "write": true}),
    )
    .await;
    assert_eq!(zero.is_error, Some(true));
    assert!(
        text(&zero, 0).contains("outside the folders"),
        "{}",
        text(&zero, 0)
    );
    client.cancel().await.unwrap();
}

/// The file tools reach the agents' stores, the folder the server started
/// in and the folders it is given, nothing else: a model talked into
/// checking `~/.ssh/id_ed25519` would have had a snippet of it in the
/// error, and one talked into repairing any log would have rewritten it.
/// A link in a store that leads out is outside too.
#[cfg(unix)]
#[tokio::test]
async fn the_file_tools_reach_only_the_stores_and_the_folders_given() {
    let home = tempfile::tempdir().unwrap();
    let (chat, original) = planted_chat(home.path());
    let elsewhere = tempfile::tempdir().unwrap();
    let secret = elsewhere.path().join("id_ed25519");
    std::fs::write(
        &secret,
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n",
    )
    .unwrap();
    let outside_chat = elsewhere.path().join("chat.jsonl");
    std::fs::write(&outside_chat, &original).unwrap();
    let link = chat.with_file_name("session-2026-12-02T05-00-linked.jsonl");
    std::os::unix::fs::symlink(&outside_chat, &link).unwrap();

    let client = connect(home.path()).await;
    for (tool, path) in [
        ("check_file", &secret),
        ("repair_session", &outside_chat),
        ("repair_session", &link),
        ("check_file", &link),
    ] {
        let got = call(
            &client,
            tool,
            json!({"path": path, "write": true, "force": true}),
        )
        .await;
        assert_eq!(got.is_error, Some(true), "{tool} {path:?}");
        let said = text(&got, 0);
        assert!(
            said.contains("outside the folders this server reaches"),
            "{said}"
        );
        assert!(said.contains("--allow DIR"), "{said}");
        assert!(
            !said.contains("b3BlbnNzaC1rZXkt"),
            "nothing of the file: {said}"
        );
    }
    assert_eq!(
        std::fs::read(&outside_chat).unwrap(),
        original,
        "not rewritten"
    );
    // In the store: reached.
    let planned = call(&client, "repair_session", json!({"path": chat})).await;
    assert_eq!(planned.is_error, Some(false), "{}", text(&planned, 0));
    client.cancel().await.unwrap();

    // Given with --allow: reached.
    let (server_end, client_end) = tokio::io::duplex(1 << 16);
    let places = Places::new(Some(home.path().as_os_str().to_owned()), |_| None);
    let server = Loopdbg::with_places(places)
        .allowing(&[elsewhere.path().to_path_buf()])
        .unwrap();
    tokio::spawn(serve(server, server_end));
    let client = Agent.serve(client_end).await.unwrap();
    let planned = call(&client, "repair_session", json!({"path": outside_chat})).await;
    assert!(
        text(&planned, 0).contains("would make it sendable"),
        "{}",
        text(&planned, 0)
    );
    client.cancel().await.unwrap();
    assert!(
        Loopdbg::new()
            .allowing(&[elsewhere.path().join("none")])
            .is_err()
    );
}
