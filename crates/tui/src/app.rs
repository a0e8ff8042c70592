//! The debugger's state. It owns the session and the recorded trace; the
//! cursor is an index into the trace, so stepping back is exact and free.

use std::collections::BTreeSet;

use loopdbg_engine::ledger::LedgerAt;
use loopdbg_engine::session::Session;
use loopdbg_engine::strategy::Strategy;
use loopdbg_engine::trace::{Phase, Trace};
use loopdbg_formats::provider::{Format, ViewItem, ViewSpan};
use loopdbg_lesson::checks::RunAnalysis;
use loopdbg_lesson::report::CompareRow;

use super::theme::Theme;

/// The panes that can take focus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    /// The message array.
    Messages,
    /// The pairing ledger.
    Ids,
    /// The walkthrough and its logs.
    Walkthrough,
    /// The explain box, and the end summary (which scrolls).
    Explain,
}

impl Pane {
    /// Focus order.
    pub const ORDER: [Pane; 4] = [Pane::Messages, Pane::Ids, Pane::Walkthrough, Pane::Explain];

    /// The pane `delta` places away in focus order.
    pub fn cycled(self, forward: bool) -> Pane {
        let i = Pane::ORDER.iter().position(|p| *p == self).unwrap_or(0);
        let n = Pane::ORDER.len();
        Pane::ORDER[if forward {
            (i + 1) % n
        } else {
            (i + n - 1) % n
        }]
    }
}

/// A popup over the panes.
#[derive(Debug, Clone, PartialEq)]
pub enum Popup {
    /// Every key.
    Help {
        /// First line shown.
        scroll: u16,
    },
    /// The comparison table.
    Compare {
        /// The rows, computed when opened.
        rows: Vec<CompareRow>,
        /// First row shown.
        scroll: u16,
    },
    /// The tool definitions and the session's lint findings.
    Tools {
        /// First line shown.
        scroll: u16,
    },
    /// One message's JSON.
    Detail {
        /// Index into the history.
        message: usize,
        /// First line shown.
        scroll: u16,
    },
    /// The forks of this run, as a tree; Enter shows the selected one.
    Forks {
        /// The selected fork.
        scroll: u16,
    },
    /// This run beside another, round by round, the first divergence marked.
    Diff {
        /// The other run's name.
        other: String,
        /// The diff, computed when opened.
        diff: Box<loopdbg_lesson::diff::Diff>,
        /// First line shown.
        scroll: u16,
    },
}

/// What the keyboard is in the middle of. One at a time: a popup over a
/// search, or a search during an edit, cannot happen, and each mode has its
/// own keys ([`crate::keymap::action_in`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Mode {
    /// The panes take the keys.
    #[default]
    Panes,
    /// A popup is open over the panes.
    Popup(Popup),
    /// A search of the messages is being typed after `/`.
    Search(String),
    /// The answer to the tour's question is being typed after `a`.
    Answer(String),
    /// A reply or a return value is in the user's editor; the terminal
    /// adapter answers with [`crate::Action::EditDone`].
    Editing(EditTarget),
}

impl Mode {
    /// True while keys are text (a search or an answer).
    pub fn is_typing(&self) -> bool {
        matches!(self, Mode::Search(_) | Mode::Answer(_))
    }
}

/// One run of the session: the original, or a fork with one step changed.
#[derive(Debug, Clone)]
pub struct Fork {
    /// The session that reproduces it.
    pub session: Session,
    /// The fork it branched from (`None` for the original).
    pub parent: Option<usize>,
    /// What changed, in words.
    pub label: String,
    /// The step where it branched.
    pub at_step: usize,
}

/// Something only the terminal adapter can do (an editor, a file); the
/// adapter answers with [`crate::Action::EditDone`] or
/// [`crate::Action::Said`].
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Open `json` in the user's editor to change `target`.
    Edit {
        /// What is edited.
        target: EditTarget,
        /// The JSON to start from.
        json: String,
    },
    /// Remember the tour's solved stops (in the platform's data folder).
    SaveTour(Vec<usize>),
    /// Put `text` on the clipboard through the terminal (OSC 52); when the
    /// terminal cannot take it, write it to a file named like `suggested`.
    Copy {
        /// What is copied.
        text: String,
        /// What it is, for the message afterwards.
        what: String,
        /// A file name for the fallback.
        suggested: String,
    },
    /// Write `text` to a new file named like `suggested` (never over one).
    Write {
        /// A file name to start from.
        suggested: String,
        /// The content.
        text: String,
        /// What it is, for the message afterwards.
        what: &'static str,
    },
}

