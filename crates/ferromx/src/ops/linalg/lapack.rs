//! Per-matrix kernels of the factorizations, in `f64` on `faer` matrices.
//!
//! [`run_batched`] turns an [`OpCall`] into a loop over the batch: every input
//! and output is a batch of items (an item is a matrix, a vector or a scalar:
//! its rank is in [`OpCall::ints`], inputs first, then outputs); each item is
//! read into a `faer` matrix (a vector as an `n×1` matrix, a scalar as `1×1`),
//! the operator's [`MatFn`] computes the output items, and they are written
//! back in the outputs' dtype. Float parameters are in [`OpCall::nums`] in the
//! definition's parameter order.
//!
//! Cholesky, LU (inverse, determinants, solve), SVD, the symmetric and general
//! eigendecompositions and the triangular solves are `faer`'s. The LQ/QR
//! factorizations are Householder reflections with LAPACK's sign convention
//! (`beta = -sign(alpha)·‖x‖`), so `gelqf` and `qr` give LAPACK's (MXNet's,
//! NumPy's) factors, not just factors equal up to signs.

use crate::dtype::{DType, Elem};
use crate::engine::{ErrorKind, OpFailure};
use crate::opdef::OpCall;
use crate::storage::Kernel;
use crate::with_float_dtype;
use faer::linalg::solvers::{DenseSolveCore, Solve};
use faer::{Mat, MatRef, Side};

/// One item's computation: input items to output items (or a message).
pub(super) type MatFn = fn(&[Mat<f64>], &[f64]) -> Result<Vec<Mat<f64>>, String>;

fn item_dims(dims: &[usize], rank: usize) -> (usize, usize) {
    let n = dims.len();
    match rank {
        0 => (1, 1),
        1 => (dims[n - 1], 1),
        _ => (dims[n - 2], dims[n - 1]),
    }
}

fn fail(c: &OpCall, msg: impl Into<String>) -> OpFailure {
    OpFailure::new(ErrorKind::Value, format!("{}: {}", c.def.name, msg.into()))
}

fn read_f64(k: &Kernel, i: usize) -> Option<Vec<f64>> {
    with_float_dtype!(k.in_dtype(i), T, Some(k.input::<T>(i).iter().map(|v| v.to_f64()).collect()), None)
}

/// Runs `f` on every item of the call's batch.
pub(super) fn run_batched(c: &OpCall, k: &Kernel, f: MatFn) -> Result<(), OpFailure> {
    let (ni, no) = (k.n_inputs(), k.n_outputs());
    let idims: Vec<(usize, usize)> = (0..ni).map(|i| item_dims(k.in_shape(i).dims(), c.us(i))).collect();
    let odims: Vec<(usize, usize)> = (0..no).map(|o| item_dims(k.out_shape(o).dims(), c.us(ni + o))).collect();
    let sizes =
        (0..ni).map(|i| (k.in_shape(i).size(), idims[i])).chain((0..no).map(|o| (k.out_shape(o).size(), odims[o])));
    let batch = sizes.filter(|(_, (r, cc))| r * cc > 0).map(|(s, (r, cc))| s / (r * cc)).next().unwrap_or(0);
    let ins = (0..ni).map(|i| read_f64(k, i)).collect::<Option<Vec<_>>>();
    let ins = ins.ok_or_else(|| fail(c, "only floating-point arrays are supported"))?;
    let mut outs: Vec<Vec<f64>> = odims.iter().map(|(r, cc)| vec![0.0; batch * r * cc]).collect();
    for b in 0..batch {
        let mats: Vec<Mat<f64>> = ins
            .iter()
            .zip(&idims)
            .map(|(x, &(r, cc))| {
                let s = &x[b * r * cc..(b + 1) * r * cc];
                Mat::from_fn(r, cc, |i, j| s[i * cc + j])
            })
            .collect();
        let res = f(&mats, &c.nums)
            .map_err(|m| fail(c, if batch > 1 { format!("{m} (matrix {b} of the batch)") } else { m }))?;
        for ((o, m), &(r, cc)) in outs.iter_mut().zip(&res).zip(&odims) {
            if m.nrows() != r || m.ncols() != cc {
                return Err(fail(c, format!("internal: item is {}x{}, expected {r}x{cc}", m.nrows(), m.ncols())));
            }
            let d = &mut o[b * r * cc..(b + 1) * r * cc];
            for i in 0..r {
                for j in 0..cc {
                    d[i * cc + j] = m[(i, j)];
                }
            }
        }
    }
    for (o, buf) in outs.iter().enumerate() {
        with_float_dtype!(
            k.out_dtype(o),
            T,
            k.output::<T>(o).iter_mut().zip(buf).for_each(|(d, s)| *d = T::from_f64(*s)),
            return Err(fail(c, "only floating-point arrays are supported"))
        );
    }
    Ok(())
}

