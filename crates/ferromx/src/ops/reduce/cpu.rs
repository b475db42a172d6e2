//! Reduction kernels over [`OpCall`]s.
//!
//! Layouts in [`OpCall::ints`]:
//! - the reductions (`sum`, `mean`, ...): `[op, outer, reduced, inner]`, one
//!   contiguous block of axes brought to `(outer, reduced, inner)`; `op` is the
//!   [`ReduceOp`] code (a `mean` over several blocks sums each block and
//!   divides once);
//! - `argmax`/`argmin`: `[outer, reduced, inner]`;
//! - `norm`: `[ord, mask]`, `mask` bit `i` set when input axis `i` is reduced
//!   (any set of axes in one pass, accumulated in float64).

use super::ReduceOp;
use crate::dtype::Elem;
use crate::engine::OpFailure;
use crate::opdef::OpCall;
use crate::ops::binary::arith::Arith;
use crate::ops::par::chunked;
use crate::shape::Shape;
use crate::storage::Kernel;
use crate::storage::{dispatch, fanout};
use crate::with_dtype;
use parking_lot::Mutex;

type KResult = std::result::Result<(), OpFailure>;

impl ReduceOp {
    /// The code a call carries in `ints[0]`.
    pub(super) fn code(self) -> i64 {
        self as i64
    }
    fn from_code(c: i64) -> ReduceOp {
        use ReduceOp::*;
        [Sum, Mean, Prod, Max, Min, NanSum, NanProd].get(c.max(0) as usize).copied().unwrap_or(Sum)
    }
}

/// The kernel of the reductions: one contiguous block of axes.
pub(super) fn reduce_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let op = ReduceOp::from_code(c.ints[0]);
    let (outer, r, inner) = (c.us(1), c.us(2), c.us(3));
    let dt = k.in_dtype(0);
    if dt.is_int() {
        with_dtype!(dt, T, reduce_int::<T>(op, k.input::<T>(0), k.output::<T>(0), outer, r, inner));
    } else {
        with_dtype!(dt, T, reduce_float::<T>(op, k.input::<T>(0), k.output::<T>(0), outer, r, inner));
    }
    Ok(())
}

/// Reduces one contiguous slice.
fn reduce_slice<T: Arith>(op: ReduceOp, x: &[T]) -> f64 {
    match op {
        ReduceOp::Sum | ReduceOp::Mean => T::sum_slice(x),
        ReduceOp::NanSum => x.iter().map(|v| v.to_f64()).filter(|v| !v.is_nan()).sum(),
        ReduceOp::Prod => x.iter().map(|v| v.to_f64()).product(),
        ReduceOp::NanProd => x.iter().map(|v| v.to_f64()).filter(|v| !v.is_nan()).product(),
        ReduceOp::Max | ReduceOp::Min => x.iter().fold(identity(op), |a, v| combine(op, a, v.to_f64())),
    }
}

fn combine(op: ReduceOp, a: f64, v: f64) -> f64 {
    match op {
        ReduceOp::Sum | ReduceOp::Mean => a + v,
        ReduceOp::NanSum => {
            if v.is_nan() {
                a
            } else {
                a + v
            }
        }
        ReduceOp::Prod => a * v,
        ReduceOp::NanProd => {
            if v.is_nan() {
                a
            } else {
                a * v
            }
        }
        ReduceOp::Max => {
            if !a.is_nan() && (v > a || v.is_nan()) {
                v
            } else {
                a
            }
        }
        ReduceOp::Min => {
            if !a.is_nan() && (v < a || v.is_nan()) {
                v
            } else {
                a
            }
        }
    }
}

fn identity(op: ReduceOp) -> f64 {
    match op {
        ReduceOp::Sum | ReduceOp::Mean | ReduceOp::NanSum => 0.0,
        ReduceOp::Prod | ReduceOp::NanProd => 1.0,
        ReduceOp::Max => f64::NEG_INFINITY,
        ReduceOp::Min => f64::INFINITY,
    }
}

