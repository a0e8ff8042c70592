//! The guided tour: the shipped sessions in the order that teaches the loop
//! (one tool and its two trips; two calls in one turn and what `first`
//! costs; the stop rules and a reply cut by `max_tokens`; an interrupt and
//! its closure; what closure hides), each with what to press and a
//! question answered from the screen. The right answers are computed from the engine's own runs, not
//! written down, so they can never drift from what the screen shows.

use loopdbg_engine::ledger::Ledger;
use loopdbg_engine::session::Session;
use loopdbg_engine::strategy::{Closure, Extract, StopRule, Strategy};
use loopdbg_engine::trace::Phase;

/// One stop of the tour.
pub struct Stop {
    /// The shipped session it opens (`sessions/NAME`).
    pub session: &'static str,
    /// Its words in English.
    pub en: Words,
    /// The strategy the stop opens with.
    pub setup: fn(&mut Strategy),
    /// The right answer, from the engine run under the stop's strategy.
    pub answer: fn(&Session, &Strategy) -> Answer,
    /// The step `press` asks the learner to reach, in the run on screen,
    /// so the screen can say when they are there (a newcomer overshot it).
    pub at: fn(&loopdbg_engine::trace::Trace) -> usize,
    /// The same stop in Chinese, the seeds' language.
    pub zh: Words,
}

/// A stop's words in one language.
#[derive(Debug, Clone, Copy)]
pub struct Words {
    /// What this stop is about.
    pub title: &'static str,
    /// What to press.
    pub press: &'static str,
    /// The question, answered from the screen.
    pub question: &'static str,
    /// What the learner should take away, shown once answered.
    pub lesson: &'static str,
}

impl Stop {
    /// The stop's words in `lang`.
    pub fn words(&self, lang: Lang) -> Words {
        match lang {
            Lang::En => self.en,
            Lang::Zh => self.zh,
        }
    }
}

/// The tour's language: English by default, Chinese (the seeds' language,
/// and the shipped sessions') when asked or when the locale is Chinese.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lang {
    /// English: the stops' words, and the sessions' English companions
    /// (`sessions/en/`), so the evidence reads too.
    #[default]
    En,
    /// Chinese: the stops' words translated, and the sessions as shipped.
    Zh,
}

impl Lang {
    /// The language the locale asks for (`LC_ALL`, `LC_MESSAGES`, `LANG`,
    /// the first set, as gettext reads them): Chinese for `zh…`, else
    /// English.
    pub fn of_locale(var: impl Fn(&str) -> Option<String>) -> Lang {
        let locale = ["LC_ALL", "LC_MESSAGES", "LANG"]
            .iter()
            .find_map(|k| var(k).filter(|v| !v.is_empty()))
            .unwrap_or_default();
        match locale.to_ascii_lowercase().starts_with("zh") {
            true => Lang::Zh,
            false => Lang::En,
        }
    }

    /// Where the stop's session is, as the screen names it.
    pub fn session_path(self, session: &str) -> String {
        match self {
            Lang::En => format!("sessions/en/{session}"),
            Lang::Zh => format!("sessions/{session}"),
        }
    }

    /// The tour's own words (the frame around each stop's) in this
    /// language.
    pub fn chrome(self) -> &'static Chrome {
        match self {
            Lang::En => &EN,
            Lang::Zh => &ZH,
        }
    }
}

/// The words around a stop: its heading, the keys, what an answer gets.
#[derive(Debug)]
pub struct Chrome {
    /// `tour 1/5`.
    pub tour: &'static str,
    /// The keys while a stop is open.
    pub keys: &'static str,
    /// The keys once it is answered.
    pub keys_solved: &'static str,
    /// Before what to press.
    pub doing: &'static str,
    /// Before it, once the step it asks for is reached.
    pub here: &'static str,
    /// Before the answer being typed.
    pub answer: &'static str,
    /// After it.
    pub answer_keys: &'static str,
    /// A right answer, before the lesson.
    pub right: &'static str,
    /// After the lesson: more stops.
    pub go_on: &'static str,
    /// After the lesson: the last one.
    pub all_done: &'static str,
    /// A wrong answer: `{typed}` and `{press}` are filled in.
    pub wrong: &'static str,
    /// `T` at the last stop: `{answered}` and `{stops}` filled in.
    pub last_stop: &'static str,
    /// Added when the last stop is not answered.
    pub answer_this_one: &'static str,
    /// Before what to do next.
    pub next: &'static str,
    /// Where to go with a loop of one's own, once every stop is solved.
    pub what_next: &'static [&'static str],
}

