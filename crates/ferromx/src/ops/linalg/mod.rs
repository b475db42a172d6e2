//! Matrix products: `dot` (MXNet's N-d rules), `batch_dot`, `linalg.gemm2`.
//! Definitions, inference, frontends and gradients here; the kernel in `cpu.rs`.
//! The factorizations (Cholesky, LU, SVD, eigendecompositions, LQ/QR, triangular
//! solves) are in `decomp.rs`, their per-matrix kernels in `lapack.rs`.

mod cpu;
pub mod decomp;
mod lapack;
#[cfg(test)]
mod tests;

use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{push_call, Attrs, KernelSlot, Meta, OpCall};
use crate::ops::{self, check_ctx, BinOp};
use crate::shape::Shape;

/// Pushes `out = alpha · op(a)·op(b)` for (batches of) 2-d views as a call of `def`.
#[allow(clippy::too_many_arguments)]
fn push_mm(
    def: &'static OpDef,
    a: &NDArray,
    ta: bool,
    b: &NDArray,
    tb: bool,
    mnkb: [usize; 4],
    alpha: f64,
    out: &NDArray,
) -> Result<()> {
    if out.size() == 0 {
        return Ok(());
    }
    let [m, n, k, batch] = mnkb;
    let ints = [m as i64, n as i64, k as i64, batch as i64, ta as i64, tb as i64];
    let call = OpCall::new(def, &[a, b], &[out]).with_ints(&ints);
    push_call(if alpha != 1.0 { call.with_nums(&[alpha]) } else { call })
}

/// MXNet `dot`: N-d arrays are flattened to matrices around the contracted axis:
/// `a` to `(prod(a[:-1]), a[-1])` (or `(a[0], prod(a[1:]))` with `transpose_a`), and
/// `b` to `(b[0], prod(b[1:]))` (or `(prod(b[:-1]), b[-1])` with `transpose_b`).
pub fn dot(a: &NDArray, b: &NDArray, transpose_a: bool, transpose_b: bool) -> Result<NDArray> {
    let name = "dot";
    check_ctx(name, a, b)?;
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(name, format!("dtypes differ: {} and {}", a.dtype(), b.dtype())));
    }
    if a.ndim() == 0 || b.ndim() == 0 {
        // A 0-d operand: a broadcast multiply (the binary family's call).
        let (s, t) = if a.ndim() == 0 { (a, b) } else { (b, a) };
        return ops::mul(&ops::broadcast_to(s, t.shape().clone())?, t);
    }
    let (od, m, n, ka) = dot_plan(a.shape(), b.shape(), transpose_a, transpose_b)?;
    let out = NDArray::empty(Shape::new(&od), a.dtype(), a.ctx())?;
    push_mm(&DEFS[0], a, transpose_a, b, transpose_b, [m, n, ka, 1], 1.0, &out)?;
    if needs_record(&[a, b]) {
        let (ac, bc) = (a.clone(), b.clone());
        record(
            name,
            &[a, b],
            &[&out],
            Box::new(move |g| {
                // Recorded reshapes (views when nothing records), so that the
                // gradient is differentiable again under `create_graph`.
                let g2 = ops::reshape_to(&g[0], Shape::new(&[m, n]))?;
                let a2 = ops::reshape_to(&ac, Shape::new(&if transpose_a { [ka, m] } else { [m, ka] }))?;
                let b2 = ops::reshape_to(&bc, Shape::new(&if transpose_b { [n, ka] } else { [ka, n] }))?;
                // d(op(a)) = g·op(b)ᵀ ; d(op(b)) = op(a)ᵀ·g
                let ga =
                    if transpose_a { dot(&b2, &g2, transpose_b, true)? } else { dot(&g2, &b2, false, !transpose_b)? };
                let gb =
                    if transpose_b { dot(&g2, &a2, true, transpose_a)? } else { dot(&a2, &g2, !transpose_a, false)? };
                Ok(vec![
                    Some(ops::reshape_to(&ga, ac.shape().clone())?),
                    Some(ops::reshape_to(&gb, bc.shape().clone())?),
                ])
            }),
        );
    }
    Ok(out)
}

