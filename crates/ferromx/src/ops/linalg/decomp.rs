//! The factorizations: MXNet's legacy `linalg_*` (potrf, potri, trsm, gelqf,
//! syevd, inverse, det, slogdet) and the NumPy `_npi_*` ones (svd, solve,
//! eigh, eig, pinv, qr, singular values), each an [`OpCall`] over batches of
//! trailing matrices with inference and, where MXNet has one, a gradient that is
//! itself an operator (`_backward_*`, as in MXNet; those are not differentiable
//! again). The per-matrix math is in `lapack.rs`.
//!
//! Every call carries the item rank of each input then each output in `ints`
//! (2: the trailing two axes are a matrix; 1: the last axis a vector; 0: one
//! scalar per batch entry) and the definition's parameters in `nums`.

use super::lapack::{self, MatFn};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    param, push_call, record_table_grad, Aliases, Attrs, Grad, GradArgs, Invocation, KernelSlot, Meta, OpCall, OpDef,
    ParamDef, ParamKind as K,
};
use crate::ops;
use crate::shape::Shape;

/// Output metadata and the item ranks (inputs, then outputs) of one call.
type Plan = (Vec<Meta>, Vec<i64>);
/// Computes a call's [`Plan`] from its inputs' metadata and numeric parameters.
type PlanFn = fn(&str, &[Meta], &[f64]) -> Result<Plan>;

fn dims(m: &Meta) -> &[usize] {
    m.shape.dims()
}

/// Checks a batch of matrices (`square`: of square ones) of a float dtype.
fn matrices(name: &str, m: &Meta, square: bool) -> Result<(usize, usize)> {
    let d = dims(m);
    if d.len() < 2 {
        return Err(Error::shape(name, &[&m.shape], "the input must have at least 2 dimensions (a batch of matrices)"));
    }
    let (r, c) = (d[d.len() - 2], d[d.len() - 1]);
    if square && r != c {
        return Err(Error::shape(name, &[&m.shape], format!("the last two dimensions must be equal ({r} vs {c})")));
    }
    if !lapack::check_dtype(m.dtype) {
        return Err(Error::dtype(name, format!("only float32 and float64 are supported, got {}", m.dtype)));
    }
    Ok((r, c))
}

fn meta(like: &Meta, d: &[usize]) -> Meta {
    Meta { shape: Shape::new(d), ..like.clone() }
}

/// The batch dims with `tail` appended.
fn batch_with(m: &Meta, tail: &[usize]) -> Vec<usize> {
    let d = dims(m);
    let mut v = d[..d.len() - 2].to_vec();
    v.extend_from_slice(tail);
    v
}

fn same_batch(name: &str, a: &Meta, b: &Meta, bnd: usize) -> Result<()> {
    let (da, db) = (dims(a), dims(b));
    if db.len() < bnd || da[..da.len() - 2] != db[..db.len() - bnd] {
        return Err(Error::shape(name, &[&a.shape, &b.shape], "batch dimensions differ"));
    }
    if a.dtype != b.dtype {
        return Err(Error::dtype(name, format!("dtypes differ: {} and {}", a.dtype, b.dtype)));
    }
    Ok(())
}

fn plan_square(name: &str, ins: &[Meta], _p: &[f64]) -> Result<Plan> {
    matrices(name, &ins[0], true)?;
    Ok((vec![ins[0].clone()], vec![2, 2]))
}

fn plan_det(name: &str, ins: &[Meta], _p: &[f64]) -> Result<Plan> {
    matrices(name, &ins[0], true)?;
    let o = meta(&ins[0], &batch_with(&ins[0], &[]));
    Ok((vec![o], vec![2, 0]))
}

fn plan_slogdet(name: &str, ins: &[Meta], _p: &[f64]) -> Result<Plan> {
    matrices(name, &ins[0], true)?;
    let o = meta(&ins[0], &batch_with(&ins[0], &[]));
    Ok((vec![o.clone(), o], vec![2, 0, 0]))
}

fn plan_trsm(name: &str, ins: &[Meta], p: &[f64]) -> Result<Plan> {
    let (n, _) = matrices(name, &ins[0], true)?;
    let (r, c) = matrices(name, &ins[1], false)?;
    same_batch(name, &ins[0], &ins[1], 2)?;
    let k = if p[1] != 0.0 { c } else { r };
    if k != n {
        return Err(Error::shape(name, &[&ins[0].shape, &ins[1].shape], "the triangular matrix does not match B"));
    }
    Ok((vec![ins[1].clone()], vec![2, 2, 2]))
}

