//! Creation kernels over [`OpCall`]s (no inputs; the output's shape and dtype
//! are the views').

use crate::dtype::Elem;
use crate::opdef::OpCall;
use crate::storage::Kernel;
use crate::{with_dtype, with_float_dtype};

type KResult = std::result::Result<(), crate::engine::OpFailure>;

/// The kernel of the fill operators: output 0 everywhere `nums[0]` (the fill value).
pub(super) fn fill_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let value = c.nums.first().copied().unwrap_or(0.0);
    with_dtype!(k.out_dtype(0), T, {
        let v = T::from_f64(value);
        crate::ops::par::chunked(k.output::<T>(0), 1 << 18, |_, c| c.fill(v));
    });
    Ok(())
}

/// The kernel of `_arange`: nums `[start, step]`, ints `[repeat]`.
pub(super) fn arange_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (start, step, repeat) = (c.nums[0], c.nums[1], c.us(0).max(1));
    // Float results are computed in the output dtype (`start + i*step`), as
    // MXNet does, so float32 `arange(0, 1, 0.1)` ends in 0.90000004.
    with_float_dtype!(
        k.out_dtype(0),
        T,
        {
            let (s0, st) = (T::from_f64(start), T::from_f64(step));
            for (i, o) in k.output::<T>(0).iter_mut().enumerate() {
                *o = s0 + T::from_f64((i / repeat) as f64) * st;
            }
        },
        with_dtype!(k.out_dtype(0), T, {
            for (i, o) in k.output::<T>(0).iter_mut().enumerate() {
                *o = T::from_f64(start + (i / repeat) as f64 * step);
            }
        })
    );
    Ok(())
}

/// The kernel of `_linspace`: nums `[start, stop, step]`, ints `[endpoint]`.
pub(super) fn linspace_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (start, stop, step, endpoint) = (c.nums[0], c.nums[1], c.nums[2], c.ints[0] != 0);
    with_dtype!(k.out_dtype(0), T, {
        let o = k.output::<T>(0);
        let num = o.len();
        for (i, v) in o.iter_mut().enumerate() {
            *v = T::from_f64(start + i as f64 * step);
        }
        if endpoint && num > 1 {
            o[num - 1] = T::from_f64(stop);
        }
    });
    Ok(())
}

/// The kernel of `_eye`: ints `[k]` (the diagonal); the shape is the output's.
pub(super) fn eye_kernel(c: &OpCall, kk: &Kernel) -> KResult {
    let (n, m, k) = (kk.out_shape(0).dims()[0], kk.out_shape(0).dims()[1], c.ints[0]);
    with_dtype!(kk.out_dtype(0), T, {
        let o = kk.output::<T>(0);
        o.fill(T::from_f64(0.0));
        for i in 0..n {
            let j = i as i64 + k;
            if j >= 0 && (j as usize) < m {
                o[i * m + j as usize] = T::from_f64(1.0);
            }
        }
    });
    Ok(())
}