/// The dtype rule of every factorization: float32 and float64 only (as MXNet).
pub(super) fn check_dtype(dt: DType) -> bool {
    matches!(dt, DType::F32 | DType::F64)
}

// ---- helpers ----

fn tr(a: MatRef<'_, f64>) -> Mat<f64> {
    a.transpose().to_owned()
}

fn mm(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
    a * b
}

fn tri(a: &Mat<f64>, lower: bool) -> Mat<f64> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| if (lower && j <= i) || (!lower && j >= i) { a[(i, j)] } else { 0.0 })
}

/// The symmetric matrix with `m`'s lower triangle (MXNet's `copyLTU`).
fn copy_ltu(m: &Mat<f64>) -> Mat<f64> {
    Mat::from_fn(m.nrows(), m.ncols(), |i, j| m[(i.max(j), i.min(j))])
}

/// `a + s·b`.
fn axpy(a: &Mat<f64>, s: f64, b: &Mat<f64>) -> Mat<f64> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| a[(i, j)] + s * b[(i, j)])
}

fn scale(m: Mat<f64>, s: f64) -> Mat<f64> {
    Mat::from_fn(m.nrows(), m.ncols(), |i, j| m[(i, j)] * s)
}

fn flag(p: &[f64], i: usize) -> bool {
    p.get(i).copied().unwrap_or(0.0) != 0.0
}

/// `t⁻¹ · rhs` for a triangular `t` (lower or upper).
fn tri_solve(t: &Mat<f64>, lower: bool, rhs: Mat<f64>) -> Mat<f64> {
    let mut x = rhs;
    if lower {
        t.solve_lower_triangular_in_place(x.as_mut());
    } else {
        t.solve_upper_triangular_in_place(x.as_mut());
    }
    x
}

fn tri_inv(t: &Mat<f64>, lower: bool) -> Mat<f64> {
    tri_solve(t, lower, Mat::identity(t.nrows(), t.nrows()))
}

fn cholesky(a: &Mat<f64>) -> Result<Mat<f64>, String> {
    let llt = a.llt(Side::Lower).map_err(|_| "the matrix is not positive definite (Cholesky failed)".to_string())?;
    Ok(tri(&llt.L().to_owned(), true))
}

/// LU inverse; an exactly singular matrix is an error (as MXNet's getri).
fn inverse(a: &Mat<f64>) -> Result<Mat<f64>, String> {
    let lu = a.partial_piv_lu();
    let u = lu.U();
    if (0..u.nrows()).any(|i| u[(i, i)] == 0.0) {
        return Err("the matrix is singular (not invertible)".into());
    }
    Ok(lu.inverse())
}

/// `(sign, log|det|)` from an LU factorization.
fn slogdet_of(a: &Mat<f64>) -> (f64, f64) {
    let n = a.nrows();
    if n == 0 {
        return (1.0, 0.0);
    }
    let lu = a.partial_piv_lu();
    let u = lu.U();
    let (mut sign, mut logabs) = (1.0, 0.0);
    for i in 0..n {
        let v = u[(i, i)];
        if v == 0.0 {
            return (0.0, f64::NEG_INFINITY);
        }
        sign *= v.signum();
        logabs += v.abs().ln();
    }
    // the permutation's parity: n minus its number of cycles
    let (fwd, _) = lu.P().arrays();
    let mut seen = vec![false; n];
    let mut cycles = 0;
    for s in 0..n {
        if !seen[s] {
            cycles += 1;
            let mut j = s;
            while !seen[j] {
                seen[j] = true;
                j = fwd[j];
            }
        }
    }
    if (n - cycles) % 2 == 1 {
        sign = -sign;
    }
    (sign, logabs)
}

