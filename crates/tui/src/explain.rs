//! One sentence on what the current phase does and why it matters. Pure:
//! derived from the trace and the step, so it is the same forwards and back.

use loopdbg_engine::strategy::{Extract, StopRule, Strategy};
use loopdbg_engine::trace::{CallStatus, Phase, Round, Step, Trace};
use loopdbg_lesson::report::{clean, compact, show_text};

fn clip(text: &str, max: usize) -> String {
    let text = clean(text);
    if text.chars().count() <= max {
        text
    } else {
        let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

/// The explanation of step `k`, and what a provider (or loopdbg) says of
/// this very step: a replay's findings arise where they do, not at the end.
pub fn explain(trace: &Trace, k: usize, tool_count: usize) -> String {
    let mut text = explain_phase(trace, k, tool_count);
    // A run's own violation is what the phase sentence says; a replay's
    // is a finding in the provider's words (and what the log shows of it).
    let replay = trace.is_replay();
    let described = trace
        .round(trace.step(k).round)
        .and_then(|r| r.violation)
        .filter(|&v| trace.violations[v].step == k && !replay);
    for (i, v) in trace.violations.iter().enumerate() {
        if v.step == k && Some(i) != described {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str("⚠ ");
            text.push_str(&clean(&v.message));
        }
    }
    text
}

/// What a phase's explanation reads: the step, its round, the strategy.
#[derive(Clone, Copy)]
struct At<'a> {
    trace: &'a Trace,
    k: usize,
    step: &'a Step,
    round: Option<&'a Round>,
    strategy: &'a Strategy,
    tool_count: usize,
}

fn explain_phase(trace: &Trace, k: usize, tool_count: usize) -> String {
    let step = trace.step(k);
    let at = At {
        trace,
        k,
        step,
        round: trace.round(step.round),
        strategy: &trace.strategy,
        tool_count,
    };
    match step.phase {
        Phase::Request => request(&at),
        Phase::Reply if step.event == Some(loopdbg_engine::trace::StepEvent::StreamBroke) => {
            stream_broke(&at)
        }
        Phase::Reply => reply(&at),
        Phase::Extract => extract(&at),
        Phase::Execute => execute(&at),
        Phase::Close => close(&at),
        Phase::Append
            if step.event == Some(loopdbg_engine::trace::StepEvent::LateResultRejected) =>
        {
            late_result(&at)
        }
        Phase::Append => append(&at),
        Phase::Decide => decide(&at),
        Phase::Done => done(&at),
    }
}

/// A request: what it carries, and what a provider does with it.
fn request(at: &At<'_>) -> String {
    let At {
        trace,
        k,
        step,
        round,
        tool_count,
        ..
    } = *at;
    let base = if step.round == 1 {
        format!(
            "Trip 1 starts: the user message goes out with {tool_count} tool definition(s); the model may name a tool instead of answering."
        )
    } else {
        format!(
            "Request {} sends the whole history, tool results included; the model reads them to write the next reply.",
            step.round
        )
    };
    match round
        .and_then(|r| r.violation)
        .map(|v| &trace.violations[v])
        .filter(|v| v.step == k)
    {
        // A replay has no stub, and its finding (appended below)
        // says it in the provider's words with what the file shows.
        Some(_) if trace.is_replay() => String::new(),
        Some(v) => format!(
            "{} has no tool_result: a provider would reject this request with a 400. The stub accepts it so you can see what the loop does next.",
            clean(&v.ids.join(", "))
        ),
        None if round.is_some_and(|r| r.reply_message.is_none())
            && trace.is_replay() =>
        {
            "The provider refused this request: the log holds its error where the reply would be, and no reply joins the history.".to_string()
        }
        None => base,
    }
}

/// A reply stream that broke after some calls started.
fn stream_broke(at: &At<'_>) -> String {
    let At { round, .. } = *at;
    let Some(f) = round.and_then(|r| r.fallback.as_ref()) else {
        return "The reply stream broke.".into();
    };
    let started: Vec<String> = f
        .partial
        .iter()
        .map(|c| format!("{} {}", clean(&c.name), clean(&c.id)))
        .collect();
    format!(
        "The reply stream broke at {} ms after {} tool_use block(s) arrived ({}); the streaming executor had already started them. The loop discards that executor and retries without streaming.",
        f.broke_at_ms,
        f.partial.len(),
        started.join(", ")
    )
}

/// The model's reply: text, calls, and how it finished.
fn reply(at: &At<'_>) -> String {
    let At { step, round, .. } = *at;
    let Some(r) = round else {
        return "The stub model had no reply.".into();
    };
    if step.event == Some(loopdbg_engine::trace::StepEvent::Retried) {
        let ids: Vec<String> = r.reply.tool_calls.iter().map(|c| clean(&c.id)).collect();
        return format!(
            "The retry replied: a new response, so its calls carry new ids ({}); results for the broken stream's ids must not be appended.",
            ids.join(", ")
        );
    }
    let calls = r.reply.tool_calls.len();
    let finish = r.reply.finish_reason();
    if r.reply_message.is_none() {
        let why = match finish {
            loopdbg_engine::session::FinishReason::Length => "the reply was cut off by max_tokens",
            _ => "the reply was withheld by a content filter",
        };
        return format!(
            "finish_reason {}: {why}, so the robust loop stops with an error before this reply joins the history or any tool runs.",
            finish.as_str()
        );
    }
    let repeat = if r.identical_run >= 2 {
        format!(
            " The same reply {} times in a row: the loop is spinning.",
            r.identical_run
        )
    } else {
        String::new()
    };
    let cut = if finish == loopdbg_engine::session::FinishReason::Length {
        " The reply was cut off by max_tokens (finish_reason length): it is unfinished, neither an answer nor a complete call."
    } else {
        ""
    };
    if calls == 0 {
        format!(
            "The model answers with text {} and no tool calls (finish_reason {}).{cut}{repeat}",
            clip(&show_text(r.reply.text.as_deref()), 60),
            finish.as_str()
        )
    } else if !r.reply.has_text() {
        // No text to mistake for the answer: say so in words, not `null`.
        format!(
            "The reply names {calls} tool call(s) and says nothing else (finish_reason {}).{cut}{repeat}",
            finish.as_str()
        )
    } else {
        format!(
            "The reply names {calls} tool call(s) (finish_reason {}); its text {} is not the answer: do not show it as one.{cut}{repeat}",
            finish.as_str(),
            clip(&show_text(r.reply.text.as_deref()), 40)
        )
    }
}

/// Which calls the loop takes from the reply.
fn extract(at: &At<'_>) -> String {
    let At {
        round, strategy, ..
    } = *at;
    let Some(r) = round else {
        return String::new();
    };
    let n = r.reply.tool_calls.len();
    if n == 0 {
        return "No tool_use blocks to extract.".into();
    }
    match strategy.extract {
        Extract::First if !r.dropped.is_empty() => {
            let dropped: Vec<String> = r
                .dropped
                .iter()
                .map(|&i| clean(&r.reply.tool_calls[i].id))
                .collect();
            format!(
                "`first` (content.find) takes only the first tool_use block of the reply; {} {} dropped and will never get a result.",
                dropped.join(", "),
                if dropped.len() == 1 { "is" } else { "are" }
            )
        }
        Extract::First => {
            "`first` (content.find) takes the first tool_use block; there is only one, so nothing is lost here.".into()
        }
        Extract::All => format!(
            "`all` (filter) takes every tool_use block of the reply: all {n} call(s) will run and each will get a result by its id."
        ),
    }
}

/// One call running, and where the batch stands.
fn execute(at: &At<'_>) -> String {
    let At { step, round, .. } = *at;
    let Some(r) = round else {
        return String::new();
    };
    let Some(e) = step.execution.and_then(|i| r.executions.get(i)) else {
        return String::new();
    };
    let what = match e.status {
        CallStatus::Finished if !e.outcome.ran => format!(
            "{} is refused without running: {}",
            clip(&e.name, 30),
            clip(&compact(&e.outcome.content), 70)
        ),
        CallStatus::Finished => format!(
            "{}({}) returns {}{}; the model never calls your function itself",
            clip(&e.name, 30),
            clip(&compact(&e.args), 40),
            clip(&compact(&e.outcome.content), 60),
            if e.outcome.is_error {
                " as an error result"
            } else {
                ""
            }
        ),
        CallStatus::Failed => format!(
            "{} fails: {}{}",
            clip(&e.name, 30),
            clip(&compact(&e.outcome.content), 60),
            if r.executions
                .iter()
                .any(|x| x.status == CallStatus::Cancelled)
            {
                " — a hard failure: the loop cancels its siblings"
            } else {
                ""
            }
        ),
        CallStatus::TimedOut => format!(
            "{} runs past its timeout and becomes an error result",
            clip(&e.name, 30)
        ),
        CallStatus::Cancelled => {
            format!("{} is cancelled because a sibling failed", clip(&e.id, 30))
        }
        CallStatus::Interrupted => {
            format!("the user interrupts: {} had not finished", clip(&e.id, 30))
        }
        CallStatus::Dropped => String::new(),
    };
    // Progress of the whole batch at this moment.
    let progress: Vec<String> = r
        .executions
        .iter()
        .enumerate()
        .filter(|(_, x)| x.status != CallStatus::Dropped)
        .map(|(i, x)| {
            let ended = at.trace.has_ended_at(at.k, r.number, i);
            let state = if !ended { "running" } else { x.status.as_str() };
            format!("{} {state}", clip(&x.id, 16))
        })
        .collect();
    format!("@{}ms {what}. [{}]", step.time_ms, progress.join(" · "))
}

/// What happens to calls left without a result.
fn close(at: &At<'_>) -> String {
    let At {
        round, strategy, ..
    } = *at;
    let Some(r) = round else {
        return String::new();
    };
    let open: Vec<String> = r
        .executions
        .iter()
        .filter(|e| !e.status.has_result())
        .map(|e| format!("{} ({})", clean(&e.id), e.status.as_str()))
        .collect();
    match strategy.closure {
        loopdbg_engine::strategy::Closure::Synthesize => format!(
            "Closure synthesize: {} get a placeholder error result, so every tool_use is answered before the next request.",
            open.join(", ")
        ),
        loopdbg_engine::strategy::Closure::Strip if r.stripped.is_empty() => {
            "Closure strip: every call got a result; the reply joins the history as it came."
                .to_string()
        }
        loopdbg_engine::strategy::Closure::Strip => format!(
            "Closure strip: the tool_use blocks of {} are removed before the reply joins the history, so nothing dangles.",
            r.stripped
                .iter()
                .map(|&i| clean(&r.reply.tool_calls[i].id))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        loopdbg_engine::strategy::Closure::Leave => {
            let dangling: Vec<String> = r
                .dropped
                .iter()
                .map(|&i| format!("{} (dropped by `first`)", clean(&r.reply.tool_calls[i].id)))
                .chain(open)
                .collect();
            format!(
                "Closure leave: nothing is done, so {} stay{} without a tool_result; any later request carries the gap, and the provider rejects it with a 400.",
                dangling.join(", "),
                if dangling.len() == 1 { "s" } else { "" }
            )
        }
    }
}

/// A discarded executor's late result, rejected.
fn late_result(at: &At<'_>) -> String {
    let At { step, round, .. } = *at;
    let late = round
        .and_then(|r| r.fallback.as_ref())
        .and_then(|f| f.rejected.iter().find(|(_, at)| *at == step.time_ms))
        .map(|(id, _)| clean(id))
        .unwrap_or_else(|| "an old id".into());
    format!(
        "At {} ms the discarded streaming executor's result for {late} arrives: rejected, not appended (that id belongs to the broken stream; it would pair with nothing, or with the wrong call).",
        step.time_ms
    )
}

/// A result joining the history.
fn append(at: &At<'_>) -> String {
    let At { step, round, .. } = *at;
    let Some(e) = round.and_then(|r| step.execution.and_then(|i| r.executions.get(i))) else {
        return String::new();
    };
    format!(
        "The result joins the history as a tool message quoting {}, so the next request pairs it with its tool_use.",
        clean(&e.id)
    )
}

/// Whether the loop stops.
fn decide(at: &At<'_>) -> String {
    let At {
        round, strategy, ..
    } = *at;
    let reason = round
        .and_then(|r| r.decision.as_ref())
        .map(|d| clean(&d.reason))
        .unwrap_or_default();
    let rule = match strategy.stop {
        StopRule::Robust => "robust",
        other => other.as_str(),
    };
    format!("Stop rule {rule}: {reason}.")
}

/// How the run ended.
fn done(at: &At<'_>) -> String {
    let At { trace, .. } = *at;
    format!(
        "Done: {} ({}).",
        trace.outcome.end.as_str(),
        clean(&trace.outcome.detail)
    )
}

/// At a Request step the provider would reject: the provider's own words,
/// found by checking the very body `format` would receive (Anthropic for
/// the canonical view), so the debugger and `check` say the same thing.
pub fn provider_rejection(
    session: &loopdbg_engine::session::Session,
    trace: &Trace,
    k: usize,
    format: loopdbg_formats::provider::Format,
) -> Option<String> {
    let step = trace.step(k);
    if step.phase != Phase::Request || step.unpaired == 0 {
        return None;
    }
    let history = trace.history_at(k);
    let body = loopdbg_formats::provider::request_body(format, session, history, "model");
    let conversation =
        loopdbg_read::read_owned(body, loopdbg_read::Source::Provider(format)).ok()?;
    let finding = loopdbg_judge::check::check(&conversation)
        .into_iter()
        .find(|f| f.rejected_by_provider())?;
    let both = finding
        .other_place_named()
        .map(|both| format!(" ({})", clean(&both)))
        .unwrap_or_default();
    Some(format!(
        "{} would answer 400 ({}): {}{both}",
        format.title(),
        finding.path,
        clean(&finding.message)
    ))
}
