//! Bulk execution: a run of operator calls pushed as one engine op.
//!
//! Why: a hybridized block's forward is a fixed list of small calls (a batch-1
//! MLP: three `FullyConnected`, two `Activation`). Each pushed alone costs an
//! engine op (allocation, dependency tracking, a worker wake-up) that is larger
//! than its kernel. MXNet runs such a graph's operators in bulk segments
//! (`MXNET_EXEC_BULK_EXEC_*`); ferromx does the same: while a [`Bulk`] guard
//! lives on a thread, [`crate::opdef::push_call`] collects the calls it would
//! push, and they go to the engine as one op (`storage::push_bulk`)
//! when the guard ends, after [`MAX_CALLS`] calls, or before anything else of
//! this thread reaches the engine: any other push, wait or readiness query
//! hands the collected calls over first (the engine's flush hook, with a
//! thread-local flag), so the engine still sees every op in issue order.
//!
//! Semantics are those of the separate pushes, with one difference in error
//! reporting: a failing call fails every array the bulk writes (each error names
//! that call's operator and the call site), as in MXNet's bulk segments.

use super::{ensure_hook, Engine};
use crate::opdef::{KernelFn, OpCall};
use crate::storage::BulkCall;
use std::cell::RefCell;

/// Calls a bulk collects at most before they are pushed (MXNet's training segments,
/// `MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN`, default to 15 nodes).
pub const MAX_CALLS: usize = 32;

struct State {
    /// Nesting depth of live guards on this thread.
    depth: usize,
    /// The imperative bulk size ([`set_size`]): 0 is off.
    size: usize,
    calls: Vec<BulkCall>,
    /// Non-empty flushes so far (a recording compares it: see [`flushes_here`]).
    flushes: u64,
}

impl State {
    fn collecting(&self) -> bool {
        self.depth > 0 || self.size > 0 && !Engine::global().is_naive()
    }
    /// Calls per bulk op: the imperative size when one is set, else [`MAX_CALLS`].
    fn limit(&self) -> usize {
        if self.size > 0 {
            self.size
        } else {
            MAX_CALLS
        }
    }
}

thread_local! {
    static STATE: RefCell<State> =
        const { RefCell::new(State { depth: 0, size: 0, calls: Vec::new(), flushes: 0 }) };
}

/// MXNet's `engine.set_bulk_size` for this thread: with `size > 0` every operator call
/// this thread pushes is collected into bulk ops of up to `size` calls (MXNet bulks
/// imperative operators the same way, and only when asked); 0 turns it off. What was
/// collected is pushed first, as in MXNet. Returns the previous size. Under
/// `NaiveEngine` the size is recorded but nothing is collected.
pub fn set_size(size: usize) -> usize {
    flush();
    if size > 0 {
        hand_over_chain();
    }
    STATE.with(|s| std::mem::replace(&mut s.borrow_mut().size, size))
}

/// Whether bulk execution is allowed: not under `NaiveEngine` (each op runs as it
/// is pushed there), and not with `MXNET_EXEC_BULK_EXEC_INFERENCE=0` /
/// `MXNET_EXEC_BULK_EXEC_TRAIN=0` (MXNet's switches, read per mode).
pub fn allowed(training: bool) -> bool {
    use std::sync::OnceLock;
    static FLAGS: OnceLock<(bool, bool)> = OnceLock::new();
    let (infer, train) = *FLAGS.get_or_init(|| {
        let on = |k: &str| !std::env::var(k).is_ok_and(|v| v.trim() == "0");
        let naive = Engine::global().is_naive();
        (on("MXNET_EXEC_BULK_EXEC_INFERENCE") && !naive, on("MXNET_EXEC_BULK_EXEC_TRAIN") && !naive)
    });
    if training {
        train
    } else {
        infer
    }
}

/// Before collecting starts: installs the engine's flush hook and pushes the fusion
/// chain, so work issued before the bulk stays ahead of it.
fn hand_over_chain() {
    ensure_hook();
    super::flush();
}

/// While it lives, this thread's operator calls are collected into bulk ops.
/// Dropping it pushes what was collected (guards nest: the outermost one pushes).
pub struct Bulk(());

impl Bulk {
    /// Starts collecting on this thread. Work held back before (a fusion chain)
    /// is handed to the engine first, so it stays ahead of the bulk.
    pub fn begin() -> Bulk {
        hand_over_chain();
        STATE.with(|s| s.borrow_mut().depth += 1);
        Bulk(())
    }
}

impl Drop for Bulk {
    fn drop(&mut self) {
        let last = STATE.with(|s| {
            let mut s = s.borrow_mut();
            s.depth -= 1;
            s.depth == 0
        });
        if last && STATE.with(|s| s.borrow().size == 0) {
            flush();
        }
    }
}

/// Takes `call` into this thread's bulk, or gives it back when no bulk collects
/// (or the call runs inside an engine op, where pushes are never deferred).
#[allow(clippy::result_large_err)]
pub(crate) fn try_add(call: OpCall, f: KernelFn) -> std::result::Result<(), OpCall> {
    if crate::engine::in_engine_op() {
        return Err(call);
    }
    let full = STATE.with(|s| {
        let mut s = s.borrow_mut();
        if !s.collecting() {
            return Err(call);
        }
        if s.calls.is_empty() {
            crate::engine::set_held_here(true);
        }
        s.calls.push((call, f, crate::storage::call_site()));
        Ok(s.calls.len() >= s.limit())
    })?;
    if full {
        flush();
    }
    Ok(())
}

/// Calls collected on this thread and not yet pushed (tests).
pub fn pending() -> usize {
    STATE.with(|s| s.borrow().calls.len())
}

/// Whether this thread's bulk is one guard deep, holds no calls and is not an
/// imperative bulk: what it collects from now on is exactly one plan's calls.
pub(crate) fn fresh_outermost() -> bool {
    STATE.with(|s| {
        let s = s.borrow();
        s.depth == 1 && s.size == 0 && s.calls.is_empty()
    })
}

/// How many times this thread's bulk handed collected calls to the engine.
pub(crate) fn flushes_here() -> u64 {
    STATE.with(|s| s.borrow().flushes)
}

/// Runs `f` on the calls this thread's bulk holds now (they stay collected).
pub(crate) fn with_calls<R>(f: impl FnOnce(&[BulkCall]) -> R) -> R {
    STATE.with(|s| f(&s.borrow().calls))
}

/// Pushes this thread's collected calls as one engine op (one call alone is
/// pushed as itself); a no-op when none are collected.
pub fn flush() {
    let calls = STATE.with(|s| {
        let mut s = s.borrow_mut();
        if !s.calls.is_empty() {
            s.flushes += 1;
        }
        std::mem::take(&mut s.calls)
    });
    if calls.is_empty() {
        return;
    }
    crate::engine::set_held_here(false);
    if calls.len() == 1 {
        if let Some((call, f, label)) = calls.into_iter().next() {
            crate::storage::push_op_call_deferred(call, f, label);
        }
        return;
    }
    crate::storage::push_bulk(calls);
}