fn scalar(v: f64) -> Mat<f64> {
    Mat::from_fn(1, 1, |_, _| v)
}

fn column(v: &[f64]) -> Mat<f64> {
    Mat::from_fn(v.len(), 1, |i, _| v[i])
}

/// Householder LQ of a `p×q` matrix with LAPACK's signs: `a = l · q`, `l` is
/// `p×k` lower trapezoidal, `q` `k×q` (or `q×q` with `complete`), `k = min(p, q)`.
fn householder_lq(a: &Mat<f64>, complete: bool) -> (Mat<f64>, Mat<f64>) {
    let (p, q) = (a.nrows(), a.ncols());
    let k = p.min(q);
    let (w, refl) = householder_reflect(a);
    let l = Mat::from_fn(p, k, |i, j| if j <= i { w[(i, j)] } else { 0.0 });
    let rows = if complete { q } else { k };
    let mut qm = Mat::from_fn(rows, q, |i, j| if i == j { 1.0 } else { 0.0 });
    for s in (0..k).rev() {
        let (v, tau) = &refl[s];
        if *tau == 0.0 {
            continue;
        }
        for i in 0..rows {
            let d: f64 = (s..q).map(|j| qm[(i, j)] * v[j - s]).sum();
            for j in s..q {
                qm[(i, j)] -= tau * d * v[j - s];
            }
        }
    }
    (l, qm)
}

/// The Householder reflections of an LQ of `a` (LAPACK's `dlarfg` convention: `v[0] = 1`,
/// `tau = (beta - alpha) / beta`): `w`'s lower trapezoid is `L`, `refl[s]` is row `s`'s
/// reflector `(v, tau)`.
#[allow(clippy::type_complexity)]
fn householder_reflect(a: &Mat<f64>) -> (Mat<f64>, Vec<(Vec<f64>, f64)>) {
    let (p, q) = (a.nrows(), a.ncols());
    let k = p.min(q);
    let mut w = a.clone();
    let mut refl: Vec<(Vec<f64>, f64)> = Vec::with_capacity(k);
    for s in 0..k {
        let alpha = w[(s, s)];
        let xnorm = (s + 1..q).map(|j| w[(s, j)] * w[(s, j)]).sum::<f64>().sqrt();
        let mut v = vec![0.0; q - s];
        v[0] = 1.0;
        if xnorm == 0.0 {
            refl.push((v, 0.0));
            continue;
        }
        let beta = -alpha.signum() * alpha.hypot(xnorm);
        let beta = if alpha == 0.0 { -alpha.hypot(xnorm) } else { beta };
        let tau = (beta - alpha) / beta;
        for j in s + 1..q {
            v[j - s] = w[(s, j)] / (alpha - beta);
        }
        w[(s, s)] = beta;
        for j in s + 1..q {
            w[(s, j)] = 0.0;
        }
        for i in s + 1..p {
            let d: f64 = (s..q).map(|j| w[(i, j)] * v[j - s]).sum();
            for j in s..q {
                w[(i, j)] -= tau * d * v[j - s];
            }
        }
        refl.push((v, tau));
    }
    (w, refl)
}

/// Flips each row of `u` so that its largest-magnitude entry (first on ties) is positive.
fn fix_row_signs(u: &mut Mat<f64>) {
    for i in 0..u.nrows() {
        let mut best = 0;
        for j in 1..u.ncols() {
            if u[(i, j)].abs() > u[(i, best)].abs() {
                best = j;
            }
        }
        if u.ncols() > 0 && u[(i, best)] < 0.0 {
            for j in 0..u.ncols() {
                u[(i, j)] = -u[(i, j)];
            }
        }
    }
}