fn plan_solve(name: &str, ins: &[Meta], _p: &[f64]) -> Result<Plan> {
    let (n, _) = matrices(name, &ins[0], true)?;
    let (a, b) = (&ins[0], &ins[1]);
    let vector = dims(b).len() + 1 == dims(a).len();
    same_batch(name, a, b, if vector { 1 } else { 2 })?;
    let rows = if vector { dims(b)[dims(b).len() - 1] } else { dims(b)[dims(b).len() - 2] };
    if rows != n {
        return Err(Error::shape(name, &[&a.shape, &b.shape], format!("b has {rows} rows, A is {n}x{n}")));
    }
    let rb = if vector { 1 } else { 2 };
    Ok((vec![b.clone()], vec![2, rb, rb]))
}

fn plan_svd(name: &str, ins: &[Meta], _p: &[f64]) -> Result<Plan> {
    let (m, n) = matrices(name, &ins[0], false)?;
    if m > n {
        return Err(Error::shape(
            name,
            &[&ins[0].shape],
            format!("the second-to-last dimension must not exceed the last ({m} vs {n})"),
        ));
    }
    let a = &ins[0];
    let outs = vec![meta(a, &batch_with(a, &[m, m])), meta(a, &batch_with(a, &[m])), a.clone()];
    Ok((outs, vec![2, 2, 1, 2]))
}

fn plan_svdvals(name: &str, ins: &[Meta], _p: &[f64]) -> Result<Plan> {
    let (m, n) = matrices(name, &ins[0], false)?;
    Ok((vec![meta(&ins[0], &batch_with(&ins[0], &[m.min(n)]))], vec![2, 1]))
}

fn plan_pinv(name: &str, ins: &[Meta], _p: &[f64]) -> Result<Plan> {
    let (m, n) = matrices(name, &ins[0], false)?;
    let out = meta(&ins[0], &batch_with(&ins[0], &[n, m]));
    if ins.len() > 1 {
        if ins[1].shape.dims() != batch_with(&ins[0], &[]).as_slice() {
            return Err(Error::shape(name, &[&ins[0].shape, &ins[1].shape], "rcond must have the batch shape"));
        }
        return Ok((vec![out], vec![2, 0, 2]));
    }
    Ok((vec![out], vec![2, 2]))
}

fn plan_syevd(name: &str, ins: &[Meta], _p: &[f64]) -> Result<Plan> {
    let (n, _) = matrices(name, &ins[0], true)?;
    Ok((vec![ins[0].clone(), meta(&ins[0], &batch_with(&ins[0], &[n]))], vec![2, 2, 1]))
}

fn plan_eigh(name: &str, ins: &[Meta], _p: &[f64]) -> Result<Plan> {
    let (n, _) = matrices(name, &ins[0], true)?;
    Ok((vec![meta(&ins[0], &batch_with(&ins[0], &[n])), ins[0].clone()], vec![2, 1, 2]))
}

fn plan_gelqf(name: &str, ins: &[Meta], _p: &[f64]) -> Result<Plan> {
    let (m, n) = matrices(name, &ins[0], false)?;
    if m > n {
        return Err(Error::shape(
            name,
            &[&ins[0].shape],
            format!("the input must not have more rows than columns ({m} vs {n})"),
        ));
    }
    Ok((vec![ins[0].clone(), meta(&ins[0], &batch_with(&ins[0], &[m, m]))], vec![2, 2, 2]))
}

fn plan_qr(name: &str, ins: &[Meta], p: &[f64]) -> Result<Plan> {
    let (m, n) = matrices(name, &ins[0], false)?;
    let k = m.min(n);
    let a = &ins[0];
    match p[0] as i64 {
        0 => Ok((vec![meta(a, &batch_with(a, &[m, k])), meta(a, &batch_with(a, &[k, n]))], vec![2, 2, 2])),
        1 => Ok((vec![meta(a, &batch_with(a, &[m, m])), a.clone()], vec![2, 2, 2])),
        3 => Ok((vec![meta(a, &batch_with(a, &[n, m])), meta(a, &batch_with(a, &[k]))], vec![2, 2, 1])),
        _ => Ok((vec![meta(a, &batch_with(a, &[k, n]))], vec![2, 2])),
    }
}

/// A backward operator's plan: its outputs are shaped like the inputs `like`.
fn plan_like(ins: &[Meta], like: &[usize], ranks: &[i64]) -> Result<Plan> {
    Ok((like.iter().map(|&i| ins[i].clone()).collect(), ranks.to_vec()))
}

