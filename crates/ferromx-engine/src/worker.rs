//! Per-device worker pools.
//!
//! Ready ops go into two MPMC queues (priority and normal). An idle worker
//! spins for a short while (`EngineConfig::spin`, yielding between polls so it
//! does not starve the frontend thread on a small machine) before it blocks:
//! waking a parked thread costs ~20 µs here, a pipelined hand-off well under
//! one.

use crate::engine::{OprBlock, Shared};
use crate::Device;
use crossbeam_channel::{select, unbounded, Receiver, Sender, TryRecvError};
use parking_lot::Mutex;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub(crate) struct Pool {
    hi_fast: Sender<Arc<OprBlock>>,
    lo_fast: Sender<Arc<OprBlock>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Pool {
    pub(crate) fn start(shared: Weak<Shared>, device: Device, n: usize, spin: Duration) -> Self {
        let (hi_tx, hi_rx) = unbounded();
        let (lo_tx, lo_rx) = unbounded();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut threads = Vec::with_capacity(n);
        for i in 0..n {
            let hi_rx: Receiver<Arc<OprBlock>> = hi_rx.clone();
            let lo_rx: Receiver<Arc<OprBlock>> = lo_rx.clone();
            let shared = shared.clone();
            let stop = stop.clone();
            let name = format!("ferromx-{device}-w{i}");
            let h = std::thread::Builder::new()
                .name(name.clone())
                .spawn(move || worker_loop(shared, hi_rx, lo_rx, spin, stop, name))
                .expect("failed to spawn an engine worker thread");
            threads.push(h);
        }
        Self {
            hi_fast: hi_tx,
            lo_fast: lo_tx,
            threads: Mutex::new(threads),
            stop,
        }
    }

    pub(crate) fn submit(&self, op: Arc<OprBlock>) {
        let tx = if op.priority > 0 {
            &self.hi_fast
        } else {
            &self.lo_fast
        };
        // The pool owns both receivers' workers until shutdown; a send can only
        // fail after shutdown, when no new work is accepted anyway.
        let _ = tx.send(op);
    }

    pub(crate) fn shutdown(&self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Idle workers poll the stop flag at least every 100 ms.
        let threads = std::mem::take(&mut *self.threads.lock());
        for t in threads {
            let _ = t.join();
        }
    }
}

fn worker_loop(
    shared: Weak<Shared>,
    hi: Receiver<Arc<OprBlock>>,
    lo: Receiver<Arc<OprBlock>>,
    spin: Duration,
    stop: Arc<std::sync::atomic::AtomicBool>,
    name: String,
) {
    let try_take = || -> Option<Arc<OprBlock>> {
        match hi.try_recv() {
            Ok(op) => return Some(op),
            Err(TryRecvError::Empty) | Err(TryRecvError::Disconnected) => {}
        }
        lo.try_recv().ok()
    };
    loop {
        let mut op = try_take();
        if op.is_none() {
            let until = Instant::now() + spin;
            let mut i = 0u32;
            while Instant::now() < until {
                op = try_take();
                if op.is_some() {
                    break;
                }
                i += 1;
                if i % 16 == 0 {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
        }
        let op = match op {
            Some(op) => op,
            None => {
                if stop.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                select! {
                    recv(hi) -> m => match m { Ok(op) => op, Err(_) => continue },
                    recv(lo) -> m => match m { Ok(op) => op, Err(_) => continue },
                    default(Duration::from_millis(100)) => continue,
                }
            }
        };
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let mut next = Some(op);
        while let Some(op) = next {
            next = shared.execute(op, &name);
        }
    }
}
