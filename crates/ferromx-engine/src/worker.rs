//! Per-device worker pools.
//!
//! Ready ops go into one queue per pool (priority ops first). Waking a parked
//! thread costs ~20 µs in the VMs we run on, a pipelined hand-off well under
//! one, so an idle worker spins for a short while (`EngineConfig::spin`)
//! before it parks. At most one worker spins at a time: on a 2-core machine
//! two spinning workers would starve the frontend thread that is pushing the
//! work. A push wakes a parked worker only when no worker is spinning or
//! running (either will take the op next), so a steady stream of small ops
//! costs the pusher no system call; a worker that starts an op while more
//! are queued wakes a sleeper itself, so independent ops still spread out.

use crate::engine::{OprBlock, Shared};
use crate::Device;
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Default)]
struct Queues {
    hi: VecDeque<Arc<OprBlock>>,
    lo: VecDeque<Arc<OprBlock>>,
}

#[derive(Default)]
struct PoolState {
    queues: Mutex<Queues>,
    len: AtomicUsize,
    spinning: AtomicUsize,
    active: AtomicUsize,
    sleepers: AtomicUsize,
    cv: Condvar,
    stop: AtomicBool,
}

impl PoolState {
    fn wake_one(&self) {
        let _g = self.queues.lock();
        self.cv.notify_one();
    }

    fn pop(&self) -> Option<Arc<OprBlock>> {
        if self.len.load(Ordering::SeqCst) == 0 {
            return None;
        }
        let mut q = self.queues.lock();
        let op = q.hi.pop_front().or_else(|| q.lo.pop_front());
        if op.is_some() {
            self.len.fetch_sub(1, Ordering::SeqCst);
        }
        op
    }
}

pub(crate) struct Pool {
    state: Arc<PoolState>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Pool {
    pub(crate) fn start(shared: Weak<Shared>, device: Device, n: usize, spin: Duration) -> Self {
        let state = Arc::new(PoolState::default());
        let mut threads = Vec::with_capacity(n);
        for i in 0..n {
            let shared = shared.clone();
            let st = state.clone();
            let name = format!("ferromx-{device}-w{i}");
            let h = std::thread::Builder::new()
                .name(name.clone())
                .spawn(move || worker_loop(shared, st, spin, name))
                .expect("failed to spawn an engine worker thread");
            threads.push(h);
        }
        Self { state, threads: Mutex::new(threads) }
    }

    pub(crate) fn submit(&self, op: Arc<OprBlock>) {
        let s = &self.state;
        {
            let mut q = s.queues.lock();
            if op.priority > 0 {
                q.hi.push_back(op);
            } else {
                q.lo.push_back(op);
            }
            s.len.fetch_add(1, Ordering::SeqCst);
        }
        if s.spinning.load(Ordering::SeqCst) == 0
            && s.active.load(Ordering::SeqCst) == 0
            && s.sleepers.load(Ordering::SeqCst) > 0
        {
            s.wake_one();
        }
    }

    pub(crate) fn shutdown(&self) {
        self.state.stop.store(true, Ordering::SeqCst);
        {
            let _g = self.state.queues.lock();
            self.state.cv.notify_all();
        }
        let threads = std::mem::take(&mut *self.threads.lock());
        for t in threads {
            let _ = t.join();
        }
    }
}

fn worker_loop(shared: Weak<Shared>, st: Arc<PoolState>, spin: Duration, name: String) {
    loop {
        let mut op = st.pop();
        if op.is_none() && st.spinning.fetch_add(1, Ordering::SeqCst) == 0 {
            // The only spinner: poll for a short while.
            let until = Instant::now() + spin;
            let mut i = 0u32;
            crate::cpu::set_busy(true);
            let me = crate::cpu::current();
            while Instant::now() < until {
                op = st.pop();
                if op.is_some() {
                    break;
                }
                i += 1;
                if i.is_multiple_of(16) || crate::cpu::waiter_on(me) {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
            if op.is_none() {
                crate::cpu::set_busy(false);
            }
            st.spinning.fetch_sub(1, Ordering::SeqCst);
        } else if op.is_none() {
            st.spinning.fetch_sub(1, Ordering::SeqCst);
        }
        if op.is_none() {
            op = st.pop();
        }
        let op = match op {
            Some(op) => op,
            None => {
                if st.stop.load(Ordering::SeqCst) {
                    return;
                }
                st.sleepers.fetch_add(1, Ordering::SeqCst);
                let mut g = st.queues.lock();
                if g.hi.is_empty() && g.lo.is_empty() && !st.stop.load(Ordering::SeqCst) {
                    st.cv.wait_for(&mut g, Duration::from_millis(100));
                }
                drop(g);
                st.sleepers.fetch_sub(1, Ordering::SeqCst);
                continue;
            }
        };
        let Some(shared) = shared.upgrade() else { return };
        // Busy now: if more work is queued and nobody spins, hand it to a sleeper.
        st.active.fetch_add(1, Ordering::SeqCst);
        if st.len.load(Ordering::SeqCst) > 0
            && st.spinning.load(Ordering::SeqCst) == 0
            && st.sleepers.load(Ordering::SeqCst) > 0
        {
            st.wake_one();
        }
        crate::cpu::set_busy(true);
        let mut next = Some(op);
        while let Some(op) = next {
            next = shared.execute(op, &name);
            if next.is_some()
                && st.len.load(Ordering::SeqCst) > 0
                && st.spinning.load(Ordering::SeqCst) == 0
                && st.sleepers.load(Ordering::SeqCst) > 0
            {
                st.wake_one();
            }
        }
        crate::cpu::set_busy(false);
        st.active.fetch_sub(1, Ordering::SeqCst);
    }
}