/// Symmetric eigendecomposition of the lower triangle: (rows = eigenvectors, ascending values).
fn syevd_of(a: &Mat<f64>) -> Result<(Mat<f64>, Vec<f64>), String> {
    let sym = copy_ltu(a);
    let e = sym.self_adjoint_eigen(Side::Lower).map_err(|_| "the eigendecomposition did not converge".to_string())?;
    let n = a.nrows();
    let vals: Vec<f64> = (0..n).map(|i| e.S().column_vector()[i]).collect();
    let mut u = tr(e.U());
    fix_row_signs(&mut u);
    Ok((u, vals))
}

// ---- forward kernels ----

/// `_linalg_potrf`: the lower Cholesky factor.
pub(super) fn potrf(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    Ok(vec![cholesky(&m[0])?])
}

/// `_linalg_potri`: `(L·Lᵀ)⁻¹` from the lower factor `L`.
pub(super) fn potri(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let li = tri_inv(&tri(&m[0], true), true);
    Ok(vec![mm(li.transpose(), li.as_ref())])
}

/// `_linalg_trsm`: `alpha · op(T)⁻¹ · B` (or `B · op(T)⁻¹`); params transpose, rightside, lower, alpha.
pub(super) fn trsm(m: &[Mat<f64>], p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    Ok(vec![trsm_of(&m[0], m[1].clone(), flag(p, 0), flag(p, 1), flag(p, 2), p[3])])
}

fn trsm_of(a: &Mat<f64>, b: Mat<f64>, transpose: bool, right: bool, lower: bool, alpha: f64) -> Mat<f64> {
    let t = tri(a, lower);
    let (op, op_lower) = if transpose { (tr(t.as_ref()), !lower) } else { (t, lower) };
    let x = if right {
        tr(tri_solve(&tr(op.as_ref()), !op_lower, tr(b.as_ref())).as_ref())
    } else {
        tri_solve(&op, op_lower, b)
    };
    scale(x, alpha)
}

/// `_linalg_inverse`.
pub(super) fn inv(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    Ok(vec![inverse(&m[0])?])
}

/// `_linalg_det`.
pub(super) fn det(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let (s, l) = slogdet_of(&m[0]);
    Ok(vec![scalar(if s == 0.0 { 0.0 } else { s * l.exp() })])
}

/// `_linalg_slogdet`: (sign, log|det|).
pub(super) fn slogdet(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let (s, l) = slogdet_of(&m[0]);
    Ok(vec![scalar(s), scalar(l)])
}

/// `_npi_solve`: `A⁻¹ · B` (B an `n×k` matrix or an `n×1` vector item).
pub(super) fn solve(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let lu = m[0].partial_piv_lu();
    let u = lu.U();
    if let Some(i) = (0..u.nrows()).find(|&i| u[(i, i)] == 0.0) {
        return Err(format!("the matrix is singular (U({i}, {i}) is exactly zero)"));
    }
    let mut x = m[1].clone();
    lu.solve_in_place(x.as_mut());
    Ok(vec![x])
}

/// `_npi_svd` of an `m×n` matrix with `m ≤ n`: `(Uᵀ… as MXNet: ut (m×m), s (m), v (m×n))`, `a = ut·diag(s)·v`.
pub(super) fn svd(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let a = &m[0];
    let k = a.nrows().min(a.ncols());
    let s = a.thin_svd().map_err(|_| "the SVD did not converge".to_string())?;
    let vals: Vec<f64> = (0..k).map(|i| s.S().column_vector()[i]).collect();
    Ok(vec![s.U().to_owned(), column(&vals), tr(s.V())])
}

/// Singular values of any matrix (descending).
pub(super) fn svdvals(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let k = m[0].nrows().min(m[0].ncols());
    let s = m[0].thin_svd().map_err(|_| "the SVD did not converge".to_string())?;
    Ok(vec![column(&(0..k).map(|i| s.S().column_vector()[i]).collect::<Vec<_>>())])
}

