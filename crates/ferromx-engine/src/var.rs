//! Versioned variables: the unit of dependency tracking.

use crate::engine::{OprBlock, Shared};
use crate::events::EngineEvent;
use crate::SharedError;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

/// A variable the engine tracks reads and writes of.
///
/// A `Var` is a cheap, clonable handle. Every operation pushed against a var
/// holds a clone until it completes, so dropping the frontend's last handle
/// defers the var's deletion (and whatever `on_delete` frees) until after every
/// operation already pushed against it has run: memory is released then, not
/// before.
#[derive(Clone)]
pub struct Var(pub(crate) Arc<VarInner>);

/// Per-var scheduling state, guarded by one mutex.
///
/// The queue holds operations that could not be granted access yet, in push
/// order. Access is granted from the front: a run of reads together, or one
/// write alone. `pending_writes` counts queued plus running writes; it makes
/// `is_ready` and the wait fast path a single locked load.
#[derive(Default)]
pub(crate) struct VarState {
    pub(crate) queue: VecDeque<(Arc<OprBlock>, bool)>,
    pub(crate) running_reads: usize,
    pub(crate) writing: bool,
    pub(crate) pending_writes: usize,
    pub(crate) error: Option<SharedError>,
    pub(crate) cleared_at: Option<u64>,
    pub(crate) seq: u64,
    /// Write events on this var: each write op counts once when it is granted
    /// access and once when it completes (failed ones included).
    pub(crate) write_events: u64,
}

impl VarState {
    /// Grants the write access (`writing`) and counts the event (`write_events`).
    pub(crate) fn grant_write(&mut self) {
        self.writing = true;
        self.write_events += 1;
    }

    /// The error an op registered with `seq` inherits, if any.
    pub(crate) fn inherited(&self, seq: u64) -> Option<&SharedError> {
        self.error.as_ref().filter(|_| self.cleared_at.is_none_or(|c| seq < c))
    }

    /// Raises the error once: returns it if not raised yet and marks it raised.
    pub(crate) fn raise_once(&mut self) -> Option<SharedError> {
        if self.error.is_some() && self.cleared_at.is_none() {
            self.cleared_at = Some(self.seq);
            return self.error.clone();
        }
        None
    }

    /// Whether it carries an error not raised yet.
    pub(crate) fn unraised(&self) -> bool {
        self.error.is_some() && self.cleared_at.is_none()
    }
}

pub(crate) struct VarInner {
    pub(crate) id: u64,
    pub(crate) state: Mutex<VarState>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) on_delete: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Var {
    /// Engine-unique id of this variable.
    pub fn id(&self) -> u64 {
        self.0.id
    }

    /// Registers a closure that runs when the variable is deleted, that is once
    /// the last handle is gone and every op pushed against it has completed.
    pub fn set_on_delete(&self, f: impl FnOnce() + Send + 'static) {
        *self.0.on_delete.lock() = Some(Box::new(f));
    }

    /// Whether two handles name the same variable.
    pub fn same(&self, other: &Var) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// A count that changes whenever a write to this variable starts or ends:
    /// each write op adds one when it is granted access and one when it completes
    /// (failed ones included).
    ///
    /// Why: an operator that derives data from an input it only reads (a
    /// convolution's transformed filter in an inference plan) may keep that
    /// data while `(id, write_events)` is unchanged. Read inside an op that holds
    /// read access, the count is stable: no write can run until the op ends. Inside
    /// an op that also writes the variable (a bulk of calls), the count differs from
    /// every value seen outside it, before and after, so nothing kept there is
    /// reused by a later op.
    pub fn write_events(&self) -> u64 {
        self.0.state.lock().write_events
    }

    /// The error this var carries and has not raised yet (does not clear it).
    pub fn error(&self) -> Option<SharedError> {
        let st = self.0.state.lock();
        if st.unraised() {
            st.error.clone()
        } else {
            None
        }
    }
}

impl fmt::Debug for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Var({})", self.0.id)
    }
}

impl Drop for VarInner {
    fn drop(&mut self) {
        let st = self.state.get_mut();
        if st.unraised() {
            if let Some(e) = st.error.take() {
                self.shared.orphan(e);
            }
        }
        if let Some(f) = self.on_delete.get_mut().take() {
            f();
        }
        if self.shared.listeners.active() {
            self.shared.listeners.emit(&EngineEvent::VarDelete { var: self.id });
        }
    }
}
