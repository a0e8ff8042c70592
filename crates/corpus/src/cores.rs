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
        let was = ALONE.with(|a| a.replace(true));
        let r = f();
        ALONE.with(|a| a.set(was));
        r
    }
    #[cfg(not(feature = "parallel"))]
    f()
}

#[cfg(feature = "parallel")]
fn spread() -> bool {
    !ALONE.with(std::cell::Cell::get)
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
