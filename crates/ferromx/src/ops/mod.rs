//! Operators, one folder per family. Each family's `mod.rs` holds its
//! definitions ([`crate::opdef::OpDef`], registered in the table), and its
//! inference and gradients; its [`crate::opdef::OpCall`] kernels live in
//! `cpu.rs` beside them. Every operator pushes its call to the engine and
//! returns at once.

pub mod add_n;
pub mod allclose;
pub mod binary;
pub mod contrib;
pub mod conv;
pub mod creation;
pub mod ctc;
pub mod cumsum;
pub mod detect;
pub mod image;
pub mod index;
pub mod linalg;
pub mod loss_head;
pub mod nn;
pub mod norm;
pub mod optim;
pub mod output_heads;
pub mod pad;
pub mod par;
pub mod pool;
pub mod predicate;
pub mod quantization;
pub mod random;
pub mod reduce;
pub mod sequence;
pub mod shape;
pub mod sort;
pub mod sparse_reg;
#[cfg(test)]
mod test_support;
pub mod unary;
pub mod vision;

pub use binary::{binary, binary_inplace, binary_scalar, scalar_inplace, scalar_op, user_scalar_op, BinOp};
pub use creation::*;
pub use index::*;
pub use linalg::*;
pub use reduce::*;
pub use shape::*;
pub use sort::*;
pub use unary::{unary, unary_scalar, UnaryOp};

use crate::autograd::{needs_record, record};
use crate::dtype::{DType, Elem};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::Shape;
use crate::storage::push_kernel;
use crate::with_dtype;

/// Fails when two arrays live on different contexts.
pub fn check_ctx(op: &str, a: &NDArray, b: &NDArray) -> Result<()> {
    if a.ctx() != b.ctx() {
        return Err(Error::Context { op: op.into(), a: a.ctx().to_string(), b: b.ctx().to_string() });
    }
    Ok(())
}

/// a + b
pub fn add(a: &NDArray, b: &NDArray) -> Result<NDArray> {
    binary(BinOp::Add, a, b)
}
/// a - b
pub fn sub(a: &NDArray, b: &NDArray) -> Result<NDArray> {
    binary(BinOp::Sub, a, b)
}
/// a * b
pub fn mul(a: &NDArray, b: &NDArray) -> Result<NDArray> {
    binary(BinOp::Mul, a, b)
}
/// a / b
pub fn div(a: &NDArray, b: &NDArray) -> Result<NDArray> {
    binary(BinOp::Div, a, b)
}
/// -a
pub fn neg(a: &NDArray) -> Result<NDArray> {
    unary(UnaryOp::Negative, a)
}
/// op(a, s)
pub fn scalar(op: BinOp, a: &NDArray, s: f64) -> Result<NDArray> {
    scalar_op(op, a, s, false)
}
/// op(s, a)
pub fn scalar_r(op: BinOp, a: &NDArray, s: f64) -> Result<NDArray> {
    scalar_op(op, a, s, true)
}

/// Casts to `dtype` (a copy even when the dtype is unchanged).
pub fn astype(x: &NDArray, dtype: DType) -> Result<NDArray> {
    let src = x.dtype();
    let out = NDArray::empty(x.shape().clone(), dtype, x.ctx())?;
    if x.size() > 0 {
        push_call(OpCall::new(&DEFS[0], &[x], &[&out]))?;
    }
    // recorded whatever the target dtype, as MXNet's Cast: the gradient is the output
    // gradient cast back (a cast to int or bool passes it through unchanged)
    if needs_record(&[x]) {
        record("cast", &[x], &[&out], Box::new(move |g| Ok(vec![Some(astype(&g[0], src)?)])));
    }
    Ok(out)
}

