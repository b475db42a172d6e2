//! The operator table as Python data, and inference on metadata: what the
//! Python package generates its functions, docstrings and stubs from.

use crate::convert::{parse_ctx, to_attrs, to_py_err};
use ferromx::opdef::{self, Grad, GraphForm, KernelSlot, Meta, OpDef, ScalarForm};
use ferromx::{DType, Shape};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

fn slot(k: &KernelSlot) -> &'static str {
    match k {
        KernelSlot::Empty => "empty",
        KernelSlot::Call(_) => "call",
        KernelSlot::Inline => "inline",
        KernelSlot::Composite => "composite",
    }
}

fn scalar_form<'py>(py: Python<'py>, d: &OpDef, out: &Bound<'py, PyDict>) -> PyResult<()> {
    match &d.scalar {
        Some(ScalarForm::Unary(u, deriv)) => {
            out.set_item("scalar", ("unary", format!("{u:?}"), deriv.is_some()))?;
        }
        Some(ScalarForm::Binary(op)) => {
            out.set_item("scalar", ("binary", format!("{op:?}"), false))?;
            out.set_item("scalar_op", op.scalar_def(false).name)?;
            out.set_item("rscalar_op", op.scalar_def(true).name)?;
        }
        Some(ScalarForm::Scalar(op, rev)) => out.set_item("scalar", ("scalar", format!("{op:?}"), *rev))?,
        Some(ScalarForm::Fill) => out.set_item("scalar", ("fill", "", false))?,
        Some(ScalarForm::Clip) => out.set_item("scalar", ("clip", "", false))?,
        Some(ScalarForm::Where) => out.set_item("scalar", ("where", "", false))?,
        // the third item of a predicate's form says its result is bool
        Some(ScalarForm::Test(t)) => out.set_item("scalar", ("test", format!("{t:?}"), true))?,
        Some(ScalarForm::BoolBinary(op)) => {
            out.set_item("scalar", ("binary", format!("{op:?}"), true))?;
            let def = |rev| ferromx::ops::predicate::compare_scalar_def(*op, rev).map_err(to_py_err);
            out.set_item("scalar_op", def(false)?.name)?;
            out.set_item("rscalar_op", def(true)?.name)?;
        }
        Some(ScalarForm::BoolScalar(op)) => out.set_item("scalar", ("scalar", format!("{op:?}"), false))?,
        None => out.set_item("scalar", py.None())?,
    }
    Ok(())
}

fn def_dict<'py>(py: Python<'py>, d: &OpDef) -> PyResult<Bound<'py, PyDict>> {
    let o = PyDict::new(py);
    o.set_item("name", d.name)?;
    o.set_item("nd", d.aliases.nd.to_vec())?;
    o.set_item("np", d.aliases.np.to_vec())?;
    o.set_item("npx", d.aliases.npx.to_vec())?;
    o.set_item("fluent", d.aliases.fluent)?;
    o.set_item("inputs", d.inputs.to_vec())?;
    o.set_item("outputs", d.outputs.to_vec())?;
    o.set_item("aux", d.aux.to_vec())?;
    let params: Vec<(&str, &str, Option<&str>, &str)> =
        d.params.iter().map(|p| (p.name, p.kind.py_type(), p.default, p.doc)).collect();
    o.set_item("params", params)?;
    o.set_item("doc", d.doc)?;
    let grad = match &d.grad {
        Grad::Fn(_) => "function".to_string(),
        Grad::Recorded => "recorded".to_string(),
        Grad::None(why) => format!("none: {why}"),
    };
    o.set_item("grad", grad)?;
    o.set_item("mutates", d.mutates.to_vec())?;
    o.set_item("infer", d.infer.is_some())?;
    o.set_item("cpu", slot(&d.cpu))?;
    o.set_item("gpu", slot(&d.gpu))?;
    scalar_form(py, d, &o)?;
    let (g, gd) = (&d.graph, PyDict::new(py));
    gd.set_item("inputs", g.inputs.is_some())?;
    gd.set_item("visible", g.visible.is_some())?;
    gd.set_item("named_outputs", g.named_outputs)?;
    match g.total {
        opdef::OutputCount::Visible => gd.set_item("total", "visible")?,
        opdef::OutputCount::Fixed(n) => gd.set_item("total", n)?,
        opdef::OutputCount::Rule(_) => gd.set_item("total", "rule")?,
    }
    gd.set_item("param_shapes", g.param_shapes.is_some())?;
    gd.set_item("same_shape", g.same_shape)?;
    gd.set_item("input_shapes", g.input_shapes.is_some())?;
    gd.set_item("out_dtypes", g.out_dtypes.is_some())?;
    gd.set_item("json_name", g.json_name)?;
    gd.set_item("json_aliases", g.json_aliases.to_vec())?;
    gd.set_item("input_init", g.input_init.iter().copied().collect::<std::collections::HashMap<_, _>>())?;
    o.set_item("graph", gd)?;
    match &d.example {
        Some(e) => {
            o.set_item("example", (e.shapes.iter().map(|s| s.to_vec()).collect::<Vec<_>>(), e.attrs, e.range))?
        }
        None => o.set_item("example", py.None())?,
    }
    Ok(o)
}