/// The frame in English.
pub static EN: Chrome = Chrome {
    tour: "tour",
    keys: "  (a: answer · T: next)",
    keys_solved: "  (a: again · T: next)",
    doing: "do: ",
    here: "◉ here: ",
    answer: "  answer: ",
    answer_keys: "  Enter checks · Esc cancels",
    right: "✓ right: ",
    go_on: "T goes to the next part.",
    all_done: "That was the whole tour.",
    wrong: "✗ not {typed}: look again ({press}); a tries again",
    last_stop: "that was the last part: the tour is done ({answered} of {stops} answered{more}). T starts it over; q quits",
    answer_this_one: "; a answers this one",
    next: "next: ",
    what_next: WHAT_NEXT,
};

/// The frame in Chinese.
pub static ZH: Chrome = Chrome {
    tour: "导览",
    keys: "  (a: 回答 · T: 下一站)",
    keys_solved: "  (a: 再答 · T: 下一站)",
    doing: "操作：",
    here: "◉ 到了：",
    answer: "  答案：",
    answer_keys: "  Enter 检查 · Esc 取消",
    right: "✓ 对了：",
    go_on: "T 去下一站。",
    all_done: "导览全部完成。",
    wrong: "✗ 不是 {typed}：再看看（{press}）；a 再试",
    last_stop: "这是最后一站：导览结束（已答 {answered}/{stops}{more}）。T 从头开始；q 退出",
    answer_this_one: "；a 回答这一站",
    next: "接下来：",
    what_next: &[
        "loopdbg demo：代理后面一个有 bug 的智能体，离线，无需密钥",
        "loopdbg proxy --upstream URL：你自己智能体的实时流量",
        "loopdbg check FILE：服务商会拒绝这个请求或日志吗？",
        "loopdbg doctor FILE --write：修复无法再恢复的会话",
    ],
};

/// A right answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A count.
    Number(usize),
    /// A word or id; any of these is right (compared without case).
    Word(Vec<String>),
}

impl Answer {
    /// True when `typed` is right.
    pub fn accepts(&self, typed: &str) -> bool {
        let typed = typed
            .trim()
            .trim_matches(|c| c == '`' || c == '"' || c == '\'');
        match self {
            Answer::Number(n) => typed.parse::<usize>() == Ok(*n),
            Answer::Word(words) => words.iter().any(|w| w.eq_ignore_ascii_case(typed)),
        }
    }
}

impl std::fmt::Display for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Answer::Number(n) => write!(f, "{n}"),
            Answer::Word(w) => write!(f, "{}", w.first().map_or("", String::as_str)),
        }
    }
}

fn nothing(_: &mut Strategy) {}

/// Stop 2: only the first call runs, and this stub's model then skips what
/// it did not get (the rate vanishes from the answer).
fn first_and_skip(s: &mut Strategy) {
    s.extract = Extract::First;
    s.behavior = "skip".into();
}

fn leave(s: &mut Strategy) {
    s.closure = Closure::Leave;
}

/// Stop 5: the same dropped call, closed by a placeholder.
fn first_and_synthesize(s: &mut Strategy) {
    s.extract = Extract::First;
    s.closure = Closure::Synthesize;
}

/// The stop's opening strategy: the session's own, then the stop's setup.
pub fn opening_strategy(stop: &Stop, session: &Session) -> Strategy {
    let mut strategy = Strategy::for_session(session);
    (stop.setup)(&mut strategy);
    strategy
}

/// Where round 2's request is in `trace` (the start when there is none).
fn second_request(trace: &loopdbg_engine::trace::Trace) -> usize {
    trace
        .steps
        .iter()
        .position(|s| s.phase == Phase::Request && s.round == 2)
        .unwrap_or(0)
}