fn reduce_float<T: Arith>(op: ReduceOp, x: &[T], out: &mut [T], outer: usize, r: usize, inner: usize) {
    let scale = if op == ReduceOp::Mean { 1.0 / r as f64 } else { 1.0 };
    let fin = |v: f64| T::from_f64(v * scale);
    if inner == 1 {
        if outer == 1 && r >= 1 << 18 {
            // One reduction split into chunks that this worker and rayon helpers
            // share (`fanout`: no waiting for a parked pool thread); partial
            // results combine in chunk order, so the result is deterministic.
            let threads = rayon::current_num_threads().max(1);
            let chunk = r.div_ceil(threads * 2).max(1);
            let parts: Vec<parking_lot::Mutex<f64>> =
                (0..r.div_ceil(chunk)).map(|_| parking_lot::Mutex::new(identity(op))).collect();
            fanout(parts.len(), threads - 1, &|i| {
                let c = &x[i * chunk..((i + 1) * chunk).min(r)];
                *parts[i].lock() = reduce_slice(op, c);
            });
            let v = parts.into_iter().fold(identity(op), |a, p| combine(op, a, p.into_inner()));
            out[0] = fin(v);
        } else if outer * r >= 1 << 17 {
            // `chunked`, not a rayon loop: from an engine worker a rayon loop waits
            // for the pool, which a concurrent gemm keeps busy for a millisecond.
            chunked(out, ((1 << 15) / r.max(1)).max(1), move |s, c| {
                for (j, ov) in c.iter_mut().enumerate() {
                    *ov = fin(reduce_slice(op, &x[(s + j) * r..(s + j + 1) * r]));
                }
            });
        } else {
            for (o, ov) in out.iter_mut().enumerate() {
                *ov = fin(reduce_slice(op, &x[o * r..(o + 1) * r]));
            }
        }
        return;
    }
    // Output row `o`, columns `j0..j0 + orow.len()`: each column summed over
    // `k = 0..r` in order (the same order whatever the split, so results do
    // not depend on the thread count). Sum and mean get a loop of plain adds
    // the compiler vectorises; the other reductions call `combine`.
    let block = |o: usize, j0: usize, orow: &mut [T]| {
        let w = orow.len();
        let mut acc = vec![identity(op); w];
        for k in 0..r {
            let base = (o * r + k) * inner + j0;
            let xs = &x[base..base + w];
            if matches!(op, ReduceOp::Sum | ReduceOp::Mean) {
                for (a, v) in acc.iter_mut().zip(xs) {
                    *a += v.to_f64();
                }
            } else {
                for (a, v) in acc.iter_mut().zip(xs) {
                    *a = combine(op, *a, v.to_f64());
                }
            }
        }
        for (ov, a) in orow.iter_mut().zip(acc) {
            *ov = fin(a);
        }
    };
    if outer * r * inner >= 1 << 17 {
        // Column blocks of every output row in parallel: a reduction over a
        // leading axis (a bias gradient, outer = 1) splits too.
        // They are shared out by `fanout` (this worker starts at once), not by a
        // rayon loop, which would wait for a pool that a concurrent gemm keeps busy:
        // in an MLP's backward that made the bias gradient take as long as the gemm.
        let threads = rayon::current_num_threads().max(1);
        let cols = inner.div_ceil(threads * 4).clamp(64.min(inner), 4096);
        let per_row = inner.div_ceil(cols);
        let slots: Vec<Mutex<Option<&mut [T]>>> =
            out.chunks_mut(inner).flat_map(|row| row.chunks_mut(cols)).map(|c| Mutex::new(Some(c))).collect();
        fanout(slots.len(), threads - 1, &|i| {
            if let Some(c) = slots[i].lock().take() {
                dispatch(|| block(i / per_row, (i % per_row) * cols, c));
            }
        });
    } else {
        for (o, c) in out.chunks_mut(inner).enumerate() {
            block(o, 0, c);
        }
    }
}

/// Integer reductions accumulate in i64 (sum and prod wrap, like the
/// elementwise ops), so 64-bit values stay exact.
fn reduce_int<T: Elem>(op: ReduceOp, x: &[T], out: &mut [T], outer: usize, r: usize, inner: usize) {
    for o in 0..outer {
        for j in 0..inner {
            let it = (0..r).map(|k| x[(o * r + k) * inner + j].to_i64());
            let v: i64 = match op {
                ReduceOp::Sum | ReduceOp::NanSum | ReduceOp::Mean => it.fold(0i64, |a, v| a.wrapping_add(v)),
                ReduceOp::Prod | ReduceOp::NanProd => it.fold(1i64, |a, v| a.wrapping_mul(v)),
                ReduceOp::Max => it.max().unwrap_or(i64::MIN),
                ReduceOp::Min => it.min().unwrap_or(i64::MAX),
            };
            out[o * inner + j] =
                if op == ReduceOp::Mean && r > 0 { T::from_f64(v as f64 / r as f64) } else { T::from_i64(v) };
        }
    }
}

