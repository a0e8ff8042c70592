//! Step and toggle latency on a large session (sessions/large_loop.json:
//! 5000 rounds of three parallel calls, ~45,000 steps, ~10,000 messages).
//! Every key press must be answered within one frame.

use criterion::{Criterion, criterion_group, criterion_main};
use loopdbg::tui::theme::Theme;
use loopdbg::tui::{Action, App, update};
use loopdbg::{Session, Strategy};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::hint::black_box;

fn large() -> Session {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/sessions/large_loop.json");
    Session::parse(path, &std::fs::read_to_string(path).unwrap()).unwrap()
}

fn apply(app: &mut App, action: Action) {
    let mut next = Some(action);
    while let Some(a) = next {
        next = update(app, a);
    }
}

fn bench(c: &mut Criterion) {
    let session = large();
    let strategy = Strategy::for_session(&session);

    c.bench_function("engine: record 5000 rounds", |b| {
        b.iter(|| loopdbg::run(black_box(&session), black_box(&strategy)))
    });

    let mut app = App::new(
        "large_loop.json",
        session.clone(),
        strategy.clone(),
        Theme::color(),
    );
    apply(&mut app, Action::Resize(120, 40));
    let middle = app.trace.len() / 2;
    app.cursor = middle;
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();

    c.bench_function("key: step forward + draw 120x40 (mid-trace)", |b| {
        b.iter(|| {
            app.cursor = middle;
            apply(&mut app, Action::StepForward);
            terminal.draw(|f| f.render_widget(&app, f.area())).unwrap();
        })
    });

    c.bench_function("key: step back + draw 120x40 (mid-trace)", |b| {
        b.iter(|| {
            app.cursor = middle;
            apply(&mut app, Action::StepBack);
            terminal.draw(|f| f.render_widget(&app, f.area())).unwrap();
        })
    });

    c.bench_function("key: continue to end + draw", |b| {
        b.iter(|| {
            app.cursor = middle;
            apply(&mut app, Action::Last);
            terminal.draw(|f| f.render_widget(&app, f.area())).unwrap();
        })
    });

    c.bench_function("key: step forward + draw in the Anthropic wire view", |b| {
        apply(&mut app, Action::CycleView);
        b.iter(|| {
            app.cursor = middle;
            apply(&mut app, Action::StepForward);
            terminal.draw(|f| f.render_widget(&app, f.area())).unwrap();
        });
        app.view = None;
    });

    c.bench_function("key: toggle extraction (re-run 5000 rounds) + draw", |b| {
        b.iter(|| {
            app.cursor = middle;
            apply(&mut app, Action::ToggleExtract);
            terminal.draw(|f| f.render_widget(&app, f.area())).unwrap();
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
