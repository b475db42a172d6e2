//! The matrix-product kernel over [`OpCall`]s (`dot`, `batch_dot`, `linalg_gemm2`).
//!
//! Layout in [`OpCall::ints`]: `[m, n, k, batch, transpose_a, transpose_b]`
//! (`op(a)` is m×k, `op(b)` k×n, `batch` products of contiguous matrices);
//! `nums` `[alpha]` scales the product (`linalg_gemm2`; absent: 1).

use crate::dtype::{DType, Elem};
use crate::engine::OpFailure;
use crate::opdef::OpCall;
use crate::storage::{matmul, Kernel};
use crate::with_dtype;

/// `out[b] = alpha · op(a[b]) · op(b[b])` for each batch entry.
pub(super) fn mm_kernel(c: &OpCall, kk: &Kernel) -> std::result::Result<(), OpFailure> {
    let (m, n, k, batch) = (c.us(0), c.us(1), c.us(2), c.us(3));
    let (ta, tb) = (c.ints[4] != 0, c.ints[5] != 0);
    let alpha = c.nums.first().copied().unwrap_or(1.0);
    macro_rules! native {
        ($t:ty) => {{
            let (x, y, o) = (kk.input::<$t>(0), kk.input::<$t>(1), kk.output::<$t>(0));
            for bi in 0..batch {
                let (xs, ys) = (&x[bi * m * k..(bi + 1) * m * k], &y[bi * k * n..(bi + 1) * k * n]);
                matmul::<$t>(m, n, k, &mut o[bi * m * n..(bi + 1) * m * n], xs, ta, ys, tb, false);
            }
            if alpha != 1.0 {
                let a = <$t>::from_f64(alpha);
                o.iter_mut().for_each(|v| *v *= a);
            }
        }};
    }
    let dt = kk.out_dtype(0);
    match dt {
        DType::F32 => native!(f32),
        DType::F64 => native!(f64),
        DType::F16 => native!(half::f16),
        _ => with_dtype!(dt, T, {
            let (x, y, o) = (kk.input::<T>(0), kk.input::<T>(1), kk.output::<T>(0));
            for bi in 0..batch {
                let (xs, ys) = (&x[bi * m * k..(bi + 1) * m * k], &y[bi * k * n..(bi + 1) * k * n]);
                naive_mm(m, n, k, &mut o[bi * m * n..(bi + 1) * m * n], xs, ta, ys, tb, alpha);
            }
        }),
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn naive_mm<T: Elem>(m: usize, n: usize, k: usize, dst: &mut [T], a: &[T], ta: bool, b: &[T], tb: bool, alpha: f64) {
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
            dst[i * n + j] = T::from_f64(acc[j] * alpha);
        }
    }
}
