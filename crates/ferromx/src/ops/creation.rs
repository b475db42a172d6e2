//! Creation operators: zeros, ones, full, arange, linspace, eye and the `_like` forms.

use crate::dtype::{DType, Elem};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::ops::fill_new;
use crate::shape::Shape;
use crate::storage::push_kernel;
use crate::{with_dtype, with_float_dtype, Context};

/// Zeros.
pub fn zeros(shape: impl Into<Shape>, dtype: DType, ctx: Context) -> Result<NDArray> {
    fill_new(shape.into(), 0.0, dtype, ctx)
}
/// Ones.
pub fn ones(shape: impl Into<Shape>, dtype: DType, ctx: Context) -> Result<NDArray> {
    fill_new(shape.into(), 1.0, dtype, ctx)
}
/// Filled with `value`.
pub fn full(shape: impl Into<Shape>, value: f64, dtype: DType, ctx: Context) -> Result<NDArray> {
    fill_new(shape.into(), value, dtype, ctx)
}
/// Zeros like `x`.
pub fn zeros_like(x: &NDArray) -> Result<NDArray> {
    fill_new(x.shape().clone(), 0.0, x.dtype(), x.ctx())
}
/// Ones like `x`.
pub fn ones_like(x: &NDArray) -> Result<NDArray> {
    fill_new(x.shape().clone(), 1.0, x.dtype(), x.ctx())
}
/// `value` like `x` (MXNet lacks `full_like`; NumPy has it).
pub fn full_like(x: &NDArray, value: f64) -> Result<NDArray> {
    fill_new(x.shape().clone(), value, x.dtype(), x.ctx())
}

/// `arange(start, stop, step)` with each value repeated `repeat` times (MXNet semantics).
pub fn arange(start: f64, stop: Option<f64>, step: f64, repeat: usize, dtype: DType, ctx: Context) -> Result<NDArray> {
    let (start, stop) = match stop {
        Some(s) => (start, s),
        None => (0.0, start),
    };
    if !(start.is_finite() && stop.is_finite() && step.is_finite()) {
        return Err(Error::value(
            "arange",
            format!("start, stop and step must be finite, got {start}, {stop}, {step}"),
        ));
    }
    if step == 0.0 {
        return Err(Error::value("arange", "step must not be zero"));
    }
    if repeat == 0 {
        return Err(Error::value("arange", "repeat must be positive"));
    }
    let n = ((stop - start) / step).ceil().max(0.0) as usize;
    let out = NDArray::empty(Shape::new(&[n.saturating_mul(repeat)]), dtype, ctx)?;
    if n > 0 {
        push_kernel("_arange", vec![], vec![out.view()], move |k| {
            // Float results are computed in the output dtype (`start + i*step`),
            // as MXNet does, so float32 `arange(0, 1, 0.1)` ends in 0.90000004.
            with_float_dtype!(
                dtype,
                T,
                {
                    let (s0, st) = (T::from_f64(start), T::from_f64(step));
                    for (i, o) in k.output::<T>(0).iter_mut().enumerate() {
                        *o = s0 + T::from_f64((i / repeat) as f64) * st;
                    }
                },
                with_dtype!(dtype, T, {
                    for (i, o) in k.output::<T>(0).iter_mut().enumerate() {
                        *o = T::from_f64(start + (i / repeat) as f64 * step);
                    }
                })
            );
            Ok(())
        });
    }
    Ok(out)
}

/// `num` evenly spaced values over `[start, stop]` (or `[start, stop)` without endpoint).
pub fn linspace(start: f64, stop: f64, num: usize, endpoint: bool, dtype: DType, ctx: Context) -> Result<NDArray> {
    let out = NDArray::empty(Shape::new(&[num]), dtype, ctx)?;
    if num > 0 {
        let div = if endpoint { (num as f64 - 1.0).max(1.0) } else { num as f64 };
        let step = (stop - start) / div;
        push_kernel("_linspace", vec![], vec![out.view()], move |k| {
            with_dtype!(dtype, T, {
                let o = k.output::<T>(0);
                for (i, v) in o.iter_mut().enumerate() {
                    *v = T::from_f64(start + i as f64 * step);
                }
                if endpoint && num > 1 {
                    o[num - 1] = T::from_f64(stop);
                }
            });
            Ok(())
        });
    }
    Ok(out)
}

/// Identity-like matrix with ones on diagonal `k`.
pub fn eye(n: usize, m: Option<usize>, k: i64, dtype: DType, ctx: Context) -> Result<NDArray> {
    let m = m.unwrap_or(n);
    let out = NDArray::empty(Shape::new(&[n, m]), dtype, ctx)?;
    if n * m > 0 {
        push_kernel("_eye", vec![], vec![out.view()], move |kk| {
            with_dtype!(dtype, T, {
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
        });
    }
    Ok(out)
}