/// What an edit changes.
#[derive(Debug, Clone, PartialEq)]
pub enum EditTarget {
    /// The model's reply in a round.
    Reply {
        /// 1-based round.
        round: u32,
        /// The step being edited.
        step: usize,
    },
    /// What a tool returns for some arguments.
    Result {
        /// The tool.
        tool: String,
        /// The arguments.
        args: serde_json::Value,
        /// The step being edited.
        step: usize,
    },
}

/// Everything the debugger shows and remembers.
#[derive(Debug, Clone)]
pub struct App {
    /// The session file name.
    pub origin: String,
    /// The loaded session.
    pub session: Session,
    /// The strategy the debugger opened with (`r` returns to it).
    pub initial_strategy: Strategy,
    /// The recorded run being shown.
    pub trace: Trace,
    /// What is computed of `trace` when first drawn, and forgotten
    /// whenever `trace` is replaced ([`App::forget_derived`]).
    pub(crate) computed: Computed,
    /// The step shown.
    pub cursor: usize,
    /// The focused pane.
    pub focus: Pane,
    /// Selected message in the messages pane; `None` follows the newest.
    pub selected_message: Option<usize>,
    /// Scroll of the ids pane.
    pub ids_scroll: u16,
    /// Scroll of the walkthrough pane.
    pub walkthrough_scroll: u16,
    /// Lines of the explain box (the end summary) scrolled past.
    pub explain_scroll: u16,
    /// What the keyboard is in the middle of: the panes, a popup, text
    /// being typed, or an edit in the user's editor.
    pub mode: Mode,
    /// The last search submitted: `/` then Enter finds its next match.
    pub last_search: String,
    /// Phase kinds `c` stops at.
    pub breakpoints: BTreeSet<Phase>,
    /// What the last toggle changed, or why `c` stopped.
    pub notice: Option<String>,
    /// Styles.
    pub theme: Theme,
    /// What tokens cost (the shipped table, or the user's `--prices`).
    pub prices: std::sync::Arc<loopdbg_formats::prices::Prices>,
    /// The terminal size, for mouse hit-testing.
    pub size: (u16, u16),
    /// Set when the user quits.
    pub quit: bool,
    /// How messages are shown: canonical (`None`) or as a provider sees them.
    pub view: Option<Format>,
    /// Set when replaying a captured conversation: what it was read as.
    pub replay: Option<String>,
    /// While inside a sub-agent: the parent debugger, restored by `<`.
    pub parent: Option<Box<App>>,
    /// Set when the replay grows as traffic arrives (proxy, `--follow`).
    pub live: Option<Live>,
    /// The original run (0) and its forks.
    pub forks: Vec<Fork>,
    /// The fork shown.
    pub fork: usize,
    /// What the terminal adapter must do next, if anything.
    pub command: Option<Command>,
    /// Set in the guided tour.
    pub tour: Option<Tour>,
}

/// The tour's state.
#[derive(Debug, Clone)]
pub struct Tour {
    /// The session of each stop, in [`loopdbg_lesson::tour::STOPS`] order.
    pub sessions: Vec<Session>,
    /// The stop shown.
    pub index: usize,
    /// Stops answered right, now or in an earlier run.
    pub solved: BTreeSet<usize>,
    /// `T` at the last stop has said the tour is done: `T` again starts
    /// it over.
    pub end_said: bool,
    /// The language of the stops' words (the sessions are given in it).
    pub lang: loopdbg_lesson::tour::Lang,
}

/// The state of a live view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Live {
    /// Stick to the newest step as new traffic arrives (like `tail -f`).
    pub follow: bool,
    /// Where the traffic comes from, for the header.
    pub from: String,
    /// How many updates arrived.
    pub updates: u64,
    /// What is in flight at the traffic's source (a request whose answer
    /// has not ended), said in the header.
    pub in_flight: Option<String>,
    /// What the screen waits for while it shows no conversation yet (no
    /// traffic, no file): the end summary says that, and judges nothing.
    pub waiting: Option<String>,
    /// How far into a followed file the picture shown reaches, in bytes
    /// (`--follow`'s pictures say; 0 for the proxy's).
    pub covers: u64,
    /// The picture shown is the newest part of a followed log, shown
    /// before the whole log is judged again.
    pub previewing: bool,
}

