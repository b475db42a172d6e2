//! Helpers shared by the operator tests: array construction, approximate
//! comparison and a finite-difference gradient check.
#![allow(dead_code)]

use ferromx::autograd::{self, GradReq};
use ferromx::ops::{self, ReduceOp};
use ferromx::{Context, NDArray, Result};

/// An f32 array on the default context.
pub fn arr(data: &[f32], shape: &[usize]) -> NDArray {
    NDArray::from_vec(data.to_vec(), shape, Context::default()).unwrap()
}

/// An f64 array on the default context.
pub fn arr64(data: &[f64], shape: &[usize]) -> NDArray {
    NDArray::from_vec(data.to_vec(), shape, Context::default()).unwrap()
}

/// 0, 1, 2, ... as f32 with the given shape.
pub fn iota(shape: &[usize]) -> NDArray {
    let n: usize = shape.iter().product();
    arr(&(0..n).map(|v| v as f32).collect::<Vec<_>>(), shape)
}

/// Contents as f32 (blocks).
pub fn vals(x: &NDArray) -> Vec<f32> {
    x.to_vec::<f32>().unwrap()
}

/// Contents as f64 (blocks).
pub fn vals64(x: &NDArray) -> Vec<f64> {
    x.to_vec::<f64>().unwrap()
}

/// Asserts two sequences agree to `tol` (relative to 1 + |expected|).
#[track_caller]
pub fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "lengths differ: got {got:?}, want {want:?}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "element {i}: got {g}, want {w} (got {got:?}, want {want:?})");
    }
}

/// f32 convenience wrapper of [`assert_close`].
#[track_caller]
pub fn assert_close32(got: &[f32], want: &[f32], tol: f64) {
    let g: Vec<f64> = got.iter().map(|&v| v as f64).collect();
    let w: Vec<f64> = want.iter().map(|&v| v as f64).collect();
    assert_close(&g, &w, tol);
}

/// Fixed, uneven weights so every output element matters differently.
fn weights(n: usize) -> Vec<f64> {
    (0..n).map(|i| 0.5 + ((i * 7 + 3) % 11) as f64 * 0.25).collect()
}

fn loss(y: &NDArray) -> f64 {
    vals64(y).iter().zip(weights(y.size())).map(|(a, w)| a * w).sum()
}

/// Compares autograd gradients of `L = Σ w ⊙ f(inputs)` (fixed uneven weights
/// `w`) with central finite differences, in float64, for every input.
#[track_caller]
pub fn check_grad(inputs: &[(Vec<f64>, Vec<usize>)], f: impl Fn(&[NDArray]) -> Result<NDArray>, tol: f64) {
    let xs: Vec<NDArray> = inputs.iter().map(|(d, s)| arr64(d, s)).collect();
    for x in &xs {
        x.attach_grad(GradReq::Write).unwrap();
    }
    let prev = autograd::set_recording(true);
    let y = f(&xs).unwrap();
    let w = NDArray::from_vec(weights(y.size()), y.shape().clone(), Context::default()).unwrap();
    let l = ops::reduce(ReduceOp::Sum, &ops::mul(&y, &w).unwrap(), None, false, false).unwrap();
    autograd::set_recording(prev);
    l.backward(None, false).unwrap();
    let eps = 1e-6;
    for (i, x) in xs.iter().enumerate() {
        let analytic = vals64(&x.grad().expect("grad attached"));
        let mut numeric = Vec::with_capacity(analytic.len());
        for j in 0..inputs[i].0.len() {
            let eval = |delta: f64| {
                let args: Vec<NDArray> = inputs
                    .iter()
                    .enumerate()
                    .map(|(k, (d, s))| {
                        let mut d = d.clone();
                        if k == i {
                            d[j] += delta;
                        }
                        arr64(&d, s)
                    })
                    .collect();
                loss(&f(&args).unwrap())
            };
            numeric.push((eval(eps) - eval(-eps)) / (2.0 * eps));
        }
        assert_close(&analytic, &numeric, tol);
    }
}
