//! The `NDArray` Python class (native part) and waiting helpers.

use crate::convert::{engine_err, to_py_err};
use crate::glue;
use ferromx::autograd::GradReq;
use ferromx::engine::{Engine, WaitTicket};
use ferromx::ops::{self, BinOp, Idx, UnaryOp};
use ferromx::{NDArray, Shape};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyIndexError, PyTypeError};
use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::types::{PyBool, PyFloat, PyInt, PySlice, PyTuple};
use std::time::Duration;

/// Native NDArray handle. The Python package adds its pure-Python methods to
/// this same class, so every op result is a full `ferromx.nd.NDArray`.
#[pyclass(name = "NDArray", module = "ferromx._native", subclass, weakref)]
pub struct PyND {
    pub(crate) a: NDArray,
    /// Whether this object is a `ferromx.numpy.ndarray` (the [`PyNp`] subclass): results
    /// of its ops are created as that class too, with NumPy semantics.
    pub(crate) np: bool,
}

/// `ferromx.numpy.ndarray`: the same handle as [`PyND`] (storage, engine var, autograd)
/// with MXNet's `np` semantics. The Python package adds the NumPy-style methods to it.
#[pyclass(name = "ndarray", module = "ferromx._native", extends = PyND, subclass)]
pub struct PyNp;

/// Wraps a result as a legacy `NDArray`.
///
/// Under `FERROMX_ENGINE_TYPE=NaiveEngine` the op that produced `a` has already run
/// on this thread, so its failure is raised here, at the line that pushed it.
pub fn wrap(py: Python<'_>, a: NDArray) -> PyResult<Py<PyND>> {
    wrap_as(py, a, false)
}

/// Wraps a result as a `ferromx.numpy.ndarray` when `np`, else as a legacy `NDArray`
/// (one object either way: no Python-level wrapper).
pub fn wrap_as(py: Python<'_>, a: NDArray, np: bool) -> PyResult<Py<PyND>> {
    if Engine::global().is_naive() {
        a.wait_to_read().map_err(crate::convert::to_py_err)?;
    }
    if np {
        let init = pyo3::PyClassInitializer::from(PyND { a, np: true }).add_subclass(PyNp);
        return Ok(Bound::new(py, init)?.into_super().unbind());
    }
    Py::new(py, PyND { a, np: false })
}

/// MXNet's legacy operators never turn a non-scalar input into a 0-d result: full
/// reductions and the dot of two vectors have shape `(1,)`. Applied to legacy results
/// (a view, recorded for autograd); NumPy-semantics results keep their 0-d shape.
pub fn legacy_shape(a: NDArray, lift: bool) -> PyResult<NDArray> {
    if lift && a.ndim() == 0 {
        let out = ops::reshape_to(&a, Shape::new(&[1])).map_err(to_py_err)?;
        ferromx::autograd::annotate_as(&a, &out);
        return Ok(out);
    }
    Ok(a)
}

/// Prepares a push from Python: releases the GIL while the engine is over its
/// in-flight bound (so workers that need the GIL can drain), and records the
/// caller's `file:line` for error messages and the profiler.
#[inline]
pub fn pre_push(py: Python<'_>) {
    throttle(py);
    ferromx::storage::set_call_site(glue::call_site(py));
}

/// The back-pressure half of [`pre_push`]: waits, with the GIL released, while the
/// engine is over its in-flight bound.
#[inline]
pub fn throttle(py: Python<'_>) {
    let e = Engine::global();
    if e.over_limit() {
        py.detach(|| e.throttle());
    }
}

/// Blocks on a ticket with the GIL released, waking every 20 ms to let
/// Ctrl-C (KeyboardInterrupt) through.
pub fn wait_ticket(py: Python<'_>, t: WaitTicket) -> PyResult<()> {
    if !t.is_done() {
        loop {
            let done = py.detach(|| t.wait_timeout(Some(Duration::from_millis(20))));
            if done {
                break;
            }
            py.check_signals()?;
        }
    }
    t.finish().map_err(engine_err)
}

/// The label of a frontend wait: the user's `file:line` plus the blocking
/// call, built only when a profiler listens (errors use the push label).
pub fn wait_label(py: Python<'_>, call: &str) -> Option<std::sync::Arc<str>> {
    if !Engine::global().has_listeners() {
        return None;
    }
    let site = glue::call_site(py);
    Some(std::sync::Arc::from(format!("{} {call}", site.as_deref().unwrap_or("<unknown>"))))
}