/// What a live source tells the debugger.
#[derive(Debug, Clone)]
pub enum LiveEvent {
    /// A newer picture of the traffic.
    Update(Box<LiveUpdate>),
    /// What is in flight now (`None`: nothing).
    InFlight(Option<String>),
    /// The whole of what a preview showed the newest part of (a large
    /// log, read to its end): it takes the preview's place, the cursor as
    /// many steps from the newest as it was, and `alarm` is the notice.
    Loaded(Box<LiveUpdate>),
    /// The rest of a previewed log could not be read: the preview stays,
    /// and says why.
    NotLoaded(String),
    /// Something the follower says once (a log past what it may hold,
    /// from here on followed by its newest part): shown as the notice.
    Notice(String),
    /// What the screen waited for cannot be shown (a conversation the
    /// file does not hold): the debugger quits, and its caller says why.
    Failed,
    /// A followed log's newest part after a change (its newest
    /// conversation, judged within the part), shown at once while the
    /// whole log is judged again: shown only while the view follows, and
    /// only when newer than what is shown; its alarm is said either way.
    /// `covers` is how many bytes of the file it reaches.
    Preview {
        /// The newest part's picture.
        update: Box<LiveUpdate>,
        /// How many bytes of the file it reaches.
        covers: u64,
    },
    /// A followed file's whole picture, judged, reaching `covers` bytes:
    /// it takes a preview's place (the cursor as many steps from the
    /// newest as it was), unless a newer preview is on the screen while
    /// the view follows, which then takes only its alarm.
    Judged {
        /// The whole picture.
        update: Box<LiveUpdate>,
        /// How many bytes of the file it reaches.
        covers: u64,
    },
}

/// A picture a live event took off the screen, to be freed where it costs
/// the screen nothing ([`App::apply_live_event`]).
pub struct Displaced {
    /// Held only to be freed with the rest.
    _session: Session,
    trace: Trace,
    computed: Computed,
}

/// What the screen computes of a trace when it first draws it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Computed {
    /// The end summary: on a long replay it reads every tool result, and
    /// the first frame does not show it.
    analysis: std::cell::OnceCell<RunAnalysis>,
    /// The tokens and cost at the prices shown (every frame at the end of
    /// a long log summed every trip again: a 300 MB log's end drew in
    /// 0.4 s).
    tokens: std::cell::OnceCell<Option<loopdbg_formats::usage::Summary>>,
    /// What the tokens' maker summed, when it gave it: it takes it back
    /// with the trace to grow the next picture's ([`Displaced::into_parts`]).
    tally: Option<loopdbg_formats::usage::Tally>,
    /// What the end summary's maker read of the rounds, given back the
    /// same way.
    rounds: Option<loopdbg_lesson::checks::RoundsTally>,
    /// Where the trace's maker found its findings, given back the same
    /// way.
    placed: Option<loopdbg_export::replay::Placed>,
    /// The tokens and cost of the first k rounds, for every k: the
    /// summary says "so far" at each step, and summing (and pricing) every
    /// round before it held each step of a 1 GB log 0.17 s.
    so_far: std::cell::OnceCell<Vec<SoFar>>,
    /// The provider view's items of the whole trace, for the view they
    /// were made for: a step's are these, cut ([`SpansAt`]). Made again
    /// five times per frame, they held each step of a 1 GB log 0.2 s.
    spans: std::cell::RefCell<Option<(Format, std::sync::Arc<Vec<ViewSpan>>)>>,
    /// The token of the live picture the trace came with
    /// ([`LiveUpdate::token`]): forgotten with the rest when the trace is
    /// replaced otherwise.
    token: Option<u64>,
}

/// The provider view's items of the history at one step: the whole
/// trace's items cut where its history ends. Items are made by a fold
/// that never looks ahead, so a prefix's items are the whole's, the last
/// one cut short ([`loopdbg_formats::provider::spans`]).
pub struct SpansAt {
    all: std::sync::Arc<Vec<ViewSpan>>,
    /// How many items the step's history has.
    count: usize,
    /// How many messages the step's history has.
    history_len: usize,
}

impl SpansAt {
    /// How many items.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Item `i`, as `spans` of the step's history makes it.
    pub fn get(&self, i: usize) -> Option<ViewSpan> {
        let mut span = self.all.get(i).filter(|_| i < self.count)?.clone();
        span.from.end = span.from.end.min(self.history_len);
        Some(span)
    }