/// `_npi_pinv`: `V·diag(1/s)·Uᵀ` keeping `s > rcond·max(s)`; rcond from input 1 or param 0.
pub(super) fn pinv(m: &[Mat<f64>], p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let a = &m[0];
    let rcond = if m.len() > 1 { m[1][(0, 0)] } else { p[0] };
    let k = a.nrows().min(a.ncols());
    let s = a.thin_svd().map_err(|_| "the SVD did not converge".to_string())?;
    let sv: Vec<f64> = (0..k).map(|i| s.S().column_vector()[i]).collect();
    let cut = rcond * sv.iter().cloned().fold(0.0, f64::max);
    let (u, v) = (s.U(), s.V());
    let vs = Mat::from_fn(v.nrows(), k, |i, j| if sv[j] > cut { v[(i, j)] / sv[j] } else { 0.0 });
    Ok(vec![mm(vs.as_ref(), u.transpose())])
}

/// `_linalg_syevd`: (U with eigenvectors as rows, ascending eigenvalues), lower triangle read.
pub(super) fn syevd(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let (u, vals) = syevd_of(&m[0])?;
    Ok(vec![u, column(&vals)])
}

/// `_npi_eigh`: (ascending eigenvalues, eigenvectors as columns); param 0: read the upper triangle.
pub(super) fn eigh(m: &[Mat<f64>], p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let a = if flag(p, 0) { tr(m[0].as_ref()) } else { m[0].clone() };
    let (u, vals) = syevd_of(&a)?;
    Ok(vec![column(&vals), tr(u.as_ref())])
}

/// `_npi_eig`: real eigenvalues and unit eigenvectors (columns); complex eigenvalues are an error.
pub(super) fn eig(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let a = &m[0];
    let n = a.nrows();
    let e = a.eigen().map_err(|_| "the eigendecomposition did not converge".to_string())?;
    let scale_ = (0..n).map(|i| e.S().column_vector()[i].re.abs()).fold(1.0, f64::max);
    let mut vals = Vec::with_capacity(n);
    for i in 0..n {
        let w = e.S().column_vector()[i];
        if w.im.abs() > 1e-12 * scale_ {
            return Err("complex eigenvalues are not supported (ferromx arrays are real)".into());
        }
        vals.push(w.re);
    }
    let u = e.U();
    let mut vecs = Mat::from_fn(n, n, |i, j| u[(i, j)].re);
    for j in 0..n {
        let nrm = (0..n).map(|i| vecs[(i, j)] * vecs[(i, j)]).sum::<f64>().sqrt();
        if nrm > 0.0 {
            for i in 0..n {
                vecs[(i, j)] /= nrm;
            }
        }
    }
    Ok(vec![column(&vals), vecs])
}

/// `_linalg_gelqf` of `m×n` (`m ≤ n`): (Q `m×n` with orthonormal rows, L `m×m` lower), `A = L·Q`.
pub(super) fn gelqf(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let (l, q) = householder_lq(&m[0], false);
    Ok(vec![q, l])
}

/// `_npi_qr`: param 0 the mode (0 reduced, 1 complete, 2 r, 3 raw); outputs (Q, R), (R) or,
/// raw, NumPy's `(h, tau)`: `h` (`n×m`) is LAPACK's `geqrf` result transposed (R on and
/// above the diagonal of `hᵀ`, the reflectors' tails below it), `tau` the reflectors' scales.
pub(super) fn qr(m: &[Mat<f64>], p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let a = &m[0];
    let mode = p[0] as i64;
    if mode == 3 {
        let (mut h, refl) = householder_reflect(&tr(a.as_ref()));
        for (s, (v, _)) in refl.iter().enumerate() {
            for (j, vj) in v.iter().enumerate().skip(1) {
                h[(s, s + j)] = *vj;
            }
        }
        let taus: Vec<f64> = refl.iter().map(|(_, t)| *t).collect();
        return Ok(vec![h, column(&taus)]);
    }
    let (l, q) = householder_lq(&tr(a.as_ref()), mode == 1);
    let r = tr(l.as_ref());
    let r = if mode == 1 {
        Mat::from_fn(a.nrows(), a.ncols(), |i, j| if i < r.nrows() { r[(i, j)] } else { 0.0 })
    } else {
        r
    };
    if mode == 2 {
        return Ok(vec![r]);
    }
    Ok(vec![tr(q.as_ref()), r])
}

