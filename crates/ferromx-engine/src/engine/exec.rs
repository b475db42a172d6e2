//! Running ops: dispatch to worker pools, execution (with failure inheritance)
//! and completion, which grants the vars to the next ops in line.

use super::{inline, OprBlock, Shared, IN_OP};
use crate::config::EngineMode;
use crate::events::EngineEvent;
use crate::worker::Pool;
use crate::{Device, EngineError, ErrorKind, OpFailure, SharedError};
use smallvec::SmallVec;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

impl Shared {
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
                                op: f.op.unwrap_or_else(|| op.name.to_string()),
                                label: f.label.or_else(|| op.label.as_deref().map(str::to_string)),
                                message: f.message,
                                op_id: op.id,
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
            if let (true, Some(e)) = (newly, &error) {
                let mut f = self.failed.lock();
                if f.len() >= 1024 {
                    // Forget failures already raised by a wait, and those of deleted
                    // vars (their deletion kept the error, if unraised, as orphaned).
                    f.retain(|(w, _)| w.upgrade().is_some_and(|v| v.state.lock().unraised()));
                }
                f.push((Arc::downgrade(&v.0), e.clone()));
            }
        }
        let mut granted: SmallVec<[Arc<OprBlock>; 4]> = SmallVec::new();
        for v in &op.reads {
            let mut st = v.0.state.lock();
            st.running_reads -= 1;
            if st.running_reads == 0 && !st.writing {
                if let Some((_, true)) = st.queue.front() {
                    let (next, _) = st.queue.pop_front().expect("front exists");
                    st.grant_write();
                    granted.push(next);
                }
            }
        }
        for v in &op.writes {
            let mut st = v.0.state.lock();
            st.writing = false;
            st.pending_writes -= 1;
            st.write_events += 1;
            while let Some((_, false)) = st.queue.front() {
                let (next, _) = st.queue.pop_front().expect("front exists");
                st.running_reads += 1;
                granted.push(next);
            }
            if st.running_reads == 0 {
                if let Some((_, true)) = st.queue.front() {
                    let (next, _) = st.queue.pop_front().expect("front exists");
                    st.grant_write();
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