    /// Every item, as `spans` of the step's history makes them.
    pub fn iter(&self) -> impl Iterator<Item = ViewSpan> + '_ {
        (0..self.count).filter_map(|i| self.get(i))
    }

    /// The items as the whole trace has them: the last may reach past the
    /// step's history (for [`loopdbg_formats::provider::block_path`],
    /// which only looks up messages of the history).
    pub fn uncut(&self) -> &[ViewSpan] {
        &self.all[..self.count]
    }
}

/// The tokens of the rounds up to one, and their cost when every one of
/// them is priced.
pub type SoFar = (loopdbg_engine::message::Usage, Option<f64>);

/// The tokens of the first k rounds of `trace` at `prices`, for every k:
/// `sums`, those of its first rounds (`sums[k]` of the first k; empty,
/// or of a trace this one grew from, cut to the rounds it keeps), and
/// those after.
pub(crate) fn tokens_so_far(
    trace: &Trace,
    prices: &loopdbg_formats::prices::Prices,
    mut sums: Vec<SoFar>,
) -> Vec<SoFar> {
    sums.truncate(trace.rounds.len() + 1);
    let mut sum: SoFar = match sums.last() {
        Some(&sum) => sum,
        None => {
            let sum = (loopdbg_engine::message::Usage::default(), Some(0.0));
            sums.push(sum);
            sum
        }
    };
    sums.reserve(trace.rounds.len() + 1 - sums.len());
    // A long log names one model on every trip: priced once.
    let mut priced: Option<(&str, Option<loopdbg_formats::prices::Price>)> = None;
    for r in &trace.rounds[sums.len() - 1..] {
        if let Some(u) = &r.reply.usage {
            let model = r.reply.model.as_deref();
            let price = match (model, priced) {
                (Some(m), Some((was, price))) if m == was => price,
                (Some(m), _) => {
                    let price = prices.of(m).map(|(_, p)| *p);
                    priced = Some((m, price));
                    price
                }
                (None, _) => None,
            };
            sum.0.add(u);
            sum.1 = sum
                .1
                .zip(price.map(|p| prices.cost_at(&p, u)))
                .map(|(a, b)| a + b);
        }
        sums.push(sum);
    }
    sums
}

impl Computed {
    /// What `derived` computed ahead.
    fn of(derived: Derived) -> Computed {
        let so_far = match derived.so_far {
            Some(so_far) => std::cell::OnceCell::from(so_far),
            None => std::cell::OnceCell::new(),
        };
        Computed {
            analysis: std::cell::OnceCell::from(derived.analysis),
            tokens: std::cell::OnceCell::from(derived.tokens),
            tally: derived.tally,
            rounds: derived.rounds,
            placed: derived.placed,
            so_far,
            spans: std::cell::RefCell::new(None),
            token: None,
        }
    }
}

impl Displaced {
    /// True when freeing it takes long enough to free it elsewhere (a
    /// trace of more than about ten thousand steps).
    pub fn is_large(&self) -> bool {
        self.trace.len() > 10_000
    }

    /// The token its live picture came with, if its maker gave one: the
    /// maker may take the trace back to grow it ([`LiveUpdate::token`]).
    pub fn token(&self) -> Option<u64> {
        self.computed.token
    }

    /// The trace, the rest freed.
    pub fn into_trace(self) -> Trace {
        self.trace
    }

    /// The trace and what was derived of it that grows with it (the
    /// tokens and their tally, the tokens of each round so far), the rest
    /// freed.
    pub fn into_parts(mut self) -> (Trace, DerivedBack) {
        let tokens = self.computed.tokens.take().flatten();
        let back = DerivedBack {
            tokens: tokens.zip(self.computed.tally.take()),
            rounds: self.computed.rounds.take(),
            placed: self.computed.placed.take(),
            so_far: self.computed.so_far.take(),
        };
        (self.trace, back)
    }
}

/// What was derived of a picture taken off the screen that its maker
/// grows the next picture's from ([`LiveUpdate::derive_grown`]).
#[derive(Debug, Default)]
pub struct DerivedBack {
    pub(crate) tokens: Option<(
        loopdbg_formats::usage::Summary,
        loopdbg_formats::usage::Tally,
    )>,
    pub(crate) rounds: Option<loopdbg_lesson::checks::RoundsTally>,
    pub(crate) placed: Option<loopdbg_export::replay::Placed>,
    pub(crate) so_far: Option<Vec<SoFar>>,
}

