//! Running one turn's calls concurrently on tokio, in virtual time.
//!
//! The runtime's clock is paused (`start_paused`), so sleeps advance a
//! virtual clock instantly and deterministically: the same plans always give
//! the same endings at the same milliseconds. No wall clock is read.

use std::time::Duration;

use serde::Serialize;
use tokio::runtime::Runtime;
use tokio::task::JoinSet;

/// How one call will behave.
#[derive(Debug, Clone, PartialEq)]
pub struct CallPlan {
    /// Virtual time it takes.
    pub latency_ms: u64,
    /// Its timeout, if any.
    pub timeout_ms: Option<u64>,
    /// True when it fails (after its latency).
    pub fails: bool,
    /// True when its failure cancels its siblings.
    pub hard: bool,
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    /// It returned (a value or an error result).
    Finished,
    /// The tool failed.
    Failed,
    /// It ran past its timeout.
    TimedOut,
    /// A sibling failed hard and the loop cancelled it.
    Cancelled,
    /// The user interrupted the turn.
    Interrupted,
}

/// One call's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallEnd {
    /// Index of the call in the batch.
    pub index: usize,
    /// Virtual milliseconds after the batch started.
    pub at_ms: u64,
    /// How it ended.
    pub ending: Ending,
}

/// A paused-clock runtime for [`run_batch`].
pub fn virtual_runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime with a paused clock")
}

/// True when the batch needs the clock: anything that takes time, fails,
/// can time out, or can be interrupted.
pub fn needs_clock(plans: &[CallPlan], interrupt_at: Option<u64>) -> bool {
    interrupt_at.is_some()
        || plans
            .iter()
            .any(|p| p.latency_ms > 0 || p.fails || p.timeout_ms.is_some())
}

/// Ends of a batch that takes no time: every call finishes at 0, in order.
pub fn immediate(plans: &[CallPlan]) -> Vec<CallEnd> {
    (0..plans.len())
        .map(|index| CallEnd {
            index,
            at_ms: 0,
            ending: Ending::Finished,
        })
        .collect()
}

/// Runs the batch concurrently on `rt` and returns every call's end, in
/// time order (call order within one millisecond).
///
/// Callable from anywhere, including from inside another tokio runtime (the
/// debugger's event loop): there a runtime may not block its own thread, so
/// the batch runs on a scoped helper thread.
pub fn run_batch(rt: &Runtime, plans: &[CallPlan], interrupt_at: Option<u64>) -> Vec<CallEnd> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return std::thread::scope(|s| {
            s.spawn(|| block_on_batch(rt, plans, interrupt_at))
                .join()
                .expect("the batch thread does not panic")
        });
    }
    block_on_batch(rt, plans, interrupt_at)
}