/// The last step: where `G` goes.
fn last_step(trace: &loopdbg_engine::trace::Trace) -> usize {
    trace.steps.len().saturating_sub(1)
}

/// Stop 1: the messages the second request carries.
fn second_request_len(session: &Session, strategy: &Strategy) -> Answer {
    let trace = loopdbg_engine::run(session, strategy);
    Answer::Number(trace.step(second_request(&trace)).history_len)
}

/// Stop 2: the id the provider would reject in the second request.
fn rejected_id(session: &Session, strategy: &Strategy) -> Answer {
    let trace = loopdbg_engine::run(session, strategy);
    let k = second_request(&trace);
    Answer::Word(Ledger::of(trace.history_at(k), &[]).unpaired())
}

/// Stop 3: the stop rule that ends on the cut reply with an error, in round
/// 1, instead of spinning or taking it as the answer.
fn honest_stop_rule(session: &Session, strategy: &Strategy) -> Answer {
    let rules = [
        StopRule::Content,
        StopRule::FinishReason,
        StopRule::ToolCalls,
        StopRule::Robust,
    ];
    let words = rules
        .into_iter()
        .filter(|&stop| {
            let mut s = strategy.clone();
            s.stop = stop;
            let trace = loopdbg_engine::run(session, &s);
            trace.outcome.end == loopdbg_engine::trace::End::Error && trace.outcome.requests == 1
        })
        .map(|stop| stop.to_string())
        .collect();
    Answer::Word(words)
}

/// Stop 4: the id left without a result when the closure is `leave`.
fn dangling_at_end(session: &Session, strategy: &Strategy) -> Answer {
    let trace = loopdbg_engine::run(session, strategy);
    let last = trace.len() - 1;
    Answer::Word(Ledger::of(trace.history_at(last), &[]).unpaired())
}

/// Stop 5: the number the answer states that no tool returned.
fn unsourced_number(session: &Session, strategy: &Strategy) -> Answer {
    let trace = loopdbg_engine::run(session, strategy);
    Answer::Word(crate::checks::numbers_no_tool_returned(&trace))
}

/// The shipped sessions the tour's stops name, built in, so the tour
/// works from any folder on a fresh machine: as shipped (Chinese, the
/// seeds' language) and their English companions.
const BUILT_IN: &[(&str, &str, &str)] = &[
    (
        "weather.json",
        include_str!("../../../sessions/weather.json"),
        include_str!("../../../sessions/en/weather.json"),
    ),
    (
        "weather_fx.json",
        include_str!("../../../sessions/weather_fx.json"),
        include_str!("../../../sessions/en/weather_fx.json"),
    ),
    (
        "stop_truncated.json",
        include_str!("../../../sessions/stop_truncated.json"),
        include_str!("../../../sessions/en/stop_truncated.json"),
    ),
    (
        "fault_interrupt.json",
        include_str!("../../../sessions/fault_interrupt.json"),
        include_str!("../../../sessions/fault_interrupt.json"),
    ),
];

/// Each stop's session in `lang`, parsed from the built-in copies.
pub fn sessions(lang: Lang) -> Result<Vec<Session>, loopdbg_engine::LoadError> {
    STOPS
        .iter()
        .map(|stop| {
            let text = BUILT_IN
                .iter()
                .find(|(name, _, _)| *name == stop.session)
                .map_or("", |(_, zh, en)| match lang {
                    Lang::En => *en,
                    Lang::Zh => *zh,
                });
            Session::parse(&lang.session_path(stop.session), text)
        })
        .collect()
}

