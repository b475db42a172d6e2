//! PyO3 bindings of ferromx: argument conversion, GIL release, exceptions.
//! Everything else lives in the `ferromx` crate or the Python package.

#![warn(clippy::undocumented_unsafe_blocks)]
mod convert;
mod fileio;
mod glue;
mod image;
mod ndarray;
mod plan;
mod profiler;
mod pyop;
mod table;

/// The extension's allocator. Why not the system's: engine ops are built on the
/// frontend thread and freed on a worker, so glibc's arenas took a lock on most
/// frees and the two threads contended for it (a tenth of a small hybridized
/// forward's time was futex calls inside malloc). mimalloc frees into per-thread
/// heaps without that lock.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use convert::{engine_err, to_attrs, to_py_err, ErrorTypes, ERRORS};
use ferromx::autograd;
use ferromx::engine::Engine;
use ndarray::{legacy_shape, pre_push, wait_ticket, wrap, wrap_as, CopyTicket, PyND, PyNp};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

/// Runs a registered operator: `invoke(name, inputs, **attrs)`.
///
/// The results are `ferromx.numpy.ndarray`s when an input is one, else legacy
/// `NDArray`s; legacy results follow MXNet's legacy shapes (see [`legacy_shape`]).
#[pyfunction]
#[pyo3(signature = (name, inputs, **attrs))]
fn invoke(
    py: Python<'_>,
    name: &str,
    inputs: Vec<Option<PyRef<'_, PyND>>>,
    attrs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyAny>> {
    invoke_as(py, name, &inputs, attrs, false)
}

/// `invoke` whose results are always `ferromx.numpy.ndarray`s (the `np` creation functions).
#[pyfunction]
#[pyo3(signature = (name, inputs, **attrs))]
fn invoke_np(
    py: Python<'_>,
    name: &str,
    inputs: Vec<Option<PyRef<'_, PyND>>>,
    attrs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyAny>> {
    invoke_as(py, name, &inputs, attrs, true)
}

/// A reduction (it declares `keepdims`): in MXNet's legacy API it gives shape `(1,)` even
/// for a 0-d input.
pub(crate) fn is_reduction(def: &ferromx::opdef::OpDef) -> bool {
    def.params.iter().any(|p| p.name == "keepdims")
}

/// Runs `def` as `invoke` does: pushes (see [`pre_push`]) and gives legacy results
/// (`np` false) MXNet's legacy shapes. `reduction` is [`is_reduction`] of `def`.
pub(crate) fn invoke_legacy(
    py: Python<'_>,
    def: &'static ferromx::opdef::OpDef,
    ins: &[Option<ferromx::NDArray>],
    attrs: &ferromx::opdef::Attrs,
    np: bool,
    reduction: bool,
) -> PyResult<Vec<ferromx::NDArray>> {
    pre_push(py);
    invoke_prepared(def, ins, attrs, np, reduction)
}

/// [`invoke_legacy`] after [`pre_push`] ran for this call (a plan prepares once for
/// all its steps: they share the caller's line, and the engine's bound is checked per step
/// by [`ndarray::throttle`]).
pub(crate) fn invoke_prepared(
    def: &'static ferromx::opdef::OpDef,
    ins: &[Option<ferromx::NDArray>],
    attrs: &ferromx::opdef::Attrs,
    np: bool,
    reduction: bool,
) -> PyResult<Vec<ferromx::NDArray>> {
    let lift = !np && (reduction || ins.iter().any(|x| x.as_ref().is_some_and(|x| x.ndim() > 0)));
    let outs = ferromx::opdef::invoke_def(def, ins, attrs).map_err(to_py_err)?;
    outs.into_iter().map(|o| legacy_shape(o, lift)).collect()
}

fn invoke_as(
    py: Python<'_>,
    name: &str,
    inputs: &[Option<PyRef<'_, PyND>>],
    attrs: Option<&Bound<'_, PyDict>>,
    force_np: bool,
) -> PyResult<Py<PyAny>> {
    let ins: Vec<Option<ferromx::NDArray>> = inputs.iter().map(|x| x.as_ref().map(|x| x.a.clone())).collect();
    let np = force_np || inputs.iter().any(|x| x.as_ref().is_some_and(|x| x.np));
    let a = to_attrs(attrs)?;
    let def = ferromx::opdef::find(name).ok_or_else(|| to_py_err(ferromx::Error::value(name, "no such operator")))?;
    let outs = invoke_legacy(py, def, &ins, &a, np, is_reduction(def))?;
    if outs.len() == 1 {
        let o = outs.into_iter().next().expect("one output");
        return Ok(wrap_as(py, o, np)?.into_any());
    }
    let v: Vec<Py<PyND>> = outs.into_iter().map(|o| wrap_as(py, o, np)).collect::<PyResult<_>>()?;
    Ok(PyList::new(py, v)?.into_any().unbind())
}

/// Copies an array onto another context.
#[pyfunction]
fn copy_to_context(py: Python<'_>, arr: PyRef<'_, PyND>, ctx: &str) -> PyResult<Py<PyND>> {
    let c = convert::parse_ctx(ctx)?;
    pre_push(py);
    wrap_as(py, ferromx::ops::copy_to_ctx(&arr.a, c).map_err(to_py_err)?, arr.np)
}

/// Wraps a DLPack capsule (or an object with `__dlpack__`) without copying.
#[pyfunction]
fn from_dlpack(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Py<PyND>> {
    let cap = if obj.hasattr("__dlpack__")? { obj.call_method0("__dlpack__")? } else { obj.clone() };
    wrap(py, glue::from_dlpack(&cap)?)
}

/// Waits for all pushed work (GIL released); raises the first error.
#[pyfunction]
fn waitall(py: Python<'_>) -> PyResult<()> {
    let t = Engine::global().all_ticket(ndarray::wait_label(py, "waitall")).map_err(engine_err)?;
    wait_ticket(py, t)
}

/// MXNet's `engine.set_bulk_size(size)` for the calling thread: operator calls are
/// pushed in bulk ops of up to `size` calls (0: off). Returns the previous size.
#[pyfunction]
fn set_bulk_size(size: usize) -> usize {
    ferromx::fusion::bulk::set_size(size)
}

/// Operator calls this thread holds in a bulk, not yet pushed (tests).
#[pyfunction]
fn bulk_pending() -> usize {
    ferromx::fusion::bulk::pending()
}

/// Eager fusion: `set_fusion(on)` switches it (returns the previous state;
/// `None` only reads it). Pending work is flushed first.
#[pyfunction]
#[pyo3(signature = (on=None))]
fn set_fusion(on: Option<bool>) -> bool {
    let was = ferromx::fusion::enabled();
    if let Some(on) = on {
        ferromx::fusion::set_enabled(on);
    }
    was
}

/// Number of elementwise calls fusion holds back right now (tests).
#[pyfunction]
fn fusion_pending() -> usize {
    ferromx::fusion::pending()
}

#[pyfunction]
fn set_recording(on: bool) -> bool {
    autograd::set_recording(on)
}
#[pyfunction]
fn set_training(on: bool) -> bool {
    autograd::set_training(on)
}
#[pyfunction]
fn is_recording() -> bool {
    autograd::is_recording()
}
#[pyfunction]
fn is_training() -> bool {
    autograd::is_training()
}

/// `autograd.backward` / `autograd.grad`: returns gradients of `variables` when given.
#[pyfunction]
#[pyo3(signature = (heads, head_grads, retain_graph, create_graph, train_mode, variables=None))]
fn backward(
    py: Python<'_>,
    heads: Vec<PyRef<'_, PyND>>,
    head_grads: Vec<Option<PyRef<'_, PyND>>>,
    retain_graph: bool,
    create_graph: bool,
    train_mode: bool,
    variables: Option<Vec<PyRef<'_, PyND>>>,
) -> PyResult<Vec<Option<Py<PyND>>>> {
    pre_push(py);
    let h: Vec<ferromx::NDArray> = heads.iter().map(|x| x.a.clone()).collect();
    let mut hg: Vec<Option<ferromx::NDArray>> = head_grads.iter().map(|x| x.as_ref().map(|x| x.a.clone())).collect();
    hg.resize(h.len(), None);
    let var_np: Vec<bool> = variables.as_ref().map(|v| v.iter().map(|x| x.np).collect()).unwrap_or_default();
    let vars: Option<Vec<ferromx::NDArray>> = variables.map(|v| v.iter().map(|x| x.a.clone()).collect());
    let prev = autograd::set_training(train_mode);
    let r = autograd::backward(&h, &hg, retain_graph, create_graph, vars.as_deref());
    autograd::set_training(prev);
    let r = r.map_err(to_py_err)?;
    r.into_iter()
        .enumerate()
        .map(|(i, g)| g.map(|g| wrap_as(py, g, var_np.get(i).copied().unwrap_or(false))).transpose())
        .collect()
}

/// The recorded computation of `heads` for `autograd.get_symbol`: `(nodes, heads)`, each
/// node `(kind, op, attrs, inputs, annotated, leaf)` with kind `'var'`, `'null'` or `'op'`,
/// inputs and heads as `(node index, output index)`, nodes inputs first. `leaf` is, for a
/// leaf, its position in `known` when it is one of those arrays, else its array (a
/// constant) while alive, else `None` (graph tracing maps placeholders and constants).
#[pyfunction]
#[pyo3(signature = (heads, known = None))]
fn autograd_graph<'py>(
    py: Python<'py>,
    heads: Vec<PyRef<'_, PyND>>,
    known: Option<Vec<PyRef<'_, PyND>>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let h: Vec<ferromx::NDArray> = heads.iter().map(|x| x.a.clone()).collect();
    let g = autograd::graph(&h).map_err(to_py_err)?;
    let known: Vec<ferromx::NDArray> = known.unwrap_or_default().iter().map(|x| x.a.clone()).collect();
    let nodes = PyList::empty(py);
    for n in &g.nodes {
        let leaf: Py<PyAny> = match &n.array {
            None => py.None(),
            Some(a) => match known.iter().position(|k| k.same(a)) {
                Some(i) => i.into_pyobject(py)?.into_any().unbind(),
                None => wrap_as(py, a.clone(), false)?.into_any(),
            },
        };
        let attrs = PyDict::new(py);
        let (kind, op, annotated) = match &n.kind {
            autograd::SymKind::Var => ("var", None, true),
            autograd::SymKind::Const => ("null", None, true),
            autograd::SymKind::Op { op, attrs: a, annotated } => {
                for (k, v) in a {
                    attrs.set_item(k, v)?;
                }
                ("op", Some(op.clone()), *annotated)
            }
        };
        nodes.append((kind, op, attrs, n.inputs.clone(), annotated, leaf))?;
    }
    PyTuple::new(py, [nodes.into_any(), g.heads.clone().into_pyobject(py)?.into_any()])
}

/// Marks arrays as variables with given gradient buffers and requests.
#[pyfunction]
fn mark_variables(vars: Vec<PyRef<'_, PyND>>, grads: Vec<PyRef<'_, PyND>>, reqs: Vec<String>) -> PyResult<()> {
    for ((v, g), r) in vars.iter().zip(grads.iter()).zip(reqs.iter()) {
        let req = autograd::GradReq::parse(r).map_err(to_py_err)?;
        v.a.mark_variable(Some(g.a.clone()), req);
    }
    Ok(())
}

/// Records a custom Python function (`autograd.Function`) as a graph node whose
/// gradient calls `func(*output_grads)` (a list of input gradients back).
#[pyfunction]
fn record_custom(inputs: Vec<PyRef<'_, PyND>>, outputs: Vec<PyRef<'_, PyND>>, func: Py<PyAny>) -> PyResult<()> {
    let ins: Vec<ferromx::NDArray> = inputs.iter().map(|x| x.a.clone()).collect();
    let outs: Vec<ferromx::NDArray> = outputs.iter().map(|x| x.a.clone()).collect();
    let inrefs: Vec<&ferromx::NDArray> = ins.iter().collect();
    if !autograd::needs_record(&inrefs) {
        return Ok(());
    }
    let outrefs: Vec<&ferromx::NDArray> = outs.iter().collect();
    let n_in = ins.len();
    let np = outputs.iter().any(|x| x.np);
    autograd::record(
        "_CustomFunction",
        &inrefs,
        &outrefs,
        Box::new(move |g| {
            Python::attach(|py| -> PyResult<Vec<Option<ferromx::NDArray>>> {
                let args: Vec<Py<PyND>> = g.iter().map(|x| wrap_as(py, x.clone(), np)).collect::<PyResult<_>>()?;
                let r = func.call1(py, PyTuple::new(py, args)?)?;
                let list: Vec<PyRef<'_, PyND>> = r.extract(py)?;
                if list.len() != n_in {
                    return Err(pyo3::exceptions::PyValueError::new_err(format!(
                        "Function.backward returned {} gradients for {} inputs",
                        list.len(),
                        n_in
                    )));
                }
                Ok(list.iter().map(|x| Some(x.a.clone())).collect())
            })
            .map_err(|e| ferromx::Error::value("_CustomFunction", e.to_string()))
        }),
    );
    Ok(())
}

/// Seeds random generators (`ctx` None: all).
#[pyfunction]
#[pyo3(signature = (seed, ctx=None))]
fn seed(seed: u64, ctx: Option<&str>) -> PyResult<()> {
    let c = ctx.map(convert::parse_ctx).transpose()?;
    ferromx::ops::random::seed(seed, c);
    Ok(())
}

/// Engine settings and counters.
#[pyfunction]
fn engine_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let e = Engine::global();
    let c = e.config();
    let d = PyDict::new(py);
    d.set_item("naive", e.is_naive())?;
    d.set_item("cpu_workers", c.cpu_workers)?;
    d.set_item("max_inflight_ops", c.max_inflight_ops)?;
    d.set_item("max_inflight_bytes", c.max_inflight_bytes)?;
    d.set_item("inflight_ops", e.inflight_ops())?;
    d.set_item("inflight_bytes", e.inflight_bytes())?;
    let p = ferromx::storage::pool_stats();
    d.set_item("pool_bytes", p.pooled_bytes)?;
    d.set_item("pool_hits", p.hits)?;
    d.set_item("pool_misses", p.misses)?;
    d.set_item("live_bytes", p.live_bytes)?;
    d.set_item("peak_live_bytes", p.peak_live_bytes)?;
    d.set_item("peak_held_bytes", p.peak_held_bytes)?;
    Ok(d)
}

/// Resets the storage pool's high-water marks (`peak_live_bytes`, `peak_held_bytes`).
#[pyfunction]
fn reset_memory_peaks() {
    ferromx::storage::reset_pool_peaks();
}

/// Installs the Python exception classes used for errors.
#[pyfunction]
fn _set_error_types(py: Python<'_>, mxnet: Py<PyAny>, value: Py<PyAny>, type_: Py<PyAny>, index: Py<PyAny>) {
    let _ = ERRORS.set(py, ErrorTypes { mxnet, value, type_, index });
}

/// Test helper: pushes an op that fails (kind: 'value', 'index', 'panic', 'runtime')
/// writing `arr`, so error propagation can be exercised from Python.
#[pyfunction]
fn _fail_op(py: Python<'_>, arr: PyRef<'_, PyND>, kind: &str, message: String) -> PyResult<()> {
    pre_push(py);
    ferromx::ops::test_fail(&arr.a, kind, message).map_err(to_py_err)
}

/// Test helper: pushes an op that sleeps `ms` milliseconds writing `arr` (is_ready tests).
#[pyfunction]
fn _sleep_op(py: Python<'_>, arr: PyRef<'_, PyND>, ms: u64) {
    pre_push(py);
    ferromx::ops::test_sleep(&arr.a, ms);
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyND>()?;
    m.add_class::<PyNp>()?;
    m.add_class::<CopyTicket>()?;
    m.add_class::<plan::NativePlan>()?;
    m.add_function(wrap_pyfunction!(invoke, m)?)?;
    m.add_function(wrap_pyfunction!(set_fusion, m)?)?;
    m.add_function(wrap_pyfunction!(set_bulk_size, m)?)?;
    m.add_function(wrap_pyfunction!(bulk_pending, m)?)?;
    m.add_function(wrap_pyfunction!(fusion_pending, m)?)?;
    m.add_function(wrap_pyfunction!(invoke_np, m)?)?;
    m.add_function(wrap_pyfunction!(autograd_graph, m)?)?;
    m.add_function(wrap_pyfunction!(table::op_table, m)?)?;
    m.add_function(wrap_pyfunction!(table::op_infer, m)?)?;
    m.add_function(wrap_pyfunction!(table::op_graph_inputs, m)?)?;
    m.add_function(wrap_pyfunction!(table::op_graph_outputs, m)?)?;
    m.add_function(wrap_pyfunction!(table::op_param_shapes, m)?)?;
    m.add_function(wrap_pyfunction!(table::op_input_shapes, m)?)?;
    m.add_function(wrap_pyfunction!(table::op_graph_dtypes, m)?)?;
    m.add_function(wrap_pyfunction!(ndarray::array_from_buffer, m)?)?;
    m.add_function(wrap_pyfunction!(waitall, m)?)?;
    m.add_function(wrap_pyfunction!(image::imdecode, m)?)?;
    m.add_function(wrap_pyfunction!(image::imdecode_batch, m)?)?;
    m.add_function(wrap_pyfunction!(image::image_record_batch, m)?)?;
    m.add_function(wrap_pyfunction!(image::image_size, m)?)?;
    m.add_function(wrap_pyfunction!(image::fused_vision_batch, m)?)?;
    m.add_function(wrap_pyfunction!(image::imencode, m)?)?;
    m.add_function(wrap_pyfunction!(fileio::save_safetensors, m)?)?;
    m.add_function(wrap_pyfunction!(fileio::dumps_safetensors, m)?)?;
    m.add_function(wrap_pyfunction!(fileio::load_safetensors, m)?)?;
    m.add_function(wrap_pyfunction!(fileio::load_mxnet, m)?)?;
    m.add_function(wrap_pyfunction!(copy_to_context, m)?)?;
    m.add_function(wrap_pyfunction!(from_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(set_recording, m)?)?;
    m.add_function(wrap_pyfunction!(set_training, m)?)?;
    m.add_function(wrap_pyfunction!(is_recording, m)?)?;
    m.add_function(wrap_pyfunction!(is_training, m)?)?;
    m.add_function(wrap_pyfunction!(backward, m)?)?;
    m.add_function(wrap_pyfunction!(mark_variables, m)?)?;
    m.add_function(wrap_pyfunction!(seed, m)?)?;
    m.add_function(wrap_pyfunction!(record_custom, m)?)?;
    m.add_function(wrap_pyfunction!(engine_info, m)?)?;
    m.add_function(wrap_pyfunction!(reset_memory_peaks, m)?)?;
    m.add_function(wrap_pyfunction!(_set_error_types, m)?)?;
    m.add_function(wrap_pyfunction!(_fail_op, m)?)?;
    m.add_function(wrap_pyfunction!(_sleep_op, m)?)?;
    m.add_function(wrap_pyfunction!(pyop::push_py, m)?)?;
    profiler::register(m)?;
    Ok(())
}