enum Other {
    Arr(NDArray, bool),
    Num(f64),
}

fn other_of(o: &Bound<'_, PyAny>) -> Option<Other> {
    if let Ok(x) = o.cast::<PyND>() {
        let x = x.borrow();
        return Some(Other::Arr(x.a.clone(), x.np));
    }
    if o.is_instance_of::<PyFloat>() || o.is_instance_of::<PyInt>() || o.is_instance_of::<PyBool>() {
        return o.extract::<f64>().ok().map(Other::Num);
    }
    // NumPy scalars
    if o.hasattr("dtype").unwrap_or(false) && o.hasattr("shape").unwrap_or(false) {
        if let Ok(t) = o.getattr("shape") {
            if t.cast::<PyTuple>().map(|t| t.is_empty()).unwrap_or(false) {
                return o.call_method0("__float__").ok().and_then(|f| f.extract().ok()).map(Other::Num);
            }
        }
    }
    None
}

fn is_comparison(op: BinOp) -> bool {
    matches!(op, BinOp::Eq | BinOp::Ne | BinOp::Gt | BinOp::Ge | BinOp::Lt | BinOp::Le)
}

/// MXNet's `np` true division: integer and bool operands divide in float32.
fn np_div_operand(a: &NDArray) -> PyResult<NDArray> {
    if a.dtype().is_float() {
        Ok(a.clone())
    } else {
        ops::astype(a, ferromx::DType::F32).map_err(to_py_err)
    }
}

/// As in MXNet, a comparison is differentiable with a zero gradient (so `backward`
/// through `x > y` works and writes zeros).
fn record_zero_grad(op: BinOp, ins: &[NDArray], out: &NDArray) {
    let refs: Vec<&NDArray> = ins.iter().collect();
    if !ferromx::autograd::needs_record(&refs) {
        return;
    }
    let metas: Vec<(Shape, ferromx::DType, ferromx::Context)> =
        ins.iter().map(|x| (x.shape().clone(), x.dtype(), x.ctx())).collect();
    ferromx::autograd::record(
        op.name(),
        &refs,
        &[out],
        Box::new(move |_g| metas.iter().map(|(s, d, c)| ops::zeros(s.clone(), *d, *c).map(Some)).collect()),
    );
}

/// Whether a binary operation of `self` (np-ness `np`) and `other` has np semantics.
fn np_any(np: bool, other: &Other) -> bool {
    np || matches!(other, Other::Arr(_, true))
}

fn binop(py: Python<'_>, a: &NDArray, np: bool, o: &Bound<'_, PyAny>, op: BinOp, reverse: bool) -> PyResult<Py<PyAny>> {
    let Some(other) = other_of(o) else {
        return Ok(py.NotImplemented());
    };
    pre_push(py);
    if np_any(np, &other) && is_comparison(op) {
        // MXNet's np comparisons: one bool-valued operator (`_npi_equal` ...)
        let r = match &other {
            Other::Arr(b, _) if reverse => ferromx::ops::predicate::compare(op, b, a),
            Other::Arr(b, _) => ferromx::ops::predicate::compare(op, a, b),
            Other::Num(s) => ferromx::ops::predicate::compare_scalar(op, a, *s, reverse),
        };
        return Ok(wrap_as(py, r.map_err(to_py_err)?, true)?.into_any());
    }
    let ins: Vec<NDArray> = match &other {
        Other::Arr(b, _) => vec![a.clone(), b.clone()],
        Other::Num(_) => vec![a.clone()],
    };
    let (np, r) = match other {
        Other::Arr(b, bnp) => {
            let np = np || bnp;
            let (x, y) = if reverse { (&b, a) } else { (a, &b) };
            if np && op == BinOp::Sub && x.dtype() == ferromx::DType::Bool && y.dtype() == ferromx::DType::Bool {
                return Err(PyTypeError::new_err(
                    "subtract: bool arrays cannot be subtracted (use logical_xor or ^ instead)",
                ));
            }
            let r = if np && op == BinOp::Div && !(x.dtype().is_float() && y.dtype().is_float()) {
                // MXNet: an integer or bool operand divides in the other one's float
                // dtype (int32 / float16 is float16), two of them in float32
                let (xd, yd) = (x.dtype(), y.dtype());
                let (x, y) = if xd.is_float() {
                    (x.clone(), ops::astype(y, xd).map_err(to_py_err)?)
                } else if yd.is_float() {
                    (ops::astype(x, yd).map_err(to_py_err)?, y.clone())
                } else {
                    (np_div_operand(x)?, np_div_operand(y)?)
                };
                ops::binary(op, &x, &y)
            } else {
                ops::binary(op, x, y)
            };
            (np, r)
        }
        Other::Num(s) if np && op == BinOp::Div && !a.dtype().is_float() => {
            (np, ops::scalar_op(op, &np_div_operand(a)?, s, reverse))
        }
        Other::Num(s) => (np, ops::user_scalar_op(op, a, s, reverse)),
    };
    let r = r.map_err(to_py_err)?;
    if is_comparison(op) {
        record_zero_grad(op, &ins, &r);
    }
    Ok(wrap_as(py, r, np)?.into_any())
}