/// The tour, in order. Every text is whole on an 80×24 screen (a test
/// reads each stop there, in both languages): keep them short.
pub const STOPS: &[Stop] = &[
    Stop {
        session: "weather.json",
        en: Words {
            title: "One tool, two trips",
            press: "the model asks for a tool (a tool_use); your loop runs it and sends back a tool_result. n steps one phase: step to round 2's Request",
            question: "How many messages does the second request carry?",
            lesson: "the second trip sends the whole history back: the prompt, the model's tool_use and the tool_result that pairs with it by id",
        },
        setup: nothing,
        answer: second_request_len,
        at: second_request,
        zh: Words {
            title: "一个工具，两趟往返",
            press: "模型要一个工具（tool_use）；你的循环执行它并送回 tool_result。n 走一个阶段：走到第 2 轮的 Request",
            question: "第二个请求带了几条消息？",
            lesson: "第二趟把整个历史送回去：提示、模型的 tool_use，以及按 id 与之配对的 tool_result",
        },
    },
    Stop {
        session: "weather_fx.json",
        en: Words {
            title: "Two calls in one turn, and what `first` costs",
            press: "extraction is `first`: the loop runs only the first call. Step to round 2's Request and read the ids pane",
            question: "Which id would the provider reject in the second request?",
            lesson: "every tool_use needs its tool_result: a real provider answers 400, and this model just drops the rate (G shows it). Now press e (run every call) and G: the rate is back",
        },
        setup: first_and_skip,
        answer: rejected_id,
        at: second_request,
        zh: Words {
            title: "一轮两个调用，`first` 的代价",
            press: "提取方式是 `first`：循环只执行第一个调用。走到第 2 轮的 Request，看 ids 面板",
            question: "第二个请求里，服务商会拒绝哪个 id？",
            lesson: "每个 tool_use 都要有它的 tool_result：真实的服务商会回 400，而这个模型干脆略过汇率（G 可见）。现在按 e（执行每个调用）再按 G：汇率回来了",
        },
    },
    Stop {
        session: "stop_truncated.json",
        en: Words {
            title: "Stop rules, and a reply cut by max_tokens",
            press: "s cycles the stop rule; G shows how each run ends",
            question: "Under which stop rule does the run end in round 1 with an error, neither spinning nor taking the cut reply as the answer?",
            lesson: "a reply cut by max_tokens is neither a tool call nor an answer: `robust` checks finish_reason and stops with an error you can act on",
        },
        setup: nothing,
        answer: honest_stop_rule,
        at: last_step,
        zh: Words {
            title: "停止规则，与被 max_tokens 截断的回复",
            press: "s 切换停止规则；G 看每次运行怎样结束",
            question: "哪条停止规则让运行在第 1 轮以错误结束，既不空转，也不把截断的回复当作答案？",
            lesson: "被 max_tokens 截断的回复既不是工具调用也不是答案：`robust` 检查 finish_reason，以一个能处理的错误停下",
        },
    },
    Stop {
        session: "fault_interrupt.json",
        en: Words {
            title: "An interrupt, and closing what it left open",
            press: "the user interrupts while a tool runs; the closure is `leave`. Press G and read the ids pane",
            question: "Which id is left without a tool_result when the closure is `leave`?",
            lesson: "after an interrupt every tool_use must still be closed, or the next request is a 400; Claude Code synthesizes an error result for each. p cycles the closure",
        },
        setup: leave,
        answer: dangling_at_end,
        at: last_step,
        zh: Words {
            title: "中断，以及收拾它留下的调用",
            press: "工具运行时用户中断；收尾策略（closure）是 `leave`。按 G，看 ids 面板",
            question: "收尾策略为 `leave` 时，哪个 id 没有 tool_result？",
            lesson: "中断之后每个 tool_use 仍须闭合，否则下一个请求就是 400；Claude Code 为每个调用合成一个错误结果。p 切换收尾策略",
        },
    },
    Stop {
        session: "weather_fx.json",
        en: Words {
            title: "What closure hides",
            press: "`first` drops get_fx_rate again, but the closure is `synthesize`: a placeholder closes it, so no 400. Press G and read the warnings",
            question: "Which number does the answer state that no tool returned?",
            lesson: "closure mends the history, not the loop: no 400 warns you, and the model states a rate no tool gave. Mend the cause (e: run every call)",
        },
        setup: first_and_synthesize,
        answer: unsourced_number,
        at: last_step,
        zh: Words {
            title: "收尾掩盖了什么",
            press: "`first` 又丢了 get_fx_rate，但收尾策略是 `synthesize`：占位结果把它闭合了，所以没有 400。按 G，看警告",
            question: "答案里说出的哪个数字没有任何工具返回过？",
            lesson: "收尾修补的是历史，不是循环：没有 400 提醒你，模型还说出一个没有工具给过的汇率。要修的是原因（e：执行每个调用）",
        },
    },
];

