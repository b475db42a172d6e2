//! The engine: push, dependency tracking, completion, waits, back-pressure.

use crate::config::{EngineConfig, EngineMode};
use crate::events::{EngineEvent, Listener, Listeners, WaitTarget};
use crate::signal::Signal;
use crate::var::{Var, VarInner, VarState};
use crate::worker::Pool;
use crate::{Device, EngineError, ErrorKind, OpFailure, Result, SharedError};
use parking_lot::{Condvar, Mutex, RwLock};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

mod inline;

/// The closure an operation runs.
pub type OpFn = Box<dyn FnOnce() -> std::result::Result<(), OpFailure> + Send>;

thread_local! {
    static IN_OP: Cell<bool> = const { Cell::new(false) };
}

/// Whether the current thread is running an engine operation right now.
pub fn in_engine_op() -> bool {
    IN_OP.with(|c| c.get())
}

/// Work a frontend holds back (eager fusion's pending chain): set while some
/// is held, so that every push, wait and readiness query from a frontend
/// thread first hands it to the engine, keeping the order the frontend issued.
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
/// Costs one relaxed load when nothing is held.
#[inline]
pub fn flush_deferred() {
    if DEFERRED.load(Ordering::Relaxed) && !in_engine_op() {
        if let Some(f) = FLUSH_HOOK.get() {
            f();
        }
    }
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
    failed: Mutex<Vec<Weak<VarInner>>>,
    pub(crate) listeners: Listeners,
    next_var: AtomicU64,
    next_op: AtomicU64,
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
                    st.writing = true;
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

    fn ticket(&self, target: WaitTarget, var: Option<&Var>, label: Option<Arc<str>>) -> Result<WaitTicket> {
        flush_deferred();
        let ready_inline = match (inline::current(), var) {
            (Some(scope), Some(v)) => inline::wait_ready(&scope, v, !matches!(target, WaitTarget::Read(_))),
            _ => false,
        };
        if ready_inline {
            let s = self.shared.clone();
            return Ok(WaitTicket {
                shared: s,
                target,
                var: var.cloned(),
                signal: None,
                label,
                started: Mutex::new(None),
            });
        }
        if in_engine_op() {
            return Err(EngineError::new(
                ErrorKind::WaitInsideOp,
                "wait",
                "a wait was issued from inside an engine operation; it would deadlock",
            ));
        }
        let s = &self.shared;
        let signal = match (&target, var) {
            (WaitTarget::All, _) => None,
            (WaitTarget::Read(_), Some(v)) => {
                let pending = v.0.state.lock().pending_writes;
                if pending == 0 {
                    None
                } else {
                    let sig = Arc::new(Signal::default());
                    let op = Op::new("WaitForVar", || Ok(())).reads([v]).priority(1);
                    self.push_inner(op, Some(sig.clone()));
                    Some(sig)
                }
            }
            (_, Some(v)) => {
                let busy = {
                    let st = v.0.state.lock();
                    st.pending_writes > 0 || st.running_reads > 0 || !st.queue.is_empty()
                };
                if !busy {
                    None
                } else {
                    let sig = Arc::new(Signal::default());
                    let op = Op::new("WaitToWrite", || Ok(())).writes([v]).priority(1);
                    self.push_inner(op, Some(sig.clone()));
                    Some(sig)
                }
            }
            _ => None,
        };
        Ok(WaitTicket { shared: s.clone(), target, var: var.cloned(), signal, label, started: Mutex::new(None) })
    }

    /// Pushes `op` and returns a ticket that completes when *this op* has run
    /// (e.g. a copy-out that reads `var`); finishing it reports `var`'s error.
    pub fn push_ticket(&self, op: Op, var: &Var, label: Option<Arc<str>>) -> Result<WaitTicket> {
        flush_deferred();
        if in_engine_op() && inline::current().is_none() {
            return Err(EngineError::new(
                ErrorKind::WaitInsideOp,
                "wait",
                "a wait was issued from inside an engine operation; it would deadlock",
            ));
        }
        self.throttle();
        let sig = Arc::new(Signal::default());
        self.push_inner(op, Some(sig.clone()));
        Ok(WaitTicket {
            shared: self.shared.clone(),
            target: WaitTarget::Read(var.id()),
            var: Some(var.clone()),
            signal: Some(sig),
            label,
            started: Mutex::new(None),
        })
    }

    /// Starts a wait for the pending writes of `var`; poll or block on the ticket.
    pub fn read_ticket(&self, var: &Var, label: Option<Arc<str>>) -> Result<WaitTicket> {
        self.ticket(WaitTarget::Read(var.id()), Some(var), label)
    }

    /// Starts a wait for the pending reads and writes of `var`.
    pub fn write_ticket(&self, var: &Var, label: Option<Arc<str>>) -> Result<WaitTicket> {
        self.ticket(WaitTarget::Write(var.id()), Some(var), label)
    }

    /// Starts a wait for everything pushed so far.
    pub fn all_ticket(&self, label: Option<Arc<str>>) -> Result<WaitTicket> {
        self.ticket(WaitTarget::All, None, label)
    }

    /// Waits for the pending writes of `var`; returns (and clears) its error.
    pub fn wait_to_read(&self, var: &Var) -> Result<()> {
        self.read_ticket(var, None)?.finish()
    }

    /// Waits for the pending reads and writes of `var`; returns (and clears) its error.
    pub fn wait_to_write(&self, var: &Var) -> Result<()> {
        self.write_ticket(var, None)?.finish()
    }

    /// Waits for every op pushed so far; returns the first error and clears all.
    pub fn wait_all(&self) -> Result<()> {
        self.all_ticket(None)?.finish()
    }

    /// Whether `var` has no pending writes. Never blocks.
    pub fn is_ready(&self, var: &Var) -> bool {
        flush_deferred();
        var.0.state.lock().pending_writes == 0
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

/// A wait in progress. Block with [`WaitTicket::wait_timeout`] in slices (so a
/// frontend can check for Ctrl-C between them), then call
/// [`WaitTicket::finish`] to learn the outcome.
pub struct WaitTicket {
    shared: Arc<Shared>,
    target: WaitTarget,
    var: Option<Var>,
    signal: Option<Arc<Signal>>,
    label: Option<Arc<str>>,
    started: Mutex<Option<Instant>>,
}

impl WaitTicket {
    fn mark_started(&self) {
        let mut st = self.started.lock();
        if st.is_none() {
            let now = Instant::now();
            *st = Some(now);
            if self.shared.listeners.active() {
                self.shared.listeners.emit(&EngineEvent::WaitStart {
                    target: self.target.clone(),
                    label: self.label.clone(),
                    at: now,
                });
            }
        }
    }

    /// Whether the awaited work is done. Never blocks.
    pub fn is_done(&self) -> bool {
        match &self.signal {
            Some(s) => s.is_set(),
            None => match self.target {
                WaitTarget::All => self.shared.inflight_ops.load(Ordering::Acquire) == 0,
                _ => true,
            },
        }
    }

    /// Blocks until done or until `timeout` passes (`None`: forever). Returns `is_done()`.
    pub fn wait_timeout(&self, timeout: Option<Duration>) -> bool {
        self.mark_started();
        let spin = self.shared.config.spin;
        match &self.signal {
            Some(s) => s.wait_timeout(spin, timeout),
            None => match self.target {
                WaitTarget::All => self.shared.wait_idle(spin, timeout),
                _ => true,
            },
        }
    }

    /// Blocks until done and returns the outcome: the var's error (cleared), or
    /// for a wait on everything the first error of any var (all cleared).
    pub fn finish(self) -> Result<()> {
        self.wait_timeout(None);
        let s = &self.shared;
        if s.listeners.active() {
            let started = self.started.lock().unwrap_or_else(Instant::now);
            s.listeners.emit(&EngineEvent::WaitEnd {
                target: self.target.clone(),
                label: self.label.clone(),
                started,
                at: Instant::now(),
            });
        }
        match &self.var {
            Some(v) => match v.0.state.lock().raise_once() {
                Some(e) => Err((*e).clone()),
                None => Ok(()),
            },
            None => {
                let failed: Vec<_> = std::mem::take(&mut *s.failed.lock());
                let mut first: Option<SharedError> = None;
                for w in failed {
                    if let Some(v) = w.upgrade() {
                        if let Some(e) = v.state.lock().raise_once() {
                            first.get_or_insert(e);
                        }
                    }
                }
                match first {
                    Some(e) => Err((*e).clone()),
                    None => Ok(()),
                }
            }
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

    fn wait_idle(&self, spin: Duration, timeout: Option<Duration>) -> bool {
        let start = Instant::now();
        let idle = || self.inflight_ops.load(Ordering::SeqCst) == 0;
        while start.elapsed() < spin {
            if idle() {
                return true;
            }
            std::thread::yield_now();
        }
        self.idle_waiters.fetch_add(1, Ordering::SeqCst);
        let mut g = self.idle_lock.lock();
        let done = loop {
            if idle() {
                break true;
            }
            let slice = Duration::from_millis(50);
            match timeout {
                Some(t) => {
                    let el = start.elapsed();
                    if el >= t {
                        break false;
                    }
                    self.idle_cv.wait_for(&mut g, slice.min(t - el));
                }
                None => {
                    self.idle_cv.wait_for(&mut g, slice);
                }
            }
        };
        drop(g);
        self.idle_waiters.fetch_sub(1, Ordering::SeqCst);
        done
    }

    fn pool(self: &Arc<Self>, device: Device) -> Arc<Pool> {
        {
            let pools = self.pools.read();
            if let Some((_, p)) = pools.iter().find(|(d, _)| *d == device) {
                return p.clone();
            }
        }
        let mut pools = self.pools.write();
        if let Some((_, p)) = pools.iter().find(|(d, _)| *d == device) {
            return p.clone();
        }
        let n = match device.kind {
            crate::DeviceKind::Cpu => self.config.cpu_workers,
            _ => 1,
        };
        let p = Arc::new(Pool::start(Arc::downgrade(self), device, n, self.config.spin));
        pools.push((device, p.clone()));
        p
    }

    /// Hands a ready op to its device's workers (or runs it here in naive mode).
    pub(crate) fn dispatch(self: &Arc<Self>, op: Arc<OprBlock>) {
        if self.config.mode == EngineMode::Naive {
            // Report the thread that really runs the op (the pusher), not "main".
            let current = std::thread::current();
            let thread = current.name().unwrap_or("<unnamed>");
            let mut next = Some(op);
            while let Some(op) = next {
                next = self.execute(op, thread);
            }
        } else {
            self.pool(op.device).submit(op);
        }
    }

    /// Runs one op (or skips it, inheriting a failure) and completes it.
    /// Returns one newly ready op for the same device that the caller should
    /// run next (a continuation that avoids a queue round trip).
    pub(crate) fn execute(self: &Arc<Self>, op: Arc<OprBlock>, thread: &str) -> Option<Arc<OprBlock>> {
        self.execute_full(op, thread).0
    }

    /// [`Shared::execute`], also returning the op's error (inherited or its own).
    pub(crate) fn execute_full(
        self: &Arc<Self>,
        op: Arc<OprBlock>,
        thread: &str,
    ) -> (Option<Arc<OprBlock>>, Option<SharedError>) {
        let listening = self.listeners.active();
        let thread_name: Option<Arc<str>> = if listening { Some(Arc::from(thread)) } else { None };
        let mut inherited: Option<SharedError> = None;
        for (i, v) in op.reads.iter().chain(op.writes.iter()).enumerate() {
            let seq = op.seqs[i].load(Ordering::Relaxed);
            if let Some(e) = v.0.state.lock().inherited(seq) {
                inherited = Some(e.clone());
                break;
            }
        }
        if listening {
            self.listeners.emit(&EngineEvent::OpStart {
                op_id: op.id,
                name: Arc::from(op.name.as_ref()),
                detail: op.detail.clone(),
                device: op.device,
                thread: thread_name.clone().unwrap_or_else(|| Arc::from("")),
                at: Instant::now(),
            });
        }
        let error: Option<SharedError> = match inherited {
            Some(e) => Some(e),
            None => {
                let f = op.func.lock().take();
                match f {
                    None => None,
                    Some(f) => {
                        let was = IN_OP.with(|c| c.replace(true));
                        let scope = inline::take();
                        let r = catch_unwind(AssertUnwindSafe(f));
                        inline::restore(scope);
                        IN_OP.with(|c| c.set(was));
                        let fail = match r {
                            Ok(Ok(())) => None,
                            Ok(Err(f)) => Some(f),
                            Err(p) => {
                                let msg = p
                                    .downcast_ref::<&str>()
                                    .map(|s| s.to_string())
                                    .or_else(|| p.downcast_ref::<String>().cloned())
                                    .unwrap_or_else(|| "unknown panic".into());
                                Some(OpFailure::new(ErrorKind::Panic, format!("panicked: {msg}")))
                            }
                        };
                        fail.map(|f| {
                            Arc::new(EngineError {
                                kind: f.kind,
                                op: op.name.to_string(),
                                label: op.label.as_deref().map(str::to_string),
                                message: f.message,
                            })
                        })
                    }
                }
            }
        };
        if listening {
            self.listeners.emit(&EngineEvent::OpEnd {
                op_id: op.id,
                name: Arc::from(op.name.as_ref()),
                device: op.device,
                thread: thread_name.unwrap_or_else(|| Arc::from("")),
                at: Instant::now(),
                failed: error.is_some(),
            });
        }
        let cont = self.complete(&op, error.clone());
        (cont, error)
    }

    fn complete(self: &Arc<Self>, op: &Arc<OprBlock>, error: Option<SharedError>) -> Option<Arc<OprBlock>> {
        let nr = op.reads.len();
        for (i, v) in op.writes.iter().enumerate() {
            let seq = op.seqs[nr + i].load(Ordering::Relaxed);
            let newly = {
                let mut st = v.0.state.lock();
                let after_clear = st.cleared_at.is_some_and(|c| seq >= c);
                match &error {
                    Some(e) if st.error.is_none() || after_clear => {
                        st.error = Some(e.clone());
                        st.cleared_at = None;
                        true
                    }
                    None if after_clear => {
                        // A successful write after the error was raised: the var recovers.
                        st.error = None;
                        st.cleared_at = None;
                        false
                    }
                    _ => false,
                }
            };
            if newly {
                let mut f = self.failed.lock();
                if f.len() >= 1024 {
                    // Forget failures already raised by a wait.
                    f.retain(|w| w.upgrade().is_some_and(|v| v.state.lock().unraised()));
                }
                f.push(Arc::downgrade(&v.0));
            }
        }
        let mut granted: SmallVec<[Arc<OprBlock>; 4]> = SmallVec::new();
        for v in &op.reads {
            let mut st = v.0.state.lock();
            st.running_reads -= 1;
            if st.running_reads == 0 && !st.writing {
                if let Some((_, true)) = st.queue.front() {
                    let (next, _) = st.queue.pop_front().expect("front exists");
                    st.writing = true;
                    granted.push(next);
                }
            }
        }
        for v in &op.writes {
            let mut st = v.0.state.lock();
            st.writing = false;
            st.pending_writes -= 1;
            while let Some((_, false)) = st.queue.front() {
                let (next, _) = st.queue.pop_front().expect("front exists");
                st.running_reads += 1;
                granted.push(next);
            }
            if st.running_reads == 0 {
                if let Some((_, true)) = st.queue.front() {
                    let (next, _) = st.queue.pop_front().expect("front exists");
                    st.writing = true;
                    granted.push(next);
                }
            }
        }
        if let Some(sig) = &op.signal {
            sig.set();
        }
        let bytes = op.bytes;
        if bytes > 0 {
            self.inflight_bytes.fetch_sub(bytes, Ordering::Relaxed);
        }
        self.completed.fetch_add(1, Ordering::Relaxed);
        let left = self.inflight_ops.fetch_sub(1, Ordering::SeqCst) - 1;
        if left == 0 && self.idle_waiters.load(Ordering::SeqCst) > 0 {
            let _g = self.idle_lock.lock();
            self.idle_cv.notify_all();
        }
        if self.blocked_pushers.load(Ordering::SeqCst) > 0 && self.under_low() {
            let _g = self.drain_lock.lock();
            self.drain_cv.notify_all();
        }
        if self.listeners.active() {
            self.emit_counters();
        }
        let mut cont = None;
        for next in granted {
            if next.wait.fetch_sub(1, Ordering::AcqRel) == 1 {
                if cont.is_none() && next.device == op.device {
                    cont = Some(next);
                } else {
                    self.dispatch(next);
                }
            }
        }
        cont
    }
}