/// The numeric parameters of a call in definition order (bools as 0/1, strings by position in their choices).
fn nums_of(def: &'static OpDef, attrs: &Attrs) -> Result<Vec<f64>> {
    let inv = Invocation::params(def, attrs);
    def.params
        .iter()
        .map(|p| match p.kind {
            K::Bool => Ok(inv.bool(p.name)? as i64 as f64),
            K::Str => {
                let v = inv.str(p.name)?;
                let choices: &[&str] =
                    if p.name == "UPLO" { &["L", "U"] } else { &["reduced", "complete", "r", "raw"] };
                choices.iter().position(|c| *c == v).map(|i| i as f64).ok_or_else(|| {
                    Error::value(def.name, format!("{} must be one of {:?}, got '{v}'", p.name, choices))
                })
            }
            _ => inv.f64(p.name),
        })
        .collect()
}

/// Allocates the outputs of `plan`, pushes `def`'s kernel and records its gradient.
fn exec(def: &'static OpDef, plan: PlanFn, ins: &[&NDArray], nums: &[f64]) -> Result<Vec<NDArray>> {
    let metas: Vec<Meta> = ins.iter().map(|x| Meta::of(x)).collect();
    for x in &ins[1..] {
        ops::check_ctx(def.name, ins[0], x)?;
    }
    let (outs, ranks) = plan(def.name, &metas, nums)?;
    let outs = outs.iter().map(|m| NDArray::empty(m.shape.clone(), m.dtype, m.ctx)).collect::<Result<Vec<_>>>()?;
    let orefs: Vec<&NDArray> = outs.iter().collect();
    if outs.iter().any(|o| o.size() > 0) {
        push_call(OpCall::new(def, ins, &orefs).with_nums(nums).with_ints(&ranks))?;
    }
    record_table_grad(def, ins, &outs, nums);
    Ok(outs)
}

fn forward_with(i: &Invocation<'_>, plan: PlanFn) -> Result<Vec<NDArray>> {
    let ins: Vec<&NDArray> = i.inputs.iter().flatten().collect();
    if ins.is_empty() {
        return Err(Error::value(i.name(), "missing input"));
    }
    exec(i.def, plan, &ins, &nums_of(i.def, i.attrs)?)
}

fn infer_with(def: &'static OpDef, a: &Attrs, ins: &[Meta], plan: PlanFn) -> Result<Vec<Meta>> {
    Ok(plan(def.name, ins, &nums_of(def, a)?)?.0)
}

/// One factorization (or its backward) as a table definition.
macro_rules! la_def {
    ($name:literal, nd: [$($nd:literal),*], $inputs:expr, $outputs:expr, $params:expr, $plan:expr, $f:path, $grad:expr, $doc:literal) => {
        OpDef {
            name: $name,
            aliases: Aliases { nd: &[$($nd),*], np: &[], npx: &[], fluent: false },
            inputs: $inputs,
            outputs: $outputs,
            params: $params,
            doc: $doc,
            infer: Some({
                fn infer(d: &'static OpDef, a: &Attrs, m: &[Meta]) -> Result<Vec<Meta>> {
                    infer_with(d, a, m, $plan)
                }
                infer
            }),
            forward: {
                fn forward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
                    forward_with(i, $plan)
                }
                forward
            },
            grad: $grad,
            cpu: KernelSlot::Call({
                fn kernel(
                    c: &OpCall,
                    k: &crate::storage::Kernel,
                ) -> std::result::Result<(), crate::engine::OpFailure> {
                    lapack::run_batched(c, k, $f as MatFn)
                }
                kernel
            }),
            ..OpDef::BASE
        }
    };
}

const TRI: &[ParamDef] = &[
    param("transpose", K::Bool, Some("False"), "Use the transpose of the triangular matrix."),
    param("rightside", K::Bool, Some("False"), "Multiply (solve) from the right."),
    param("lower", K::Bool, Some("True"), "The triangular matrix is lower (else upper) triangular."),
    param("alpha", K::Float, Some("1.0"), "Scale of the result."),
];
const UPLO: &[ParamDef] = &[param("UPLO", K::Str, Some("'L'"), "Which triangle is read: 'L' or 'U'.")];
const RCOND: &[ParamDef] =
    &[param("rcond", K::Float, Some("1e-15"), "Singular values up to rcond·max(s) count as zero.")];