/// What the tour says once every stop is solved: where to go with a loop
/// of one's own.
pub const WHAT_NEXT: &[&str] = &[
    "loopdbg demo: a buggy agent behind the proxy, offline, no key",
    "loopdbg proxy --upstream URL: your own agent's traffic, live",
    "loopdbg check FILE: will the provider refuse this request or log?",
    "loopdbg doctor FILE --write: repair a session that will not resume",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_accept_their_spellings() {
        let a = Answer::Word(vec!["toolu_f1".into()]);
        assert!(a.accepts(" TOOLU_F1 "));
        assert!(a.accepts("`toolu_f1`"));
        assert!(!a.accepts("toolu_w1"));
        assert!(Answer::Number(3).accepts("3"));
        assert!(!Answer::Number(3).accepts("three"));
    }

    /// Every stop has an answer the engine computes, and the ones the
    /// lessons name are what the shipped sessions do.
    #[test]
    fn every_stop_is_answerable() {
        let sessions = sessions(Lang::Zh).expect("the built-in sessions parse");
        let answers: Vec<Answer> = STOPS
            .iter()
            .zip(&sessions)
            .map(|(stop, session)| (stop.answer)(session, &opening_strategy(stop, session)))
            .collect();
        assert_eq!(answers[1], Answer::Word(vec!["toolu_f1".into()]));
        assert!(answers[2].accepts("robust"), "{:?}", answers[2]);
        assert_eq!(answers[4], Answer::Word(vec!["7.12".into()]));
        for (stop, answer) in STOPS.iter().zip(&answers) {
            assert!(
                !matches!(answer, Answer::Word(w) if w.is_empty()),
                "{}: no answer",
                stop.en.title
            );
        }
    }

    /// Stop 2's lesson says the rate vanishes and `e` brings it back: both
    /// are what the engine does.
    #[test]
    fn the_rate_vanishes_under_first_and_returns_with_all() {
        let sessions = sessions(Lang::Zh).expect("the built-in sessions parse");
        let mut strategy = opening_strategy(&STOPS[1], &sessions[1]);
        let vanished = loopdbg_engine::run(&sessions[1], &strategy);
        let text = vanished.outcome.final_text.unwrap_or_default();
        assert!(!text.contains("7.12"), "{text}");
        strategy.extract = Extract::All;
        let fixed = loopdbg_engine::run(&sessions[1], &strategy);
        let text = fixed.outcome.final_text.unwrap_or_default();
        assert!(text.contains("7.12"), "{text}");
    }
}

#[cfg(test)]
mod language_tests {
    use super::*;

    /// The answers do not depend on the language: the English companions
    /// run as the sessions they translate, and stop 2's rate vanishes in
    /// English words too.
    #[test]
    fn the_english_tour_has_the_same_answers_and_the_rate_visibly_missing() {
        let (zh, en) = (sessions(Lang::Zh).unwrap(), sessions(Lang::En).unwrap());
        for (k, stop) in STOPS.iter().enumerate() {
            assert_eq!(
                (stop.answer)(&zh[k], &opening_strategy(stop, &zh[k])),
                (stop.answer)(&en[k], &opening_strategy(stop, &en[k])),
                "{}",
                stop.en.title
            );
        }
        let run = loopdbg_engine::run(&en[1], &opening_strategy(&STOPS[1], &en[1]));
        let text = run.outcome.final_text.unwrap_or_default();
        assert!(text.contains("skip the exchange rate"), "{text}");
    }

    #[test]
    fn the_locale_chooses_chinese_only_when_it_is_chinese() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(Lang::of_locale(env(&[("LANG", "zh_CN.UTF-8")])), Lang::Zh);
        assert_eq!(Lang::of_locale(env(&[("LANG", "en_US.UTF-8")])), Lang::En);
        assert_eq!(
            Lang::of_locale(env(&[("LC_ALL", "C"), ("LANG", "zh_TW.UTF-8")])),
            Lang::En
        );
        assert_eq!(Lang::of_locale(env(&[])), Lang::En);
    }
}
