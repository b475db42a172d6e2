//! Tensor file formats read and written natively: safetensors (the `safetensors` crate).
//!
//! MXNet's own NDArray format (`.params`) lives in the Python package
//! (`ferromx.serialization`); this module holds the formats whose parsing and writing
//! benefit from running off the GIL.

pub mod safetensors;

pub use self::safetensors::{load_safetensors, load_safetensors_bytes, save_safetensors, SafetensorsFile};