impl DerivedBack {
    /// Where the findings of the trace it came with were found, for the
    /// maker to place the grown trace's with
    /// ([`loopdbg_export::replay::regrow_placed`]).
    pub fn take_placed(&mut self) -> Option<loopdbg_export::replay::Placed> {
        self.placed.take()
    }
}

/// A newer picture of live traffic: the conversation it shows, replayed.
#[derive(Debug, Clone)]
pub struct LiveUpdate {
    /// A session naming the conversation (title, prompt, tools).
    pub session: Session,
    /// The replayed conversation.
    pub trace: Trace,
    /// What the conversation was read as.
    pub source: String,
    /// Something to say now, if any: an alarm on a request the provider
    /// would reject, or (a followed file repaired) that it is resolved.
    pub alarm: Option<String>,
    /// Set on a placeholder: what the screen waits for.
    pub waiting: Option<String>,
    /// What the screen computes of the trace at its newest step, computed
    /// where the update was made ([`LiveUpdate::derive`]), so that a long
    /// log's end summary is not summed on the event loop (on a 1 GB log
    /// that held the screen 1.7 s after each update).
    pub derived: Option<Box<Derived>>,
    /// Set by a maker that takes its pictures back once they are off the
    /// screen, to grow the next one from them instead of building it
    /// (`--follow`): the picture this one displaces comes back with its
    /// token ([`Displaced::token`]).
    pub token: Option<u64>,
}

/// What the screen shows of a trace at its newest step, computed ahead.
#[derive(Debug, Clone)]
pub struct Derived {
    /// The end summary.
    pub analysis: RunAnalysis,
    /// The tokens and cost, at the prices they were computed at.
    pub tokens: Option<loopdbg_formats::usage::Summary>,
    /// What was summed for `tokens`, to grow the next picture's from.
    pub tally: Option<loopdbg_formats::usage::Tally>,
    /// What was read of the rounds for `analysis`, to grow the next
    /// picture's from.
    pub rounds: Option<loopdbg_lesson::checks::RoundsTally>,
    /// Where the trace's findings were found, when its maker says, to
    /// grow the next picture's from.
    pub placed: Option<loopdbg_export::replay::Placed>,
    /// The tokens of the first k rounds, for every k, at the same prices
    /// (made on the screen when `None`).
    pub so_far: Option<Vec<SoFar>>,
}

impl App {
    /// A debugger on `session`, run under `strategy`, at the first step.
    pub fn new(
        origin: impl Into<String>,
        session: Session,
        strategy: Strategy,
        theme: Theme,
    ) -> App {
        let trace = loopdbg_engine::run(&session, &strategy);
        // A session that loads fine may still hold a trap; say so up front.
        let findings = loopdbg_lesson::lint::lint(&session).len();
        let mut app = App::showing(origin, session, strategy, trace, theme);
        app.notice = (findings > 0).then(|| {
            format!("lint: {findings} finding(s) in this session — d shows them with the tools")
        });
        app
    }

    /// A debugger on a trace already made (a run, or a replay: a replay's
    /// trace comes from the file, and running its session again would only
    /// repeat that work before the first frame).
    fn showing(
        origin: impl Into<String>,
        session: Session,
        strategy: Strategy,
        trace: Trace,
        theme: Theme,
    ) -> App {
        App {
            computed: Computed::default(),
            origin: origin.into(),
            session,
            initial_strategy: strategy,
            trace,
            cursor: 0,
            focus: Pane::Messages,
            selected_message: None,
            ids_scroll: 0,
            walkthrough_scroll: 0,
            explain_scroll: 0,
            mode: Mode::Panes,
            last_search: String::new(),
            breakpoints: BTreeSet::new(),
            notice: None,
            theme,
            prices: std::sync::Arc::new(loopdbg_formats::prices::Prices::builtin()),
            size: (80, 24),
            quit: false,
            view: None,
            replay: None,
            parent: None,
            live: None,
            forks: Vec::new(),
            fork: 0,
            command: None,
            tour: None,
        }
    }

    /// The open popup, if any.
    pub fn popup(&self) -> Option<&Popup> {
        match &self.mode {
            Mode::Popup(p) => Some(p),
            _ => None,
        }
    }

    /// Opens `popup` over the panes.
    pub fn open(&mut self, popup: Popup) {
        self.mode = Mode::Popup(popup);
    }

    /// Closes the popup, if one is open.
    pub fn close_popup(&mut self) {
        if matches!(self.mode, Mode::Popup(_)) {
            self.mode = Mode::Panes;
        }
    }

