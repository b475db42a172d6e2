//! # ferromx
//!
//! MXNet's imperative NDArray model in Rust: every operator infers shapes and
//! dtypes on the calling thread (so bad input fails at the call), then pushes
//! its kernel to the [`ferromx_engine`] and returns at once. Reads
//! (`to_vec`, `item`, `wait_to_read`) block for exactly the work they need.
//!
//! Layout: [`NDArray`] (storage chunk + shape + offset + dtype + context),
//! [`ops`] (one module per operator family), [`autograd`] (tape and backward),
//! [`opdef`] (every operator defined once, as data: the table frontends
//! generate their functions from), [`registry`] (the former name of the
//! table's lookup, kept for the Rust API).
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

pub mod autograd;
pub mod dtype;
pub mod error;
pub mod fileio;
pub mod fusion;
pub mod image;
pub mod ndarray;
pub mod opdef;
pub mod ops;
pub mod registry;
pub mod shape;
pub mod storage;

pub use dtype::{DType, Elem};
pub use error::{Error, Result};
pub use ferromx_engine as engine;
pub use ndarray::NDArray;
pub use shape::Shape;

/// A device context: `cpu(i)`, `cpu_pinned(i)`, `gpu(i)` (no GPU backend yet).
pub type Context = ferromx_engine::Device;

/// Waits for all pushed work; returns the first error of any op (and clears them).
pub fn waitall() -> Result<()> {
    Ok(ferromx_engine::Engine::global().wait_all()?)
}
