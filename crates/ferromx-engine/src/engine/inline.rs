//! Inline scopes: ops pushed from inside a running op that run at once, on the
//! same thread (what a Python function running as an engine op needs).
//!
//! The running ("outer") op holds access to the vars it declared. Inside
//! [`Engine::run_inline`], a push does not queue behind the outer op: the
//! outer op's vars count as granted (it holds them), every other var must be
//! free right now (new temporaries, or arrays nothing pending touches), and the
//! nested op runs before `push` returns. Waits on held or free vars return at
//! once. A nested op that would have to wait for other work fails instead of
//! deadlocking, and the first nested failure is reported to the outer op.

use super::{Engine, OprBlock, IN_OP};
use crate::signal::Signal;
use crate::{ErrorKind, Op, OpFailure, Var};
use smallvec::SmallVec;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Vars held by the outer op and the first failure of a nested op.
pub(crate) struct Scope {
    reads: SmallVec<[Var; 4]>,
    writes: SmallVec<[Var; 2]>,
    failure: RefCell<Option<OpFailure>>,
}

impl Scope {
    fn holds_write(&self, v: &Var) -> bool {
        self.writes.iter().any(|x| x.same(v))
    }
    fn holds(&self, v: &Var) -> bool {
        self.holds_write(v) || self.reads.iter().any(|x| x.same(v))
    }
    fn fail(&self, f: OpFailure) {
        self.failure.borrow_mut().get_or_insert(f);
    }
}

thread_local! {
    static SCOPE: RefCell<Option<Rc<Scope>>> = const { RefCell::new(None) };
}

/// The inline scope of this thread, if any.
pub(crate) fn current() -> Option<Rc<Scope>> {
    SCOPE.with(|s| s.borrow().clone())
}

/// Clears this thread's scope (an op's own closure never runs inside another's
/// scope); returns the previous one to restore.
pub(crate) fn take() -> Option<Rc<Scope>> {
    SCOPE.with(|s| s.borrow_mut().take())
}

/// Restores a scope saved by [`take`].
pub(crate) fn restore(prev: Option<Rc<Scope>>) {
    SCOPE.with(|s| *s.borrow_mut() = prev);
}

impl Engine {
    /// Runs `f` (called from inside an op's closure) with ops it pushes running
    /// inline. `reads`/`writes` are the vars the calling op declared. Returns
    /// `f`'s result and the first failure of a nested op, if any.
    pub fn run_inline<R>(&self, reads: &[Var], writes: &[Var], f: impl FnOnce() -> R) -> (R, Option<OpFailure>) {
        let scope = Rc::new(Scope {
            reads: reads.iter().cloned().collect(),
            writes: writes.iter().cloned().collect(),
            failure: RefCell::new(None),
        });
        let prev = SCOPE.with(|s| s.borrow_mut().replace(scope.clone()));
        let was = IN_OP.with(|c| c.replace(true));
        let r = f();
        IN_OP.with(|c| c.set(was));
        restore(prev);
        let failure = scope.failure.borrow_mut().take();
        (r, failure)
    }

    /// A push inside an inline scope: runs `op` now or fails it.
    pub(super) fn push_nested(&self, op: Op, signal: Option<Arc<Signal>>, scope: &Scope) {
        let s = &self.shared;
        let Op { name, func, reads, writes, device, priority, label, detail, bytes } = op;
        let mut w: SmallVec<[Var; 2]> = SmallVec::new();
        let mut bad_write = false;
        for v in writes {
            if scope.holds_write(&v) {
                continue;
            }
            if scope.holds(&v) {
                bad_write = true;
            } else if !w.iter().any(|x| x.same(&v)) {
                w.push(v);
            }
        }
        let mut r: SmallVec<[Var; 4]> = SmallVec::new();
        for v in reads {
            if !scope.holds(&v) && !w.iter().any(|x| x.same(&v)) && !r.iter().any(|x| x.same(&v)) {
                r.push(v);
            }
        }
        let refuse = |msg: String| {
            scope.fail(OpFailure::new(ErrorKind::Runtime, format!("{name}: {msg}")));
            if let Some(sig) = &signal {
                sig.set();
            }
        };
        if bad_write {
            return refuse("writes an array the enclosing operation only reads".into());
        }
        let nvars = r.len() + w.len();
        let block = Arc::new(OprBlock {
            id: s.next_op.fetch_add(1, Ordering::Relaxed),
            wait: AtomicUsize::new(0),
            func: parking_lot::Mutex::new(func),
            reads: r,
            writes: w,
            device,
            priority,
            name: name.clone(),
            label,
            detail,
            bytes,
            signal: signal.clone(),
            seqs: (0..nvars).map(|_| AtomicU64::new(0)).collect(),
        });
        {
            let _g = s.push_lock.lock();
            let free = block.reads.iter().all(|v| {
                let st = v.0.state.lock();
                !st.writing && st.queue.is_empty()
            }) && block.writes.iter().all(|v| {
                let st = v.0.state.lock();
                !st.writing && st.running_reads == 0 && st.queue.is_empty()
            });
            if !free {
                drop(_g);
                return refuse(
                    "uses an array that other pending operations use; inside a Python engine op \
                     only the declared arrays and arrays nothing pending touches are ready"
                        .into(),
                );
            }
            let nr = block.reads.len();
            for (i, v) in block.reads.iter().enumerate() {
                let mut st = v.0.state.lock();
                block.seqs[i].store(st.seq, Ordering::Relaxed);
                st.seq += 1;
                st.running_reads += 1;
            }
            for (i, v) in block.writes.iter().enumerate() {
                let mut st = v.0.state.lock();
                block.seqs[nr + i].store(st.seq, Ordering::Relaxed);
                st.seq += 1;
                st.pending_writes += 1;
                st.grant_write();
            }
        }
        s.inflight_ops.fetch_add(1, Ordering::Relaxed);
        if bytes > 0 {
            s.inflight_bytes.fetch_add(bytes, Ordering::Relaxed);
        }
        s.pushed.fetch_add(1, Ordering::Relaxed);
        let thread = std::thread::current();
        let (cont, error) = s.execute_full(block, thread.name().unwrap_or("<unnamed>"));
        if let Some(next) = cont {
            s.dispatch(next);
        }
        if let Some(e) = error {
            s.note_absorbed(&e);
            scope.fail(OpFailure::new(e.kind, format!("{}: {}", e.op, e.message)));
        }
    }
}

/// Whether a wait on `var` (for reading, or for writing when `write`) inside
/// this scope is already satisfied: the var is held, or nothing pending touches it.
pub(crate) fn wait_ready(scope: &Scope, var: &Var, write: bool) -> bool {
    if scope.holds_write(var) || (!write && scope.holds(var)) {
        return true;
    }
    let st = var.0.state.lock();
    if write {
        st.pending_writes == 0 && st.running_reads == 0 && st.queue.is_empty()
    } else {
        st.pending_writes == 0
    }
}
