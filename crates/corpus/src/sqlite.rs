//! An agent's SQLite store (opencode's, Crush's) opened for reading: read
//! only, and waiting briefly while the agent writes it, so the scan never
//! changes it and does not fail on a write in progress.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

/// How long a read waits for the agent to finish a write.
const BUSY: std::time::Duration = std::time::Duration::from_secs(2);

/// The database at `db`, opened read-only.
pub(crate) fn open_read_only(db: &Path) -> Result<Connection, String> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let connection = Connection::open_with_flags(db, flags).map_err(|e| e.to_string())?;
    connection.busy_timeout(BUSY).map_err(|e| e.to_string())?;
    Ok(connection)
}
