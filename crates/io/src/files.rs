//! Writing the files the user names (`-o`, `--fix`, the tour's progress),
//! one way for every command: a reader never sees half a file, nothing is
//! replaced unless the user said so, and a name that is not a regular file
//! stays what it was.

use std::fs::OpenOptions;
use std::io::{self, Read, Write};
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

/// What [`written_beside`] gives: the file, what `fill` made, and the
/// guard that removes the file should a signal end the process first.
type Beside<T> = (tempfile::NamedTempFile, T, Option<Box<dyn std::any::Any>>);

/// A temporary file beside `path` (so a rename puts it in place), filled
/// by `fill` and flushed.
fn written_beside<T>(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<T>,
) -> io::Result<Beside<T>> {
    let dir: PathBuf = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // Ctrl-C during a long write must not leave the half file behind: the
    // name is registered for removal before the file is created, so no
    // signal falls between the two.
    let mut cleanup = None;
    let mut temp = tempfile::Builder::new()
        .prefix(".loopdbg-")
        .make_in(&dir, |path| {
            cleanup = TEMP_HOOK.get().map(|hook| hook(path));
            OpenOptions::new().write(true).create_new(true).open(path)
        })?;
    let made = {
        let mut out = io::BufWriter::new(temp.as_file_mut());
        let made = fill(&mut out)?;
        out.flush()?;
        made
    };
    Ok((temp, made, cleanup))
}

/// A temporary file beside `path`, renamed to it once whole.
fn replace<T>(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<T>,
    over: bool,
) -> Result<T, WriteError> {
    let (temp, made, _cleanup) = written_beside(path, fill)?;
    temp.as_file().sync_all()?;
    // A temporary file is created 0600. A file replaced keeps its mode (a
    // private log stays private), as a shell's `>` keeps it; a new one
    // takes the mode any new file gets here (the umask's).
    match std::fs::metadata(path) {
        Ok(existing) if over => {
            temp.as_file().set_permissions(existing.permissions())?;
            keep_owner(temp.as_file(), &existing)?;
        }
        _ => set_default_mode(temp.as_file())?,
    }
    if over {
        temp.persist(path).map_err(|e| e.error)?;
    } else {
        temp.persist_noclobber(path).map_err(|e| e.error)?;
    }
    Ok(made)
}

/// Gives `file` the owner and group of the file it replaces (`was`): run
/// as root, a repair of a user's session would otherwise leave it owned by
/// root and the user's agent unable to write it. Anyone else can only give
/// a file their own owner, which it has: a refusal to change the group
/// (not one of the user's) leaves it as the system made it.
#[cfg(unix)]
fn keep_owner(file: &std::fs::File, was: &std::fs::Metadata) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let now = file.metadata()?;
    if (now.uid(), now.gid()) == (was.uid(), was.gid()) {
        return Ok(());
    }
    match std::os::unix::fs::fchown(file, Some(was.uid()), Some(was.gid())) {
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Ok(()),
        other => other,
    }
}

#[cfg(not(unix))]
fn keep_owner(_: &std::fs::File, _: &std::fs::Metadata) -> io::Result<()> {
    Ok(())
}

/// Why [`replace_keeping`] left the file as it was.
#[derive(Debug, thiserror::Error)]
pub enum KeepError {
    /// The file is not what was read (another program wrote it since), or
    /// it grew while the replacement was made: an agent is still writing
    /// it. Nothing was changed; whatever was appended is in the file.
    #[error(
        "it changed while it was being repaired (an agent may still be writing it); nothing was changed"
    )]
    Changed,
    /// Another program holds the file open for writing (Codex keeps its
    /// rollout open while the session runs): what it writes after the
    /// rename would go into the backup, which no agent reads. Nothing was
    /// changed.
    #[error("{} open for writing; nothing was changed", Writer::list(.0))]
    HeldOpen(Vec<Writer>),
    /// The system said no; the original is unchanged.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// A process that holds a file open for writing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writer {
    /// Its process id.
    pub pid: u32,
    /// Its command name (`/proc/PID/comm`), as the system keeps it.
    pub name: String,
}