    /// The search being typed, if any.
    pub fn search(&self) -> Option<&str> {
        match &self.mode {
            Mode::Search(q) => Some(q),
            _ => None,
        }
    }

    /// The end summary of the trace shown.
    pub fn analysis(&self) -> &RunAnalysis {
        self.computed
            .analysis
            .get_or_init(|| RunAnalysis::of(&self.trace))
    }

    /// The tokens and cost of the trace shown, at the prices shown.
    pub fn tokens(&self) -> Option<&loopdbg_formats::usage::Summary> {
        self.computed
            .tokens
            .get_or_init(|| loopdbg_formats::usage::of_trace(&self.trace, &self.prices))
            .as_ref()
    }

    /// The tokens of the first `rounds` rounds, and their cost when the
    /// prices shown price each of them (`None` once one is not).
    pub fn tokens_so_far(&self, rounds: usize) -> SoFar {
        let so_far = self
            .computed
            .so_far
            .get_or_init(|| tokens_so_far(&self.trace, &self.prices, Vec::new()));
        so_far.get(rounds).copied().unwrap_or_default()
    }

    /// The ids the loop has taken and not answered at the step shown.
    pub fn in_flight(&self) -> Vec<&str> {
        self.trace.in_flight_at(self.cursor)
    }

    /// The pairing ledger at the step shown, `in_flight` from
    /// [`App::in_flight`]: a view read as it is drawn, in time that grows
    /// with what is drawn, not with the history (a ledger built per step
    /// held each step of a 1 GB log 0.4 s).
    pub fn ledger<'a>(&'a self, in_flight: &'a [&'a str]) -> LedgerAt<'a> {
        let len = self.trace.step(self.cursor).history_len;
        self.trace.pairing.at(len, in_flight)
    }

    /// Forgets what was computed of the trace: called whenever `trace` is
    /// replaced.
    pub(crate) fn forget_derived(&mut self) -> Computed {
        std::mem::take(&mut self.computed)
    }

    /// How many sub-agent levels deep the debugger is.
    pub fn depth(&self) -> usize {
        self.parent.as_ref().map_or(0, |p| p.depth() + 1)
    }

    /// A debugger replaying a captured conversation (`trace` from
    /// [`loopdbg_export::replay::trace_of`]); strategy toggles are off.
    pub fn replay(
        origin: impl Into<String>,
        session: Session,
        trace: Trace,
        source: impl Into<String>,
        theme: Theme,
    ) -> App {
        let strategy = trace.strategy.clone();
        let mut app = App::showing(origin, session, strategy, trace, theme);
        app.replay = Some(source.into());
        app
    }

    /// Shows `session` run under `strategy`, at step `at` (or the last).
    /// Switching forks and tour stops go through here.
    pub fn show_run(&mut self, session: Session, strategy: &Strategy, at: usize) {
        self.trace = loopdbg_engine::run(&session, strategy);
        self.forget_derived();
        self.session = session;
        self.cursor = at.min(self.trace.len() - 1);
        self.selected_message = None;
    }

    /// A replay that grows as traffic arrives from `from`.
    pub fn live(
        origin: impl Into<String>,
        from: impl Into<String>,
        first: LiveUpdate,
        theme: Theme,
    ) -> App {
        let mut app = App::replay(origin, first.session, first.trace, first.source, theme);
        app.live = Some(Live {
            follow: true,
            from: from.into(),
            updates: 1,
            in_flight: None,
            waiting: first.waiting,
            covers: 0,
            previewing: false,
        });
        app.cursor = app.trace.len() - 1;
        app.notice = first.alarm;
        app
    }

    /// [`App::live`] opened on a followed log's newest part (`part`,
    /// reaching `covers` bytes of the file) while its whole picture is
    /// judged: the whole takes its place as a judged picture does after a
    /// [`LiveEvent::Preview`], so a gigabyte's first frame costs what its
    /// last megabyte costs.
    pub fn live_from_part(
        origin: impl Into<String>,
        from: impl Into<String>,
        part: LiveUpdate,
        covers: u64,
        theme: Theme,
    ) -> App {
        let mut app = App::live(origin, from, part, theme);
        if let Some(live) = app.live.as_mut() {
            live.covers = covers;
            live.previewing = true;
        }
        app
    }

    /// Takes what a live source says: a newer picture, or what is in
    /// flight. Gives back the picture it took off the screen, if any: a
    /// long log's is millions of allocations, which the caller frees off
    /// its event loop (freeing them there held a preview back 0.1 s).
    pub fn apply_live_event(&mut self, event: LiveEvent) -> Option<Displaced> {
        match event {
            LiveEvent::Update(update) => self.apply_live(*update),
            LiveEvent::Loaded(whole) => self.root_mut().apply_loaded(*whole),
            LiveEvent::Preview { update, covers } => self.root_mut().apply_preview(*update, covers),
            LiveEvent::Judged { update, covers } => self.root_mut().apply_judged(*update, covers),
            LiveEvent::Failed => {
                self.root_mut().quit = true;
                None
            }
            LiveEvent::Notice(what) => {
                self.root_mut().notice = Some(what);
                None
            }
            LiveEvent::NotLoaded(why) => {
                self.root_mut().notice = Some(format!(
                    "showing only the newest part: the rest could not be read: {why}"
                ));
                None
            }
            LiveEvent::InFlight(what) => {
                let mut app = self;
                while let Some(parent) = app.parent.as_deref_mut() {
                    app = parent;
                }
                if let Some(live) = app.live.as_mut() {
                    live.in_flight = what;
                }
                None
            }
        }
    }

    /// The debugger a sub-agent look was opened from, or this one.
    fn root_mut(&mut self) -> &mut App {
        match self.parent {
            Some(ref mut parent) => parent.root_mut(),
            None => self,
        }
    }

    /// Puts `update`'s picture on the screen, with what it computed
    /// ahead; gives back the picture it replaces.
    fn replace_picture(&mut self, update: LiveUpdate) -> Displaced {
        let derived = self.forget_derived();
        self.replay = Some(update.source);
        let old = Displaced {
            _session: std::mem::replace(&mut self.session, update.session),
            trace: std::mem::replace(&mut self.trace, update.trace),
            computed: derived,
        };
        if let Some(derived) = update.derived {
            self.computed = Computed::of(*derived);
        }
        self.computed.token = update.token;
        old
    }

    /// The whole log in place of its preview: the cursor keeps its
    /// distance from the newest step (the preview's steps are the whole
    /// log's last ones), and the findings, which the preview could not
    /// judge, are the whole log's.
    fn apply_loaded(&mut self, whole: LiveUpdate) -> Option<Displaced> {
        let from_newest = self
            .trace
            .len()
            .saturating_sub(1)
            .saturating_sub(self.cursor);
        let alarm = whole.alarm.clone();
        let old = self.replace_picture(whole);
        self.cursor = (self.trace.len() - 1).saturating_sub(from_newest);
        self.selected_message = None;
        self.notice = alarm;
        Some(old)
    }

    /// A followed log's newest part, when the view follows and it is newer
    /// than what is shown (a paused view keeps what the user is reading).
    /// Its alarm is said either way: the part's rejections are judged
    /// with it, seconds before the whole log's.
    fn apply_preview(&mut self, update: LiveUpdate, covers: u64) -> Option<Displaced> {
        if let Some(alarm) = &update.alarm {
            self.notice = Some(alarm.clone());
        }
        let live = self.live.as_mut()?;
        if !live.follow || covers <= live.covers {
            return None;
        }
        live.covers = covers;
        live.previewing = true;
        live.updates += 1;
        let old = self.replace_picture(update);
        self.cursor = self.trace.len() - 1;
        self.selected_message = None;
        Some(old)
    }

    /// A followed file's whole picture, judged: in place of a preview (the
    /// cursor keeps its distance from the newest step, as the preview's
    /// steps are the whole's last ones) or of the whole before it.
    fn apply_judged(&mut self, update: LiveUpdate, covers: u64) -> Option<Displaced> {
        let Some(live) = self.live.as_mut() else {
            return self.apply_live(update);
        };
        if live.previewing && live.follow && covers < live.covers {
            // A newer part is on the screen: the newest step stays; the
            // findings' alarm is said now.
            if let Some(alarm) = update.alarm {
                self.notice = Some(alarm);
            }
            return None;
        }
        live.covers = covers;
        if std::mem::take(&mut live.previewing) && !live.follow {
            live.updates += 1;
            let before = self.notice.take();
            let old = self.apply_loaded(update);
            if self.notice.is_none() {
                self.notice = before;
            }
            return old;
        }
        self.apply_live(update)
    }

    /// Shows a newer picture of the live traffic: the cursor stays where
    /// the user put it, or moves to the newest step when following.
    pub fn apply_live(&mut self, update: LiveUpdate) -> Option<Displaced> {
        if let Some(parent) = self.parent.as_mut() {
            // Inside a sub-agent look: the parent gets the update.
            return parent.apply_live(update);
        }
        let (waiting, alarm) = (update.waiting.clone(), update.alarm.clone());
        let old = self.replace_picture(update);
        let last = self.trace.len() - 1;
        let follow = match self.live.as_mut() {
            Some(live) => {
                live.updates += 1;
                live.waiting = waiting;
                live.follow
            }
            None => false,
        };
        self.cursor = if follow { last } else { self.cursor.min(last) };
        if follow {
            self.selected_message = None;
        }
        if let Some(alarm) = alarm {
            self.notice = Some(alarm);
        }
        Some(old)
    }

    /// The messages as the current view shows them: one item per canonical
    /// message, or per provider message / input item.
    pub fn view_items(&self) -> Vec<ViewItem> {
        let history = self.trace.history_at(self.cursor);
        match self.view {
            Some(format) => loopdbg_formats::provider::render(format, history),
            None => history
                .iter()
                .enumerate()
                .map(|(i, m)| ViewItem {
                    json: serde_json::to_value(m).unwrap_or_default(),
                    role: m.role.as_str().to_string(),
                    from: i..i + 1,
                })
                .collect(),
        }
    }

    /// The provider view's items at this step (`None` in the canonical
    /// view): made once per trace and view, cut at each step.
    pub fn view_spans(&self) -> Option<SpansAt> {
        let format = self.view?;
        let mut cached = self.computed.spans.borrow_mut();
        let all = match cached.as_ref() {
            Some((made_for, all)) if *made_for == format => all.clone(),
            _ => {
                let all = std::sync::Arc::new(loopdbg_formats::provider::spans(
                    format,
                    &self.trace.messages,
                ));
                *cached = Some((format, all.clone()));
                all
            }
        };
        let history_len = self.trace.step(self.cursor).history_len;
        let count = all.partition_point(|s| s.from.start < history_len);
        Some(SpansAt {
            all,
            count,
            history_len,
        })
    }

    /// How many items the messages pane lists at this step.
    pub fn view_len(&self) -> usize {
        match self.view_spans() {
            Some(spans) => spans.len(),
            None => self.trace.history_at(self.cursor).len(),
        }
    }

    /// Item `i` of the current provider view, rendered alone.
    pub fn view_item(&self, i: usize) -> Option<ViewItem> {
        let format = self.view?;
        let history = self.trace.history_at(self.cursor);
        let span = self.view_spans()?.get(i)?;
        loopdbg_formats::provider::render_span(format, history, &span)
    }

    /// The strategy of the trace shown.
    pub fn strategy(&self) -> &Strategy {
        &self.trace.strategy
    }

    /// The item the messages pane highlights (an index into the view).
    pub fn selected_message(&self) -> Option<usize> {
        let len = self.view_len();
        match self.selected_message {
            Some(i) if i < len => Some(i),
            _ => len.checked_sub(1),
        }
    }

    /// The canonical messages behind item `i` of the messages pane.
    pub fn history_range_of(&self, i: usize) -> std::ops::Range<usize> {
        match self.view_spans() {
            Some(spans) => spans.get(i).map_or(i..i, |s| s.from),
            None => i..i + 1,
        }
    }

    /// The tool_use ↔ tool_result links of the selected message, while the
    /// messages pane has the focus: selecting a call lights its result and
    /// the reverse, in the messages and the ids panes alike.
    pub fn links(&self) -> Links {
        let mut links = Links::default();
        if self.focus != Pane::Messages || self.popup().is_some() {
            return links;
        }
        let Some(selected) = self.selected_message() else {
            return links;
        };
        let range = self.history_range_of(selected);
        let in_flight = self.in_flight();
        (links.calls, links.messages) = self.ledger(&in_flight).links(range);
        links
    }

    /// True at the last step.
    pub fn at_end(&self) -> bool {
        self.cursor + 1 >= self.trace.len()
    }
}

/// What the selected message pairs with (see [`App::links`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Links {
    /// History indices of the partner messages: the results of the
    /// selected calls, or the calls the selected results answer.
    pub messages: Vec<usize>,
    /// The tool_use blocks involved, as the ledger lists them.
    pub calls: Vec<loopdbg_engine::ledger::Position>,
}