/// `dot`'s output dims and `(m, n, k)` for N-d operands.
fn dot_plan(a: &Shape, b: &Shape, transpose_a: bool, transpose_b: bool) -> Result<(Vec<usize>, usize, usize, usize)> {
    let (ad, bd) = (a.dims(), b.dims());
    let (m, ka, afree): (usize, usize, &[usize]) = if transpose_a {
        (ad[1..].iter().product(), ad[0], &ad[1..])
    } else {
        (ad[..ad.len() - 1].iter().product(), ad[ad.len() - 1], &ad[..ad.len() - 1])
    };
    let (kb, n, bfree): (usize, usize, &[usize]) = if transpose_b {
        (bd[bd.len() - 1], bd[..bd.len() - 1].iter().product(), &bd[..bd.len() - 1])
    } else {
        (bd[0], bd[1..].iter().product(), &bd[1..])
    };
    if ka != kb {
        return Err(Error::shape(
            "dot",
            &[a, b],
            format!(
                "contracted dimensions differ ({ka} vs {kb}; transpose_a={transpose_a}, transpose_b={transpose_b})"
            ),
        ));
    }
    let mut od: Vec<usize> = afree.to_vec();
    od.extend_from_slice(bfree);
    Ok((od, m, n, ka))
}

/// Batched matrix product of 3-d arrays (B, M, K) · (B, K, N).
pub fn batch_dot(a: &NDArray, b: &NDArray, transpose_a: bool, transpose_b: bool) -> Result<NDArray> {
    let name = "batch_dot";
    check_ctx(name, a, b)?;
    if a.ndim() > 3 && a.ndim() == b.ndim() {
        // MXNet: leading dims are all batch dims; flatten them, multiply, restore.
        let nd = a.ndim();
        if a.dims()[..nd - 2] != b.dims()[..nd - 2] {
            return Err(Error::shape(name, &[a.shape(), b.shape()], "batch dimensions differ"));
        }
        let batch: usize = a.dims()[..nd - 2].iter().product();
        let a3 = ops::reshape_to(a, Shape::new(&[batch, a.dims()[nd - 2], a.dims()[nd - 1]]))?;
        let b3 = ops::reshape_to(b, Shape::new(&[batch, b.dims()[nd - 2], b.dims()[nd - 1]]))?;
        let r = batch_dot(&a3, &b3, transpose_a, transpose_b)?;
        let mut od = a.dims()[..nd - 2].to_vec();
        od.extend_from_slice(&r.dims()[1..]);
        return ops::reshape_to(&r, Shape::new(&od));
    }
    if a.ndim() != 3 || b.ndim() != 3 {
        return Err(Error::shape(name, &[a.shape(), b.shape()], "inputs must be 3-d or more, with the same rank"));
    }
    batch_mm(&DEFS[1], a, b, transpose_a, transpose_b, 1.0)
}

/// `(m, n, k)` of a batched product of 3-d shapes, checked.
fn batch_plan(name: &str, a: &Shape, b: &Shape, transpose_a: bool, transpose_b: bool) -> Result<[usize; 4]> {
    let (ad, bd) = (a.dims(), b.dims());
    let (m, ka) = if transpose_a { (ad[2], ad[1]) } else { (ad[1], ad[2]) };
    let (kb, n) = if transpose_b { (bd[2], bd[1]) } else { (bd[1], bd[2]) };
    if ad[0] != bd[0] || ka != kb {
        return Err(Error::shape(name, &[a, b], "batch sizes or contracted dimensions differ"));
    }
    Ok([m, n, ka, ad[0]])
}

/// `alpha · op(a)·op(b)` of 3-d arrays as a call of `def` (`batch_dot` or `linalg_gemm2`).
fn batch_mm(
    def: &'static OpDef,
    a: &NDArray,
    b: &NDArray,
    transpose_a: bool,
    transpose_b: bool,
    alpha: f64,
) -> Result<NDArray> {
    let name = def.name;
    check_ctx(name, a, b)?;
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(name, format!("dtypes differ: {} and {}", a.dtype(), b.dtype())));
    }
    let [m, n, k, batch] = batch_plan(name, a.shape(), b.shape(), transpose_a, transpose_b)?;
    let out = NDArray::empty(Shape::new(&[batch, m, n]), a.dtype(), a.ctx())?;
    push_mm(def, a, transpose_a, b, transpose_b, [m, n, k, batch], alpha, &out)?;
    if needs_record(&[a, b]) {
        let (ac, bc) = (a.clone(), b.clone());
        record(
            name,
            &[a, b],
            &[&out],
            Box::new(move |g| {
                let g = &g[0];
                let ga = if transpose_a {
                    batch_dot(&bc, g, transpose_b, true)?
                } else {
                    batch_dot(g, &bc, false, !transpose_b)?
                };
                let gb = if transpose_b {
                    batch_dot(g, &ac, true, transpose_a)?
                } else {
                    batch_dot(&ac, g, !transpose_a, false)?
                };
                if alpha != 1.0 {
                    return Ok(vec![
                        Some(ops::scalar(BinOp::Mul, &ga, alpha)?),
                        Some(ops::scalar(BinOp::Mul, &gb, alpha)?),
                    ]);
                }
                Ok(vec![Some(ga), Some(gb)])
            }),
        );
    }
    Ok(out)
}

