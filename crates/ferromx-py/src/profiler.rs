use pyo3::prelude::*;
/// Registers profiler functions.
pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> { Ok(()) }