fn inplace(py: Python<'_>, slf: &Bound<'_, PyND>, o: &Bound<'_, PyAny>, op: BinOp) -> PyResult<()> {
    let a = slf.borrow().a.clone();
    let Some(other) = other_of(o) else {
        return Err(PyTypeError::new_err(format!(
            "unsupported operand type for in-place {}: {}",
            op.name(),
            o.get_type()
        )));
    };
    check_recorded_inplace(op, &a, &other)?;
    pre_push(py);
    match other {
        Other::Arr(b, _) => ops::binary_inplace(op, &a, &b),
        Other::Num(s) => ops::scalar_inplace(op, &a, s),
    }
    .map_err(to_py_err)
}

/// MXNet's rules for `x op= y` under `autograd.record()`: writing into an array of the
/// graph (a variable or a recorded result) raises, and so does an in-place update by a
/// value of the graph (the gradient could not be recorded); constants are fine.
fn check_recorded_inplace(op: BinOp, a: &NDArray, other: &Other) -> PyResult<()> {
    if !ferromx::autograd::is_recording() {
        return Ok(());
    }
    let name = format!("in-place {}", op.name());
    if a.has_entry() {
        return Err(to_py_err(ferromx::Error::value(
            &name,
            "Assigning to NDArrays that are already in a computational graph will cause undefined behavior \
             when evaluating gradients. Please call backward first to clear the graph or do this out side of \
             a record section. Also note that you cannot use inplace operations like +=, *=, relu(x, out=x), \
             y[idx]=x, etc inside a record section.",
        )));
    }
    if let Other::Arr(b, _) = other {
        if b.has_entry() {
            return Err(to_py_err(ferromx::Error::value(
                &name,
                "Inplace operations (+=, -=, x[:]=, etc) are not supported when recording with autograd.",
            )));
        }
    }
    Ok(())
}

/// A pending copy to host memory (`asnumpy_async`).
#[pyclass(module = "ferromx._native")]
pub struct CopyTicket {
    ticket: Option<WaitTicket>,
    buf: Option<PyBuffer<u8>>,
}

#[pymethods]
impl CopyTicket {
    /// Whether the copy has completed (never blocks).
    fn done(&self) -> bool {
        self.ticket.as_ref().map(|t| t.is_done()).unwrap_or(true)
    }
    /// Waits up to `timeout` seconds (None: forever); returns whether done.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let Some(t) = self.ticket.as_ref() else { return Ok(true) };
        let deadline = timeout.map(|s| std::time::Instant::now() + Duration::from_secs_f64(s.max(0.0)));
        loop {
            let slice = match deadline {
                Some(d) => {
                    let now = std::time::Instant::now();
                    if now >= d {
                        return Ok(t.is_done());
                    }
                    (d - now).min(Duration::from_millis(20))
                }
                None => Duration::from_millis(20),
            };
            if py.detach(|| t.wait_timeout(Some(slice))) {
                return Ok(true);
            }
            py.check_signals()?;
        }
    }
    /// Completes the wait: raises the engine error if the copy (or anything it depended on) failed.
    fn finish(&mut self, py: Python<'_>) -> PyResult<()> {
        let r = match self.ticket.take() {
            Some(t) => wait_ticket(py, t),
            None => Ok(()),
        };
        if r.is_ok() {
            self.buf.take();
        }
        r
    }
}

