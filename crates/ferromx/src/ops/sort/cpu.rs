//! The ordering kernel over [`OpCall`]s (`sort`, `argsort`, `topk`).
//!
//! Layout in [`OpCall::ints`]: `[outer, n, inner, k, ascending, values, indices,
//! mask, perm]`: the sorted axis is the middle of `(outer, n, inner)`, `k` the
//! positions kept per row; the last four are the output slots of the values,
//! the indices (in their output's dtype), the mask (input shape) and the int64
//! positions kept for the gradient (-1: not written).

use crate::dtype::{DType, Elem};
use crate::engine::OpFailure;
use crate::opdef::OpCall;
use crate::storage::Kernel;
use crate::with_dtype;
use rayon::prelude::*;
use std::cmp::Ordering;

/// NumPy's order: NaN above everything, NaNs equal to each other.
#[inline]
fn nan_last_cmp<T: Elem>(a: T, b: T) -> Ordering {
    match a.partial_cmp(&b) {
        Some(o) => o,
        None => {
            let a_nan = a.partial_cmp(&a).is_none();
            let b_nan = b.partial_cmp(&b).is_none();
            a_nan.cmp(&b_nan)
        }
    }
}

/// The first `k` positions (along a strided row) in sorted order, into `out`.
#[allow(clippy::too_many_arguments)]
fn row_topk<T: Elem>(
    xs: &[T],
    base: usize,
    n: usize,
    inner: usize,
    k: usize,
    asc: bool,
    buf: &mut Vec<usize>,
    out: &mut [usize],
) {
    buf.clear();
    buf.extend(0..n);
    let key = |j: usize| xs[base + j * inner];
    // Ties broken by position: a total order, so the unstable sorts below
    // give exactly the stable result.
    let cmp = |a: &usize, b: &usize| {
        let o = nan_last_cmp(key(*a), key(*b));
        let o = if asc { o } else { o.reverse() };
        o.then(a.cmp(b))
    };
    if k == 0 {
        return;
    }
    if k < n {
        buf.select_nth_unstable_by(k - 1, cmp);
        buf[..k].sort_unstable_by(cmp);
    } else {
        buf.sort_unstable_by(cmp);
    }
    out.copy_from_slice(&buf[..k]);
}

/// Sorts each row and writes the requested outputs.
pub(super) fn order_kernel(c: &OpCall, kk: &Kernel) -> std::result::Result<(), OpFailure> {
    let (outer, n, inner, k, asc) = (c.us(0), c.us(1), c.us(2), c.us(3), c.ints[4] != 0);
    let slot: [usize; 4] = std::array::from_fn(|i| if c.ints[5 + i] < 0 { usize::MAX } else { c.ints[5 + i] as usize });
    let dt = kk.in_dtype(0);
    let idt = if slot[1] != usize::MAX { kk.out_dtype(slot[1]) } else { DType::I64 };
    let rows = outer * inner;
    let mut pos = vec![0usize; rows * k];
    with_dtype!(dt, T, {
        let xs = kk.input::<T>(0);
        let row = |r: usize, buf: &mut Vec<usize>, out: &mut [usize]| {
            let (ro, ri) = (r / inner, r % inner);
            row_topk(xs, ro * n * inner + ri, n, inner, k, asc, buf, out);
        };
        if k > 0 {
            if rows > 1 && rows * n >= 1 << 15 {
                pos.par_chunks_mut(k).enumerate().for_each_init(Vec::new, |buf, (r, out)| row(r, buf, out));
            } else {
                let mut buf = Vec::with_capacity(n);
                for (r, out) in pos.chunks_mut(k).enumerate() {
                    row(r, &mut buf, out);
                }
            }
        }
        // (row r, rank j) -> output offset in the k-wide layout, and source offset.
        let kat = |r: usize, j: usize| ((r / inner) * k + j) * inner + r % inner;
        let sat = |r: usize, j: usize| ((r / inner) * n + pos[r * k + j]) * inner + r % inner;
        if slot[0] != usize::MAX {
            let v = kk.output::<T>(slot[0]);
            for r in 0..rows {
                for j in 0..k {
                    v[kat(r, j)] = xs[sat(r, j)];
                }
            }
        }
        if slot[2] != usize::MAX {
            let m = kk.output::<T>(slot[2]);
            m.fill(T::from_f64(0.0));
            for r in 0..rows {
                for j in 0..k {
                    m[sat(r, j)] = T::from_f64(1.0);
                }
            }
        }
    });
    let kat = |r: usize, j: usize| ((r / inner) * k + j) * inner + r % inner;
    if slot[1] != usize::MAX {
        with_dtype!(idt, I, {
            let v = kk.output::<I>(slot[1]);
            for r in 0..rows {
                for j in 0..k {
                    v[kat(r, j)] = I::from_i64(pos[r * k + j] as i64);
                }
            }
        });
    }
    if slot[3] != usize::MAX {
        let v = kk.output::<i64>(slot[3]);
        for r in 0..rows {
            for j in 0..k {
                v[kat(r, j)] = pos[r * k + j] as i64;
            }
        }
    }
    Ok(())
}
