//! The engine: ops, push and dependency tracking, back-pressure.
//!
//! Waits live in `wait.rs`, running and completing ops in `exec.rs`, ops pushed
//! from inside a running op in `inline.rs`.

use crate::config::{EngineConfig, EngineMode};
use crate::events::{EngineEvent, Listener, Listeners};
use crate::signal::Signal;
use crate::var::{Var, VarInner, VarState};
use crate::worker::Pool;
use crate::{Device, OpFailure, SharedError};
use parking_lot::{Condvar, Mutex, RwLock};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

mod deferred;
mod exec;
mod inline;
mod wait;

pub use deferred::{flush_deferred, frontend_calls_here, set_deferred, set_flush_hook, set_held_here};
pub use wait::WaitTicket;

/// The closure an operation runs.
pub type OpFn = Box<dyn FnOnce() -> std::result::Result<(), OpFailure> + Send>;

thread_local! {
    static IN_OP: Cell<bool> = const { Cell::new(false) };
}

/// Whether the current thread is running an engine operation right now.
pub fn in_engine_op() -> bool {
    IN_OP.with(|c| c.get())
}

/// An operation as pushed: a closure plus what it touches and how to report it.
///
/// Built with [`Op::new`] and the builder methods, then handed to
/// [`Engine::push`]. Duplicate vars are merged; a var both read and written
/// counts as written.
pub struct Op {
    name: Cow<'static, str>,
    func: Option<OpFn>,
    reads: SmallVec<[Var; 4]>,
    writes: SmallVec<[Var; 2]>,
    device: Device,
    priority: i32,
    label: Option<Arc<str>>,
    detail: Option<Arc<str>>,
    bytes: u64,
}

impl Op {
    /// A new operation named `name` running `f`.
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        f: impl FnOnce() -> std::result::Result<(), OpFailure> + Send + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            func: Some(Box::new(f)),
            reads: SmallVec::new(),
            writes: SmallVec::new(),
            device: Device::cpu(0),
            priority: 0,
            label: None,
            detail: None,
            bytes: 0,
        }
    }
    /// Adds variables the op reads.
    pub fn reads<'a>(mut self, vars: impl IntoIterator<Item = &'a Var>) -> Self {
        self.reads.extend(vars.into_iter().cloned());
        self
    }
    /// Adds variables the op writes.
    pub fn writes<'a>(mut self, vars: impl IntoIterator<Item = &'a Var>) -> Self {
        self.writes.extend(vars.into_iter().cloned());
        self
    }
    /// Sets the device whose worker pool runs the op.
    pub fn device(mut self, d: Device) -> Self {
        self.device = d;
        self
    }
    /// Sets the priority: ops with priority > 0 are taken before others that are ready.
    pub fn priority(mut self, p: i32) -> Self {
        self.priority = p;
        self
    }
    /// Sets the frontend call-site label (e.g. `train.py:42`).
    pub fn label(mut self, l: Option<Arc<str>>) -> Self {
        self.label = l;
        self
    }
    /// Sets a detail string for the profiler (e.g. input shapes).
    pub fn detail(mut self, d: Option<Arc<str>>) -> Self {
        self.detail = d;
        self
    }
    /// Declares how many bytes this op keeps alive until it completes (back-pressure).
    pub fn bytes(mut self, b: u64) -> Self {
        self.bytes = b;
        self
    }
}

/// An operation inside the engine.
pub(crate) struct OprBlock {
    id: u64,
    wait: AtomicUsize,
    func: Mutex<Option<OpFn>>,
    reads: SmallVec<[Var; 4]>,
    writes: SmallVec<[Var; 2]>,
    pub(crate) device: Device,
    pub(crate) priority: i32,
    name: Cow<'static, str>,
    label: Option<Arc<str>>,
    detail: Option<Arc<str>>,
    bytes: u64,
    signal: Option<Arc<Signal>>,
    /// Per-var registration sequence numbers: reads first, then writes.
    seqs: SmallVec<[AtomicU64; 6]>,
}

