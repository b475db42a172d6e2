//! Structured errors: every variant names the operator, and shapes where they matter.

use crate::shape::Shape;
use ferromx_engine::{EngineError, ErrorKind, OpFailure};

/// A ferromx error.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// Shapes that do not fit the operator.
    #[error("{op}: incompatible shapes {shapes}: {msg}")]
    Shape {
        /// Operator name.
        op: String,
        /// The shapes involved, formatted.
        shapes: String,
        /// What is wrong.
        msg: String,
    },
    /// A dtype the operator does not accept.
    #[error("{op}: {msg}")]
    Type {
        /// Operator name.
        op: String,
        /// What is wrong.
        msg: String,
    },
    /// An axis out of range.
    #[error("{op}: axis {axis} is out of bounds for array of dimension {ndim}")]
    Axis {
        /// Operator name.
        op: String,
        /// The axis given.
        axis: i64,
        /// Rank of the array.
        ndim: usize,
    },
    /// An index out of range.
    #[error("{op}: {msg}")]
    Index {
        /// Operator name.
        op: String,
        /// What is wrong.
        msg: String,
    },
    /// An invalid argument value.
    #[error("{op}: {msg}")]
    Value {
        /// Operator name.
        op: String,
        /// What is wrong.
        msg: String,
    },
    /// Arrays on different contexts.
    #[error("{op}: arrays are on different contexts ({a} vs {b})")]
    Context {
        /// Operator name.
        op: String,
        /// First context.
        a: String,
        /// Second context.
        b: String,
    },
    /// The memory for a result could not be allocated (or its size does not
    /// fit in an address space). `op` is empty until [`Error::in_op`] names it.
    #[error("{}cannot allocate an array of shape {shape} and dtype {dtype} ({bytes}): out of memory", op_prefix(.op))]
    Alloc {
        /// Operator name (may be empty).
        op: String,
        /// The requested shape.
        shape: String,
        /// The requested dtype.
        dtype: String,
        /// The requested size, formatted.
        bytes: String,
    },
    /// A context that has no backend (no GPU backend exists yet), or an
    /// operator with no kernel for the context's device kind.
    #[error("{}{msg} (context {ctx})", op_prefix(.op))]
    Device {
        /// Operator name (may be empty).
        op: String,
        /// The context.
        ctx: String,
        /// What is missing.
        msg: String,
    },
    /// An error raised by an operation that ran on the engine.
    #[error("{0}")]
    Engine(EngineError),
}

impl Error {
    /// Shape error helper.
    pub fn shape(op: &str, shapes: &[&Shape], msg: impl Into<String>) -> Self {
        let s: Vec<String> = shapes.iter().map(|s| s.to_string()).collect();
        Error::Shape { op: op.into(), shapes: s.join(" and "), msg: msg.into() }
    }
    /// Value error helper.
    pub fn value(op: &str, msg: impl Into<String>) -> Self {
        Error::Value { op: op.into(), msg: msg.into() }
    }
    /// Type error helper.
    pub fn dtype(op: &str, msg: impl Into<String>) -> Self {
        Error::Type { op: op.into(), msg: msg.into() }
    }
    /// Index error helper.
    pub fn index(op: &str, msg: impl Into<String>) -> Self {
        Error::Index { op: op.into(), msg: msg.into() }
    }
    /// Names the operator of an error raised below the operator layer
    /// (allocation); other errors are returned unchanged.
    pub fn in_op(self, name: &str) -> Self {
        match self {
            Error::Alloc { op, shape, dtype, bytes } if op.is_empty() => {
                Error::Alloc { op: name.trim_start_matches('_').to_string(), shape, dtype, bytes }
            }
            Error::Device { op, ctx, msg } if op.is_empty() => {
                Error::Device { op: name.trim_start_matches('_').to_string(), ctx, msg }
            }
            e => e,
        }
    }
    /// The engine error kind this maps to (for frontends choosing exception types).
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Shape { .. } | Error::Value { .. } | Error::Axis { .. } => ErrorKind::Value,
            Error::Type { .. } => ErrorKind::Type,
            Error::Index { .. } => ErrorKind::Index,
            Error::Context { .. } | Error::Alloc { .. } | Error::Device { .. } => ErrorKind::Runtime,
            Error::Engine(e) => e.kind,
        }
    }
}

impl From<EngineError> for Error {
    fn from(e: EngineError) -> Self {
        Error::Engine(e)
    }
}

impl From<Error> for OpFailure {
    fn from(e: Error) -> Self {
        OpFailure::new(e.kind(), e.to_string())
    }
}

fn op_prefix(op: &str) -> String {
    if op.is_empty() {
        String::new()
    } else {
        format!("{op}: ")
    }
}

/// `n` bytes in binary units, for messages.
pub(crate) fn fmt_bytes(n: u128) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}

/// Result alias.
pub type Result<T> = std::result::Result<T, Error>;