const QR_MODE: &[ParamDef] =
    &[param("mode", K::Str, Some("'reduced'"), "'reduced', 'complete', 'r' or 'raw' (NumPy's modes).")];
const SECOND: Grad = Grad::None("MXNet's factorization backward operators have no gradient of their own");
const ZERO_GRAD: Grad = Grad::Fn(zero_grad);

// Indices into DEFS of the backward operators the gradients call.
const B_POTRF: usize = 11;
const B_POTRI: usize = 12;
const B_TRSM: usize = 13;
const B_INV: usize = 14;
const B_DET: usize = 15;
const B_SLOGDET: usize = 16;
const B_SOLVE: usize = 17;
const B_SVD: usize = 18;
const B_SYEVD: usize = 19;
const B_EIGH: usize = 20;
const B_GELQF: usize = 21;

/// The factorizations, then their backward operators.
pub static DEFS: &[OpDef] = &[
    la_def!("_linalg_potrf", nd: ["linalg_potrf"], &["A"], &["output"], &[], plan_square, lapack::potrf, Grad::Fn(grad_potrf),
        "Cholesky factorization: the lower triangular `L` with `A = L·Lᵀ` of each symmetric positive-definite matrix (the lower triangle is read)."),
    la_def!("_linalg_potri", nd: ["linalg_potri"], &["A"], &["output"], &[], plan_square, lapack::potri, Grad::Fn(grad_potri),
        "`(L·Lᵀ)⁻¹` from lower Cholesky factors `L` (the inverse of the matrix `potrf` factorized)."),
    la_def!("_linalg_trsm", nd: ["linalg_trsm"], &["A", "B"], &["output"], TRI, plan_trsm, lapack::trsm, Grad::Fn(grad_trsm),
        "Triangular solve: `alpha · op(A)⁻¹ · B` (or `alpha · B · op(A)⁻¹` with rightside) for triangular `A`."),
    la_def!("_linalg_inverse", nd: ["linalg_inverse"], &["A"], &["output"], &[], plan_square, lapack::inv, Grad::Fn(grad_inv),
        "Inverse of each square matrix (LU with partial pivoting); a singular matrix is an error."),
    la_def!("_linalg_det", nd: ["linalg_det"], &["A"], &["output"], &[], plan_det, lapack::det, Grad::Fn(grad_det),
        "Determinant of each square matrix (from its LU factorization)."),
    la_def!("_linalg_slogdet", nd: ["linalg_slogdet"], &["A"], &["sign", "logabsdet"], &[], plan_slogdet, lapack::slogdet,
        Grad::Fn(grad_slogdet), "Sign and natural log of the absolute value of each square matrix's determinant."),
    la_def!("_npi_solve", nd: [], &["A", "B"], &["output"], &[], plan_solve, lapack::solve, Grad::Fn(grad_solve),
        "Solves `A·x = b` for each square `A` (b a vector or matrix per batch entry)."),
    la_def!("_npi_svd", nd: [], &["A"], &["ut", "l", "v"], &[], plan_svd, lapack::svd, Grad::Fn(grad_svd),
        "Singular value decomposition `A = ut · diag(l) · v` of each `m×n` matrix with `m ≤ n` (MXNet's layout)."),
    la_def!("_linalg_syevd", nd: ["linalg_syevd"], &["A"], &["U", "L"], &[], plan_syevd, lapack::syevd, Grad::Fn(grad_syevd),
        "Symmetric eigendecomposition `A = Uᵀ·diag(L)·U` (eigenvectors as rows of U, ascending eigenvalues, each row's largest entry positive; the lower triangle is read)."),
    la_def!("_npi_eigh", nd: [], &["A"], &["w", "v"], UPLO, plan_eigh, lapack::eigh, Grad::Fn(grad_eigh),
        "Eigenvalues (ascending) and eigenvectors (columns) of each symmetric matrix, reading the UPLO triangle."),
    la_def!("_linalg_gelqf", nd: ["linalg_gelqf"], &["A"], &["Q", "L"], &[], plan_gelqf, lapack::gelqf, Grad::Fn(grad_gelqf),
        "LQ factorization `A = L·Q` of each `m×n` matrix with `m ≤ n` (Householder, LAPACK's signs): Q has orthonormal rows, L is lower triangular."),
    la_def!("_backward_linalg_potrf", nd: [], &["dL", "L"], &["dA"], &[], pb_potrf, lapack::potrf_bwd, SECOND,
        "Gradient of `potrf` (internal)."),
    la_def!("_backward_linalg_potri", nd: [], &["dY", "L", "Y"], &["dL"], &[], pb_potri, lapack::potri_bwd,
        SECOND, "Gradient of `potri` (internal)."),
    la_def!("_backward_linalg_trsm", nd: [], &["dC", "A", "B", "C"], &["dA", "dB"], TRI, pb_trsm,
        lapack::trsm_bwd, SECOND, "Gradient of `trsm` (internal)."),
    la_def!("_backward_linalg_inverse", nd: [], &["dY", "Y"], &["dA"], &[], pb_inv, lapack::inv_bwd,
        SECOND, "Gradient of `inverse` (internal)."),
    la_def!("_backward_linalg_det", nd: [], &["dy", "A", "det"], &["dA"], &[], pb_det, lapack::det_bwd,
        SECOND, "Gradient of `det` (internal): zero for singular matrices, as MXNet."),
    la_def!("_backward_linalg_slogdet", nd: [], &["dlogabsdet", "A"], &["dA"], &[], pb_slogdet,
        lapack::slogdet_bwd, SECOND, "Gradient of `slogdet` (internal): zero for singular matrices, as MXNet."),
    la_def!("_backward_npi_solve", nd: [], &["dX", "A", "B", "X"], &["dA", "dB"], &[], plan_solve_bwd, lapack::solve_bwd, SECOND,
        "Gradient of `solve` (internal)."),
    la_def!("_backward_npi_svd", nd: [], &["dut", "dl", "dv", "ut", "l", "v"], &["dA"], &[],
        pb_svd, lapack::svd_bwd, SECOND, "Gradient of `svd` (internal)."),
    la_def!("_backward_linalg_syevd", nd: [], &["dU", "dL", "U", "L"], &["dA"], &[], pb_syevd,
        lapack::syevd_bwd, SECOND, "Gradient of `syevd` (internal)."),
    la_def!("_backward_npi_eigh", nd: [], &["dw", "dv", "w", "v"], &["dA"], &[], pb_eigh,
        lapack::eigh_bwd, SECOND, "Gradient of `eigh` (internal)."),
    la_def!("_backward_linalg_gelqf", nd: [], &["dQ", "dL", "Q", "L"], &["dA"], &[], pb_gelqf,
        lapack::gelqf_bwd, SECOND, "Gradient of `gelqf` (internal)."),
    la_def!("_npi_eig", nd: [], &["A"], &["w", "v"], &[], plan_eigh, lapack::eig, ZERO_GRAD,
        "Real eigenvalues and unit eigenvectors (columns) of each square matrix; complex eigenvalues are an error (MXNet's gradient is zero)."),
    la_def!("_npi_pinv", nd: [], &["A", "rcond"], &["output"], RCOND, plan_pinv, lapack::pinv, ZERO_GRAD,
        "Moore-Penrose pseudo-inverse of each matrix from its SVD (rcond a float or one per batch entry; MXNet's gradient is zero)."),
    la_def!("_npi_qr", nd: [], &["A"], &["q", "r"], QR_MODE, plan_qr, lapack::qr, Grad::None("MXNet's qr is a NumPy fallback without a gradient"),
        "QR factorization of each matrix (Householder with LAPACK's signs, as NumPy); mode 'r' gives R only, 'raw' NumPy's (h, tau)."),
    la_def!("_npi_svdvals", nd: [], &["A"], &["s"], &[], plan_svdvals, lapack::svdvals, Grad::None("use svd for a differentiable spectrum"),
        "Singular values (descending) of each matrix (any shape)."),
];