// ---- backward kernels ----

/// `_backward_linalg_potrf` (inputs dL, L): `dA = ½·L⁻ᵀ·copyLTU(Lᵀ·dL)·L⁻¹`.
pub(super) fn potrf_bwd(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let (dl, l) = (&m[0], tri(&m[1], true));
    let li = tri_inv(&l, true);
    let inner = copy_ltu(&mm(l.transpose(), dl.as_ref()));
    Ok(vec![scale(mm(mm(li.transpose(), inner.as_ref()).as_ref(), li.as_ref()), 0.5)])
}

/// `_backward_linalg_potri` (inputs dY, L, Y): `dL = -tril(Y·(dY + dYᵀ)·L⁻ᵀ)`.
pub(super) fn potri_bwd(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let (dy, l, y) = (&m[0], tri(&m[1], true), &m[2]);
    let sym = Mat::from_fn(dy.nrows(), dy.ncols(), |i, j| dy[(i, j)] + dy[(j, i)]);
    let li = tri_inv(&l, true);
    let g = mm(mm(y.as_ref(), sym.as_ref()).as_ref(), li.transpose());
    Ok(vec![scale(tri(&g, true), -1.0)])
}

fn op_t(x: &Mat<f64>, t: bool) -> Mat<f64> {
    if t {
        tr(x.as_ref())
    } else {
        x.clone()
    }
}

/// `_backward_linalg_trsm` (inputs dC, A, B, C) → (dA, dB).
pub(super) fn trsm_bwd(m: &[Mat<f64>], p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let (dc, a, c) = (&m[0], &m[1], &m[3]);
    let (t, right, lower, alpha) = (flag(p, 0), flag(p, 1), flag(p, 2), p[3]);
    let db = trsm_of(a, dc.clone(), !t, right, lower, alpha);
    let da = if right == t {
        mm(op_t(&db, t).as_ref(), op_t(c, !t).as_ref())
    } else {
        mm(op_t(c, !t).as_ref(), op_t(&db, t).as_ref())
    };
    Ok(vec![tri(&scale(da, -1.0 / alpha), lower), db])
}

/// `_backward_linalg_inverse` (inputs dY, Y): `-Yᵀ·dY·Yᵀ`.
pub(super) fn inv_bwd(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let (dy, y) = (&m[0], &m[1]);
    Ok(vec![scale(mm(mm(y.transpose(), dy.as_ref()).as_ref(), y.transpose()), -1.0)])
}

/// `_backward_linalg_det` (inputs g, A, det): `g·det·A⁻ᵀ` (zero for a singular A, as MXNet).
pub(super) fn det_bwd(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let (g, a, d) = (m[0][(0, 0)], &m[1], m[2][(0, 0)]);
    if d == 0.0 {
        return Ok(vec![Mat::zeros(a.nrows(), a.ncols())]);
    }
    Ok(vec![scale(tr(inverse(a)?.as_ref()), g * d)])
}

/// `_backward_linalg_slogdet` (inputs g_logabsdet, A): `g·A⁻ᵀ` (zero for a singular A).
pub(super) fn slogdet_bwd(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let (g, a) = (m[0][(0, 0)], &m[1]);
    match inverse(a) {
        Ok(i) => Ok(vec![scale(tr(i.as_ref()), g)]),
        Err(_) => Ok(vec![Mat::zeros(a.nrows(), a.ncols())]),
    }
}

/// `_backward_npi_solve` (inputs dX, A, B, X) → (dA, dB): `dB = A⁻ᵀ·dX`, `dA = -dB·Xᵀ`.
pub(super) fn solve_bwd(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let (dx, a, x) = (&m[0], &m[1], &m[3]);
    let lu = a.partial_piv_lu();
    let mut db = dx.clone();
    lu.solve_transpose_in_place(db.as_mut());
    let da = scale(mm(db.as_ref(), x.transpose()), -1.0);
    Ok(vec![da, db])
}