/// [`gemm2`] with MXNet's `axis`: the axis holding the matrix rows (default
/// -2); the columns are always the last axis, every other axis is a batch axis.
pub fn gemm2_axis(
    a: &NDArray,
    b: &NDArray,
    transpose_a: bool,
    transpose_b: bool,
    alpha: f64,
    axis: i64,
) -> Result<NDArray> {
    let name = "linalg_gemm2";
    if a.ndim() < 2 || a.ndim() != b.ndim() {
        return Err(Error::shape(name, &[a.shape(), b.shape()], "inputs must have the same rank ≥ 2"));
    }
    let nd = a.ndim();
    let ax = a.shape().axis(name, axis)?;
    if ax == nd - 1 {
        return Err(Error::value(name, format!("axis {axis} is the column axis; rows must be on another axis")));
    }
    if ax == nd - 2 {
        return gemm2(a, b, transpose_a, transpose_b, alpha);
    }
    let (r, c) = (ax as i64, nd as i64 - 2);
    let out = gemm2(&ops::swapaxes(a, r, c)?, &ops::swapaxes(b, r, c)?, transpose_a, transpose_b, alpha)?;
    ops::swapaxes(&out, r, c)
}

/// MXNet `linalg.gemm2`: `alpha · op(A) · op(B)` over the last two axes, batched over the rest.
pub fn gemm2(a: &NDArray, b: &NDArray, transpose_a: bool, transpose_b: bool, alpha: f64) -> Result<NDArray> {
    if a.ndim() < 2 || a.ndim() != b.ndim() {
        return Err(Error::shape("linalg_gemm2", &[a.shape(), b.shape()], "inputs must have the same rank ≥ 2"));
    }
    let nd = a.ndim();
    let (ad, bd) = (a.dims(), b.dims());
    let ka = if transpose_a { ad[nd - 2] } else { ad[nd - 1] };
    let kb = if transpose_b { bd[nd - 1] } else { bd[nd - 2] };
    if ad[..nd - 2] != bd[..nd - 2] || ka != kb {
        return Err(Error::shape("linalg_gemm2", &[a.shape(), b.shape()], format!(
            "batch dimensions or contracted dimensions differ ({ka} vs {kb}; transpose_a={transpose_a}, transpose_b={transpose_b})"
        )));
    }
    let batch: usize = a.dims()[..nd - 2].iter().product();
    let a3 = a.view_as(Shape::new(&[batch, a.dims()[nd - 2], a.dims()[nd - 1]]), 0);
    let b3 = b.view_as(Shape::new(&[batch, b.dims()[nd - 2], b.dims()[nd - 1]]), 0);
    let a3 = if a.has_entry() { ops::reshape_to(a, a3.shape().clone())? } else { a3 };
    let b3 = if b.has_entry() { ops::reshape_to(b, b3.shape().clone())? } else { b3 };
    let r = batch_mm(&DEFS[2], &a3, &b3, transpose_a, transpose_b, alpha)?;
    let mut od = a.dims()[..nd - 2].to_vec();
    od.extend_from_slice(&r.dims()[1..]);
    ops::reshape_to(&r, Shape::new(&od))
}

/// The dims `gemm2` gives (the rows on `axis`, columns last).
fn gemm2_dims(a: &Shape, b: &Shape, transpose_a: bool, transpose_b: bool, axis: i64) -> Result<Vec<usize>> {
    let name = "linalg_gemm2";
    if a.ndim() < 2 || a.ndim() != b.ndim() {
        return Err(Error::shape(name, &[a, b], "inputs must have the same rank ≥ 2"));
    }
    let nd = a.ndim();
    let ax = a.axis(name, axis)?;
    if ax == nd - 1 {
        return Err(Error::value(name, format!("axis {axis} is the column axis; rows must be on another axis")));
    }
    let swap = |s: &Shape| {
        let mut d = s.dims().to_vec();
        d.swap(ax, nd - 2);
        d
    };
    let (ad, bd) = (swap(a), swap(b));
    let (m, ka) = if transpose_a { (ad[nd - 1], ad[nd - 2]) } else { (ad[nd - 2], ad[nd - 1]) };
    let (kb, n) = if transpose_b { (bd[nd - 1], bd[nd - 2]) } else { (bd[nd - 2], bd[nd - 1]) };
    if ad[..nd - 2] != bd[..nd - 2] || ka != kb {
        return Err(Error::shape(name, &[a, b], "batch dimensions or contracted dimensions differ"));
    }
    let mut od = ad[..nd - 2].to_vec();
    od.extend([m, n]);
    od.swap(ax, nd - 2);
    Ok(od)
}

