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
    /// The engine error kind this maps to (for frontends choosing exception types).
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Shape { .. } | Error::Value { .. } | Error::Axis { .. } => ErrorKind::Value,
            Error::Type { .. } => ErrorKind::Type,
            Error::Index { .. } => ErrorKind::Index,
            Error::Context { .. } => ErrorKind::Runtime,
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

/// Result alias.
pub type Result<T> = std::result::Result<T, Error>;