impl Writer {
    /// `codex (pid 4242) has it` / `node (pid 1) and 2 others have it`.
    fn list(writers: &[Writer]) -> String {
        match writers {
            [] => "no process has it".into(),
            [one] => format!("{} (pid {}) has it", one.name, one.pid),
            [one, rest @ ..] => format!(
                "{} (pid {}) and {} other process(es) have it",
                one.name,
                one.pid,
                rest.len()
            ),
        }
    }
}

/// The processes other than this one that hold `file` open for writing,
/// found the way `lsof` finds them on Linux: each `/proc/PID/fd/N` that
/// is the same inode, its `fdinfo` flags saying it was opened to write.
/// Processes of other users are not visible (nor are they the agent a user
/// runs); elsewhere than Linux the list is empty: not known.
#[cfg(target_os = "linux")]
pub fn writers_of(file: &std::fs::File) -> Vec<Writer> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = file.metadata() else {
        return Vec::new();
    };
    let me = std::process::id();
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut writers = Vec::new();
    for process in processes.flatten() {
        let Some(pid) = process
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(process.path().join("fd")) else {
            continue;
        };
        let writes = fds.flatten().any(|fd| {
            std::fs::metadata(fd.path())
                .is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino())
                && opened_to_write(&process.path().join("fdinfo").join(fd.file_name()))
        });
        if writes {
            let name = std::fs::read_to_string(process.path().join("comm")).unwrap_or_default();
            writers.push(Writer {
                pid,
                name: name.trim_end().to_string(),
            });
        }
    }
    writers
}

/// Whether the `fdinfo` file of a descriptor says it was opened to write
/// (`flags:` in octal; `O_WRONLY` 1 or `O_RDWR` 2 in its access mode).
#[cfg(target_os = "linux")]
fn opened_to_write(fdinfo: &Path) -> bool {
    std::fs::read_to_string(fdinfo).is_ok_and(|info| {
        info.lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
            .is_some_and(|flags| flags & 0o3 != 0)
    })
}

/// Not known elsewhere than Linux.
#[cfg(not(target_os = "linux"))]
pub fn writers_of(_: &std::fs::File) -> Vec<Writer> {
    Vec::new()
}

/// The points of [`replace_keeping`] a test can step in at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// The backup exists; the new file is not yet in place.
    BackedUp,
    /// The new file has just taken the name.
    Renamed,
}

