//! loopdbg's manual. What each command's `--help` and man page say beyond
//! its arguments (examples, exit status, related pages) is written once,
//! in `docs/commands.md`, and read from there: [`with_manual`] puts it at
//! the end of every `--help`, and [`page`] (feature `man`) writes a man
//! page per command from the clap definitions and it.
#![forbid(unsafe_code)]

/// `docs/commands.md`, built in.
const COMMANDS: &str = include_str!("../../../docs/commands.md");

/// One command's part of the manual.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    /// Example command lines, each with what it does after `#`.
    pub examples: Vec<String>,
    /// What each exit status means, as one paragraph.
    pub exit_status: String,
    /// Related pages (`loopdbg-check(1)`).
    pub see_also: Vec<String>,
}

/// The entry of `command` (`loopdbg` for the command itself, else a
/// subcommand's name), when docs/commands.md has one.
pub fn entry(command: &str) -> Option<Entry> {
    let start = COMMANDS.find(&format!("\n## {command}\n"))?;
    let body = &COMMANDS[start + command.len() + 5..];
    let body = &body[..body.find("\n## ").unwrap_or(body.len())];
    let mut entry = Entry::default();
    let mut in_exit = false;
    for line in body.lines() {
        if let Some(example) = line.strip_prefix("    ") {
            entry.examples.push(example.to_string());
        } else if let Some(rest) = line.strip_prefix("Exit status: ") {
            entry.exit_status = rest.to_string();
            in_exit = true;
        } else if let Some(rest) = line.strip_prefix("See also: ") {
            entry.see_also = rest.split(", ").map(str::to_string).collect();
            in_exit = false;
        } else if line.is_empty() {
            in_exit = false;
        } else if in_exit {
            entry.exit_status.push(' ');
            entry.exit_status.push_str(line);
        }
    }
    Some(entry)
}

/// The command names docs/commands.md has entries for.
pub fn commands() -> Vec<&'static str> {
    COMMANDS
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .collect()
}

/// What `--help` shows after the options: the examples and exit status.
pub fn after_help(entry: &Entry) -> String {
    let mut text = String::from("Examples:\n");
    for example in &entry.examples {
        text.push_str(&format!("  {example}\n"));
    }
    text.push_str(&format!("\nExit status: {}", entry.exit_status));
    if !entry.see_also.is_empty() {
        text.push_str(&format!("\n\nSee also: {}", entry.see_also.join(", ")));
    }
    text
}

/// `cmd` (the `loopdbg` command) with each command's examples and exit
/// status at the end of its long help (`--help`; `-h` stays short).
pub fn with_manual(mut cmd: clap::Command) -> clap::Command {
    if let Some(e) = entry("loopdbg") {
        cmd = cmd.after_long_help(after_help(&e));
    }
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        if let Some(e) = entry(&name) {
            cmd = cmd.mut_subcommand(&name, |s| s.after_long_help(after_help(&e)));
        }
    }
    cmd
}

#[cfg(feature = "man")]
mod man;
#[cfg(feature = "man")]
pub use man::{Page, page, pages};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_their_examples_exit_status_and_see_also() {
        let check = entry("check").expect("check has an entry");
        assert!(
            check
                .examples
                .iter()
                .any(|e| e.starts_with("loopdbg check body.json"))
        );
        assert!(
            check.exit_status.starts_with("0 when"),
            "{}",
            check.exit_status
        );
        assert!(
            check.exit_status.contains("2 when"),
            "{}",
            check.exit_status
        );
        assert!(check.see_also.contains(&"loopdbg-doctor(1)".to_string()));
        assert!(entry("no-such-command").is_none());
        assert!(commands().contains(&"demo"));
    }
}