/// [`astype`] whose recorded gradient is zeros (an integer operand promoted inside a
/// mixed-dtype operator: MXNet gives it no gradient).
pub(crate) fn astype_zero_grad(x: &NDArray, dtype: DType) -> Result<NDArray> {
    let out = NDArray::empty(x.shape().clone(), dtype, x.ctx())?;
    if x.size() > 0 {
        push_call(OpCall::new(&DEFS[0], &[x], &[&out]))?;
    }
    if needs_record(&[x]) {
        let (shape, dt, ctx) = (x.shape().clone(), x.dtype(), x.ctx());
        record("cast", &[x], &[&out], Box::new(move |_| Ok(vec![Some(zeros(shape.clone(), dt, ctx)?)])));
    }
    Ok(out)
}

/// The kernel of `cast`: converts input 0 into output 0's dtype (C-style casts).
fn cast_kernel(_c: &OpCall, k: &crate::storage::Kernel) -> std::result::Result<(), ferromx_engine::OpFailure> {
    let (src, dst) = (k.in_dtype(0), k.out_dtype(0));
    with_dtype!(src, S, {
        with_dtype!(dst, D, {
            let (i, o) = (k.input::<S>(0), k.output::<D>(0));
            if src.is_float() || dst.is_float() {
                par::map1(i, o, |v| D::from_f64(v.to_f64()));
            } else {
                par::map1(i, o, |v| D::from_i64(v.to_i64()));
            }
        })
    });
    Ok(())
}

/// [`cast_kernel`]'s conversion on the front `m` elements of fused tiles.
pub(crate) fn cast_tile(x: &crate::fusion::tile::InRef, o: &mut crate::fusion::tile::OutRef, m: usize) {
    use crate::fusion::tile::TileElem;
    let (src, dst) = (x.dtype(), o.dtype());
    with_dtype!(src, S, {
        with_dtype!(dst, D, {
            let (i, o) = (S::of(x), &mut D::get_mut(o)[..m]);
            if src.is_float() || dst.is_float() {
                par::map1(i, o, |v| D::from_f64(v.to_f64()));
            } else {
                par::map1(i, o, |v| D::from_i64(v.to_i64()));
            }
        })
    });
}

/// Whether `def` is `cast` (fusion folds casts into its chains).
pub(crate) fn is_cast(def: &OpDef) -> bool {
    std::ptr::eq(def, &DEFS[0])
}

/// Whether `def` is `_copy`.
pub(crate) fn is_copy(def: &OpDef) -> bool {
    std::ptr::eq(def, &DEFS[1]) || std::ptr::eq(def, &DEFS[2])
}

/// A copy with new storage.
pub fn copy(x: &NDArray) -> Result<NDArray> {
    let out = x.empty_like()?;
    if x.size() > 0 {
        push_call(OpCall::new(&DEFS[1], &[x], &[&out]))?;
    }
    if needs_record(&[x]) {
        record("_copy", &[x], &[&out], Box::new(|g| Ok(vec![Some(g[0].clone())])));
    }
    Ok(out)
}

/// The kernel of `_copy`.
pub(crate) fn copy_kernel(
    _c: &OpCall,
    k: &crate::storage::Kernel,
) -> std::result::Result<(), ferromx_engine::OpFailure> {
    with_dtype!(k.in_dtype(0), T, k.output::<T>(0).copy_from_slice(k.input::<T>(0)));
    Ok(())
}

fn infer_same(_d: &OpDef, _a: &crate::opdef::Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    Ok(vec![ins[0].clone()])
}

fn infer_cast(d: &OpDef, a: &crate::opdef::Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let dtype = a.dtype(d.name, "dtype", DType::F32)?;
    Ok(vec![Meta { dtype, ..ins[0].clone() }])
}

