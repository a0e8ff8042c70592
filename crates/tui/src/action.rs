//! Everything the debugger can be asked to do. Key presses, mouse events
//! and resizes become an [`Action`]; only [`super::update()`] changes state.

use loopdbg_engine::strategy::Strategy;

/// One thing to do, with one doc line each (shown in the help popup).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Step forward one phase.
    StepForward,
    /// Step back one phase.
    StepBack,
    /// Jump to the start of the next round.
    NextRound,
    /// Jump to the start of this round, or of the previous one.
    PrevRound,
    /// Jump to the first step.
    First,
    /// Jump to the last step (the end summary).
    Last,
    /// Start over with the strategy the debugger opened with.
    Restart,
    /// Toggle extraction: first ↔ all.
    ToggleExtract,
    /// Cycle the stop rule.
    CycleStop,
    /// Cycle the stub-model behaviors the session defines.
    CycleBehavior,
    /// Allow one more round.
    MoreRounds,
    /// Allow one round fewer.
    FewerRounds,
    /// Cycle the closure policy: leave, synthesize, strip.
    CycleClosure,
    /// Interrupt the turn at this point of its execution (Execute steps).
    Interrupt,
    /// Step into the sub-agent run by the call at this step.
    StepInto,
    /// Step back out of a sub-agent to its parent.
    StepOut,
    /// Show the comparison table of every strategy × behavior.
    ShowCompare,
    /// Show the tool definitions, their schemas and the session's lint findings.
    ShowTools,
    /// Start typing a search of the messages (ids, text, arguments, results).
    Search,
    /// A character typed into the search.
    SearchType(char),
    /// Erase the last character of the search.
    SearchErase,
    /// Select the next message that matches the search.
    SearchSubmit,
    /// Stop typing the search.
    SearchCancel,
    /// Cycle the messages and detail view: canonical, Anthropic, OpenAI Chat, Responses.
    CycleView,
    /// Focus the next pane.
    FocusNext,
    /// Focus the previous pane.
    FocusPrev,
    /// Scroll the focused pane (or popup) down a line.
    ScrollDown,
    /// Scroll the focused pane (or popup) up a line.
    ScrollUp,
    /// Scroll the explain box down, whatever pane has the focus (its
    /// "more ↓" names this key).
    ExplainDown,
    /// Scroll the explain box up, whatever pane has the focus.
    ExplainUp,
    /// Scroll down a page.
    PageDown,
    /// Scroll up a page.
    PageUp,
    /// Open the selected message's full JSON.
    Expand,
    /// Close the popup, or quit when none is open.
    Back,
    /// Open or close the key help.
    Help,
    /// Quit.
    Quit,
    /// Toggle a breakpoint on the current phase kind.
    ToggleBreakpoint,
    /// Live capture: follow the newest step as traffic arrives, or stop.
    ToggleFollow,
    /// Edit the model's reply (at a Reply step) or a tool's return value
    /// (at an Execute step) and fork the run from there.
    Edit,
    /// The edited JSON came back from the editor.
    EditDone(String),
    /// List the forks; Enter in the list shows one.
    ShowForks,
    /// Write the run shown as a new session file.
    WriteFork,
    /// Write a handout of the run shown (HTML).
    Export,
    /// Show this run beside another (the parent fork, or the other extraction).
    ShowDiff,
    /// Tour: type the answer to this stop's question.
    TourAnswer,
    /// Tour: go to the next stop.
    TourNext,
    /// The terminal adapter reports what a command did.
    Said(String),
    /// Run forward to the next breakpoint, new unpaired id or repeated reply.
    Continue,
    /// Copy the selected message's JSON (or the explain box's text) to the
    /// terminal's clipboard.
    Yank,
    /// The same, written to a file.
    YankToFile,
    /// The terminal has a new size.
    Resize(u16, u16),
    /// The mouse wheel turned over a point of the screen.
    Wheel {
        /// Column.
        column: u16,
        /// Row.
        row: u16,
        /// True for down.
        down: bool,
    },
    /// Re-run the engine with this strategy, keeping the user's place.
    Rerun(Strategy),
}
