//! Conversions between Python values and ferromx types, and error mapping.

use ferromx::engine::ErrorKind;
use ferromx::opdef::{Attr, Attrs};
use ferromx::Error;
use pyo3::exceptions::{PyIndexError, PyKeyboardInterrupt, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// Exception classes defined by the Python package (`ferromx.base`): each is a
/// subclass of `MXNetError` and, where NumPy would raise one, of the matching
/// built-in (`ValueError`, `TypeError`, `IndexError`).
pub struct ErrorTypes {
    pub mxnet: Py<PyAny>,
    pub value: Py<PyAny>,
    pub type_: Py<PyAny>,
    pub index: Py<PyAny>,
}

pub static ERRORS: PyOnceLock<ErrorTypes> = PyOnceLock::new();

fn raise(kind: ErrorKind, msg: String) -> PyErr {
    Python::attach(|py| {
        if let Some(t) = ERRORS.get(py) {
            let cls = match kind {
                ErrorKind::Value => &t.value,
                ErrorKind::Type => &t.type_,
                ErrorKind::Index => &t.index,
                _ => &t.mxnet,
            };
            if let Ok(cls) = cls.bind(py).cast::<pyo3::types::PyType>() {
                return PyErr::from_type(cls.clone(), msg);
            }
        }
        match kind {
            ErrorKind::Value => PyValueError::new_err(msg),
            ErrorKind::Type => PyTypeError::new_err(msg),
            ErrorKind::Index => PyIndexError::new_err(msg),
            ErrorKind::Interrupted => PyKeyboardInterrupt::new_err(msg),
            _ => PyRuntimeError::new_err(msg),
        }
    })
}

/// Maps a ferromx error to a Python exception.
pub fn to_py_err(e: Error) -> PyErr {
    match e {
        Error::Engine(ee) => {
            let kind = ee.kind;
            raise(kind, ee.to_string())
        }
        other => raise(other.kind(), other.to_string()),
    }
}

/// Maps an engine error to a Python exception.
pub fn engine_err(e: ferromx::engine::EngineError) -> PyErr {
    to_py_err(Error::Engine(e))
}

/// Parses a context string (`cpu(0)`, `cpu_pinned(1)`, ...) or raises ValueError.
pub fn parse_ctx(s: &str) -> PyResult<ferromx::Context> {
    ferromx::opdef::parse_ctx(s).ok_or_else(|| PyValueError::new_err(format!("bad context {s}")))
}

/// Converts one Python attribute value.
pub fn to_attr(v: &Bound<'_, PyAny>) -> PyResult<Attr> {
    if v.is_none() {
        return Ok(Attr::None);
    }
    if v.is_instance_of::<PyBool>() {
        return Ok(Attr::Bool(v.extract()?));
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(Attr::Int(v.extract()?));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(Attr::Float(v.extract()?));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(Attr::Str(v.extract()?));
    }
    if v.is_instance_of::<PyTuple>() || v.is_instance_of::<PyList>() {
        let items: Vec<Bound<'_, PyAny>> = v.try_iter()?.collect::<PyResult<_>>()?;
        let ints: PyResult<Vec<i64>> =
            items.iter().map(|item| item.call_method0("__index__").and_then(|x| x.extract())).collect();
        if let Ok(out) = ints {
            return Ok(Attr::Ints(out));
        }
        let mut out = Vec::new();
        for item in &items {
            let f: f64 = item
                .call_method0("__float__")
                .and_then(|x| x.extract())
                .map_err(|_| PyTypeError::new_err(format!("expected a tuple of numbers, got element {item}")))?;
            out.push(f);
        }
        return Ok(Attr::Floats(out));
    }
    if let Ok(i) = v.call_method0("__index__") {
        return Ok(Attr::Int(i.extract()?));
    }
    if let Ok(f) = v.call_method0("__float__") {
        return Ok(Attr::Float(f.extract()?));
    }
    // Contexts, dtypes and anything else: their string form.
    Ok(Attr::Str(v.str()?.extract()?))
}

/// Converts a kwargs dict.
pub fn to_attrs(d: Option<&Bound<'_, PyDict>>) -> PyResult<Attrs> {
    let mut a = Attrs::default();
    if let Some(d) = d {
        for (k, v) in d.iter() {
            a.0.push((k.extract()?, to_attr(&v)?));
        }
    }
    Ok(a)
}