/// The kernel of `argmax` and `argmin` (`c.def` tells which).
pub(super) fn argmax_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let is_min = c.def.name == "argmin";
    let (outer, r, inner) = (c.us(0), c.us(1), c.us(2));
    with_dtype!(k.in_dtype(0), T, {
        let xs = k.input::<T>(0);
        with_dtype!(k.out_dtype(0), O, {
            let o = k.output::<O>(0);
            for a in 0..outer {
                for j in 0..inner {
                    let mut best = 0usize;
                    let mut bv = xs[a * r * inner + j].to_f64();
                    for i in 1..r {
                        let v = xs[(a * r + i) * inner + j].to_f64();
                        let better = if is_min { v < bv } else { v > bv };
                        if !bv.is_nan() && (better || v.is_nan()) {
                            best = i;
                            bv = v;
                        }
                    }
                    o[a * inner + j] = O::from_f64(best as f64);
                }
            }
        })
    });
    Ok(())
}

/// The kernel of `norm`: `|x|` (ord 1) or `x²` (ord 2, then a square root)
/// summed in float64 over the masked axes.
/// `sum |v|` (`ord` 1) or `sum v²` of a contiguous slice in float64, eight lanes at a time.
fn norm_slice<T: Elem>(x: &[T], ord: i64) -> f64 {
    let mut acc = [0f64; 8];
    let chunks = x.chunks_exact(8);
    let tail = chunks.remainder();
    if ord == 1 {
        for c in chunks {
            for (a, v) in acc.iter_mut().zip(c) {
                *a += v.to_f64().abs();
            }
        }
        acc.iter().sum::<f64>() + tail.iter().map(|v| v.to_f64().abs()).sum::<f64>()
    } else {
        for c in chunks {
            for (a, v) in acc.iter_mut().zip(c) {
                let v = v.to_f64();
                *a += v * v;
            }
        }
        acc.iter().sum::<f64>() + tail.iter().map(|v| v.to_f64() * v.to_f64()).sum::<f64>()
    }
}

/// A norm over every element: chunks shared by this worker and rayon helpers (`fanout`),
/// combined in chunk order (deterministic for a given thread count).
fn norm_all<T: Elem>(x: &[T], ord: i64) -> f64 {
    let threads = rayon::current_num_threads().max(1);
    let chunk = x.len().div_ceil(threads * 2).max(1);
    let parts: Vec<parking_lot::Mutex<f64>> =
        (0..x.len().div_ceil(chunk)).map(|_| parking_lot::Mutex::new(0.0)).collect();
    fanout(parts.len(), threads - 1, &|i| {
        *parts[i].lock() = norm_slice(&x[i * chunk..((i + 1) * chunk).min(x.len())], ord);
    });
    parts.into_iter().map(|p| p.into_inner()).sum()
}

pub(super) fn norm_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (ord, mask) = (c.ints[0], c.ints[1]);
    let ishape = k.in_shape(0).clone();
    let keep: Vec<usize> =
        ishape.dims().iter().enumerate().map(|(i, &d)| if mask >> i & 1 == 1 { 1 } else { d }).collect();
    let strides = Shape::new(&keep).broadcast_strides(&ishape);
    let mut acc = vec![0f64; keep.iter().product()];
    with_dtype!(k.in_dtype(0), T, {
        let x = k.input::<T>(0);
        if acc.len() == 1 && x.len() >= 1 << 16 {
            acc[0] = norm_all(x, ord);
        } else if !x.is_empty() {
            crate::shape::for_each_strided(&ishape, &strides, 0, x.len(), |xi, oi| {
                let v = x[xi].to_f64();
                acc[oi] += if ord == 1 { v.abs() } else { v * v };
            });
        }
        for (o, a) in k.output::<T>(0).iter_mut().zip(acc) {
            *o = T::from_f64(if ord == 1 { a } else { a.sqrt() });
        }
    });
    Ok(())
}
