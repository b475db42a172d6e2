//! Small `nd.contrib` operators with MXNet's names: `quadratic` (MXNet's example
//! operator, `a·x² + b·x + c`), `index_copy` (rows of a tensor replaced at given
//! positions), `index_array` (the coordinates of every element) and
//! `gradientmultiplier` (an identity that scales the gradient flowing back, the
//! gradient-reversal layer of domain adaptation) and `hawkesll` (a Hawkes process's log
//! likelihood, `hawkes.rs`), each with MXNet's `_contrib_backward_*` operator where MXNet
//! has one.
//!
//! Why a family: these are independent of one another but each is one kernel over
//! an `OpCall`, with inference and a gradient, like every table operator; they share
//! the output allocation and the index reading below.

mod cpu;
mod hawkes;
#[cfg(test)]
mod tests;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    param, push_call, Attrs, Example, Grad, GradArgs, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamDef,
    ParamKind as K,
};
use crate::shape::Shape;

const R: (f64, f64) = (-1.0, 1.0);
const QUAD_PARAMS: &[ParamDef] = &[
    param("a", K::Float, Some("0.0"), "Coefficient of the quadratic term."),
    param("b", K::Float, Some("0.0"), "Coefficient of the linear term."),
    param("c", K::Float, Some("0.0"), "The constant term."),
];

/// Indices of [`DEFS`] the gradients call.
const BACKWARD_QUADRATIC: usize = 1;
const BACKWARD_INDEX_COPY: usize = 3;
const BACKWARD_GRADMULT: usize = 6;