/// State shared by the engine handle, its workers and its variables.
pub(crate) struct Shared {
    pub(crate) config: EngineConfig,
    pools: RwLock<Vec<(Device, Arc<Pool>)>>,
    push_lock: Mutex<()>,
    inflight_ops: AtomicU64,
    inflight_bytes: AtomicU64,
    pushed: AtomicU64,
    completed: AtomicU64,
    idle_lock: Mutex<()>,
    idle_cv: Condvar,
    idle_waiters: AtomicUsize,
    drain_lock: Mutex<()>,
    drain_cv: Condvar,
    blocked_pushers: AtomicUsize,
    /// Vars a failed op wrote, with the error: a `wait_all` raises the first.
    /// The error is kept beside the weak handle because the var may be dying
    /// while `wait_all` runs (its last handle was an op block released after the
    /// engine went idle); such an entry still names its error, which `wait_all`
    /// raises unless a wait raised it already.
    failed: Mutex<Vec<(Weak<VarInner>, SharedError)>>,
    /// Errors of vars deleted before any wait raised them (a discarded array's
    /// failure). The next `wait_all` raises the first, as MXNet's `WaitForAll`
    /// rethrows a failure whether or not its arrays still exist; any raised error
    /// clears them (see [`Shared::note_raised`]).
    pub(crate) orphaned: Mutex<Vec<SharedError>>,
    /// The errors waits raised most recently (bounded): a var deleted later with
    /// one of them is not orphaned, since MXNet raises an error once, whichever
    /// of the arrays it reached is waited on.
    pub(crate) raised: Mutex<std::collections::VecDeque<Weak<crate::EngineError>>>,
    /// The highest op id of an error a wait raised: a discarded failure of an op pushed
    /// before it counts as handled (see [`Shared::note_raised`]), so whether it is raised
    /// does not depend on when its array's deletion completes.
    raised_upto: AtomicU64,
    /// Failures of ops pushed inside another op's closure (bounded): the enclosing op's
    /// own failure reports them (see [`Shared::note_absorbed`]).
    absorbed: Mutex<std::collections::VecDeque<Weak<crate::EngineError>>>,
    pub(crate) listeners: Listeners,
    next_var: AtomicU64,
    next_op: AtomicU64,
}

/// How many raised errors [`Shared::raised`] remembers.
const RAISED_MEMORY: usize = 64;
/// How many orphaned errors are kept for the next `wait_all` (the first ones).
const ORPHANED_MAX: usize = 64;

impl Shared {
    /// Notes that a wait raised `e`. The program has now been told of a failure, so
    /// the discarded failures before it are dropped too. This is what MXNet 1.9.1
    /// does for its most common failing ops, the random samplers, whose failure
    /// passes through the shared RNG resource to every later sampler, so that the
    /// one error raised clears them all (its `test_exc_imperative` relies on it).
    ///
    /// Lock order: `raised`, then `orphaned`, then `failed` (as in [`Self::orphan`]),
    /// so a var deleted concurrently either sees `e` as raised or is cleared here.
    pub(crate) fn note_raised(&self, e: &SharedError) {
        let mut r = self.raised.lock();
        let upto = self.raised_upto.fetch_max(e.op_id, Ordering::SeqCst).max(e.op_id);
        // Discarded failures of ops pushed up to the raised one are handled; the failed
        // entries of vars already gone are discarded ones too.
        self.orphaned.lock().retain(|x| x.op_id > upto);
        self.failed.lock().retain(|(w, x)| w.strong_count() > 0 || x.op_id > upto);
        if r.len() >= RAISED_MEMORY {
            r.pop_front();
        }
        r.push_back(Arc::downgrade(e));
    }

    /// Records that `e`, the failure of an op pushed inside another op's closure, is
    /// reported by the enclosing op's own failure (MXNet shares one exception between
    /// them, so raising the outer one clears both): `wait_all` does not raise it (and
    /// clears it), and a deleted array holding it does not orphan it. A wait on the
    /// inner op's own array before that still raises it.
    pub(crate) fn note_absorbed(&self, e: &SharedError) {
        let mut a = self.absorbed.lock();
        if a.len() >= RAISED_MEMORY {
            a.pop_front();
        }
        a.push_back(Arc::downgrade(e));
    }

    /// Whether `e` was absorbed into an enclosing op's failure.
    pub(crate) fn was_absorbed(&self, e: &SharedError) -> bool {
        let w = Arc::downgrade(e);
        self.absorbed.lock().iter().any(|r| r.ptr_eq(&w))
    }

    /// Whether a wait raised `e` recently, or an error of a later-pushed op (which
    /// handles a discarded `e`).
    pub(crate) fn was_raised(&self, e: &SharedError) -> bool {
        self.handled(e, &self.raised.lock())
    }

    /// [`Self::was_raised`] with the `raised` list already locked.
    fn handled(&self, e: &SharedError, raised: &std::collections::VecDeque<Weak<crate::EngineError>>) -> bool {
        let w = Arc::downgrade(e);
        e.op_id < self.raised_upto.load(Ordering::SeqCst) || raised.iter().any(|r| r.ptr_eq(&w))
    }

    /// Keeps the unraised error of a var being deleted for the next `wait_all`.
    pub(crate) fn orphan(&self, e: SharedError) {
        if self.was_absorbed(&e) {
            return;
        }
        let r = self.raised.lock();
        if self.handled(&e, &r) {
            return;
        }
        let mut o = self.orphaned.lock();
        if o.len() < ORPHANED_MAX && !o.iter().any(|x| Arc::ptr_eq(x, &e)) {
            o.push(e);
        }
        drop(r);
    }
}