impl Drop for CopyTicket {
    fn drop(&mut self) {
        let done = self.ticket.as_ref().map(|t| t.is_done()).unwrap_or(true);
        if !done {
            // The engine may still write into this buffer: never release it.
            if let Some(b) = self.buf.take() {
                std::mem::forget(b);
            }
        }
    }
}

fn shape_tuple<'py>(py: Python<'py>, s: &Shape) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, s.dims())
}

#[pymethods]
impl PyND {
    /// Shape as a tuple.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        shape_tuple(py, self.a.shape())
    }
    /// Number of elements.
    #[getter]
    fn size(&self) -> usize {
        self.a.size()
    }
    /// Rank.
    #[getter]
    fn ndim(&self) -> usize {
        self.a.ndim()
    }
    /// Dtype name.
    #[getter]
    fn _dtype_name(&self) -> &'static str {
        self.a.dtype().name()
    }
    /// Context as (kind, id).
    #[getter]
    fn _ctx(&self) -> (String, u32) {
        let c = self.a.ctx();
        let k = c.to_string();
        (k.split('(').next().unwrap_or("cpu").to_string(), c.id)
    }
    /// Engine var id of the storage.
    #[getter]
    fn _var_id(&self) -> u64 {
        self.a.var_id()
    }
    /// Blocks until the pending writes of this array are done (GIL released).
    #[pyo3(signature = (call="wait_to_read"))]
    fn _wait_to_read(&self, py: Python<'_>, call: &str) -> PyResult<()> {
        let t = self.a.read_ticket(wait_label(py, call)).map_err(to_py_err)?;
        wait_ticket(py, t)
    }
    /// Blocks until pending reads and writes are done.
    fn wait_to_write(&self, py: Python<'_>) -> PyResult<()> {
        let a = self.a.clone();
        py.detach(|| a.wait_to_write()).map_err(to_py_err)
    }
    /// Whether the value is computed (never blocks).
    fn is_ready(&self) -> bool {
        self.a.is_ready()
    }
    /// Starts copying into a writable buffer (a NumPy array); returns a ticket.
    #[pyo3(signature = (dst, call="asnumpy_async"))]
    fn _copy_out(&self, py: Python<'_>, dst: &Bound<'_, PyAny>, call: &str) -> PyResult<CopyTicket> {
        let buf = PyBuffer::<u8>::get(dst)?;
        let t = glue::copy_out(&self.a, &buf, wait_label(py, call))?;
        Ok(CopyTicket { ticket: Some(t), buf: Some(buf) })
    }
    /// Copies into a writable buffer and waits (`call` names the blocking API for the profiler).
    #[pyo3(signature = (dst, call="asnumpy"))]
    fn _read_into(&self, py: Python<'_>, dst: &Bound<'_, PyAny>, call: &str) -> PyResult<()> {
        let mut t = self._copy_out(py, dst, call)?;
        t.finish(py)
    }

    fn __add__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.a, self.np, o, BinOp::Add, false)
    }
    fn __radd__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.a, self.np, o, BinOp::Add, true)
    }
    fn __sub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.a, self.np, o, BinOp::Sub, false)
    }
    fn __rsub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.a, self.np, o, BinOp::Sub, true)
    }
    fn __mul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.a, self.np, o, BinOp::Mul, false)
    }
    fn __rmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.a, self.np, o, BinOp::Mul, true)
    }
    fn __truediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.a, self.np, o, BinOp::Div, false)
    }
    fn __rtruediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.a, self.np, o, BinOp::Div, true)
    }
    fn __mod__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.a, self.np, o, BinOp::Mod, false)
    }
    fn __rmod__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.a, self.np, o, BinOp::Mod, true)
    }
    fn __pow__(&self, py: Python<'_>, o: &Bound<'_, PyAny>, _m: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        binop(py, &self.a, self.np, o, BinOp::Pow, false)
    }
    fn __rpow__(&self, py: Python<'_>, o: &Bound<'_, PyAny>, _m: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        binop(py, &self.a, self.np, o, BinOp::Pow, true)
    }
    fn __iadd__(slf: &Bound<'_, Self>, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, slf, o, BinOp::Add)
    }
    fn __isub__(slf: &Bound<'_, Self>, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, slf, o, BinOp::Sub)
    }
    fn __imul__(slf: &Bound<'_, Self>, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, slf, o, BinOp::Mul)
    }
    fn __itruediv__(slf: &Bound<'_, Self>, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, slf, o, BinOp::Div)
    }
    fn __imod__(slf: &Bound<'_, Self>, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, slf, o, BinOp::Mod)
    }
    fn __richcmp__(&self, py: Python<'_>, o: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let b = match op {
            CompareOp::Eq => BinOp::Eq,
            CompareOp::Ne => BinOp::Ne,
            CompareOp::Gt => BinOp::Gt,
            CompareOp::Ge => BinOp::Ge,
            CompareOp::Lt => BinOp::Lt,
            CompareOp::Le => BinOp::Le,
        };
        binop(py, &self.a, self.np, o, b, false)
    }
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }
    fn __neg__(&self, py: Python<'_>) -> PyResult<Py<PyND>> {
        pre_push(py);
        let r = if self.np && self.a.dtype() == ferromx::DType::Bool {
            // MXNet's np negates a bool array as int64
            let x = ops::astype(&self.a, ferromx::DType::I64).map_err(to_py_err)?;
            ops::unary(UnaryOp::Negative, &x)
        } else {
            ops::unary(UnaryOp::Negative, &self.a)
        };
        wrap_as(py, r.map_err(to_py_err)?, self.np)
    }
    fn __abs__(&self, py: Python<'_>) -> PyResult<Py<PyND>> {
        pre_push(py);
        wrap_as(py, ops::unary(UnaryOp::Abs, &self.a).map_err(to_py_err)?, self.np)
    }
    /// Whether this is a `ferromx.numpy.ndarray` (NumPy semantics).
    #[getter]
    fn _is_np(&self) -> bool {
        self.np
    }
    /// The same array (storage, engine var, autograd entry) as a `ferromx.numpy.ndarray`.
    fn _as_np(&self, py: Python<'_>) -> PyResult<Py<PyND>> {
        wrap_as(py, self.a.clone(), true)
    }
    /// The same array (storage, engine var, autograd entry) as a legacy `NDArray`.
    fn _as_nd(&self, py: Python<'_>) -> PyResult<Py<PyND>> {
        wrap_as(py, self.a.clone(), false)
    }
    /// Whether this array is in a recorded graph: a variable (`attach_grad`) or the
    /// result of a recorded operation (MXNet's "has an autograd entry").
    #[getter]
    fn _in_graph(&self) -> bool {
        self.a.has_entry()
    }
    /// Makes this handle refer to `other`'s array (storage, engine var, autograd entry),
    /// as MXNet's `NDArray.__setstate__` swaps the handle of an existing object.
    fn _replace_with(&mut self, other: PyRef<'_, PyND>) {
        self.a = other.a.clone();
    }
    fn __len__(&self) -> PyResult<usize> {
        self.a.dims().first().copied().ok_or_else(|| PyTypeError::new_err("len() of a 0-d NDArray"))
    }

    /// Attaches a gradient buffer.
    #[pyo3(signature = (grad_req="write", stype=None))]
    fn attach_grad(&self, grad_req: &str, stype: Option<&str>) -> PyResult<()> {
        let _ = stype;
        let r = GradReq::parse(grad_req).map_err(to_py_err)?;
        self.a.attach_grad(r).map_err(to_py_err)
    }
    /// The gradient buffer (None if not attached).
    #[getter]
    fn grad(&self, py: Python<'_>) -> PyResult<Option<Py<PyND>>> {
        self.a.grad().map(|g| wrap_as(py, g, self.np)).transpose()
    }
    /// The gradient request of this variable.
    #[getter]
    fn _grad_req(&self) -> &'static str {
        match self.a.grad_req() {
            GradReq::Null => "null",
            GradReq::Write => "write",
            GradReq::Add => "add",
        }
    }
    /// Runs backward from this array (returns once gradient ops are pushed).
    #[pyo3(signature = (out_grad=None, retain_graph=false, train_mode=true))]
    fn backward(
        &self,
        py: Python<'_>,
        out_grad: Option<PyRef<'_, PyND>>,
        retain_graph: bool,
        train_mode: bool,
    ) -> PyResult<()> {
        pre_push(py);
        let prev = ferromx::autograd::set_training(train_mode);
        let r = self.a.backward(out_grad.as_ref().map(|g| &g.a), retain_graph);
        ferromx::autograd::set_training(prev);
        r.map_err(to_py_err)
    }
    /// A handle cut from the autograd graph, sharing storage.
    fn detach(&self, py: Python<'_>) -> PyResult<Py<PyND>> {
        wrap_as(py, self.a.detach(), self.np)
    }
    /// Whether backward wrote the gradient since the flag was cleared.
    fn grad_fresh(&self) -> bool {
        self.a.grad_fresh()
    }
    fn _set_grad_fresh(&self, v: bool) {
        self.a.set_grad_fresh(v)
    }
    /// Reshape to an explicit shape (a view).
    fn _reshape(&self, py: Python<'_>, shape: Vec<usize>) -> PyResult<Py<PyND>> {
        wrap_as(py, ops::reshape_to(&self.a, Shape::new(&shape)).map_err(to_py_err)?, self.np)
    }
    /// Strided slicing: list of (axis, begin, end, step) in normalised form.
    fn _slice(&self, py: Python<'_>, spec: Vec<(usize, usize, usize, i64)>) -> PyResult<Py<PyND>> {
        pre_push(py);
        wrap_as(py, ops::slice_steps(&self.a, &spec).map_err(to_py_err)?, self.np)
    }
    /// Writes `value` into the strided region.
    fn _slice_assign(
        &self,
        py: Python<'_>,
        spec: Vec<(usize, usize, usize, i64)>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        pre_push(py);
        let v = match other_of(value) {
            Some(Other::Arr(v, _)) => v,
            Some(Other::Num(s)) => NDArray::scalar(s, self.a.ctx()),
            None => return Err(PyTypeError::new_err("value must be an NDArray or a number")),
        };
        ops::slice_assign(&self.a, &spec, &v).map_err(to_py_err)
    }
    /// NumPy-style `x[key]` through the Rust indexing API (ints, slices with
    /// any step, None, Ellipsis, and one NDArray entry: integer positions or
    /// a bool mask). Runs on the engine; only a mask is read first.
    fn _index(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyND>> {
        let idx = parse_index(key)?;
        pre_push(py);
        let a = self.a.clone();
        let r = py.detach(move || a.index(&idx)).map_err(to_py_err)?;
        wrap_as(py, r, self.np)
    }
    /// NumPy-style `x[key] = value` (value broadcast to the selection), in place.
    fn _index_assign(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let idx = parse_index(key)?;
        let v = match other_of(value) {
            Some(Other::Arr(v, _)) => v,
            Some(Other::Num(s)) => NDArray::scalar(s, self.a.ctx()),
            None => return Err(PyTypeError::new_err("value must be an NDArray or a number")),
        };
        pre_push(py);
        let a = self.a.clone();
        py.detach(move || a.index_assign(&idx, &v)).map_err(to_py_err)
    }
    /// Integer index along axis 0: a view.
    fn _at(&self, py: Python<'_>, i: i64) -> PyResult<Py<PyND>> {
        let n = *self.a.dims().first().ok_or_else(|| PyIndexError::new_err("too many indices for a 0-d array"))? as i64;
        let j = if i < 0 { i + n } else { i };
        if j < 0 || j >= n {
            return Err(PyIndexError::new_err(format!("index {i} is out of bounds for axis 0 with size {n}")));
        }
        pre_push(py);
        let j = j as usize;
        let s = ops::slice_steps(&self.a, &[(0, j, j + 1, 1)]).map_err(to_py_err)?;
        let d = self.a.dims()[1..].to_vec();
        wrap_as(py, ops::reshape_to(&s, Shape::new(&d)).map_err(to_py_err)?, self.np)
    }
    /// DLPack export sharing memory; waits for pending writes first. With
    /// `max_version >= (1, 0)` the capsule is versioned (writable unless
    /// `_read_only`); otherwise it is the legacy unversioned form.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None, _read_only=false))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
        _read_only: bool,
    ) -> PyResult<Py<PyAny>> {
        let _ = stream;
        if let Some((t, _)) = dl_device {
            if t != 1 {
                return Err(pyo3::exceptions::PyBufferError::new_err("ferromx arrays live on the CPU (kDLCPU)"));
            }
        }
        if copy == Some(true) {
            let c = ops::copy(&self.a).map_err(to_py_err)?;
            let t = c.read_ticket(None).map_err(to_py_err)?;
            wait_ticket(py, t)?;
            return match max_version {
                Some((major, _)) if major >= 1 => glue::to_dlpack_versioned(py, &c, _read_only),
                _ => glue::to_dlpack(py, &c),
            };
        }
        self._wait_to_read(py, "__dlpack__")?;
        match max_version {
            Some((major, _)) if major >= 1 => glue::to_dlpack_versioned(py, &self.a, _read_only),
            _ => glue::to_dlpack(py, &self.a),
        }
    }
    /// DLPack device: (kDLCPU, 0).
    fn __dlpack_device__(&self) -> (i32, i32) {
        (1, 0)
    }
    /// DLPack capsule for reading (waits for pending writes).
    fn to_dlpack_for_read(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self._wait_to_read(py, "to_dlpack_for_read")?;
        glue::to_dlpack(py, &self.a)
    }
    /// DLPack capsule for writing (waits for pending reads and writes).
    fn to_dlpack_for_write(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.wait_to_write(py)?;
        glue::to_dlpack(py, &self.a)
    }
    fn __reduce__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let m = py.import("ferromx.ndarray.ndarray")?;
        let f = m.getattr("_rebuild")?;
        let np = self.a.to_bytes().map_err(to_py_err)?;
        let args =
            (pyo3::types::PyBytes::new(py, &np), shape_tuple(py, self.a.shape())?, self.a.dtype().name(), self.np);
        Ok(PyTuple::new(py, [f.into_any(), args.into_pyobject(py)?.into_any()])?.into_any().unbind())
    }
}

