//! The price table the binary prices tokens with: the one shipped in
//! `loopdbg-formats`, or the user's (`--prices FILE`), read once at start.

use std::path::Path;
use std::sync::OnceLock;

use loopdbg_engine::LoadError;
use loopdbg_formats::prices::Prices;

static PRICES: OnceLock<Prices> = OnceLock::new();

/// The table in use: the user's when `--prices` named one, else the
/// shipped one.
pub fn prices() -> &'static Prices {
    PRICES.get_or_init(Prices::builtin)
}

/// Reads the user's table; a bad one is an error at its line and column.
pub fn load(path: &Path) -> Result<(), LoadError> {
    let origin = path.display().to_string();
    let text = crate::read_text(path, &origin)?;
    let table = Prices::parse(&text).map_err(|e| {
        let offset: usize = text
            .split_inclusive('\n')
            .take(e.line.saturating_sub(1))
            .map(str::len)
            .sum::<usize>()
            + e.column.saturating_sub(1);
        LoadError::at(&origin, &text, offset.min(text.len()), e.message)
    })?;
    let _ = PRICES.set(table);
    Ok(())
}