fn plan_solve_bwd(name: &str, ins: &[Meta], p: &[f64]) -> Result<Plan> {
    let (_, r) = plan_solve(name, &ins[1..3], p)?;
    Ok((vec![ins[1].clone(), ins[2].clone()], vec![r[1], 2, r[1], r[1], 2, r[1]]))
}

fn bwd(idx: usize, plan: PlanFn, ins: &[&NDArray], nums: &[f64]) -> Result<Vec<Option<NDArray>>> {
    Ok(exec(&DEFS[idx], plan, ins, nums)?.into_iter().map(Some).collect())
}

fn pb_potrf(_: &str, m: &[Meta], _: &[f64]) -> Result<Plan> {
    plan_like(m, &[1], &[2, 2, 2])
}

fn pb_potri(_: &str, m: &[Meta], _: &[f64]) -> Result<Plan> {
    plan_like(m, &[1], &[2, 2, 2, 2])
}

fn pb_trsm(_: &str, m: &[Meta], _: &[f64]) -> Result<Plan> {
    plan_like(m, &[1, 2], &[2, 2, 2, 2, 2, 2])
}

fn pb_inv(_: &str, m: &[Meta], _: &[f64]) -> Result<Plan> {
    plan_like(m, &[1], &[2, 2, 2])
}

