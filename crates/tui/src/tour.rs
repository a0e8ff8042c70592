//! The guided tour in the debugger: which stop is open, the answer being
//! typed, which stops are solved. Part of `update`: pure; saving progress
//! is a [`Command`] for the adapter.

use std::collections::BTreeSet;

use crate::app::{App, Command, Mode, Tour};
use crate::theme::Theme;
use loopdbg_engine::session::Session;
use loopdbg_engine::strategy::Strategy;
use loopdbg_lesson::tour::{Lang, STOPS};

impl App {
    /// The debugger as a guided tour in English, at the first stop not
    /// yet solved. `sessions` holds one session per stop of [`STOPS`].
    pub fn tour(sessions: Vec<Session>, solved: BTreeSet<usize>, theme: Theme) -> App {
        App::tour_in(Lang::En, sessions, solved, theme)
    }

    /// The tour in `lang`: its words, and `sessions` as
    /// [`loopdbg_lesson::tour::sessions`] gives them in that language.
    pub fn tour_in(
        lang: Lang,
        sessions: Vec<Session>,
        solved: BTreeSet<usize>,
        theme: Theme,
    ) -> App {
        let index = (0..STOPS.len()).find(|i| !solved.contains(i)).unwrap_or(0);
        let (strategy, session) = stop_strategy(&sessions, index);
        let mut app = App::new(
            lang.session_path(STOPS[index].session),
            session,
            strategy,
            theme,
        );
        app.tour = Some(Tour {
            sessions,
            index,
            solved,
            end_said: false,
            lang,
        });
        app
    }
}

fn stop_strategy(sessions: &[Session], index: usize) -> (Strategy, Session) {
    let session = sessions[index].clone();
    let strategy = loopdbg_lesson::tour::opening_strategy(&STOPS[index], &session);
    (strategy, session)
}

/// Opens stop `index`.
fn open(app: &mut App, index: usize) {
    let Some(tour) = app.tour.as_mut() else {
        return;
    };
    tour.index = index;
    let (strategy, session) = stop_strategy(&tour.sessions, index);
    app.origin = tour.lang.session_path(STOPS[index].session);
    app.show_run(session, &strategy, 0);
    app.initial_strategy = strategy;
    app.mode = Mode::Panes;
    // The box starts at the new stop's top, not where the last one was.
    app.explain_scroll = 0;
    app.forks.clear();
    app.fork = 0;
    app.notice = None;
}

/// `a`: start typing an answer.
pub(super) fn start_answer(app: &mut App) {
    match app.tour {
        Some(_) => app.mode = Mode::Answer(String::new()),
        None => {
            app.notice =
                Some("a answers a tour question: start the tour with `loopdbg tour`".into())
        }
    }
}

/// True while an answer is being typed.
pub fn typing(app: &App) -> bool {
    matches!(app.mode, Mode::Answer(_))
}

/// A key typed into the answer: a character, erase, submit or cancel.
pub(super) fn type_key(app: &mut App, key: Key) {
    let Mode::Answer(typed) = &mut app.mode else {
        return;
    };
    match key {
        Key::Char(c) => typed.push(c),
        Key::Erase => {
            typed.pop();
        }
        Key::Cancel => app.mode = Mode::Panes,
        Key::Submit => {
            let typed = std::mem::take(typed);
            app.mode = Mode::Panes;
            let Some(tour) = app.tour.as_mut() else {
                return;
            };
            let index = tour.index;
            let stop = &STOPS[index];
            let (words, chrome) = (stop.words(tour.lang), tour.lang.chrome());
            let session = &tour.sessions[index];
            let right = (stop.answer)(
                session,
                &loopdbg_lesson::tour::opening_strategy(stop, session),
            );
            if right.accepts(&typed) {
                tour.solved.insert(index);
                let last = tour.solved.len() == STOPS.len();
                app.notice = Some(format!(
                    "{}{}. {}",
                    chrome.right,
                    words.lesson,
                    if last { chrome.all_done } else { chrome.go_on }
                ));
                app.command = Some(Command::SaveTour(tour.solved.iter().copied().collect()));
            } else {
                app.notice = Some(
                    chrome
                        .wrong
                        .replace(
                            "{typed}",
                            &format!("{:?}", loopdbg_lesson::report::clean(&typed)),
                        )
                        .replace("{press}", words.press),
                );
            }
        }
    }
}

/// What a typed key does to the answer.
pub(super) enum Key {
    Char(char),
    Erase,
    Submit,
    Cancel,
}

/// `T`: the next stop. At the last it says the tour is done, and how
/// many stops were answered; `T` again starts over (it went back to the
/// first silently).
pub(super) fn next(app: &mut App) {
    let Some(tour) = app.tour.as_mut() else {
        app.notice = Some("T moves through the tour: start it with `loopdbg tour`".into());
        return;
    };
    if tour.index + 1 == STOPS.len() && !tour.end_said {
        tour.end_said = true;
        let answered = tour.solved.len();
        let chrome = tour.lang.chrome();
        app.notice = Some(
            chrome
                .last_stop
                .replace("{answered}", &answered.to_string())
                .replace("{stops}", &STOPS.len().to_string())
                .replace(
                    "{more}",
                    match answered == STOPS.len() {
                        true => "",
                        false => chrome.answer_this_one,
                    },
                ),
        );
        return;
    }
    tour.end_said = false;
    let next = (tour.index + 1) % STOPS.len();
    open(app, next);
}
