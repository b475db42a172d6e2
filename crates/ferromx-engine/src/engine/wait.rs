//! Waits: tickets on a var or on everything, blocking in slices, and their outcome.

use super::{flush_deferred, in_engine_op, inline, Engine, Op, Shared};
use crate::events::{EngineEvent, WaitTarget};
use crate::signal::Signal;
use crate::{EngineError, ErrorKind, Result, SharedError, Var};
use parking_lot::Mutex;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Engine {
    fn ticket(&self, target: WaitTarget, var: Option<&Var>, label: Option<Arc<str>>) -> Result<WaitTicket> {
        flush_deferred();
        let ready_inline = match (inline::current(), var) {
            (Some(scope), Some(v)) => inline::wait_ready(&scope, v, !matches!(target, WaitTarget::Read(_))),
            _ => false,
        };
        let signal = if ready_inline {
            None
        } else {
            if in_engine_op() {
                return Err(wait_inside_op());
            }
            match (&target, var) {
                (WaitTarget::All, _) => None,
                (WaitTarget::Read(_), Some(v)) => {
                    let pending = v.0.state.lock().pending_writes;
                    if pending == 0 {
                        None
                    } else {
                        Some(self.sentinel(Op::new("WaitForVar", || Ok(())).reads([v])))
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
                        Some(self.sentinel(Op::new("WaitToWrite", || Ok(())).writes([v])))
                    }
                }
                _ => None,
            }
        };
        Ok(WaitTicket {
            shared: self.shared.clone(),
            target,
            var: var.cloned(),
            signal,
            label,
            started: Mutex::new(None),
        })
    }

    /// Pushes the no-op `op` with priority 1; the signal is set once it has run.
    fn sentinel(&self, op: Op) -> Arc<Signal> {
        let sig = Arc::new(Signal::default());
        self.push_inner(op.priority(1), Some(sig.clone()));
        sig
    }

    /// Pushes `op` and returns a ticket that completes when *this op* has run
    /// (e.g. a copy-out that reads `var`); finishing it reports `var`'s error.
    pub fn push_ticket(&self, op: Op, var: &Var, label: Option<Arc<str>>) -> Result<WaitTicket> {
        flush_deferred();
        if in_engine_op() && inline::current().is_none() {
            return Err(wait_inside_op());
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

/// The error of a wait issued from inside an engine operation.
fn wait_inside_op() -> EngineError {
    EngineError::new(
        ErrorKind::WaitInsideOp,
        "wait",
        "a wait was issued from inside an engine operation; it would deadlock",
    )
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
            Some(v) => {
                let raised = v.0.state.lock().raise_once();
                match raised {
                    Some(e) => {
                        s.note_raised(&e);
                        Err((*e).clone())
                    }
                    None => Ok(()),
                }
            }
            None => {
                let failed: Vec<_> = std::mem::take(&mut *s.failed.lock());
                let mut first: Option<SharedError> = None;
                let mut dying: Option<SharedError> = None;
                for (w, e) in failed {
                    // (an upgraded var dropped here may orphan its error: taken below)
                    if let Some(v) = w.upgrade() {
                        let raised = v.state.lock().raise_once();
                        // (an error absorbed into an enclosing op's failure is reported
                        // by that op)
                        if let Some(e) = raised.filter(|e| !s.was_absorbed(e)) {
                            first.get_or_insert(e);
                        }
                    } else if dying.is_none() && !s.was_raised(&e) && !s.was_absorbed(&e) {
                        // A var deleted now, or before: its deletion may not have
                        // orphaned the error yet. The raise below records it, so a
                        // later orphaning of the same error is skipped.
                        dying = Some(e);
                    }
                }
                // Errors of deleted vars that nothing raised (discarded arrays).
                let orphaned: Vec<SharedError> = std::mem::take(&mut *s.orphaned.lock());
                let first = first.or_else(|| orphaned.into_iter().next()).or(dying);
                match first {
                    Some(e) => {
                        s.note_raised(&e);
                        Err((*e).clone())
                    }
                    None => Ok(()),
                }
            }
        }
    }
}

impl Shared {
    pub(super) fn wait_idle(&self, spin: Duration, timeout: Option<Duration>) -> bool {
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
}