/// The operator table: one dict per operator (name, aliases, inputs,
/// outputs, typed parameters with defaults and docs, gradient kind, kernels).
#[pyfunction]
pub fn op_table(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let items: Vec<Bound<'_, PyDict>> = opdef::table().iter().map(|d| def_dict(py, d)).collect::<PyResult<_>>()?;
    PyList::new(py, items)
}

/// Shape and dtype inference without data: `inputs` is a list of
/// `(shape, dtype_name)`; returns the outputs as `(shape, dtype_name)`.
#[pyfunction]
#[pyo3(signature = (name, inputs, ctx="cpu(0)", **attrs))]
pub fn op_infer(
    name: &str,
    inputs: Vec<(Vec<usize>, String)>,
    ctx: &str,
    attrs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<(Vec<usize>, String)>> {
    let def = opdef::find(name).ok_or_else(|| PyValueError::new_err(format!("{name}: no such operator")))?;
    let c = parse_ctx(ctx)?;
    let metas: Vec<Meta> = inputs
        .iter()
        .map(|(s, d)| Ok(Meta { shape: Shape::new(s), dtype: DType::from_name(d).map_err(to_py_err)?, ctx: c }))
        .collect::<PyResult<_>>()?;
    let a = to_attrs(attrs)?;
    let out = def.infer_meta(&a, &metas).map_err(to_py_err)?;
    Ok(out.into_iter().map(|m| (m.shape.dims().to_vec(), m.dtype.name().to_string())).collect())
}

fn def_of(name: &str) -> PyResult<&'static OpDef> {
    opdef::find(name).ok_or_else(|| PyValueError::new_err(format!("{name}: no such operator")))
}

/// The inputs a graph node of operator `name` has for `attrs` (MXNet's
/// `FListInputNames`), auxiliary states last.
#[pyfunction]
#[pyo3(signature = (name, **attrs))]
pub fn op_graph_inputs(name: &str, attrs: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<&'static str>> {
    GraphForm::input_names(def_of(name)?, &to_attrs(attrs)?).map_err(to_py_err)
}

/// A graph node's outputs for `attrs`: how many it shows, how many it has in all
/// (hidden ones included), and MXNet's names of the visible ones.
#[pyfunction]
#[pyo3(signature = (name, **attrs))]
pub fn op_graph_outputs(name: &str, attrs: Option<&Bound<'_, PyDict>>) -> PyResult<(usize, usize, Vec<String>)> {
    GraphForm::outputs(def_of(name)?, &to_attrs(attrs)?).map_err(to_py_err)
}

/// Parameter shapes of a graph node of operator `name` from its (partial, 0 = unknown)
/// data shape: `(input name, shape)` pairs.
#[pyfunction]
#[pyo3(signature = (name, data, **attrs))]
pub fn op_param_shapes(
    name: &str,
    data: Option<Vec<usize>>,
    attrs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<(&'static str, Vec<usize>)>> {
    let data = data.map(|d| Shape::new(&d));
    let out = GraphForm::param_shapes(def_of(name)?, &to_attrs(attrs)?, data.as_ref()).map_err(to_py_err)?;
    Ok(out.into_iter().map(|(n, s)| (n, s.dims().to_vec())).collect())
}

/// Input shapes of a graph node of operator `name` from its partial input and output
/// shapes (`None`: unknown; a 0 dim: unknown): one entry per input, `None` where the
/// operator's rule says nothing.
#[pyfunction]
#[pyo3(signature = (name, inputs, outputs, **attrs))]
pub fn op_input_shapes(
    name: &str,
    inputs: Vec<Option<Vec<usize>>>,
    outputs: Vec<Option<Vec<usize>>>,
    attrs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<Option<Vec<usize>>>> {
    let conv = |v: Vec<Option<Vec<usize>>>| -> Vec<Option<Shape>> {
        v.into_iter().map(|s| s.map(|d| Shape::new(&d))).collect()
    };
    let out =
        GraphForm::input_shapes(def_of(name)?, &to_attrs(attrs)?, &conv(inputs), &conv(outputs)).map_err(to_py_err)?;
    Ok(out.into_iter().map(|s| s.map(|s| s.dims().to_vec())).collect())
}

/// The visible outputs' dtype names of a graph node of operator `name` whose first input
/// has dtype `first`, for an operator with a dtype rule (`None` without one).
#[pyfunction]
#[pyo3(signature = (name, first, **attrs))]
pub fn op_graph_dtypes(
    name: &str,
    first: &str,
    attrs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Option<Vec<&'static str>>> {
    let first = DType::from_name(first).map_err(to_py_err)?;
    let out = GraphForm::out_dtypes(def_of(name)?, &to_attrs(attrs)?, first).map_err(to_py_err)?;
    Ok(out.map(|v| v.into_iter().map(|d| d.name()).collect()))
}
