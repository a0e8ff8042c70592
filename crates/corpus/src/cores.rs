//! Work spread over the cores with rayon (feature `parallel`), or done in
//! order on this thread without it: the results are the same either way.

#[cfg(feature = "parallel")]
thread_local! {
    /// Set on a thread that is itself one of several doing work side by
    /// side: its own work is done in order there, since the other cores
    /// are busy already and handing it to the pool only adds the wait.
    static ALONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `f()`, with this thread's [`map`]s and [`join`]s done in order on it.
pub fn in_order_here<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(feature = "parallel")]
    {
        /// Puts the flag back however `f` ends.
        struct Restore(bool);
        impl Drop for Restore {
            fn drop(&mut self) {
                ALONE.with(|a| a.set(self.0));
            }
        }
        let _restore = Restore(ALONE.with(|a| a.replace(true)));
        f()
    }
    #[cfg(not(feature = "parallel"))]
    f()
}

#[cfg(feature = "parallel")]
fn spread() -> bool {
    !ALONE.with(std::cell::Cell::get)
}

/// Whether a thread of its own for a side task (reading ahead, freeing
/// a long log's allocations) is worth it here: not on a thread that is
/// already one of several working side by side (a pool thread of
/// `doctor --scan`, or one [`in_order_here`] marked), where the other
/// cores are busy and each file's spawned threads cost their start and
/// their allocator's pages, faulted in again for every file.
pub fn spare_threads() -> bool {
    #[cfg(feature = "parallel")]
    return spread() && rayon::current_thread_index().is_none();
    #[cfg(not(feature = "parallel"))]
    true
}

/// `f` of every item, in order.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync + Send) -> Vec<R> {
    #[cfg(feature = "parallel")]
    if spread() {
        use rayon::prelude::*;
        return items.par_iter().map(f).collect();
    }
    items.iter().map(f).collect()
}

/// `a()` and `b()`, side by side where there are cores for it.
pub fn join<A: Send, B: Send>(
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    #[cfg(feature = "parallel")]
    if spread() {
        return rayon::join(a, b);
    }
    (a(), b())
}

#[cfg(test)]
mod tests {
    #[test]
    fn work_in_order_here_is_done_on_this_thread_and_the_same() {
        let items: Vec<u32> = (0..1000).collect();
        let spread = super::map(&items, |i| i * 2);
        let here = std::thread::current().id();
        let in_order = super::in_order_here(|| {
            super::map(&items, |i| {
                assert_eq!(std::thread::current().id(), here);
                i * 2
            })
        });
        assert_eq!(spread, in_order);
        // And after it, work is spread again (the flag is put back even
        // when the work panics).
        let _ = std::panic::catch_unwind(|| super::in_order_here(|| panic!("inside")));
        #[cfg(feature = "parallel")]
        assert!(super::spread());
    }
}