/// Creates an array by copying a C-contiguous buffer (a `ferromx.numpy.ndarray` when `np`).
#[pyfunction]
#[pyo3(signature = (obj, shape, dtype, ctx, np=false))]
pub fn array_from_buffer(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    shape: Vec<usize>,
    dtype: &str,
    ctx: &str,
    np: bool,
) -> PyResult<Py<PyND>> {
    let dt = ferromx::DType::from_name(dtype).map_err(to_py_err)?;
    let c = crate::convert::parse_ctx(ctx)?;
    let buf = PyBuffer::<u8>::get(obj)?;
    let a = glue::with_bytes(&buf, |b| NDArray::from_bytes(b, Shape::new(&shape), dt, c))?.map_err(to_py_err)?;
    wrap_as(py, a, np)
}

/// Converts a Python index key (an entry or a tuple of entries) to [`Idx`]s.
fn parse_index(key: &Bound<'_, PyAny>) -> PyResult<Vec<Idx>> {
    let items: Vec<Bound<'_, PyAny>> = match key.cast::<PyTuple>() {
        Ok(t) => t.iter().collect(),
        Err(_) => vec![key.clone()],
    };
    let py = key.py();
    let opt = |v: Bound<'_, PyAny>| -> PyResult<Option<i64>> {
        if v.is_none() {
            Ok(None)
        } else {
            v.extract().map(Some)
        }
    };
    items
        .into_iter()
        .map(|it| {
            if it.is_none() {
                Ok(Idx::NewAxis)
            } else if it.is(py.Ellipsis()) {
                Ok(Idx::Ellipsis)
            } else if let Ok(s) = it.cast::<PySlice>() {
                Ok(Idx::Slice {
                    start: opt(s.getattr("start")?)?,
                    stop: opt(s.getattr("stop")?)?,
                    step: opt(s.getattr("step")?)?,
                })
            } else if let Ok(a) = it.cast::<PyND>() {
                let a = a.borrow().a.clone();
                Ok(if a.dtype() == ferromx::DType::Bool { Idx::Mask(a) } else { Idx::Array(a) })
            } else if it.is_instance_of::<PyBool>() {
                Err(PyTypeError::new_err("index: a bool is not a valid index entry"))
            } else if let Ok(i) = it.extract::<i64>() {
                Ok(Idx::Int(i))
            } else {
                Err(PyTypeError::new_err(format!(
                    "index: entries must be integers, slices, None, Ellipsis or NDArrays, not {}",
                    it.get_type().name()?
                )))
            }
        })
        .collect()
}