/// The dependency engine.
///
/// Ops are closures scheduled against [`Var`]s. Two ops sharing a var, at
/// least one writing it, run in push order; reads between two writes may run
/// concurrently; ops sharing nothing may run concurrently in any order.
/// Registration of an op's vars happens under one short global lock so that
/// concurrent pushers agree on one total push order and can never build a
/// dependency cycle. Completion needs no global lock: each var has its own.
///
/// Workers: each device gets its own pool (`cpu(i)`: `cpu_workers` threads;
/// `cpu_pinned` and `gpu`: one thread). Kernels may use rayon inside an op;
/// rayon's global pool is shared by all ops, so at most `cpu_workers` engine
/// threads plus the rayon pool exist, and rayon-parallel kernels are size-gated
/// so small ops never fan out (see the `ferromx` crate).
pub struct Engine {
    shared: Arc<Shared>,
}

impl Engine {
    /// A new engine with its own worker pools.
    pub fn new(config: EngineConfig) -> Self {
        let shared = Arc::new(Shared {
            config,
            pools: RwLock::new(Vec::new()),
            push_lock: Mutex::new(()),
            inflight_ops: AtomicU64::new(0),
            inflight_bytes: AtomicU64::new(0),
            pushed: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            idle_lock: Mutex::new(()),
            idle_cv: Condvar::new(),
            idle_waiters: AtomicUsize::new(0),
            drain_lock: Mutex::new(()),
            drain_cv: Condvar::new(),
            blocked_pushers: AtomicUsize::new(0),
            failed: Mutex::new(Vec::new()),
            orphaned: Mutex::new(Vec::new()),
            raised: Mutex::new(std::collections::VecDeque::new()),
            raised_upto: AtomicU64::new(0),
            absorbed: Mutex::new(std::collections::VecDeque::new()),
            listeners: Listeners::default(),
            next_var: AtomicU64::new(1),
            next_op: AtomicU64::new(1),
        });
        Self { shared }
    }

