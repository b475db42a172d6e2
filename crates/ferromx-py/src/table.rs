//! The operator table as Python data, and inference on metadata: what the
//! Python package generates its functions, docstrings and stubs from.

use crate::convert::{parse_ctx, to_attrs, to_py_err};
use ferromx::opdef::{self, Grad, KernelSlot, Meta, OpDef, ScalarForm};
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
