//! Tensor file formats read and written natively: safetensors (the `safetensors` crate).
//!
//! MXNet's own NDArray format (`.params`) is written by the Python package
//! (`ferromx.serialization`, also the reference reader); [`mxnet`] is its fast reader.
//! Loading from a path maps the file copy-on-write and shares its pages
//! ([`crate::storage::MappedFile`]).

pub mod mxnet;
pub mod safetensors;

pub use self::mxnet::load_mxnet;
pub use self::safetensors::{load_safetensors, load_safetensors_bytes, save_safetensors, SafetensorsFile};
