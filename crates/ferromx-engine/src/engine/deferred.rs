//! Work a frontend holds back (eager fusion's pending chain, a bulk of
//! operator calls collected on one thread).
//!
//! Why it lives in the engine: every push, wait and readiness query must hand
//! held-back work over first, or the engine would see the frontend's ops out
//! of the order it issued them. The frontend installs the flush function once;
//! the engine calls it, at the cost of one relaxed load when nothing is held.

use super::in_engine_op;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// Set while some work is held back.
static DEFERRED: AtomicBool = AtomicBool::new(false);
static FLUSH_HOOK: OnceLock<fn()> = OnceLock::new();

thread_local! {
    /// Set while this thread holds work back that only it can hand over (a bulk).
    static HELD_HERE: Cell<bool> = const { Cell::new(false) };
    /// Pushes, waits and readiness queries this thread has made ([`frontend_calls_here`]).
    static CALLS_HERE: Cell<u64> = const { Cell::new(0) };
}

/// How many pushes, waits and readiness queries this thread has made so far
/// (held-back work handed over by a flush excepted). A frontend recording a
/// graph's operator calls to replay them later compares it before and after:
/// a call that pushed an op of its own or read a value is not replayable.
pub fn frontend_calls_here() -> u64 {
    CALLS_HERE.with(Cell::get)
}

/// Marks that this thread holds back work of its own (`true`) or handed it over.
pub fn set_held_here(pending: bool) {
    HELD_HERE.with(|h| h.set(pending));
}

/// Installs the function that pushes held-back work (once per process).
pub fn set_flush_hook(f: fn()) {
    let _ = FLUSH_HOOK.set(f);
}

/// Marks that held-back work exists (`true`) or that it was handed over (`false`).
pub fn set_deferred(pending: bool) {
    DEFERRED.store(pending, Ordering::Release);
}

/// Pushes held-back work first, unless called from inside an engine
/// operation (pushes from ops are never ordered against the frontend's).
#[inline]
pub fn flush_deferred() {
    CALLS_HERE.with(|c| c.set(c.get() + 1));
    if (DEFERRED.load(Ordering::Acquire) || HELD_HERE.with(Cell::get)) && !in_engine_op() {
        if let Some(f) = FLUSH_HOOK.get() {
            f();
        }
    }
}