/// Replaces the regular file `path`, read as `original` through `held`
/// (kept open since), with what `fill` writes, keeping the original
/// under the first free name of `backup_base`, `backup_base.1`, … . The
/// backup is the original's own inode where the file system allows a
/// second name for it (so an agent still holding the file open writes on
/// into the backup, never into a file no name leads to), else a copy
/// checked byte for byte. The new file takes the original's permissions.
///
/// Nothing is lost to a writer: when the file is not `original` or grows
/// before the rename, nothing is changed; when it grows just after, the
/// original (with what was appended, wherever it went) is put back. Both
/// are [`KeepError::Changed`]. A file another process holds open for
/// writing ([`writers_of`]), before the rename or just after, is
/// [`KeepError::HeldOpen`], the original in place. Returns the backup's
/// name.
pub fn replace_keeping(
    path: &Path,
    held: &std::fs::File,
    original: &[u8],
    backup_base: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<PathBuf, KeepError> {
    replace_keeping_with(path, held, original, backup_base, fill, &mut |_| {})
}

fn replace_keeping_with(
    path: &Path,
    held: &std::fs::File,
    original: &[u8],
    backup_base: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    step: &mut dyn FnMut(Step),
) -> Result<PathBuf, KeepError> {
    let unchanged =
        |f: &std::fs::File| f.metadata().is_ok_and(|m| m.len() == original.len() as u64);
    if !unchanged(held) || !same_inode(held, path) {
        return Err(KeepError::Changed);
    }
    let writers = writers_of(held);
    if !writers.is_empty() {
        return Err(KeepError::HeldOpen(writers));
    }
    let (temp, (), _cleanup) = written_beside(path, fill)?;
    let meta = held.metadata()?;
    let permissions = meta.permissions();
    temp.as_file().set_permissions(permissions.clone())?;
    keep_owner(temp.as_file(), &meta)?;
    temp.as_file().sync_all()?;
    let written = temp.as_file().metadata()?.len();
    let (backup, linked) = keep_backup(path, held, original, backup_base, permissions)?;
    step(Step::BackedUp);
    if !unchanged(held) || !same_inode(held, path) {
        let _ = std::fs::remove_file(&backup);
        return Err(KeepError::Changed);
    }
    temp.persist(path).map_err(|e| e.error)?;
    step(Step::Renamed);
    // A writer that opened the file since the first look would write on
    // into the backup: the original goes back under its name for it.
    let writers = writers_of(held);
    if unchanged(held) && writers.is_empty() {
        return Ok(backup);
    }
    put_back(path, held, written, &backup, linked)?;
    match writers.is_empty() {
        true => Err(KeepError::Changed),
        false => Err(KeepError::HeldOpen(writers)),
    }
}

/// Whether what `file` holds from where it is is `expected`, read a block
/// at a time (a backup is not read back whole beside the original).
pub fn holds(file: &mut impl Read, expected: &[u8]) -> io::Result<bool> {
    let mut block = vec![0u8; 1 << 20];
    let mut at = 0;
    loop {
        let n = match file.read(&mut block) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            return Ok(at == expected.len());
        }
        if expected.get(at..at + n) != Some(&block[..n]) {
            return Ok(false);
        }
        at += n;
    }
}

