//! Man pages: clap_mangen writes the title, name, synopsis, description
//! and options from the clap definitions; the examples, exit status and
//! related pages come from the manual's entries.

use clap_mangen::Man;
use clap_mangen::roff::{Roff, bold, roman};

use crate::{Entry, entry};

/// One man page: its file name (`loopdbg-check.1`) and its roff text.
pub struct Page {
    /// `loopdbg.1`, `loopdbg-check.1`, …
    pub file_name: String,
    /// The page, as `man` reads it.
    pub roff: Vec<u8>,
}

/// The page of `command` (`None`: `loopdbg` itself, which lists the
/// others); `None` when `root` has no such subcommand.
pub fn page(root: &clap::Command, command: Option<&str>) -> Option<std::io::Result<Page>> {
    let (cmd, name, see_also) = match command {
        None => {
            let others: Vec<String> = visible(root)
                .map(|s| format!("loopdbg-{}(1)", s.get_name()))
                .collect();
            (root.clone(), "loopdbg".to_string(), others)
        }
        Some(sub) => {
            let found = visible(root).find(|s| s.get_name() == sub)?;
            let title = format!("loopdbg-{sub}");
            let cmd = found
                .clone()
                .name(title.clone())
                .display_name(title.clone())
                .bin_name(format!("loopdbg {sub}"));
            let mut see = vec!["loopdbg(1)".to_string()];
            see.extend(entry(sub).map(|e| e.see_also).unwrap_or_default());
            (cmd, title, see)
        }
    };
    let entry = entry(command.unwrap_or("loopdbg")).unwrap_or_default();
    Some(render(cmd, &name, &entry, &see_also))
}

/// Every page: `loopdbg`'s, then one per command.
pub fn pages(root: &clap::Command) -> std::io::Result<Vec<Page>> {
    let mut names = vec![None];
    names.extend(visible(root).map(|s| Some(s.get_name().to_string())));
    names
        .iter()
        .filter_map(|name| page(root, name.as_deref()))
        .collect()
}

fn visible(root: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    root.get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
}

fn render(
    cmd: clap::Command,
    name: &str,
    entry: &Entry,
    see_also: &[String],
) -> std::io::Result<Page> {
    let commands = visible(&cmd).next().is_some();
    // `cmd` is clap's own (not `with_manual`'s): the examples are written
    // below in their own section, where clap_mangen would say EXTRA.
    let man = Man::new(cmd);
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    if commands {
        man.render_subcommands_section(&mut out)?;
    }
    let mut roff = Roff::default();
    if !entry.examples.is_empty() {
        roff.control("SH", ["EXAMPLES"]);
        for example in &entry.examples {
            let (line, what) = match example.split_once("  #") {
                Some((line, what)) => (line.trim_end(), Some(what.trim())),
                None => (example.as_str(), None),
            };
            roff.control("TP", []);
            roff.text([bold(line)]);
            if let Some(what) = what {
                roff.text([roman(what)]);
            }
        }
    }
    if !entry.exit_status.is_empty() {
        roff.control("SH", ["EXIT STATUS"]);
        roff.text([roman(entry.exit_status.as_str())]);
    }
    if !see_also.is_empty() {
        roff.control("SH", ["SEE ALSO"]);
        roff.text([roman(see_also.join(", "))]);
    }
    roff.to_writer(&mut out)?;
    Ok(Page {
        file_name: format!("{name}.1"),
        roff: out,
    })
}
