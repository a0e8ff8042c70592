//! Terminal adapter for the TUI (placeholder until the debugger lands).
use loopdbg::{Session, Strategy};

pub fn run(_origin: String, _session: Session, _strategy: Strategy) -> anyhow::Result<()> {
    anyhow::bail!("the debugger is not built yet")
}