/// Whether `path` still names the file `held` is open on.
#[cfg(unix)]
fn same_inode(held: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (held.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_inode(_: &std::fs::File, path: &Path) -> bool {
    path.is_file()
}

/// The backup: a second name for the original's inode, else a copy of
/// `original` with its permissions, read back to be sure. Never over an
/// earlier backup. Returns its name and whether it is a second name.
fn keep_backup(
    path: &Path,
    held: &std::fs::File,
    original: &[u8],
    base: &Path,
    permissions: std::fs::Permissions,
) -> io::Result<(PathBuf, bool)> {
    keep_backup_as(
        path,
        held,
        original,
        base,
        permissions,
        Backup::LinkElseCopy,
    )
}

/// How a backup is made: [`keep_backup`] links where it can; a test
/// takes the copy a file system without second names gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backup {
    LinkElseCopy,
    #[cfg(test)]
    Copy,
}

fn keep_backup_as(
    path: &Path,
    held: &std::fs::File,
    original: &[u8],
    base: &Path,
    permissions: std::fs::Permissions,
    how: Backup,
) -> io::Result<(PathBuf, bool)> {
    let mut n = 0;
    loop {
        let candidate = match n {
            0 => base.to_path_buf(),
            n => PathBuf::from(format!("{}.{n}", base.display())),
        };
        n += 1;
        if std::fs::symlink_metadata(&candidate).is_ok() {
            continue;
        }
        let linked = match how {
            Backup::LinkElseCopy => std::fs::hard_link(path, &candidate),
            #[cfg(test)]
            Backup::Copy => Err(io::Error::other("no second names here")),
        };
        match linked {
            Ok(()) if same_inode(held, &candidate) => return Ok((candidate, true)),
            Ok(()) => {
                let _ = std::fs::remove_file(&candidate);
                return Err(io::Error::other("the file was replaced while it was read"));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(_) => {}
        }
        // A copy, written beside and given the name only once whole and
        // read back: a full disk or a signal mid-copy leaves no short file
        // under the backup's name (the temporary one is removed).
        let (temp, (), _cleanup) = written_beside(path, |out| out.write_all(original))?;
        temp.as_file().set_permissions(permissions.clone())?;
        keep_owner(temp.as_file(), &held.metadata()?)?;
        temp.as_file().sync_all()?;
        let mut reread = std::fs::File::open(temp.path())?;
        if !holds(&mut reread, original)? {
            return Err(io::Error::other(
                "the backup does not read back as the original",
            ));
        }
        match temp.persist_noclobber(&candidate) {
            Ok(_) => {}
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e.error),
        }
        return Ok((candidate, false));
    }
}

/// The original back under its name, with every byte appended to it
/// (through a descriptor held open) and to the new file (by a writer that
/// opened the name after the rename) since: it is as if nothing was done.
fn put_back(
    path: &Path,
    held: &std::fs::File,
    written: u64,
    backup: &Path,
    linked: bool,
) -> io::Result<()> {
    use std::io::{Read, Seek};
    let mut late = Vec::new();
    let mut new = std::fs::File::open(path)?;
    new.seek(io::SeekFrom::Start(written))?;
    new.read_to_end(&mut late)?;
    if linked {
        if !late.is_empty() {
            OpenOptions::new()
                .append(true)
                .open(backup)?
                .write_all(&late)?;
        }
        return std::fs::rename(backup, path);
    }
    let mut whole = Vec::new();
    let mut old = held.try_clone()?;
    old.seek(io::SeekFrom::Start(0))?;
    old.read_to_end(&mut whole)?;
    whole.extend_from_slice(&late);
    // Over the new file, which has the original's mode: `replace` keeps it.
    replace(path, |w| w.write_all(&whole), true).map_err(|e| match e {
        WriteError::Io(e) => e,
        WriteError::Exists => io::Error::from(io::ErrorKind::AlreadyExists),
    })?;
    std::fs::remove_file(backup)
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

    /// Where a file system gives no second name, the backup is a copy,
    /// given its name only once whole and read back: nothing else is left
    /// in the folder, and a name taken by an earlier backup is skipped.
    #[cfg(unix)]
    #[test]
    fn a_backup_copy_takes_its_name_only_whole() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        std::fs::write(&path, "one\ntwo\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let base = dir.path().join("log.jsonl.loopdbg-bak");
        std::fs::write(&base, "an earlier backup").unwrap();
        let held = std::fs::File::open(&path).unwrap();
        let permissions = held.metadata().unwrap().permissions();
        let (backup, linked) = keep_backup_as(
            &path,
            &held,
            b"one\ntwo\n",
            &base,
            permissions,
            Backup::Copy,
        )
        .unwrap();
        assert!(!linked);
        assert_eq!(backup, dir.path().join("log.jsonl.loopdbg-bak.1"));
        assert_eq!(std::fs::read(&backup).unwrap(), b"one\ntwo\n");
        assert_eq!(std::fs::read(&base).unwrap(), b"an earlier backup");
        let mode = std::fs::metadata(&backup).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "log.jsonl",
                "log.jsonl.loopdbg-bak",
                "log.jsonl.loopdbg-bak.1"
            ]
        );
    }

    #[test]
    fn holds_compares_block_by_block() {
        assert!(holds(&mut &b"abc"[..], b"abc").unwrap());
        assert!(!holds(&mut &b"abc"[..], b"abd").unwrap());
        assert!(!holds(&mut &b"abc"[..], b"abcd").unwrap());
        assert!(!holds(&mut &b"abcd"[..], b"abc").unwrap());
    }

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

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[cfg(unix)]
    #[test]
    fn a_replaced_file_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        for wanted in [0o600, 0o755, 0o444] {
            let path = dir.path().join(format!("out-{wanted:o}"));
            std::fs::write(&path, "old").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(wanted)).unwrap();
            write(&path, Existing::Replace, "new").unwrap();
            assert_eq!(mode(&path), wanted);
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        }
    }

    /// A session file of two lines, private, open as the doctor holds it.
    fn session(dir: &Path) -> (PathBuf, std::fs::File, Vec<u8>) {
        let path = dir.join("s.jsonl");
        std::fs::write(&path, "a\nb\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let held = std::fs::File::open(&path).unwrap();
        (path, held, b"a\nb\n".to_vec())
    }

    fn keep(
        path: &Path,
        held: &std::fs::File,
        original: &[u8],
        step: &mut dyn FnMut(Step),
    ) -> Result<PathBuf, KeepError> {
        let base = PathBuf::from(format!("{}.bak", path.display()));
        replace_keeping_with(
            path,
            held,
            original,
            &base,
            |w| w.write_all(b"A\nb\n"),
            step,
        )
    }

    fn append(path: &Path, text: &str) {
        OpenOptions::new()
            .append(true)
            .open(path)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn the_original_is_kept_beside_the_replacement_with_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let (path, held, original) = session(dir.path());
        let backup = keep(&path, &held, &original, &mut |_| {}).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"A\nb\n");
        assert_eq!(std::fs::read(&backup).unwrap(), original);
        #[cfg(unix)]
        assert_eq!((mode(&path), mode(&backup)), (0o600, 0o600));
        // A second repair never writes over the first backup.
        let held = std::fs::File::open(&path).unwrap();
        let second = keep(&path, &held, b"A\nb\n", &mut |_| {}).unwrap();
        assert_eq!(second.file_name().unwrap(), "s.jsonl.bak.1");
        assert_eq!(std::fs::read(&backup).unwrap(), original);
    }

    #[test]
    fn a_file_that_is_not_what_was_read_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (path, held, original) = session(dir.path());
        append(&path, "c\n");
        assert!(matches!(
            keep(&path, &held, &original, &mut |_| {}),
            Err(KeepError::Changed)
        ));
        assert_eq!(std::fs::read(&path).unwrap(), b"a\nb\nc\n");
        assert_eq!(names(dir.path()), ["s.jsonl"]);
    }

    #[test]
    fn a_line_appended_before_the_rename_is_kept_and_nothing_changed() {
        let dir = tempfile::tempdir().unwrap();
        let (path, held, original) = session(dir.path());
        let writer = path.clone();
        let result = keep(&path, &held, &original, &mut |step| {
            if step == Step::BackedUp {
                append(&writer, "c\n");
            }
        });
        assert!(matches!(result, Err(KeepError::Changed)));
        assert_eq!(std::fs::read(&path).unwrap(), b"a\nb\nc\n");
        assert_eq!(names(dir.path()), ["s.jsonl"]);
    }

    #[test]
    fn a_line_appended_after_the_rename_puts_the_original_back_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let (path, held, original) = session(dir.path());
        // An agent holding the file open, and one that opens it by name.
        let mut agent = OpenOptions::new().append(true).open(&path).unwrap();
        let by_name = path.clone();
        let result = keep(&path, &held, &original, &mut |step| {
            if step == Step::Renamed {
                agent.write_all(b"c\n").unwrap();
                append(&by_name, "d\n");
            }
        });
        assert!(matches!(result, Err(KeepError::Changed)));
        assert_eq!(std::fs::read(&path).unwrap(), b"a\nb\nc\nd\n");
        assert_eq!(names(dir.path()), ["s.jsonl"]);
        #[cfg(unix)]
        assert_eq!(mode(&path), 0o600);
        // The agent's descriptor still leads to the file by its name.
        agent.write_all(b"e\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"a\nb\nc\nd\ne\n");
    }

    /// Another process holding `path` open to append (as Codex holds its
    /// rollout), ready once it said so; it writes `line` and ends when its
    /// input closes.
    #[cfg(target_os = "linux")]
    fn holder(path: &Path, line: &str) -> std::process::Child {
        use std::io::BufRead;
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "exec 3>>\"$0\"; echo ready; read x; printf '%s\\n' \"$1\" >&3",
            ])
            .arg(path)
            .arg(line)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut said = String::new();
        io::BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut said)
            .unwrap();
        assert_eq!(said, "ready\n");
        child
    }

    /// Lets `child` write its line and end.
    #[cfg(target_os = "linux")]
    fn release(mut child: std::process::Child) {
        drop(child.stdin.take());
        assert!(child.wait().unwrap().success());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_another_process_holds_open_to_write_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (path, held, original) = session(dir.path());
        let agent = holder(&path, "c");
        let result = keep(&path, &held, &original, &mut |_| {});
        match result {
            Err(KeepError::HeldOpen(writers)) => {
                assert_eq!(
                    writers,
                    [Writer {
                        pid: agent.id(),
                        name: "sh".into()
                    }]
                );
                let said = KeepError::HeldOpen(writers).to_string();
                assert!(
                    said.starts_with(&format!("sh (pid {}) has it open for writing", agent.id())),
                    "{said}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(names(dir.path()), ["s.jsonl"]);
        release(agent);
        assert_eq!(std::fs::read(&path).unwrap(), b"a\nb\nc\n");
        // A reader is no writer, and this process never counts.
        let _reader = std::fs::File::open(&path).unwrap();
        let _mine = OpenOptions::new().append(true).open(&path).unwrap();
        let held = std::fs::File::open(&path).unwrap();
        assert!(writers_of(&held).is_empty());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_writer_that_opens_it_during_the_repair_keeps_writing_into_the_session() {
        let dir = tempfile::tempdir().unwrap();
        let (path, held, original) = session(dir.path());
        let mut agent = None;
        let result = keep(&path, &held, &original, &mut |step| {
            if step == Step::BackedUp {
                agent = Some(holder(&path, "c"));
            }
        });
        assert!(matches!(result, Err(KeepError::HeldOpen(_))), "{result:?}");
        // The original is back under its name, and the agent's line, written
        // after, is in it: not in a backup nobody reads.
        release(agent.unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"a\nb\nc\n");
        assert_eq!(names(dir.path()), ["s.jsonl"]);
    }
}

/// Reads the regular file at `path` whole, when it holds at most `limit`
/// bytes. Anything else is refused before a byte is read: a FIFO (whose
/// open would wait for a writer forever), a device (`/dev/zero` never
/// ends), a file larger than `limit` (a sparse one too: its length is
/// asked, not its blocks). Links are followed to what they name. The read
/// itself stops at `limit`, should the file grow past it meanwhile.
pub fn read_regular(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        let what = match meta.file_type() {
            t if t.is_dir() => "a folder",
            _ => "not a regular file (a FIFO, socket or device)",
        };
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{what}: not read"),
        ));
    }
    if meta.len() > limit {
        return Err(too_large(limit));
    }
    let file = std::fs::File::open(path)?;
    // Read straight into a buffer of the file's size (a buffered reader
    // copied it 8 KB at a time: a read call each, 9,600 for a scan of 80
    // MB); `take` holds the read to the limit should the file grow.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0).saturating_add(1));
    io::Read::read_to_end(
        &mut io::Read::take(file, limit.saturating_add(1)),
        &mut bytes,
    )?;
    if bytes.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(bytes)
}

fn too_large(limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!("larger than {} MiB: not read", limit >> 20),
    )
}

#[cfg(test)]
mod read_regular_tests {
    use super::*;

    #[test]
    fn only_a_regular_file_within_its_limit_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a");
        std::fs::write(&file, b"0123456789").unwrap();
        assert_eq!(read_regular(&file, 10).unwrap(), b"0123456789");
        let e = read_regular(&file, 9).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        let e = read_regular(dir.path(), 10).unwrap_err();
        assert!(e.to_string().contains("a folder"), "{e}");
        #[cfg(unix)]
        {
            let e = read_regular(Path::new("/dev/zero"), 1 << 20).unwrap_err();
            assert!(e.to_string().contains("not a regular file"), "{e}");
            let fifo = dir.path().join("fifo");
            let made = std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap();
            assert!(made.success());
            // Refused at once: opening it would wait for a writer.
            let e = read_regular(&fifo, 1 << 20).unwrap_err();
            assert!(e.to_string().contains("not a regular file"), "{e}");
            let link = dir.path().join("link");
            std::os::unix::fs::symlink(&file, &link).unwrap();
            assert_eq!(read_regular(&link, 10).unwrap(), b"0123456789");
        }
    }
}
