//! Errors carried by failed operations and returned by waits.

use std::fmt;
use std::sync::Arc;

/// Which family of error an operation failed with.
///
/// The engine knows nothing of tensors, but frontends map these to their own
/// exception types (Python: `IndexError`, `ValueError`, `TypeError`, `MXNetError`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Generic runtime failure.
    Runtime,
    /// An index was out of range.
    Index,
    /// A value was invalid for the operation.
    Value,
    /// A type (dtype) was invalid for the operation.
    Type,
    /// The operation panicked.
    Panic,
    /// A wait was issued from inside an engine operation.
    WaitInsideOp,
    /// A wait was interrupted or timed out by the caller.
    Interrupted,
}

/// What an operation's closure returns when it fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpFailure {
    /// Error family.
    pub kind: ErrorKind,
    /// Human readable message (should name shapes and values involved).
    pub message: String,
    /// The operator that failed, when it is not the engine op itself: one call of
    /// a bulk op (several operator calls run as one engine op) names itself here,
    /// so the error names the user's operator rather than the bulk.
    pub op: Option<String>,
    /// The call site of that operator, when it differs from the engine op's label.
    pub label: Option<String>,
}

impl OpFailure {
    /// A generic runtime failure.
    pub fn runtime(message: impl Into<String>) -> Self {
        Self { kind: ErrorKind::Runtime, message: message.into(), op: None, label: None }
    }
    /// A failure of the given kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), op: None, label: None }
    }
    /// The same failure, attributed to operator `op` (see [`OpFailure::op`]).
    pub fn in_op(mut self, op: impl Into<String>) -> Self {
        self.op = Some(op.into());
        self
    }
    /// The same failure, pushed at `label` (see [`OpFailure::label`]).
    pub fn at(mut self, label: Option<&str>) -> Self {
        self.label = label.map(str::to_string);
        self
    }
}

impl fmt::Display for OpFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OpFailure {}

/// The error stored on a failed variable and returned by a wait.
///
/// It names the operation that failed originally (not the one that inherited
/// the failure) and the frontend call-site label that pushed it, so the user
/// sees where the problem came from even when the read happens much later.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineError {
    /// Error family.
    pub kind: ErrorKind,
    /// Name of the operation that failed first.
    pub op: String,
    /// Call-site label the frontend attached to that operation, if any.
    pub label: Option<String>,
    /// Message of the failure.
    pub message: String,
    /// Engine id of the operation that failed (ids grow in push order; 0 for an error
    /// that did not come from an operation). A raised error clears the discarded
    /// failures of operations pushed before it, whenever their arrays are deleted.
    pub op_id: u64,
}

impl EngineError {
    /// An error that did not come from an operation (e.g. a wait issued inside an op).
    pub fn new(kind: ErrorKind, op: impl Into<String>, message: impl Into<String>) -> Self {
        Self { kind, op: op.into(), label: None, message: message.into(), op_id: 0 }
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.op, self.message)?;
        if let Some(label) = &self.label {
            write!(f, " (pushed at {label})")?;
        }
        Ok(())
    }
}

impl std::error::Error for EngineError {}

/// Shared handle to an engine error (cheap to copy onto many failed variables).
pub type SharedError = Arc<EngineError>;

/// Result of engine waits.
pub type Result<T> = std::result::Result<T, EngineError>;