fn block_on_batch(rt: &Runtime, plans: &[CallPlan], interrupt_at: Option<u64>) -> Vec<CallEnd> {
    let plans = plans.to_vec();
    rt.block_on(async move {
        let start = tokio::time::Instant::now();
        let elapsed = || start.elapsed().as_millis() as u64;
        let mut set = JoinSet::new();
        for (i, p) in plans.iter().enumerate() {
            let (latency, timeout, fails) = (p.latency_ms, p.timeout_ms, p.fails);
            set.spawn(async move {
                let work = tokio::time::sleep(Duration::from_millis(latency));
                let done = if fails {
                    Ending::Failed
                } else {
                    Ending::Finished
                };
                match timeout {
                    Some(t) => match tokio::time::timeout(Duration::from_millis(t), work).await {
                        Ok(()) => (i, done),
                        Err(_) => (i, Ending::TimedOut),
                    },
                    None => {
                        work.await;
                        (i, done)
                    }
                }
            });
        }
        let interrupt = async move {
            match interrupt_at {
                Some(t) => tokio::time::sleep(Duration::from_millis(t)).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(interrupt);
        let n = plans.len();
        let mut ends: Vec<CallEnd> = Vec::with_capacity(n);
        let mut stopped: Option<(u64, Ending)> = None;
        while stopped.is_none() && ends.len() < n {
            let first = tokio::select! {
                biased;
                Some(joined) = set.join_next() => Some(joined.expect("call tasks do not panic")),
                _ = &mut interrupt => None,
            };
            let at = elapsed();
            // Everything that ends at this same virtual instant, in call order.
            let mut tick: Vec<(usize, Ending)> = first.into_iter().collect();
            loop {
                tokio::task::yield_now().await;
                match set.try_join_next() {
                    Some(joined) => tick.push(joined.expect("call tasks do not panic")),
                    None => break,
                }
            }
            tick.sort_by_key(|(i, _)| *i);
            for (index, ending) in tick {
                ends.push(CallEnd {
                    index,
                    at_ms: at,
                    ending,
                });
                if ending == Ending::Failed && plans[index].hard {
                    stopped = Some((at, Ending::Cancelled));
                }
            }
            if first.is_none() && ends.len() < n {
                stopped = stopped.or(Some((at, Ending::Interrupted)));
            }
        }
        set.abort_all();
        if let Some((at, ending)) = stopped {
            let mut left: Vec<usize> = (0..n)
                .filter(|i| !ends.iter().any(|e| e.index == *i))
                .collect();
            left.sort();
            ends.extend(left.into_iter().map(|index| CallEnd {
                index,
                at_ms: at,
                ending,
            }));
        }
        ends
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(latency_ms: u64) -> CallPlan {
        CallPlan {
            latency_ms,
            timeout_ms: None,
            fails: false,
            hard: false,
        }
    }

    #[test]
    fn calls_end_in_time_order_in_virtual_time() {
        let rt = virtual_runtime();
        let ends = run_batch(&rt, &[plan(300), plan(100), plan(100)], None);
        let got: Vec<(usize, u64)> = ends.iter().map(|e| (e.index, e.at_ms)).collect();
        assert_eq!(got, vec![(1, 100), (2, 100), (0, 300)]);
    }

    #[test]
    fn a_hard_failure_cancels_the_siblings_still_running() {
        let rt = virtual_runtime();
        let mut failing = plan(50);
        failing.fails = true;
        failing.hard = true;
        let ends = run_batch(&rt, &[plan(20), failing, plan(200)], None);
        let got: Vec<(usize, u64, Ending)> =
            ends.iter().map(|e| (e.index, e.at_ms, e.ending)).collect();
        assert_eq!(
            got,
            vec![
                (0, 20, Ending::Finished),
                (1, 50, Ending::Failed),
                (2, 50, Ending::Cancelled)
            ]
        );
    }

    #[test]
    fn timeouts_and_interrupts() {
        let rt = virtual_runtime();
        let mut slow = plan(500);
        slow.timeout_ms = Some(100);
        let ends = run_batch(&rt, &[slow, plan(50), plan(400)], Some(300));
        let got: Vec<(usize, u64, Ending)> =
            ends.iter().map(|e| (e.index, e.at_ms, e.ending)).collect();
        assert_eq!(
            got,
            vec![
                (1, 50, Ending::Finished),
                (0, 100, Ending::TimedOut),
                (2, 300, Ending::Interrupted)
            ]
        );
    }

    #[test]
    fn works_from_inside_another_runtime() {
        let outer = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let rt = virtual_runtime();
        let ends = outer.block_on(async { run_batch(&rt, &[plan(30), plan(10)], None) });
        assert_eq!(ends.iter().map(|e| e.index).collect::<Vec<_>>(), vec![1, 0]);
        // Dropping a runtime inside another one would panic; shutting it down does not.
        outer.block_on(async { rt.shutdown_background() });
    }

    #[test]
    fn the_same_batch_always_ends_the_same_way() {
        let rt = virtual_runtime();
        let plans: Vec<CallPlan> = (0..20).map(|i| plan((i % 4) * 10)).collect();
        let first = run_batch(&rt, &plans, Some(25));
        for _ in 0..10 {
            assert_eq!(run_batch(&rt, &plans, Some(25)), first);
        }
    }
}
