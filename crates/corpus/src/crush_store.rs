//! Crush's session store: a SQLite database per project (`crush.db` in
//! the project's data folder, `.crush` by default), the projects listed
//! in `projects.json` in Crush's global data folder
//! (internal/projects/projects.go, internal/db/connect.go). Table
//! `sessions` (id, parent_session_id, summary_message_id, …) and
//! `messages` (id, session_id, role, parts: JSON `[{type, data}]`,
//! created_at, …; internal/db/migrations). A session is put into the
//! shape `crush session show --json` prints, with its parts as stored and
//! its summary's id, which `check` reads as Crush sends it: messages by
//! `created_at` as Crush lists them (`ListMessagesBySession`), ties in the
//! order they were written (Crush's `created_at` is in seconds).
//!
//! The database is opened read-only, and waited on briefly when Crush is
//! writing it: the scan never changes it.

use std::path::Path;

use rusqlite::params;

use crate::sqlite::open_read_only as open;

/// The sessions a user resumes, oldest first: those a sub-agent or a
/// title ran in (`parent_session_id` set) are Crush's own, not resumed.
pub fn list(db: &Path) -> Result<Vec<String>, String> {
    let connection = open(db)?;
    let mut statement = connection
        .prepare(
            "SELECT id FROM sessions WHERE parent_session_id IS NULL OR parent_session_id = '' \
             ORDER BY created_at, rowid",
        )
        .map_err(|e| e.to_string())?;
    let rows = statement
        .query_map([], |row| row.get(0))
        .map_err(|e| e.to_string())?;
    rows.collect::<Result<_, _>>().map_err(|e| e.to_string())
}

/// Session `id` as `crush session show --json ID` prints it (`meta` cut to
/// its id and summary: the reader takes the messages only), each
/// message's parts as stored.
pub fn export(db: &Path, id: &str) -> Result<Vec<u8>, String> {
    let connection = open(db)?;
    let summary: Option<String> = connection
        .query_row(
            "SELECT summary_message_id FROM sessions WHERE id = ?1",
            params![id],
            |row| row.get(0),
        )
        .map_err(|e| e.to_string())?;
    let meta = serde_json::json!({ "uuid": id, "summary_message_id": summary });
    let mut out = format!("{{\"meta\":{meta},\"messages\":[").into_bytes();
    let mut messages = connection
        .prepare(
            "SELECT id, role, parts FROM messages WHERE session_id = ?1 ORDER BY created_at, rowid",
        )
        .map_err(|e| e.to_string())?;
    let rows = messages
        .query_map(params![id], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
            ))
        })
        .map_err(|e| e.to_string())?;
    for (k, row) in rows.enumerate() {
        let (id, role, parts) = row.map_err(|e| e.to_string())?;
        if k > 0 {
            out.push(b',');
        }
        let head = serde_json::json!({ "id": id, "role": role }).to_string();
        // `{"id":…,"role":…` then the stored parts as they are: a row
        // Crush could not read is one `check` says it cannot read.
        out.extend_from_slice(&head.as_bytes()[..head.len() - 1]);
        out.extend_from_slice(b",\"parts\":");
        out.extend_from_slice(parts.as_bytes());
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
    Ok(out)
}
