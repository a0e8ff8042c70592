//! Writing the files the user names (`-o`, `--fix`, the tour's progress),
//! one way for every command: a reader never sees half a file, nothing is
//! replaced unless the user said so, and a name that is not a regular file
//! stays what it was.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// What to do when the file is already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Refuse: the user did not say `--force`.
    Keep,
    /// Replace it (a regular file is renamed over; see [`write_file`]).
    Replace,
}

/// Why a file was not written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// It exists and [`Existing::Keep`] was asked.
    #[error("exists; pass --force to replace it")]
    Exists,
    /// The system said no.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Writes what `fill` writes to `path`.
///
/// - A new file, or a regular file being replaced, is written to a temporary
///   file beside it, flushed to disk and renamed into place: a reader sees
///   the old file or the new one, never half of either. A symbolic link to
///   a regular file keeps being a link: its target is replaced.
/// - Anything else the name stands for (`/dev/null`, `/dev/stdout`, a FIFO,
///   a terminal) is written through, as a shell's `>` would: renaming a
///   temporary file over a device node would turn it into a plain file for
///   every later process.
pub fn write_file<T>(
    path: &Path,
    existing: Existing,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<T>,
) -> Result<T, WriteError> {
    // `metadata` follows links: what matters is what the name leads to.
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() && !meta.is_dir() => {
            let mut through = OpenOptions::new().write(true).open(path)?;
            let made = fill(&mut through)?;
            through.flush()?;
            Ok(made)
        }
        Ok(_) if existing == Existing::Keep => Err(WriteError::Exists),
        Ok(_) => replace(&std::fs::canonicalize(path)?, fill, true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if std::fs::symlink_metadata(path).is_ok() {
                // A link to nothing: writing through would create a file
                // somewhere the user did not name.
                return Err(WriteError::Io(io::Error::other(
                    "is a symbolic link to nothing; name the file itself",
                )));
            }
            replace(path, fill, false)
        }
        Err(e) => Err(e.into()),
    }
}

/// A temporary file beside `path`, renamed to it once whole.
fn replace<T>(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<T>,
    over: bool,
) -> Result<T, WriteError> {
    let dir: PathBuf = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // Ctrl-C during a long write must not leave the half file behind: the
    // name is registered for removal before the file is created, so no
    // signal falls between the two.
    let mut _cleanup = None;
    let mut temp = tempfile::Builder::new()
        .prefix(".loopdbg-")
        .make_in(&dir, |path| {
            _cleanup = TEMP_HOOK.get().map(|hook| hook(path));
            OpenOptions::new().write(true).create_new(true).open(path)
        })?;
    let made = {
        let mut out = io::BufWriter::new(temp.as_file_mut());
        let made = fill(&mut out)?;
        out.flush()?;
        made
    };
    temp.as_file().sync_all()?;
    // A temporary file is created 0600; the file takes the mode any new
    // file gets here (the umask's), as a shell's `>` would give it.
    set_default_mode(temp.as_file())?;
    if over {
        temp.persist(path).map_err(|e| e.error)?;
    } else {
        temp.persist_noclobber(path).map_err(|e| e.error)?;
    }
    Ok(made)
}

/// What a program does with a temporary file while it is being written:
/// the binary registers it for removal should a signal end the process
/// (a library caller, a Python process among them, installs nothing).
pub type TempHook = fn(&Path) -> Box<dyn std::any::Any>;

static TEMP_HOOK: std::sync::OnceLock<TempHook> = std::sync::OnceLock::new();

/// Sets what is done with each temporary file while it is written (the
/// returned guard is dropped once the file is renamed into place). Once
/// per process; later calls are ignored.
pub fn on_temp_file(hook: TempHook) {
    let _ = TEMP_HOOK.set(hook);
}

#[cfg(unix)]
fn set_default_mode(file: &std::fs::File) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    // The umask can only be read by setting it; a probe file created the
    // ordinary way tells it without touching the process's state.
    let probe = tempfile::Builder::new()
        .prefix(".loopdbg-mode-")
        .make(|p| OpenOptions::new().write(true).create_new(true).open(p))?;
    let mode = probe.as_file().metadata()?.permissions().mode() & 0o777;
    file.set_permissions(std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_default_mode(_: &std::fs::File) -> io::Result<()> {
    Ok(())
}

/// Writes `text` to `suggested`, or `stem-2.ext`, `stem-3.ext`, … when
/// that exists: never over a file.
pub fn write_unique(suggested: &str, text: &str) -> io::Result<PathBuf> {
    let path = std::path::Path::new(suggested);
    let stem = path
        .file_stem()
        .map_or("loopdbg".into(), |s| s.to_string_lossy().into_owned());
    let ext = path.extension().map(|e| e.to_string_lossy().into_owned());
    for n in 1..1000 {
        let name = match (n, &ext) {
            (1, _) => suggested.to_string(),
            (_, Some(e)) => format!("{stem}-{n}.{e}"),
            (_, None) => format!("{stem}-{n}"),
        };
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&name)
        {
            Ok(mut f) => {
                f.write_all(text.as_bytes())?;
                return Ok(name.into());
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!("no free name beside {suggested}")))
}

/// True when `a` and `b` are one file: the same path, a symlink, or a hard
/// link (same device and inode).
pub fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        x.dev() == y.dev() && x.ino() == y.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (x, y);
        matches!((a.canonicalize(), b.canonicalize()), (Ok(p), Ok(q)) if p == q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, existing: Existing, text: &str) -> Result<(), WriteError> {
        write_file(path, existing, |out| out.write_all(text.as_bytes()))
    }

    #[test]
    fn a_new_file_is_written_and_an_old_one_kept_unless_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        write(&path, Existing::Keep, "one").unwrap();
        assert!(matches!(
            write(&path, Existing::Keep, "two"),
            Err(WriteError::Exists)
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one");
        write(&path, Existing::Replace, "two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");
    }

    #[cfg(unix)]
    #[test]
    fn a_link_stays_a_link_and_its_target_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.json");
        let link = dir.path().join("link.json");
        std::fs::write(&target, "old").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write(&link, Existing::Replace, "new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
    }

    #[cfg(unix)]
    #[test]
    fn dev_null_is_written_through_and_stays_a_device() {
        use std::os::unix::fs::FileTypeExt;
        write(Path::new("/dev/null"), Existing::Replace, "gone").unwrap();
        let meta = std::fs::metadata("/dev/null").unwrap();
        assert!(meta.file_type().is_char_device());
    }

    #[cfg(unix)]
    #[test]
    fn a_dangling_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &link).unwrap();
        assert!(write(&link, Existing::Replace, "x").is_err());
        assert!(!dir.path().join("nowhere").exists());
    }
}