fn pb_det(_: &str, m: &[Meta], _: &[f64]) -> Result<Plan> {
    plan_like(m, &[1], &[0, 2, 0, 2])
}

fn pb_slogdet(_: &str, m: &[Meta], _: &[f64]) -> Result<Plan> {
    plan_like(m, &[1], &[0, 2, 2])
}

fn pb_svd(_: &str, m: &[Meta], _: &[f64]) -> Result<Plan> {
    plan_like(m, &[5], &[2, 1, 2, 2, 1, 2, 2])
}

fn pb_syevd(_: &str, m: &[Meta], _: &[f64]) -> Result<Plan> {
    plan_like(m, &[2], &[2, 1, 2, 1, 2])
}

fn pb_eigh(_: &str, m: &[Meta], _: &[f64]) -> Result<Plan> {
    plan_like(m, &[3], &[1, 2, 1, 2, 2])
}

fn pb_gelqf(_: &str, m: &[Meta], _: &[f64]) -> Result<Plan> {
    plan_like(m, &[2], &[2, 2, 2, 2, 2])
}

fn grad_potrf(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    bwd(B_POTRF, pb_potrf, &[&a.out_grads[0], &a.outputs[0]], a.nums)
}

fn grad_potri(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    bwd(B_POTRI, pb_potri, &[&a.out_grads[0], &a.inputs[0], &a.outputs[0]], a.nums)
}

fn grad_trsm(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    let ins = [&a.out_grads[0], &a.inputs[0], &a.inputs[1], &a.outputs[0]];
    bwd(B_TRSM, pb_trsm, &ins, a.nums)
}

fn grad_inv(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    bwd(B_INV, pb_inv, &[&a.out_grads[0], &a.outputs[0]], a.nums)
}

fn grad_det(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    bwd(B_DET, pb_det, &[&a.out_grads[0], &a.inputs[0], &a.outputs[0]], a.nums)
}

fn grad_slogdet(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    bwd(B_SLOGDET, pb_slogdet, &[&a.out_grads[1], &a.inputs[0]], a.nums)
}

fn grad_solve(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    let ins = [&a.out_grads[0], &a.inputs[0], &a.inputs[1], &a.outputs[0]];
    bwd(B_SOLVE, plan_solve_bwd, &ins, a.nums)
}

fn grad_svd(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    let g = a.out_grads;
    let ins = [&g[0], &g[1], &g[2], &a.outputs[0], &a.outputs[1], &a.outputs[2]];
    bwd(B_SVD, pb_svd, &ins, a.nums)
}

fn grad_syevd(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    let ins = [&a.out_grads[0], &a.out_grads[1], &a.outputs[0], &a.outputs[1]];
    bwd(B_SYEVD, pb_syevd, &ins, a.nums)
}

fn grad_eigh(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    let ins = [&a.out_grads[0], &a.out_grads[1], &a.outputs[0], &a.outputs[1]];
    // the adjoint is symmetric, so it is the same whichever triangle UPLO read
    bwd(B_EIGH, pb_eigh, &ins, &[])
}

fn grad_gelqf(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    let ins = [&a.out_grads[0], &a.out_grads[1], &a.outputs[0], &a.outputs[1]];
    bwd(B_GELQF, pb_gelqf, &ins, a.nums)
}

/// MXNet's `MakeZeroGradNodes`: zero gradients for every input.
fn zero_grad(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    a.inputs.iter().map(|x| ops::zeros_like(x).map(Some)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backward_indices_name_the_backward_operators() {
        let want = [
            (B_POTRF, "_backward_linalg_potrf"),
            (B_POTRI, "_backward_linalg_potri"),
            (B_TRSM, "_backward_linalg_trsm"),
            (B_INV, "_backward_linalg_inverse"),
            (B_DET, "_backward_linalg_det"),
            (B_SLOGDET, "_backward_linalg_slogdet"),
            (B_SOLVE, "_backward_npi_solve"),
            (B_SVD, "_backward_npi_svd"),
            (B_SYEVD, "_backward_linalg_syevd"),
            (B_EIGH, "_backward_npi_eigh"),
            (B_GELQF, "_backward_linalg_gelqf"),
        ];
        for (i, n) in want {
            assert_eq!(DEFS[i].name, n);
        }
    }
}