/// Writes `src` (broadcast and cast to `dst`'s shape and dtype) into `dst` in place.
pub fn assign(dst: &NDArray, src: &NDArray) -> Result<()> {
    check_ctx("_copyto", dst, src)?;
    let oshape = dst.shape().clone();
    let b = Shape::broadcast("_copyto", dst.shape(), src.shape())?;
    if b != oshape {
        return Err(Error::shape(
            "_copyto",
            &[dst.shape(), src.shape()],
            "value cannot be broadcast to the destination",
        ));
    }
    let src = if src.dtype() != dst.dtype() { astype(src, dst.dtype())? } else { src.clone() };
    let src = if src.shares_storage(dst) { copy(&src)? } else { src };
    if oshape.size() == 0 {
        return Ok(());
    }
    if src.shape() == &oshape && crate::fusion::computes(&src.view()) {
        // A copy of a value the pending chain computes joins it: `grad[:] = <chain>`
        // (autograd's write of a gradient) stores the chain's value once, straight into
        // `dst`. Any other copy is pushed at once, as before, so a gradient a gemm wrote
        // is copied (and a bucket of them reduced) while the rest of backward runs.
        return push_call(OpCall::new(&DEFS[2], &[&src], &[dst]));
    }
    let sb = src.shape().broadcast_strides(&oshape);
    let dt = dst.dtype();
    push_kernel("_copyto", vec![src.view()], vec![dst.view()], move |k| {
        with_dtype!(dt, T, {
            let (s, d) = (k.input::<T>(0), k.output::<T>(0));
            if s.len() == d.len() {
                // A gradient written into `.grad` every step (a 512×512×3×3 weight's is
                // 9 MB): one core copied it at about half the machine's bandwidth.
                par::chunked(d, COPY_GRAIN, |at, piece| piece.copy_from_slice(&s[at..at + piece.len()]));
            } else {
                crate::shape::broadcast_copy(&oshape, &sb, s, d);
            }
        });
        Ok(())
    });
    Ok(())
}

/// Elements below which a same-shape copy stays on one core (1 MB of float32).
const COPY_GRAIN: usize = 1 << 18;

/// dst += src, in place.
pub fn add_into(dst: &NDArray, src: &NDArray) -> Result<()> {
    binary_inplace(BinOp::Add, dst, src)
}

/// Sums `g` down to `shape` (undoes broadcasting).
pub fn sum_to(g: &NDArray, shape: &Shape) -> Result<NDArray> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    let nd = g.ndim();
    let off = nd - shape.ndim();
    let mut axes = Vec::new();
    for i in 0..nd {
        if i < off || (shape.dims()[i - off] == 1 && g.dims()[i] != 1) {
            axes.push(i as i64);
        }
    }
    let s = reduce(ReduceOp::Sum, g, Some(&axes), true, false)?;
    reshape_to(&s, shape.clone())
}

/// Test support: pushes an op writing `x` that fails with the given kind
/// (`value`, `index`, `type`, `panic`, anything else: runtime).
pub fn test_fail(x: &NDArray, kind: &str, message: String) -> Result<()> {
    use ferromx_engine::{ErrorKind, OpFailure};
    let k = match kind {
        "value" => Some(ErrorKind::Value),
        "index" => Some(ErrorKind::Index),
        "type" => Some(ErrorKind::Type),
        "panic" => None,
        _ => Some(ErrorKind::Runtime),
    };
    push_kernel("_test_fail", vec![], vec![x.view()], move |_| match k {
        Some(k) => Err(OpFailure::new(k, message)),
        None => panic!("{message}"),
    });
    Ok(())
}

/// Test support: pushes an op writing `x` that sleeps `ms` milliseconds.
pub fn test_sleep(x: &NDArray, ms: u64) {
    push_kernel("_test_sleep", vec![], vec![x.view()], move |_| {
        std::thread::sleep(std::time::Duration::from_millis(ms));
        Ok(())
    });
}

/// Copies `x` onto another context (an engine op on the destination's workers).
pub fn copy_to_ctx(x: &NDArray, ctx: crate::Context) -> Result<NDArray> {
    let out = NDArray::empty(x.shape().clone(), x.dtype(), ctx)?;
    let dt = x.dtype();
    if x.size() > 0 {
        push_kernel("_copyto", vec![x.view()], vec![out.view()], move |k| {
            with_dtype!(dt, T, k.output::<T>(0).copy_from_slice(k.input::<T>(0)));
            Ok(())
        });
    }
    if needs_record(&[x]) {
        let src_ctx = x.ctx();
        record("_copyto", &[x], &[&out], Box::new(move |g| Ok(vec![Some(copy_to_ctx(&g[0], src_ctx)?)])));
    }
    Ok(out)
}