/// `_backward_npi_svd` (inputs dUt, dS, dV, Ut, S, V): the SVD's adjoint for `m ≤ n`.
pub(super) fn svd_bwd(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let (du, ds, dvt, u, s, vt) = (&m[0], &m[1], &m[2], &m[3], &m[4], &m[5]);
    let k = s.nrows();
    let sv: Vec<f64> = (0..k).map(|i| s[(i, 0)]).collect();
    let f = |i: usize, j: usize| {
        let d = sv[j] * sv[j] - sv[i] * sv[i];
        if i == j || d == 0.0 {
            0.0
        } else {
            1.0 / d
        }
    };
    let utdu = mm(u.transpose(), du.as_ref());
    let vtdv = mm(vt.as_ref(), dvt.transpose()); // Vᵀ·dV with V = vtᵀ, dV = dvtᵀ
    let inner = Mat::from_fn(k, k, |i, j| {
        let j_ = f(i, j) * (utdu[(i, j)] - utdu[(j, i)]);
        let k_ = f(i, j) * (vtdv[(i, j)] - vtdv[(j, i)]);
        j_ * sv[j] + sv[i] * k_ + if i == j { ds[(i, 0)] } else { 0.0 }
    });
    let da = mm(mm(u.as_ref(), inner.as_ref()).as_ref(), vt.as_ref());
    // U·S⁻¹·dVᵀ·(I - V·Vᵀ) with dVᵀ = dvt, V·Vᵀ = vtᵀ·vt
    let sinv_dvt = Mat::from_fn(k, dvt.ncols(), |i, j| if sv[i] != 0.0 { dvt[(i, j)] / sv[i] } else { 0.0 });
    let proj = mm(sinv_dvt.as_ref(), vt.transpose());
    let rest = axpy(&sinv_dvt, -1.0, &mm(proj.as_ref(), vt.as_ref()));
    Ok(vec![axpy(&da, 1.0, &mm(u.as_ref(), rest.as_ref()))])
}

/// The symmetric eigendecomposition's adjoint: `Uᵀ·Y·U` (rows of `u` are eigenvectors).
fn syevd_adjoint(du: &Mat<f64>, dl: &Mat<f64>, u: &Mat<f64>, l: &Mat<f64>) -> Mat<f64> {
    let n = u.nrows();
    let x = mm(du.as_ref(), u.transpose());
    let y = Mat::from_fn(n, n, |i, j| {
        if i == j {
            return dl[(i, 0)];
        }
        let (a, b) = (i.max(j), i.min(j));
        let denom = 2.0 * (l[(a, 0)] - l[(b, 0)]).max(1e-100);
        (x[(a, b)] - x[(b, a)]) / denom
    });
    mm(mm(u.transpose(), y.as_ref()).as_ref(), u.as_ref())
}

/// `_backward_linalg_syevd` (inputs dU, dL, U, L).
pub(super) fn syevd_bwd(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    Ok(vec![syevd_adjoint(&m[0], &m[1], &m[2], &m[3])])
}

/// `_backward_npi_eigh` (inputs dw, dV, w, V; eigenvectors as columns).
pub(super) fn eigh_bwd(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    Ok(vec![syevd_adjoint(&tr(m[1].as_ref()), &m[0], &tr(m[3].as_ref()), &m[2])])
}

/// `_backward_linalg_gelqf` (inputs dQ, dL, Q, L): `L⁻ᵀ·(dQ + copyLTU(M)·Q)`, `M = Lᵀ·dL - dQ·Qᵀ`.
pub(super) fn gelqf_bwd(m: &[Mat<f64>], _p: &[f64]) -> Result<Vec<Mat<f64>>, String> {
    let (dq, dl, q, l) = (&m[0], &m[1], &m[2], tri(&m[3], true));
    let mmat = axpy(&mm(l.transpose(), dl.as_ref()), -1.0, &mm(dq.as_ref(), q.transpose()));
    let rhs = axpy(dq, 1.0, &mm(copy_ltu(&mmat).as_ref(), q.as_ref()));
    Ok(vec![tri_solve(&tr(l.as_ref()), false, rhs)])
}
