//! Step and toggle latency on a large session (sessions/large_loop.json:
//! 5000 rounds of three parallel calls, ~45,000 steps, ~10,000 messages).
//! Every key press must be answered within one frame.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests, benches and examples may panic on what they set up
#![allow(missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use loopdbg_engine::{Session, Strategy};
use loopdbg_tui::theme::Theme;
use loopdbg_tui::{Action, App, update};
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
        b.iter(|| loopdbg_engine::run(black_box(&session), black_box(&strategy)))
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

/// A captured conversation of 3000 turns with two calls each (6000 ids),
/// every tenth turn losing a result: a long agent log to replay.
fn big_conversation() -> loopdbg_read::Conversation {
    let mut msgs = vec![serde_json::json!({"role": "user", "content": "go"})];
    for r in 0..3000 {
        msgs.push(serde_json::json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": format!("toolu_{r}_a"), "name": "read", "input": {"n": r}},
            {"type": "tool_use", "id": format!("toolu_{r}_b"), "name": "read", "input": {"n": r + 1}}]}));
        let mut results = vec![
            serde_json::json!({"type": "tool_result", "tool_use_id": format!("toolu_{r}_a"), "content": "x"}),
        ];
        if r % 10 != 0 {
            results.push(serde_json::json!({"type": "tool_result", "tool_use_id": format!("toolu_{r}_b"), "content": "y"}));
        }
        msgs.push(serde_json::json!({"role": "user", "content": results}));
    }
    let doc = serde_json::json!({ "messages": msgs });
    loopdbg_read::read(&doc, loopdbg_read::detect(&doc).unwrap()).unwrap()
}

fn replay(c: &mut Criterion) {
    let conv = big_conversation();
    c.bench_function("replay: check + trace of a 6000-call conversation", |b| {
        b.iter(|| {
            let findings = loopdbg_judge::check::check(&conv);
            loopdbg_export::replay::trace_of(&conv, &findings)
        })
    });
    let findings = loopdbg_judge::check::check(&conv);
    let trace = loopdbg_export::replay::trace_of(&conv, &findings);
    let session = loopdbg_export::replay::session_for(&conv, "replay");
    let mut app = App::replay("big.json", session, trace, "anthropic", Theme::color());
    apply(&mut app, Action::Resize(120, 40));
    let middle = app.trace.len() / 2;
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    c.bench_function("replay: step + draw with 6000 ids in the ledger", |b| {
        b.iter(|| {
            app.cursor = middle;
            apply(&mut app, Action::StepForward);
            terminal.draw(|f| f.render_widget(&app, f.area())).unwrap();
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench, replay
}
criterion_main!(benches);