    /// The process-wide engine, configured from the environment on first use.
    pub fn global() -> &'static Engine {
        static GLOBAL: OnceLock<Engine> = OnceLock::new();
        GLOBAL.get_or_init(|| Engine::new(EngineConfig::from_env()))
    }

    /// The configuration this engine runs with.
    pub fn config(&self) -> &EngineConfig {
        &self.shared.config
    }

    /// Whether ops run synchronously on the pushing thread.
    pub fn is_naive(&self) -> bool {
        self.shared.config.mode == EngineMode::Naive
    }

    /// The id the next new variable gets: ids only grow, so every variable with a
    /// smaller id existed before this call.
    pub fn next_var_id(&self) -> u64 {
        self.shared.next_var.load(Ordering::Relaxed)
    }

    /// Creates a new variable.
    pub fn new_var(&self) -> Var {
        let id = self.shared.next_var.fetch_add(1, Ordering::Relaxed);
        if self.shared.listeners.active() {
            self.shared.listeners.emit(&EngineEvent::VarNew { var: id });
        }
        Var(Arc::new(VarInner {
            id,
            state: Mutex::new(VarState::default()),
            shared: self.shared.clone(),
            on_delete: Mutex::new(None),
        }))
    }

    /// Subscribes a listener to engine events; returns an id for [`Engine::unsubscribe`].
    pub fn subscribe(&self, l: Listener) -> u64 {
        self.shared.listeners.add(l)
    }

    /// Whether anyone listens to events (frontends skip building event details otherwise).
    pub fn has_listeners(&self) -> bool {
        self.shared.listeners.active()
    }

    /// Removes a listener.
    pub fn unsubscribe(&self, id: u64) {
        self.shared.listeners.remove(id)
    }

    /// Ops pushed and not yet completed.
    pub fn inflight_ops(&self) -> u64 {
        self.shared.inflight_ops.load(Ordering::Relaxed)
    }

    /// Bytes declared by ops in flight.
    pub fn inflight_bytes(&self) -> u64 {
        self.shared.inflight_bytes.load(Ordering::Relaxed)
    }

    /// Whether a push right now would block on the in-flight bound.
    ///
    /// Frontends holding a global lock (Python's GIL) check this first and
    /// release their lock around [`Engine::throttle`] before pushing.
    pub fn over_limit(&self) -> bool {
        !self.is_naive() && self.shared.over_high() && !in_engine_op()
    }

    /// Blocks until work in flight has drained below the bound (no-op when under it).
    pub fn throttle(&self) {
        let s = &self.shared;
        if !self.over_limit() {
            return;
        }
        s.blocked_pushers.fetch_add(1, Ordering::SeqCst);
        let mut g = s.drain_lock.lock();
        while !s.under_low() {
            s.drain_cv.wait_for(&mut g, Duration::from_millis(10));
        }
        drop(g);
        s.blocked_pushers.fetch_sub(1, Ordering::SeqCst);
    }

    /// Pushes an operation. Returns at once (threaded mode) unless work in
    /// flight is over its bound, in which case it first waits for work to drain.
    pub fn push(&self, op: Op) {
        flush_deferred();
        self.throttle();
        self.push_inner(op, None);
    }

    /// Pushes held-back work (a fused op) without the back-pressure wait and
    /// without flushing: the frontend's own throttle already bounded it.
    pub fn push_deferred(&self, op: Op) {
        self.push_inner(op, None);
    }

    fn push_inner(&self, op: Op, signal: Option<Arc<Signal>>) {
        if let Some(scope) = inline::current() {
            return self.push_nested(op, signal, &scope);
        }
        let s = &self.shared;
        let Op { name, func, reads, writes, device, priority, label, detail, bytes } = op;
        let mut w: SmallVec<[Var; 2]> = SmallVec::new();
        for v in writes {
            if !w.iter().any(|x| x.same(&v)) {
                w.push(v);
            }
        }
        let mut r: SmallVec<[Var; 4]> = SmallVec::new();
        for v in reads {
            if !w.iter().any(|x| x.same(&v)) && !r.iter().any(|x| x.same(&v)) {
                r.push(v);
            }
        }
        let nvars = r.len() + w.len();
        let block = Arc::new(OprBlock {
            id: s.next_op.fetch_add(1, Ordering::Relaxed),
            wait: AtomicUsize::new(nvars + 1),
            func: Mutex::new(func),
            reads: r,
            writes: w,
            device,
            priority,
            name,
            label,
            detail,
            bytes,
            signal,
            seqs: (0..nvars).map(|_| AtomicU64::new(0)).collect(),
        });
        s.inflight_ops.fetch_add(1, Ordering::Relaxed);
        if bytes > 0 {
            s.inflight_bytes.fetch_add(bytes, Ordering::Relaxed);
        }
        s.pushed.fetch_add(1, Ordering::Relaxed);
        let mut granted = 0usize;
        {
            let _g = s.push_lock.lock();
            for (i, v) in block.reads.iter().enumerate() {
                let mut st = v.0.state.lock();
                block.seqs[i].store(st.seq, Ordering::Relaxed);
                st.seq += 1;
                if !st.writing && st.queue.is_empty() {
                    st.running_reads += 1;
                    granted += 1;
                } else {
                    st.queue.push_back((block.clone(), false));
                }
            }
            let nr = block.reads.len();
            for (i, v) in block.writes.iter().enumerate() {
                let mut st = v.0.state.lock();
                block.seqs[nr + i].store(st.seq, Ordering::Relaxed);
                st.seq += 1;
                st.pending_writes += 1;
                if !st.writing && st.running_reads == 0 && st.queue.is_empty() {
                    st.grant_write();
                    granted += 1;
                } else {
                    st.queue.push_back((block.clone(), true));
                }
            }
        }
        if s.listeners.active() {
            s.emit_counters();
        }
        if block.wait.fetch_sub(granted + 1, Ordering::AcqRel) == granted + 1 {
            self.shared.dispatch(block);
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.wait_all();
        let pools: Vec<_> = std::mem::take(&mut *self.shared.pools.write());
        for (_, p) in pools {
            p.shutdown();
        }
    }
}

impl Shared {
    fn over_high(&self) -> bool {
        let ops = self.inflight_ops.load(Ordering::Relaxed);
        ops > 0
            && (ops >= self.config.max_inflight_ops
                || self.inflight_bytes.load(Ordering::Relaxed) >= self.config.max_inflight_bytes)
    }

    fn under_low(&self) -> bool {
        let ops = self.inflight_ops.load(Ordering::Relaxed);
        ops == 0
            || (ops <= self.config.max_inflight_ops * 3 / 4
                && self.inflight_bytes.load(Ordering::Relaxed) <= self.config.max_inflight_bytes / 4 * 3)
    }

    fn emit_counters(&self) {
        self.listeners.emit(&EngineEvent::Counters {
            pushed: self.pushed.load(Ordering::Relaxed),
            completed: self.completed.load(Ordering::Relaxed),
            in_flight: self.inflight_ops.load(Ordering::Relaxed),
            bytes_in_flight: self.inflight_bytes.load(Ordering::Relaxed),
            at: Instant::now(),
        });
    }
}