fn infer_dot(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let (x, y) = (&ins[0], &ins[1]);
    if x.dtype != y.dtype {
        return Err(Error::dtype(def.name, format!("dtypes differ: {} and {}", x.dtype, y.dtype)));
    }
    let (ta, tb) = (i.bool("transpose_a")?, i.bool("transpose_b")?);
    let d = match (x.shape.ndim(), y.shape.ndim(), def.name) {
        (0, _, "dot") => y.shape.dims().to_vec(),
        (_, 0, "dot") => x.shape.dims().to_vec(),
        (_, _, "dot") => dot_plan(&x.shape, &y.shape, ta, tb)?.0,
        (3.., _, "batch_dot") if x.shape.ndim() == y.shape.ndim() => {
            let nd = x.shape.ndim();
            let lead = &x.shape.dims()[..nd - 2];
            if lead != &y.shape.dims()[..nd - 2] {
                return Err(Error::shape(def.name, &[&x.shape, &y.shape], "batch dimensions differ"));
            }
            let s3 = |s: &Shape| Shape::new(&[lead.iter().product(), s.dims()[nd - 2], s.dims()[nd - 1]]);
            let [m, n, _, _] = batch_plan(def.name, &s3(&x.shape), &s3(&y.shape), ta, tb)?;
            let mut d = lead.to_vec();
            d.extend([m, n]);
            d
        }
        (_, _, "batch_dot") => {
            return Err(Error::shape(def.name, &[&x.shape, &y.shape], "inputs must be 3-d or more, with the same rank"))
        }
        _ => gemm2_dims(&x.shape, &y.shape, ta, tb, i.i64("axis")?)?,
    };
    Ok(vec![Meta { shape: Shape::new(&d), ..x.clone() }])
}

use crate::opdef::{one, param, Aliases, Example, Invocation, OpDef, ParamDef, ParamKind as K};

const MM: KernelSlot = KernelSlot::Call(cpu::mm_kernel);

const TRANSPOSES: &[ParamDef] = &[
    param("transpose_a", K::Bool, Some("False"), "Use the transpose of the first operand."),
    param("transpose_b", K::Bool, Some("False"), "Use the transpose of the second operand."),
];

/// The dense products.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "dot",
        cpu: MM,
        infer: Some(infer_dot),
        aliases: Aliases { nd: &[], np: &[], npx: &[], fluent: true },
        inputs: &["lhs", "rhs"],
        params: TRANSPOSES,
        doc: "Dot product with MXNet's N-d rule: contracts the last axis of `lhs` with the first of `rhs`.",
        forward: |i| one(dot(i.x(0)?, i.x(1)?, i.bool("transpose_a")?, i.bool("transpose_b")?)),
        example: Some(Example { shapes: &[&[2, 3], &[3, 2]], attrs: "", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "batch_dot",
        cpu: MM,
        infer: Some(infer_dot),
        inputs: &["lhs", "rhs"],
        params: TRANSPOSES,
        doc: "Batched matrix product over the leading axes.",
        forward: |i| one(batch_dot(i.x(0)?, i.x(1)?, i.bool("transpose_a")?, i.bool("transpose_b")?)),
        example: Some(Example { shapes: &[&[2, 2, 3], &[2, 3, 2]], attrs: "", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "linalg_gemm2",
        cpu: MM,
        infer: Some(infer_dot),
        aliases: Aliases { nd: &["_linalg_gemm2"], np: &[], npx: &[], fluent: false },
        inputs: &["A", "B"],
        params: &[
            param("transpose_a", K::Bool, Some("False"), "Use the transpose of A."),
            param("transpose_b", K::Bool, Some("False"), "Use the transpose of B."),
            param("alpha", K::Float, Some("1.0"), "Scale of the product."),
            param("axis", K::Int, Some("-2"), "The axis holding the matrix rows."),
        ],
        doc: "`alpha * op(A) @ op(B)` over batches of matrices.",
        forward: |i: &Invocation<'_>| {
            let (ta, tb) = (i.bool("transpose_a")?, i.bool("transpose_b")?);
            one(gemm2_axis(i.x(0)?, i.x(1)?, ta, tb, i.f64("alpha")?, i.i64("axis")?))
        },
        example: Some(Example { shapes: &[&[2, 3], &[3, 2]], attrs: "alpha=0.5", range: (0.5, 1.5) }),
        graph: crate::opdef::GraphForm { json_name: Some("_linalg_gemm2"), ..crate::opdef::GraphForm::PLAIN },
        ..OpDef::BASE
    },
];
