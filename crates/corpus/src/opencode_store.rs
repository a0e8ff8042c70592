//! opencode's session store: since 1.2 a SQLite database
//! (`$XDG_DATA_HOME/opencode/opencode.db`) whose `session`, `message` and
//! `part` tables hold each message's and part's JSON in a `data` column.
//! A session is put into the shape `opencode export ID` prints (`{info,
//! messages: [{info, parts}]}`), which `check` reads as opencode sends it:
//! messages by `time_created` then `id`, parts by `id` (the order of the
//! tables' own indexes, and of opencode's).
//!
//! The database is opened read-only, and waited on briefly when opencode
//! is writing it: the scan never changes it.

use std::path::Path;

use rusqlite::params;

use crate::sqlite::open_read_only as open;

/// Every session in the database, oldest first: its id, and the folder it
/// ran in.
pub fn list(db: &Path) -> Result<Vec<(String, Option<String>)>, String> {
    let connection = open(db)?;
    let mut statement = connection
        .prepare("SELECT id, directory FROM session ORDER BY time_created, id")
        .map_err(|e| e.to_string())?;
    let rows = statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .map_err(|e| e.to_string())?;
    rows.collect::<Result<_, _>>().map_err(|e| e.to_string())
}

/// Session `id` as `opencode export ID` prints it (its `info` cut to its
/// id: the reader takes its messages only).
pub fn export(db: &Path, id: &str) -> Result<Vec<u8>, String> {
    let connection = open(db)?;
    let mut messages = connection
        .prepare("SELECT id, data FROM message WHERE session_id = ?1 ORDER BY time_created, id")
        .map_err(|e| e.to_string())?;
    let mut parts = connection
        .prepare("SELECT data FROM part WHERE message_id = ?1 ORDER BY id")
        .map_err(|e| e.to_string())?;
    let info = serde_json::json!({ "id": id });
    let mut out = format!("{{\"info\":{info},\"messages\":[").into_bytes();
    let rows = messages
        .query_map(params![id], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })
        .map_err(|e| e.to_string())?;
    for (k, row) in rows.enumerate() {
        let (id, data) = row.map_err(|e| e.to_string())?;
        if k > 0 {
            out.push(b',');
        }
        // The stored JSON as it is: a row opencode could not read is
        // one `check` says it cannot read, at its place.
        out.extend_from_slice(b"{\"info\":");
        out.extend_from_slice(data.as_bytes());
        out.extend_from_slice(b",\"parts\":[");
        let datas = parts
            .query_map(params![id], |row| row.get::<_, String>(0))
            .map_err(|e| e.to_string())?;
        for (j, part) in datas.enumerate() {
            if j > 0 {
                out.push(b',');
            }
            out.extend_from_slice(part.map_err(|e| e.to_string())?.as_bytes());
        }
        out.extend_from_slice(b"]}");
    }
    out.extend_from_slice(b"]}");
    Ok(out)
}