/// The family's operators.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "_contrib_quadratic",
        inputs: &["data"],
        params: QUAD_PARAMS,
        doc: "`a * data**2 + b * data + c`, elementwise (MXNet's example operator).",
        infer: Some(infer_same),
        forward: |i| {
            let x = i.x(0)?;
            apply(i.def, &[x], &quad_nums(i)?, &[Meta::of(x)])
        },
        grad: Grad::Fn(grad_quadratic),
        cpu: KernelSlot::Call(cpu::quadratic),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "a=1.5, b=-2.0, c=0.5", range: R }),
        ..OpDef::BASE
    },
    OpDef {
        name: "_contrib_backward_quadratic",
        inputs: &["out_grad", "data"],
        params: QUAD_PARAMS,
        doc: "Gradient of `quadratic`: `out_grad * (2 * a * data + b)`.",
        infer: Some(infer_backward_quadratic),
        forward: |i| {
            let (g, x) = (i.x(0)?, i.x(1)?);
            let m = infer_backward_quadratic(i.def, i.attrs, &[Meta::of(g), Meta::of(x)])?;
            apply(i.def, &[g, x], &quad_nums(i)?, &m)
        },
        grad: Grad::None("a gradient operator (second derivatives go through quadratic's own)"),
        cpu: KernelSlot::Call(cpu::backward_quadratic),
        ..OpDef::BASE
    },
    OpDef {
        name: "_contrib_index_copy",
        inputs: &["old_tensor", "index_vector", "new_tensor"],
        doc: "A copy of `old_tensor` whose rows `index_vector[j]` are `new_tensor[j]` (a later \
              duplicate index wins).",
        infer: Some(infer_index_copy),
        forward: |i| {
            let (old, idx, new) = (i.x(0)?, i.x(1)?, i.x(2)?);
            let m = infer_index_copy(i.def, i.attrs, &[Meta::of(old), Meta::of(idx), Meta::of(new)])?;
            apply(i.def, &[old, idx, new], &[], &m)
        },
        grad: Grad::Fn(grad_index_copy),
        cpu: KernelSlot::Call(cpu::index_copy),
        ..OpDef::BASE
    },
    OpDef {
        name: "_contrib_backward_index_copy",
        inputs: &["out_grad", "index_vector", "new_tensor"],
        outputs: &["old_grad", "new_grad"],
        doc: "Gradient of `index_copy`: `out_grad` with the copied rows zeroed (for `old_tensor`) \
              and `out_grad`'s rows at `index_vector` (for `new_tensor`).",
        infer: Some(infer_backward_index_copy),
        forward: |i| {
            let (g, idx, new) = (i.x(0)?, i.x(1)?, i.x(2)?);
            let m = infer_backward_index_copy(i.def, i.attrs, &[Meta::of(g), Meta::of(idx), Meta::of(new)])?;
            apply(i.def, &[g, idx], &[], &m)
        },
        grad: Grad::None("a gradient operator"),
        cpu: KernelSlot::Call(cpu::backward_index_copy),
        ..OpDef::BASE
    },
    OpDef {
        name: "_contrib_index_array",
        inputs: &["data"],
        params: &[param("axes", K::Ints, Some("None"), "The axes whose coordinates to give (default: all).")],
        doc: "The coordinates of every element of `data`: int64, shape `data.shape + (len(axes),)`.",
        infer: Some(infer_index_array),
        forward: |i| {
            let x = i.x(0)?;
            let m = infer_index_array(i.def, i.attrs, &[Meta::of(x)])?;
            let axes = index_axes(&Invocation::params(i.def, i.attrs), x.shape().ndim())?;
            let outs = alloc(&m)?;
            if outs[0].size() > 0 {
                let ints: Vec<i64> = axes.iter().map(|&a| a as i64).collect();
                push_call(OpCall::new(i.def, &[x], &[&outs[0]]).with_ints(&ints))?;
            }
            // MXNet records a zero gradient (its value depends only on the shape)
            if crate::autograd::needs_record(&[x]) {
                crate::ops::binary::record_zero_grad(i.def, &[x], &outs[0], &[]);
            }
            Ok(outs)
        },
        grad: Grad::Recorded,
        cpu: KernelSlot::Call(cpu::index_array),
        ..OpDef::BASE
    },
    OpDef {
        name: "_contrib_gradientmultiplier",
        inputs: &["data"],
        params: &[param("scalar", K::Float, None, "The factor the gradient is multiplied by.")],
        doc: "The identity forward; backward multiplies the gradient by `scalar` (-1: a gradient \
              reversal layer).",
        infer: Some(infer_same),
        forward: |i| {
            let x = i.x(0)?;
            apply(i.def, &[x], &[i.f64("scalar")?], &[Meta::of(x)])
        },
        grad: Grad::Fn(|a| {
            let g = &a.out_grads[0];
            Ok(vec![Some(apply(&DEFS[BACKWARD_GRADMULT], &[g], a.nums, &[Meta::of(g)])?.remove(0))])
        }),
        cpu: KernelSlot::Call(crate::ops::copy_kernel),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "scalar=-0.5", range: R }),
        ..OpDef::BASE
    },
    OpDef {
        name: "_contrib_backward_gradientmultiplier",
        inputs: &["data"],
        params: &[param("scalar", K::Float, None, "The factor.")],
        doc: "`data * scalar` (the gradient of `gradientmultiplier`).",
        infer: Some(infer_same),
        forward: |i| {
            let x = i.x(0)?;
            apply(i.def, &[x], &[i.f64("scalar")?], &[Meta::of(x)])
        },
        grad: Grad::Fn(|a| {
            let g = &a.out_grads[0];
            Ok(vec![Some(apply(&DEFS[BACKWARD_GRADMULT], &[g], a.nums, &[Meta::of(g)])?.remove(0))])
        }),
        cpu: KernelSlot::Call(cpu::scale),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "scalar=-0.5", range: R }),
        ..OpDef::BASE
    },
    OpDef {
        name: "_contrib_hawkesll",
        inputs: &["mu", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time"],
        outputs: &["output", "states"],
        doc: "Log likelihood (N,) of a marked Hawkes process with exponential kernels per sample, \
              and the final states (N, K): `mu` (N, K), `alpha`, `beta` (K,), `state` (N, K), \
              `lags` (N, T), integer `marks` (N, T), `valid_length`, `max_time` (N,). Gradients \
              flow to `mu`, `alpha` and `beta` from the log likelihood, as in MXNet.",
        infer: Some(hawkes::infer),
        forward: |i| {
            let xs: Vec<&NDArray> = (0..8).map(|k| i.x(k)).collect::<Result<_>>()?;
            hawkes::forward(i.def, &xs)
        },
        grad: Grad::Fn(hawkes::grad),
        cpu: KernelSlot::Call(hawkes::hawkesll),
        ..OpDef::BASE
    },
    OpDef {
        name: "_contrib_backward_hawkesll",
        inputs: &["out_grad", "mu", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time"],
        outputs: &["mu_grad", "alpha_grad", "beta_grad"],
        doc: "Gradient of `hawkesll`'s log likelihood with respect to `mu`, `alpha` and `beta`.",
        infer: Some(hawkes::infer_backward),
        forward: |i| {
            let xs: Vec<&NDArray> = (0..9).map(|k| i.x(k)).collect::<Result<_>>()?;
            let metas: Vec<Meta> = xs.iter().map(|x| Meta::of(x)).collect();
            let m = hawkes::infer_backward(i.def, i.attrs, &metas)?;
            apply(i.def, &xs, &[], &m)
        },
        grad: Grad::None("a gradient operator"),
        cpu: KernelSlot::Call(hawkes::backward_hawkesll),
        ..OpDef::BASE
    },
];

fn alloc(metas: &[Meta]) -> Result<Vec<NDArray>> {
    metas.iter().map(|m| NDArray::empty(m.shape.clone(), m.dtype, m.ctx)).collect()
}

use crate::opdef::apply_table as apply;

fn quad_nums(i: &Invocation<'_>) -> Result<[f64; 3]> {
    Ok([i.f64("a")?, i.f64("b")?, i.f64("c")?])
}

fn infer_same(def: &OpDef, _: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let x = ins.first().ok_or_else(|| Error::value(def.name, "needs data"))?;
    if x.dtype == DType::Bool {
        return Err(Error::dtype(def.name, "operator is not defined for bool arrays"));
    }
    Ok(vec![x.clone()])
}

fn infer_backward_quadratic(def: &OpDef, _: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let [g, x] = ins else { return Err(Error::value(def.name, "needs out_grad and data")) };
    if g.shape != x.shape || g.dtype != x.dtype {
        return Err(Error::shape(def.name, &[&g.shape, &x.shape], "out_grad and data must match in shape and dtype"));
    }
    Ok(vec![x.clone()])
}

fn grad_quadratic(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    let (g, x) = (&a.out_grads[0], &a.inputs[0]);
    Ok(vec![Some(apply(&DEFS[BACKWARD_QUADRATIC], &[g, x], a.nums, &[Meta::of(x)])?.remove(0))])
}

/// Checks `index_copy`'s operands: old (N, ...), index (K,), new (K, ...) with old's rows.
fn infer_index_copy(def: &OpDef, _: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let [old, idx, new] = ins else { return Err(Error::value(def.name, "needs old_tensor, index_vector, new_tensor")) };
    let (od, id, nd) = (old.shape.dims(), idx.shape.dims(), new.shape.dims());
    let ok = !od.is_empty() && id.len() == 1 && nd.len() == od.len() && nd[0] == id[0] && nd[1..] == od[1..];
    if !ok {
        return Err(Error::shape(
            def.name,
            &[&old.shape, &idx.shape, &new.shape],
            "index_vector must be 1-d (K,), new_tensor (K, ...) with old_tensor's row shape",
        ));
    }
    if new.dtype != old.dtype {
        return Err(Error::dtype(
            def.name,
            format!("old_tensor and new_tensor differ in dtype: {} and {}", old.dtype, new.dtype),
        ));
    }
    if idx.dtype == DType::Bool {
        return Err(Error::dtype(def.name, "index_vector must be integer or float, got bool"));
    }
    Ok(vec![old.clone()])
}

fn infer_backward_index_copy(def: &OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let old = infer_index_copy(def, a, ins)?.remove(0);
    Ok(vec![old, ins[2].clone()])
}

fn grad_index_copy(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    let (g, idx, new) = (&a.out_grads[0], &a.inputs[1], &a.inputs[2]);
    let m = [Meta::of(g), Meta::of(new)];
    let mut r = apply(&DEFS[BACKWARD_INDEX_COPY], &[g, idx], &[], &m)?;
    let new_grad = r.pop();
    Ok(vec![r.pop(), None, new_grad])
}

/// The axes `index_array` reports, normalised to `0..ndim`.
fn index_axes(p: &Invocation<'_>, ndim: usize) -> Result<Vec<usize>> {
    let Some(axes) = p.ints("axes")? else { return Ok((0..ndim).collect()) };
    axes.iter()
        .map(|&a| {
            let n = ndim as i64;
            if a < -n || a >= n {
                Err(Error::value(p.name(), format!("axis {a} is out of range for a {ndim}-d array")))
            } else {
                Ok(a.rem_euclid(n.max(1)) as usize)
            }
        })
        .collect()
}

fn infer_index_array(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let x = ins.first().ok_or_else(|| Error::value(def.name, "needs data"))?;
    let axes = index_axes(&Invocation::params(def, a), x.shape.ndim())?;
    let mut d = x.shape.dims().to_vec();
    d.push(axes.len());
    Ok(vec![Meta { shape: Shape::new(&d), dtype: DType::I64, ctx: x.ctx }])
}
