//! Tensor file bindings (safetensors): parsing, copying and file I/O run with the GIL released.

use crate::convert::{parse_ctx, to_py_err};
use crate::ndarray::{wrap_as, PyND};
use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use std::collections::HashMap;
use std::path::PathBuf;

/// The `(names, arrays)` pairs and metadata that `load_safetensors` returns.
type Loaded = (Vec<(String, Py<PyND>)>, Option<HashMap<String, String>>);

/// The `(arrays, names)` that `load_mxnet` returns (`None` for MXNet's none arrays).
type LoadedMxnet = (Vec<Option<Py<PyND>>>, Vec<String>);

/// Saves `arrays` under `names` to the safetensors file `path`, atomically.
#[pyfunction]
#[pyo3(signature = (path, names, arrays, metadata=None))]
pub fn save_safetensors(
    py: Python<'_>,
    path: PathBuf,
    names: Vec<String>,
    arrays: Vec<PyRef<'_, PyND>>,
    metadata: Option<HashMap<String, String>>,
) -> PyResult<()> {
    let arrs: Vec<ferromx::NDArray> = arrays.iter().map(|a| a.a.clone()).collect();
    drop(arrays);
    py.detach(|| ferromx::fileio::save_safetensors(&path, &names, &arrs, metadata)).map_err(to_py_err)
}

/// Serializes `arrays` under `names` to safetensors bytes.
#[pyfunction]
#[pyo3(signature = (names, arrays, metadata=None))]
pub fn dumps_safetensors<'py>(
    py: Python<'py>,
    names: Vec<String>,
    arrays: Vec<PyRef<'py, PyND>>,
    metadata: Option<HashMap<String, String>>,
) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
    let arrs: Vec<ferromx::NDArray> = arrays.iter().map(|a| a.a.clone()).collect();
    drop(arrays);
    let bytes = py
        .detach(|| ferromx::fileio::safetensors::serialize_safetensors(&names, &arrs, metadata))
        .map_err(to_py_err)?;
    Ok(pyo3::types::PyBytes::new(py, &bytes))
}

/// Loads a safetensors file (a path, or a bytes-like object holding a whole file):
/// `([(name, array), ...] in file order, metadata or None)`. Nothing is created unless
/// the whole file is valid.
#[pyfunction]
#[pyo3(signature = (source, ctx="cpu(0)", np=false))]
pub fn load_safetensors(py: Python<'_>, source: &Bound<'_, PyAny>, ctx: &str, np: bool) -> PyResult<Loaded> {
    let c = parse_ctx(ctx)?;
    // A buffer first: `os.fspath` would also accept `bytes` as a path.
    let file = if let Ok(buf) = PyBuffer::<u8>::get(source) {
        crate::glue::with_bytes(&buf, |b| ferromx::fileio::load_safetensors_bytes(b, c, "<buffer>"))?
    } else {
        let path: PathBuf = source.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err("load_safetensors: source must be a path or a bytes-like object")
        })?;
        py.detach(|| ferromx::fileio::load_safetensors(&path, c))
    }
    .map_err(to_py_err)?;
    let mut out = Vec::with_capacity(file.tensors.len());
    for (name, a) in file.tensors {
        out.push((name, wrap_as(py, a, np)?));
    }
    Ok((out, file.metadata))
}

/// Loads an MXNet NDArray file natively (the file mapped copy-on-write, GIL released):
/// `(arrays with None for MXNet's none arrays, names)`. Raises for anything it does not
/// handle; the Python reader (`ferromx.serialization`) is the fallback.
#[pyfunction]
#[pyo3(signature = (path, ctx="cpu(0)", np=false))]
pub fn load_mxnet(py: Python<'_>, path: PathBuf, ctx: &str, np: bool) -> PyResult<LoadedMxnet> {
    let c = parse_ctx(ctx)?;
    let (arrays, names) = py.detach(|| ferromx::fileio::load_mxnet(&path, c)).map_err(to_py_err)?;
    let mut out = Vec::with_capacity(arrays.len());
    for a in arrays {
        out.push(match a {
            Some(a) => Some(wrap_as(py, a, np)?),
            None => None,
        });
    }
    Ok((out, names))
}
