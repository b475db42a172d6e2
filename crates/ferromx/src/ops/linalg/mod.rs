//! Matrix products: `dot` (MXNet's N-d rules), `batch_dot`, `linalg.gemm2`.

use crate::autograd::{needs_record, record};
use crate::dtype::{DType, Elem};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::ops::{self, check_ctx, BinOp};
use crate::shape::Shape;
use crate::storage::{matmul, push_kernel};
use crate::with_dtype;

/// Pushes `out = op(a)·op(b)` for 2-d views (`a` is m×k after op, `b` k×n).
#[allow(clippy::too_many_arguments)]
fn push_mm(
    name: &'static str,
    a: &NDArray,
    ta: bool,
    b: &NDArray,
    tb: bool,
    m: usize,
    n: usize,
    k: usize,
    batch: usize,
    out: &NDArray,
) {
    let dt = out.dtype();
    if out.size() == 0 {
        return;
    }
    push_kernel(name, vec![a.view(), b.view()], vec![out.view()], move |kk| {
        macro_rules! native {
            ($t:ty) => {{
                let (x, y, o) = (kk.input::<$t>(0), kk.input::<$t>(1), kk.output::<$t>(0));
                for bi in 0..batch {
                    matmul::<$t>(
                        m,
                        n,
                        k,
                        &mut o[bi * m * n..(bi + 1) * m * n],
                        &x[bi * m * k..(bi + 1) * m * k],
                        ta,
                        &y[bi * k * n..(bi + 1) * k * n],
                        tb,
                        false,
                    );
                }
            }};
        }
        match dt {
            DType::F32 => native!(f32),
            DType::F64 => native!(f64),
            DType::F16 => native!(half::f16),
            _ => with_dtype!(dt, T, {
                let (x, y, o) = (kk.input::<T>(0), kk.input::<T>(1), kk.output::<T>(0));
                for bi in 0..batch {
                    naive_mm(
                        m,
                        n,
                        k,
                        &mut o[bi * m * n..(bi + 1) * m * n],
                        &x[bi * m * k..(bi + 1) * m * k],
                        ta,
                        &y[bi * k * n..(bi + 1) * k * n],
                        tb,
                    );
                }
            }),
        }
        Ok(())
    });
}

#[allow(clippy::too_many_arguments)]
fn naive_mm<T: Elem>(m: usize, n: usize, k: usize, dst: &mut [T], a: &[T], ta: bool, b: &[T], tb: bool) {
    let mut acc = vec![0f64; n];
    for i in 0..m {
        acc.iter_mut().for_each(|v| *v = 0.0);
        for p in 0..k {
            let av = if ta { a[p * m + i] } else { a[i * k + p] }.to_f64();
            for (j, accv) in acc.iter_mut().enumerate() {
                let bv = if tb { b[j * k + p] } else { b[p * n + j] }.to_f64();
                *accv += av * bv;
            }
        }
        for j in 0..n {
            dst[i * n + j] = T::from_f64(acc[j]);
        }
    }
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
        let (s, t) = if a.ndim() == 0 { (a, b) } else { (b, a) };
        return ops::mul(&ops::broadcast_to(s, t.shape().clone())?, t);
    }
    let ad = a.dims();
    let bd = b.dims();
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
            name,
            &[a.shape(), b.shape()],
            format!(
                "contracted dimensions differ ({ka} vs {kb}; transpose_a={transpose_a}, transpose_b={transpose_b})"
            ),
        ));
    }
    let mut od: Vec<usize> = afree.to_vec();
    od.extend_from_slice(bfree);
    let out = NDArray::empty(Shape::new(&od), a.dtype(), a.ctx())?;
    push_mm(name, a, transpose_a, b, transpose_b, m, n, ka, 1, &out);
    if needs_record(&[a, b]) {
        let (ac, bc) = (a.clone(), b.clone());
        record(
            name,
            &[a, b],
            &[&out],
            Box::new(move |g| {
                let g2 = g[0].view_as(Shape::new(&[m, n]), 0);
                let a2 =
                    if transpose_a { ac.view_as(Shape::new(&[ka, m]), 0) } else { ac.view_as(Shape::new(&[m, ka]), 0) };
                let b2 =
                    if transpose_b { bc.view_as(Shape::new(&[n, ka]), 0) } else { bc.view_as(Shape::new(&[ka, n]), 0) };
                // d(op(a)) = g·op(b)ᵀ ; d(op(b)) = op(a)ᵀ·g
                let ga =
                    if transpose_a { dot(&b2, &g2, transpose_b, true)? } else { dot(&g2, &b2, false, !transpose_b)? };
                let gb =
                    if transpose_b { dot(&g2, &a2, true, transpose_a)? } else { dot(&a2, &g2, !transpose_a, false)? };
                Ok(vec![Some(ga.view_as(ac.shape().clone(), 0)), Some(gb.view_as(bc.shape().clone(), 0))])
            }),
        );
    }
    Ok(out)
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
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(name, format!("dtypes differ: {} and {}", a.dtype(), b.dtype())));
    }
    let (ad, bd) = (a.dims(), b.dims());
    let (m, ka) = if transpose_a { (ad[2], ad[1]) } else { (ad[1], ad[2]) };
    let (kb, n) = if transpose_b { (bd[2], bd[1]) } else { (bd[1], bd[2]) };
    if ad[0] != bd[0] || ka != kb {
        return Err(Error::shape(name, &[a.shape(), b.shape()], "batch sizes or contracted dimensions differ"));
    }
    let batch = ad[0];
    let out = NDArray::empty(Shape::new(&[batch, m, n]), a.dtype(), a.ctx())?;
    push_mm(name, a, transpose_a, b, transpose_b, m, n, ka, batch, &out);
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
    let r = batch_dot(&a3, &b3, transpose_a, transpose_b)?;
    let mut od = a.dims()[..nd - 2].to_vec();
    od.extend_from_slice(&r.dims()[1..]);
    let r = ops::reshape_to(&r, Shape::new(&od))?;
    if alpha == 1.0 {
        Ok(r)
    } else {
        ops::scalar(BinOp::Mul, &r, alpha)
    }
}

use crate::opdef::{one, param, Aliases, Example, Invocation, OpDef, ParamDef, ParamKind as K};

const TRANSPOSES: &[ParamDef] = &[
    param("transpose_a", K::Bool, Some("False"), "Use the transpose of the first operand."),
    param("transpose_b", K::Bool, Some("False"), "Use the transpose of the second operand."),
];

/// The dense products.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "dot",
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
        inputs: &["lhs", "rhs"],
        params: TRANSPOSES,
        doc: "Batched matrix product over the leading axes.",
        forward: |i| one(batch_dot(i.x(0)?, i.x(1)?, i.bool("transpose_a")?, i.bool("transpose_b")?)),
        example: Some(Example { shapes: &[&[2, 2, 3], &[2, 3, 2]], attrs: "", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "linalg_gemm2",
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
        ..OpDef::BASE
    },
];
