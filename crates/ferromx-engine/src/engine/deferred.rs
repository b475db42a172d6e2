//! Work a frontend holds back (eager fusion's pending chain).
//!
//! Why it lives in the engine: every push, wait and readiness query must hand
//! held-back work over first, or the engine would see the frontend's ops out
//! of the order it issued them. The frontend installs the flush function once;
//! the engine calls it, at the cost of one relaxed load when nothing is held.

use super::in_engine_op;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// Set while some work is held back.
static DEFERRED: AtomicBool = AtomicBool::new(false);
static FLUSH_HOOK: OnceLock<fn()> = OnceLock::new();

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
    if DEFERRED.load(Ordering::Acquire) && !in_engine_op() {
        if let Some(f) = FLUSH_HOOK.get() {
            f();
        }
    }
}
