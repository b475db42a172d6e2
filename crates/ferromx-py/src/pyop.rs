//! `push_py`: a Python function pushed as an engine op.

use crate::convert::{parse_ctx, to_py_err};
use crate::ndarray::{pre_push, PyND};
use ferromx::engine::{Engine, ErrorKind, Op, OpFailure, Var};
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;

/// Maps a Python exception raised by the function to the op's failure.
fn failure_of(py: Python<'_>, e: &PyErr) -> OpFailure {
    let kind = if e.is_instance_of::<PyValueError>(py) {
        ErrorKind::Value
    } else if e.is_instance_of::<PyTypeError>(py) {
        ErrorKind::Type
    } else if e.is_instance_of::<PyIndexError>(py) {
        ErrorKind::Index
    } else {
        ErrorKind::Runtime
    };
    let ty = e.get_type(py).name().map(|n| n.to_string()).unwrap_or_else(|_| "Exception".into());
    OpFailure::new(kind, format!("{ty}: {}", e.value(py)))
}

/// Pushes `func()` as an engine op reading `reads` and writing `writes` on the
/// workers of `ctx`. The op takes the GIL to run; inside it the declared arrays
/// are ready and NDArray operations run at once on that thread. An exception
/// (or a failing nested op) becomes the op's error on the arrays it writes,
/// raised at their next read.
#[pyfunction]
#[pyo3(signature = (func, reads, writes, ctx="cpu(0)", name="_python_op", priority=0))]
pub fn push_py(
    py: Python<'_>,
    func: Py<PyAny>,
    reads: Vec<PyRef<'_, PyND>>,
    writes: Vec<PyRef<'_, PyND>>,
    ctx: &str,
    name: &str,
    priority: i32,
) -> PyResult<()> {
    if !func.bind(py).is_callable() {
        return Err(PyTypeError::new_err("push_py: func must be callable"));
    }
    let device = parse_ctx(ctx)?;
    ferromx::NDArray::empty(ferromx::Shape::new(&[0]), ferromx::DType::F32, device).map_err(to_py_err)?;
    let rv: Vec<Var> = reads.iter().map(|x| x.a.var().clone()).collect();
    let wv: Vec<Var> = writes.iter().map(|x| x.a.var().clone()).collect();
    // The arrays stay alive with the op (their vars keep the storage).
    let keep: Vec<ferromx::NDArray> = reads.iter().chain(writes.iter()).map(|x| x.a.clone()).collect();
    pre_push(py);
    let (r2, w2) = (rv.clone(), wv.clone());
    let op = Op::new(name.to_string(), move || {
        let engine = Engine::global();
        let (res, nested) = engine.run_inline(&r2, &w2, || {
            Python::attach(|py| {
                let r = func.call0(py).map(|_| ()).map_err(|e| failure_of(py, &e));
                drop(func);
                r
            })
        });
        drop(keep);
        res?;
        match nested {
            Some(f) => Err(f),
            None => Ok(()),
        }
    })
    .reads(&rv)
    .writes(&wv)
    .device(device)
    .priority(priority)
    .label(ferromx::storage::call_site());
    Engine::global().push(op);
    Ok(())
}
