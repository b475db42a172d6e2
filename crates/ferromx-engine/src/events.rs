//! Profiler hooks: what the engine reports to whoever listens.

use crate::Device;
use parking_lot::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// What a wait was waiting for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaitTarget {
    /// Pending writes of one variable.
    Read(u64),
    /// Pending reads and writes of one variable.
    Write(u64),
    /// Everything pushed so far.
    All,
}

/// One thing the engine did, as reported to listeners.
///
/// Timestamps are `Instant`s; listeners convert them against one origin so
/// events from every thread line up on a single clock.
#[derive(Clone, Debug)]
pub enum EngineEvent {
    /// An operation started running on a worker (or the caller, in naive mode).
    OpStart {
        /// Operation id (unique per engine).
        op_id: u64,
        /// Operation name.
        name: Arc<str>,
        /// Extra detail the frontend attached (e.g. input shapes).
        detail: Option<Arc<str>>,
        /// Device it runs on.
        device: Device,
        /// Name of the thread running it.
        thread: Arc<str>,
        /// When it started.
        at: Instant,
    },
    /// An operation finished (successfully, failed, or skipped).
    OpEnd {
        /// Operation id.
        op_id: u64,
        /// Operation name.
        name: Arc<str>,
        /// Device it ran on.
        device: Device,
        /// Name of the thread that ran it.
        thread: Arc<str>,
        /// When it ended.
        at: Instant,
        /// Whether it failed or inherited a failure.
        failed: bool,
    },
    /// A frontend wait started.
    WaitStart {
        /// What is waited for.
        target: WaitTarget,
        /// Caller's label (e.g. `train.py:42 asnumpy`).
        label: Option<Arc<str>>,
        /// When it started.
        at: Instant,
    },
    /// A frontend wait ended.
    WaitEnd {
        /// What was waited for.
        target: WaitTarget,
        /// Caller's label.
        label: Option<Arc<str>>,
        /// When the wait began.
        started: Instant,
        /// When it ended.
        at: Instant,
    },
    /// A variable was created.
    VarNew {
        /// Variable id.
        var: u64,
    },
    /// A variable was deleted (after every op pushed against it completed).
    VarDelete {
        /// Variable id.
        var: u64,
    },
    /// Counters, reported after each push and completion.
    Counters {
        /// Ops pushed since start.
        pushed: u64,
        /// Ops completed since start.
        completed: u64,
        /// Ops pushed but not yet completed.
        in_flight: u64,
        /// Bytes declared by ops in flight.
        bytes_in_flight: u64,
        /// When.
        at: Instant,
    },
}

/// A subscriber to engine events.
pub type Listener = Arc<dyn Fn(&EngineEvent) + Send + Sync>;

/// The set of listeners. `active` is checked first on every hot path so that
/// the engine pays one relaxed load when nobody listens.
#[derive(Default)]
pub(crate) struct Listeners {
    active: AtomicBool,
    list: RwLock<Vec<(u64, Listener)>>,
    next: std::sync::atomic::AtomicU64,
}

impl Listeners {
    #[inline]
    pub(crate) fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    pub(crate) fn emit(&self, ev: &EngineEvent) {
        for (_, l) in self.list.read().iter() {
            // A panicking listener must not take a worker (and its op) down.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| l(ev)));
        }
    }

    pub(crate) fn add(&self, l: Listener) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut list = self.list.write();
        list.push((id, l));
        self.active.store(true, Ordering::Release);
        id
    }

    pub(crate) fn remove(&self, id: u64) {
        let mut list = self.list.write();
        list.retain(|(i, _)| *i != id);
        self.active.store(!list.is_empty(), Ordering::Release);
    }
}