use crate::opdef::{one, param, push_call, Aliases, Example, KernelSlot, Meta, OpCall, OpDef, ParamKind as K};

/// `_identity_with_attr_like_rhs`: a copy of `lhs` whose graph shape is tied to `rhs`'s
/// (MXNet uses it to carry shape constraints backwards); the gradient flows to `lhs` only.
fn identity_like_rhs(i: &crate::opdef::Invocation<'_>) -> Result<NDArray> {
    let (l, r) = (i.x(0)?, i.x(1)?);
    if l.shape() != r.shape() {
        return Err(Error::shape(i.name(), &[l.shape(), r.shape()], "lhs and rhs must have the same shape"));
    }
    let out = l.empty_like()?;
    if out.size() > 0 {
        push_call(OpCall::new(i.def, &[l], &[&out]))?;
    }
    if crate::autograd::needs_record(&[l, r]) {
        let rc = r.clone();
        crate::autograd::record(
            i.name(),
            &[l, r],
            &[&out],
            Box::new(move |g| Ok(vec![Some(g[0].clone()), Some(zeros_like(&rc)?)])),
        );
    }
    Ok(out)
}

/// Both inputs and the output share one shape: each known one gives the others.
fn like_rhs_input_shapes(
    _: &crate::opdef::Invocation<'_>,
    ins: &[Option<crate::shape::Shape>],
    outs: &[Option<crate::shape::Shape>],
) -> Result<Vec<Option<crate::shape::Shape>>> {
    let known = outs.iter().chain(ins).flatten().find(|s| !s.dims().contains(&0)).cloned();
    Ok(vec![known.clone(), known])
}

/// The copy and cast operators (this name shadows the families' `DEFS`,
/// which the table reaches by their module paths).
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "cast",
        aliases: Aliases { nd: &["Cast"], np: &[], npx: &[], fluent: false },
        inputs: &["data"],
        params: &[param("dtype", K::DType, None, "The element type to cast to.")],
        doc: "A copy converted to `dtype` (C-style casts: floats truncate towards zero into ints).",
        forward: |i| one(astype(i.x(0)?, i.dtype("dtype", DType::F32)?)),
        infer: Some(infer_cast),
        cpu: KernelSlot::Call(cast_kernel),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "dtype='float64'", range: (0.5, 1.5) }),
        graph: crate::opdef::GraphForm { same_shape: true, json_name: Some("Cast"), ..crate::opdef::GraphForm::PLAIN },
        ..OpDef::BASE
    },
    OpDef {
        name: "_copy",
        inputs: &["data"],
        doc: "A copy with new storage.",
        forward: |i| one(copy(i.x(0)?)),
        infer: Some(infer_same),
        cpu: KernelSlot::Call(copy_kernel),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "", range: (0.5, 1.5) }),
        graph: crate::opdef::GraphForm {
            same_shape: true,
            json_aliases: &["identity"],
            ..crate::opdef::GraphForm::PLAIN
        },
        ..OpDef::BASE
    },
    OpDef {
        name: "_copyto",
        inputs: &["data"],
        doc: "A copy (MXNet's `_copyto`, the kernel of `copyto` and of assignment into an array).",
        forward: |i| one(copy(i.x(0)?)),
        infer: Some(infer_same),
        cpu: KernelSlot::Call(copy_kernel),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "_identity_with_attr_like_rhs",
        inputs: &["lhs", "rhs"],
        doc: "A copy of `lhs`, constrained to `rhs`'s shape in graphs (gradient to `lhs` only).",
        forward: |i| one(identity_like_rhs(i)),
        infer: Some(infer_same),
        grad: crate::opdef::Grad::Recorded,
        cpu: KernelSlot::Call(copy_kernel),
        // the input-shape rule ties all three shapes (not `same_shape`, which ties only lhs)
        graph: crate::opdef::GraphForm { input_shapes: Some(like_rhs_input_shapes), ..crate::opdef::GraphForm::PLAIN },
        ..OpDef::BASE
    },
];
