//! Existing core operators checked against hand-computed values: broadcasting
//! binary ops, reductions, dot, reshape codes, take, softmax, FullyConnected,
//! autograd (vs finite differences), error propagation, sgd_update, seeding.
mod common;

use common::*;
use ferromx::autograd::{self, GradReq};
use ferromx::engine::ErrorKind;
use ferromx::ops::{self, optim, random, BinOp, IndexMode, ReduceOp, UnaryOp};
use ferromx::registry::{invoke, Attr, Attrs};
use ferromx::{DType, NDArray, Shape};
use std::sync::Mutex;

/// Engine errors are process-wide for `waitall` (it raises and clears every
/// pending failure), so tests that make ops fail or call `waitall` hold this.
static ENGINE_ERRORS: Mutex<()> = Mutex::new(());

#[test]
fn binary_broadcasting() {
    let a = arr(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let b = arr(&[10., 20., 30.], &[3]);
    assert_eq!(vals(&ops::add(&a, &b).unwrap()), [11., 22., 33., 14., 25., 36.]);
    let c = arr(&[2., 4.], &[2, 1]);
    assert_eq!(vals(&ops::div(&a, &c).unwrap()), [0.5, 1., 1.5, 1., 1.25, 1.5]);
    assert_eq!(vals(&ops::sub(&c, &b).unwrap()), [-8., -18., -28., -6., -16., -26.]);
    // (2,1,3) * (4,1) -> (2,4,3)
    let p = arr(&[1., 2., 3., 4., 5., 6.], &[2, 1, 3]);
    let q = arr(&[1., 10., 100., 1000.], &[4, 1]);
    let r = ops::mul(&p, &q).unwrap();
    assert_eq!(r.dims(), [2, 4, 3]);
    let rv = vals(&r);
    for i in 0..2 {
        for j in 0..4 {
            for k in 0..3 {
                assert_eq!(rv[(i * 4 + j) * 3 + k], (i * 3 + k + 1) as f32 * 10f32.powi(j as i32));
            }
        }
    }
    assert_eq!(vals(&ops::binary(BinOp::Max, &a, &arr(&[3.], &[1])).unwrap()), [3., 3., 3., 4., 5., 6.]);
    assert_eq!(vals(&ops::binary(BinOp::Gt, &a, &b.detach()).unwrap()), [0.; 6]);
    assert_eq!(vals(&ops::binary(BinOp::Ge, &a, &arr(&[3.], &[1])).unwrap()), [0., 0., 1., 1., 1., 1.]);
    assert_eq!(vals(&ops::binary(BinOp::Mod, &arr(&[-7., 7.], &[2]), &arr(&[3.], &[1])).unwrap()), [2., 1.]);
    // int32 + float32 promotes to float32
    let i = NDArray::from_vec(vec![1i32, 2, 3], [3], Default::default()).unwrap();
    let s = ops::add(&i, &arr(&[0.5, 0.5, 0.5], &[3])).unwrap();
    assert_eq!(s.dtype(), DType::F32);
    assert_eq!(vals(&s), [1.5, 2.5, 3.5]);
    assert!(ops::add(&a, &arr(&[1., 2.], &[2])).is_err());
    // scalar forms, both directions
    assert_eq!(vals(&ops::scalar(BinOp::Sub, &b, 5.).unwrap()), [5., 15., 25.]);
    assert_eq!(vals(&ops::scalar_r(BinOp::Sub, &b, 5.).unwrap()), [-5., -15., -25.]);
    assert_eq!(vals(&ops::scalar_r(BinOp::Div, &b, 60.).unwrap()), [6., 3., 2.]);
}

#[test]
fn reductions_over_axes() {
    let x = iota(&[2, 3, 4]);
    let xv = vals(&x);
    let at = |i: usize, j: usize, k: usize| xv[(i * 3 + j) * 4 + k];
    let s1 = ops::reduce(ReduceOp::Sum, &x, Some(&[1]), false, false).unwrap();
    assert_eq!(s1.dims(), [2, 4]);
    let want: Vec<f32> = (0..2).flat_map(|i| (0..4).map(move |k| (0..3).map(|j| at(i, j, k)).sum())).collect();
    assert_eq!(vals(&s1), want);
    let k1 = ops::reduce(ReduceOp::Sum, &x, Some(&[1]), true, false).unwrap();
    assert_eq!(k1.dims(), [2, 1, 4]);
    // mean over a non-contiguous axis set (0, 2)
    let m = ops::reduce(ReduceOp::Mean, &x, Some(&[0, -1]), false, false).unwrap();
    let want: Vec<f32> = (0..3)
        .map(|j| (0..2).flat_map(|i| (0..4).map(move |k| (i, k))).map(|(i, k)| at(i, j, k)).sum::<f32>() / 8.)
        .collect();
    assert_close32(&vals(&m), &want, 1e-6);
    // exclude=True keeps axis 1: same as reducing over (0, 2)
    let e = ops::reduce(ReduceOp::Mean, &x, Some(&[1]), false, true).unwrap();
    assert_close32(&vals(&e), &want, 1e-6);
    assert_eq!(vals(&ops::reduce(ReduceOp::Max, &x, Some(&[-1]), false, false).unwrap()), [3., 7., 11., 15., 19., 23.]);
    assert_eq!(
        vals(&ops::reduce(ReduceOp::Min, &x, Some(&[0]), false, false).unwrap()),
        (0..12).map(|v| v as f32).collect::<Vec<_>>()
    );
    assert_eq!(ops::reduce(ReduceOp::Sum, &x, None, false, false).unwrap().item().unwrap(), 276.);
    let p = arr(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    assert_eq!(vals(&ops::reduce(ReduceOp::Prod, &p, Some(&[1]), false, false).unwrap()), [6., 120.]);
    let n = arr(&[1., f32::NAN, 3.], &[3]);
    assert_eq!(ops::reduce(ReduceOp::NanSum, &n, None, false, false).unwrap().item().unwrap(), 4.);
    // NaN propagates through max/min wherever it sits (contiguous and strided paths)
    for d in [[1., f32::NAN, 3.], [f32::NAN, 1., 3.], [1., 3., f32::NAN]] {
        let n = arr(&d, &[3]);
        assert!(ops::reduce(ReduceOp::Max, &n, None, false, false).unwrap().item().unwrap().is_nan(), "max {d:?}");
        assert!(ops::reduce(ReduceOp::Min, &n, None, false, false).unwrap().item().unwrap().is_nan(), "min {d:?}");
    }
    let n2 = arr(&[f32::NAN, 1., 2., 5., 0., f32::NAN], &[3, 2]);
    let m0 = vals(&ops::reduce(ReduceOp::Max, &n2, Some(&[0]), false, false).unwrap());
    assert!(m0[0].is_nan() && m0[1].is_nan(), "{m0:?}");
    assert_eq!(vals(&ops::reduce(ReduceOp::Max, &n2, Some(&[1]), false, false).unwrap())[1], 5.);
    assert!(ops::reduce(ReduceOp::Sum, &x, Some(&[3]), false, false).is_err());
    assert!(ops::reduce(ReduceOp::Sum, &x, Some(&[1, 1]), false, false).is_err());
    assert_close32(&vals(&ops::norm(&p, 2, Some(&[1]), false).unwrap()), &[14f32.sqrt(), 77f32.sqrt()], 1e-6);
    assert_eq!(vals(&ops::argmax(&p, Some(1), false, false, DType::F32).unwrap()), [2., 2.]);
    assert_eq!(vals(&ops::argmax(&p, None, false, true, DType::F32).unwrap()), [0.]);
}

fn host_mm(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut o = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            o[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
        }
    }
    o
}

fn host_t(a: &[f32], r: usize, c: usize) -> Vec<f32> {
    (0..c).flat_map(|j| (0..r).map(move |i| a[i * c + j])).collect()
}

#[test]
fn dot_with_transposes() {
    let av: Vec<f32> = (0..6).map(|v| v as f32 - 2.).collect(); // (2,3)
    let bv: Vec<f32> = (0..12).map(|v| (v % 5) as f32 * 0.5).collect(); // (3,4)
    let want = host_mm(&av, &bv, 2, 3, 4);
    let (a, b) = (arr(&av, &[2, 3]), arr(&bv, &[3, 4]));
    assert_eq!(vals(&ops::dot(&a, &b, false, false).unwrap()), want);
    let at = arr(&host_t(&av, 2, 3), &[3, 2]);
    let bt = arr(&host_t(&bv, 3, 4), &[4, 3]);
    assert_eq!(vals(&ops::dot(&at, &b, true, false).unwrap()), want);
    assert_eq!(vals(&ops::dot(&a, &bt, false, true).unwrap()), want);
    let both = ops::dot(&at, &bt, true, true).unwrap();
    assert_eq!(both.dims(), [2, 4]);
    assert_eq!(vals(&both), want);
    // N-d: (2,1,3) . (3,4) -> (2,1,4)
    let a3 = arr(&av, &[2, 1, 3]);
    let r = ops::dot(&a3, &b, false, false).unwrap();
    assert_eq!(r.dims(), [2, 1, 4]);
    assert_eq!(vals(&r), want);
    assert!(ops::dot(&a, &a, false, false).is_err());
    // batch_dot with transpose_b
    let bb = ops::batch_dot(&arr(&av, &[1, 2, 3]), &arr(&host_t(&bv, 3, 4), &[1, 4, 3]), false, true).unwrap();
    assert_eq!(bb.dims(), [1, 2, 4]);
    assert_eq!(vals(&bb), want);
}

#[test]
fn reshape_codes() {
    let r = |src: &[usize], spec: &[i64]| ops::infer_reshape(src, spec, false).unwrap();
    assert_eq!(r(&[2, 3, 4], &[4, 0, 2]), [4, 3, 2]);
    assert_eq!(r(&[2, 3, 4], &[2, 0, 0]), [2, 3, 4]);
    assert_eq!(r(&[2, 3, 4], &[6, 1, -1]), [6, 1, 4]);
    assert_eq!(r(&[2, 3, 4], &[3, -1, 8]), [3, 1, 8]);
    assert_eq!(r(&[2, 3, 4], &[-1]), [24]);
    assert_eq!(r(&[2, 3, 4], &[-2]), [2, 3, 4]);
    assert_eq!(r(&[2, 3, 4], &[2, -2]), [2, 3, 4]);
    assert_eq!(r(&[2, 3, 4], &[-2, 1, 1]), [2, 3, 4, 1, 1]);
    assert_eq!(r(&[2, 3, 4], &[-3, 4]), [6, 4]);
    assert_eq!(r(&[2, 3, 4, 5], &[-3, -3]), [6, 20]);
    assert_eq!(r(&[2, 3, 4], &[0, -3]), [2, 12]);
    assert_eq!(r(&[2, 3, 4], &[-3, -2]), [6, 4]);
    assert_eq!(r(&[2, 3, 4], &[-4, 1, 2, -2]), [1, 2, 3, 4]);
    assert_eq!(r(&[2, 3, 4], &[2, -4, -1, 3, -2]), [2, 1, 3, 4]);
    assert_eq!(ops::infer_reshape(&[10, 5, 4], &[-1, 0], true).unwrap(), [50, 4]);
    assert_eq!(r(&[10, 5, 4], &[-1, 0]), [40, 5]);
    assert!(ops::infer_reshape(&[2, 3, 4], &[-1, -1], false).is_err());
    assert!(ops::infer_reshape(&[2, 3, 4], &[5, -1], false).is_err());
    assert!(ops::infer_reshape(&[2, 3, 4], &[-4, 5, -1, -2], false).is_err());
    // the op itself: a view with the new shape and the same values
    let x = iota(&[2, 3, 4]);
    let y = ops::reshape(&x, &[-1, 0], true).unwrap();
    assert_eq!(y.dims(), [6, 4]);
    assert!(y.shares_storage(&x));
    assert_eq!(vals(&y), vals(&x));
}

#[test]
fn take_modes() {
    let _serial = ENGINE_ERRORS.lock().unwrap_or_else(|e| e.into_inner());
    let a = arr(&[0., 1., 10., 11., 20., 21.], &[3, 2]);
    let idx = arr(&[0., 2., 5., -1.], &[4]);
    let t = ops::take(&a, &idx, 0, IndexMode::Clip).unwrap();
    assert_eq!(t.dims(), [4, 2]);
    assert_eq!(vals(&t), [0., 1., 20., 21., 20., 21., 0., 1.]);
    let t = ops::take(&a, &idx, 0, IndexMode::Wrap).unwrap();
    assert_eq!(vals(&t), [0., 1., 20., 21., 20., 21., 20., 21.]);
    let t = ops::take(&a, &arr(&[1., 0., 1.], &[3]), 1, IndexMode::Clip).unwrap();
    assert_eq!(t.dims(), [3, 3]);
    assert_eq!(vals(&t), [1., 0., 1., 11., 10., 11., 21., 20., 21.]);
    // raise: in range (negative counts from the end) works, out of range fails at the read
    let t = ops::take(&a, &arr(&[-1., 1.], &[2]), 0, IndexMode::Raise).unwrap();
    assert_eq!(vals(&t), [20., 21., 10., 11.]);
    let bad = ops::take(&a, &idx, 0, IndexMode::Raise).unwrap();
    let e = bad.to_vec::<f32>().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Index);
    assert!(IndexMode::parse("nope").is_err());
}

#[test]
fn softmax_rows_sum_to_one() {
    let x = arr(&[1., 2., 3., 0., 0., 0., -1., 5., 2., 100., 101., 102.], &[4, 3]);
    let s = vals(&ops::nn::softmax(&x, -1, None).unwrap());
    for r in 0..4 {
        let sum: f32 = s[r * 3..r * 3 + 3].iter().sum();
        assert!((sum - 1.).abs() < 1e-6, "row {r} sums to {sum}");
    }
    let z: f32 = [1f32, 2., 3.].iter().map(|v| v.exp()).sum();
    assert_close32(&s[..3], &[1f32.exp() / z, 2f32.exp() / z, 3f32.exp() / z], 1e-6);
    assert_close32(&s[3..6], &[1. / 3.; 3], 1e-6);
    // large values do not overflow: same as the shifted row
    assert_close32(&s[9..], &s[..3], 1e-6);
    // axis 0 and temperature
    let s0 = vals(&ops::nn::softmax(&x, 0, Some(2.)).unwrap());
    for c in 0..3 {
        let sum: f32 = (0..4).map(|r| s0[r * 3 + c]).sum();
        assert!((sum - 1.).abs() < 1e-6);
    }
    let ls = vals(&ops::nn::log_softmax(&x, -1, None).unwrap());
    assert_close32(&ls[..3], &s[..3].iter().map(|v| v.ln()).collect::<Vec<_>>(), 1e-5);
}

#[test]
fn fully_connected_is_x_wt_plus_b() {
    let xv: Vec<f32> = (0..8).map(|v| v as f32 * 0.5 - 1.).collect(); // (2, 2, 2) -> flattened (2, 4)
    let wv: Vec<f32> = (0..12).map(|v| ((v * 3) % 7) as f32 - 3.).collect(); // (3, 4)
    let bv = [0.5f32, -1., 2.];
    let x = arr(&xv, &[2, 2, 2]);
    let w = arr(&wv, &[3, 4]);
    let b = arr(&bv, &[3]);
    let mut want = host_mm(&xv, &host_t(&wv, 3, 4), 2, 4, 3);
    let nob = want.clone();
    for r in 0..2 {
        for j in 0..3 {
            want[r * 3 + j] += bv[j];
        }
    }
    let y = ops::nn::fully_connected(&x, &w, Some(&b), 3, true).unwrap();
    assert_eq!(y.dims(), [2, 3]);
    assert_close32(&vals(&y), &want, 1e-6);
    assert_close32(&vals(&ops::nn::fully_connected(&x, &w, None, 3, true).unwrap()), &nob, 1e-6);
    // flatten=false: last axis is the input axis
    let x2 = arr(&xv, &[2, 1, 4]);
    let y2 = ops::nn::fully_connected(&x2, &w, Some(&b), 3, false).unwrap();
    assert_eq!(y2.dims(), [2, 1, 3]);
    assert_close32(&vals(&y2), &want, 1e-6);
    assert!(ops::nn::fully_connected(&x, &w, Some(&b), 4, true).is_err());
}

#[test]
fn autograd_matches_finite_differences() {
    let a = (vec![0.5, -1.5, 2.0, 0.25, 1.0, -0.75], vec![2, 3]);
    let b = (vec![1.5, -0.5, 0.8], vec![3]);
    check_grad(&[a.clone(), b.clone()], |x| ops::mul(&x[0], &x[1]), 1e-6);
    check_grad(&[a.clone(), b.clone()], |x| ops::div(&x[0], &ops::scalar(BinOp::Add, &x[1], 2.0)?), 1e-6);
    check_grad(std::slice::from_ref(&a), |x| ops::reduce(ReduceOp::Sum, &x[0], Some(&[1]), false, false), 1e-6);
    check_grad(
        std::slice::from_ref(&a),
        |x| ops::reduce(ReduceOp::Mean, &ops::mul(&x[0], &x[0])?, Some(&[0]), true, false),
        1e-6,
    );
    let c = (vec![0.3, 1.1, -0.4, 0.9, -1.3, 0.2, 0.7, 0.05, -0.6, 1.4, 0.8, -0.2], vec![3, 4]);
    check_grad(&[a.clone(), c.clone()], |x| ops::dot(&x[0], &x[1], false, false), 1e-6);
    let at = (
        host_t(&a.0.iter().map(|&v| v as f32).collect::<Vec<_>>(), 2, 3).iter().map(|&v| v as f64).collect(),
        vec![3, 2],
    );
    let ct = (vec![0.3, 0.9, 0.7, 1.4, 1.1, -1.3, 0.05, 0.8, -0.4, 0.2, -0.6, -0.2], vec![4, 3]);
    check_grad(&[at, ct.clone()], |x| ops::dot(&x[0], &x[1], true, true), 1e-6);
    // FullyConnected: data (2,3), weight (4,3), bias (4,)
    let bias = (vec![0.1, -0.2, 0.3, 0.0], vec![4]);
    check_grad(&[a, ct, bias], |x| ops::nn::fully_connected(&x[0], &x[1], Some(&x[2]), 4, true), 1e-6);
}

#[test]
fn more_operators_match_finite_differences() {
    let a = (vec![0.5, -1.5, 2.0, 0.25, 1.0, -0.75], vec![2, 3]);
    let c = (vec![0.3, 1.1, -0.4, 0.9, -1.3, 0.2, 0.7, 0.05, -0.6, 1.4, 0.8, -0.2], vec![3, 4]);
    let ct = (vec![0.3, 0.9, 0.7, 1.4, 1.1, -1.3, 0.05, 0.8, -0.4, 0.2, -0.6, -0.2], vec![4, 3]);
    let at = (vec![0.5, 0.25, -1.5, 1.0, 2.0, -0.75], vec![3, 2]);
    check_grad(&[a.clone(), ct.clone()], |x| ops::dot(&x[0], &x[1], false, true), 1e-6);
    check_grad(&[at.clone(), c.clone()], |x| ops::dot(&x[0], &x[1], true, false), 1e-6);
    check_grad(std::slice::from_ref(&a), |x| ops::nn::softmax(&x[0], -1, None), 1e-5);
    check_grad(std::slice::from_ref(&a), |x| ops::nn::softmax(&x[0], 0, Some(2.0)), 1e-5);
    check_grad(std::slice::from_ref(&a), |x| ops::nn::log_softmax(&x[0], 1, Some(0.5)), 1e-5);
    check_grad(std::slice::from_ref(&a), |x| ops::transpose(&x[0], None), 1e-6);
    check_grad(std::slice::from_ref(&a), |x| ops::reduce(ReduceOp::Max, &x[0], Some(&[1]), false, false), 1e-6);
    check_grad(std::slice::from_ref(&a), |x| ops::reduce(ReduceOp::Prod, &x[0], Some(&[0]), false, false), 1e-6);
    check_grad(std::slice::from_ref(&a), |x| ops::broadcast_to(&x[0], Shape::new(&[2, 2, 3])), 1e-6);
    check_grad(&[a.clone(), a.clone()], |x| ops::concat(x, 1), 1e-6);
    check_grad(&[a.clone(), a.clone()], |x| ops::stack(x, 0), 1e-6);
    check_grad(std::slice::from_ref(&a), |x| ops::slice_axis(&x[0], 1, 1, None), 1e-6);
    check_grad(std::slice::from_ref(&a), |x| ops::slice_axis(&x[0], 0, 1, None), 1e-6);
    check_grad(std::slice::from_ref(&a), |x| ops::clip(&x[0], -1.0, 0.9), 1e-6);
    let idx = arr64(&[2., 0., 2.], &[3]);
    check_grad(std::slice::from_ref(&a), |x| ops::take(&x[0], &idx, 1, IndexMode::Clip), 1e-6);
    let pi = arr64(&[2., 0.], &[2]);
    check_grad(std::slice::from_ref(&a), |x| ops::pick(&x[0], &pi, 1, false, IndexMode::Clip), 1e-6);
    let cond = arr64(&[1., 0., 1., 0., 0., 1.], &[2, 3]);
    check_grad(&[a.clone(), a.clone()], |x| ops::where_(&cond, &x[0], &ops::scalar(BinOp::Mul, &x[1], 3.0)?), 1e-6);
    let fx = (vec![0.5, -1.5, 2.0, 0.25, 1.0, -0.75], vec![2, 1, 3]);
    let w = (vec![0.3, 1.1, -0.4, 0.9, -1.3, 0.2], vec![2, 3]);
    check_grad(&[fx, w], |x| ops::nn::fully_connected(&x[0], &x[1], None, 2, false), 1e-6);
    let lbl = arr64(&[2., 0.], &[2]);
    check_grad(std::slice::from_ref(&a), |x| ops::nn::softmax_ce_loss(&x[0], &lbl), 1e-5);
    check_grad(std::slice::from_ref(&a), |x| ops::reduce(ReduceOp::Mean, &x[0], Some(&[0, 1]), false, false), 1e-6);
    check_grad(std::slice::from_ref(&a), |x| ops::unary(UnaryOp::Tanh, &x[0]), 1e-6);
    let g = (vec![1.0, 1.5], vec![2]);
    let b = (vec![0.1, -0.1], vec![2]);
    let lx = (vec![0.5, -1.5, 2.0, 0.25], vec![2, 2]);
    check_grad(&[lx, g, b], |x| ops::nn::layer_norm(&x[0], &x[1], &x[2], -1, 1e-5), 1e-4);
}

#[test]
fn grad_req_add_accumulates() {
    let x = arr(&[1., 2., 3.], &[3]);
    x.attach_grad(GradReq::Add).unwrap();
    for _ in 0..2 {
        let prev = autograd::set_recording(true);
        let y = ops::reduce(ReduceOp::Sum, &ops::mul(&x, &x).unwrap(), None, false, false).unwrap();
        autograd::set_recording(prev);
        y.backward(None, false).unwrap();
    }
    assert_eq!(vals(&x.grad().unwrap()), [4., 8., 12.]);
}

#[test]
fn op_error_propagates_and_is_raised_once() {
    let _serial = ENGINE_ERRORS.lock().unwrap_or_else(|e| e.into_inner());
    let a = arr(&[1., 2., 3.], &[3]);
    let bad = ops::take(&a, &arr(&[7.], &[1]), 0, IndexMode::Raise).expect("shapes are fine: the call returns");
    let dep = ops::scalar(BinOp::Mul, &ops::add(&bad, &bad).unwrap(), 2.).unwrap();
    let e = dep.wait_to_read().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Index);
    match &e {
        ferromx::Error::Engine(ee) => assert_eq!(ee.op, "take", "the original op is named"),
        other => panic!("expected an engine error, got {other:?}"),
    }
    assert!(e.to_string().contains("out of bounds"), "{e}");
    assert!(dep.wait_to_read().is_ok(), "the error is raised once");
    assert_eq!(bad.wait_to_read().unwrap_err().kind(), ErrorKind::Index);
    assert!(bad.wait_to_read().is_ok());
    // unrelated work is unaffected and everything has been raised
    assert_eq!(vals(&ops::scalar(BinOp::Add, &a, 1.).unwrap()), [2., 3., 4.]);
    ferromx::waitall().unwrap();
}

#[test]
fn sgd_update_math() {
    let w = arr(&[1., 2., 3.], &[3]);
    let g = arr(&[0.5, -1., 2.], &[3]);
    let p = optim::UpdateParams { lr: 0.1, wd: 0.01, rescale_grad: 0.5, clip_gradient: 0.6 };
    optim::update(optim::Update::Sgd, &w, &g, &[], p).unwrap();
    // g' = clip(0.5 g, ±0.6) = [0.25, -0.5, 0.6]; w -= lr (g' + wd w)
    assert_close32(&vals(&w), &[0.974, 2.048, 2.937], 1e-6);
    // through the registry, no clipping; the weight is updated in place and returned
    let attrs = Attrs(vec![("lr".into(), Attr::Float(0.5)), ("wd".into(), Attr::Float(0.0))]);
    let r = invoke("sgd_update", &[Some(w.clone()), Some(g.clone())], &attrs).unwrap();
    assert!(r[0].same(&w));
    assert_close32(&vals(&w), &[0.974 - 0.25, 2.048 + 0.5, 2.937 - 1.0], 1e-6);
    // momentum: m = μ m - lr g ; w += m (two steps)
    let w = arr(&[1.], &[1]);
    let m = arr(&[0.], &[1]);
    let p = optim::UpdateParams { lr: 0.1, wd: 0.0, rescale_grad: 1.0, clip_gradient: -1.0 };
    for _ in 0..2 {
        optim::update(optim::Update::SgdMom { momentum: 0.9 }, &w, &arr(&[1.], &[1]), &[&m], p).unwrap();
    }
    assert_close32(&vals(&m), &[-0.19], 1e-6);
    assert_close32(&vals(&w), &[0.71], 1e-6);
    assert!(optim::update(optim::Update::Sgd, &w, &arr(&[1., 2.], &[2]), &[], p).is_err());
}

#[test]
fn random_seed_reproducibility() {
    // the only test of this binary that draws random numbers (seeds are process-wide)
    let draw = || {
        let u = random::uniform(-2., 3., Shape::new(&[64]), DType::F32, Default::default()).unwrap();
        let n = random::normal(1., 0.5, Shape::new(&[64]), DType::F64, Default::default()).unwrap();
        (vals(&u), vals64(&n))
    };
    random::seed(42, None);
    let (u1, n1) = draw();
    random::seed(42, None);
    let (u2, n2) = draw();
    assert_eq!(u1, u2);
    assert_eq!(n1, n2);
    assert_ne!(u1, draw().0, "the stream advances");
    random::seed(43, None);
    assert_ne!(u1, draw().0, "another seed differs");
    assert!(u1.iter().all(|&v| (-2. ..3.).contains(&v)));
    assert!(u1.windows(2).any(|w| w[0] != w[1]));
    let mean: f64 = n1.iter().sum::<f64>() / 64.;
    assert!((mean - 1.).abs() < 0.3, "normal mean {mean}");
}

#[test]
fn plane_transposes_are_recognised_and_tiled_exactly() {
    use ferromx::shape::{as_plane_transpose, transpose_rows};
    assert_eq!(as_plane_transpose(&[3, 4], &[1, 0]), Some((1, 3, 4)));
    assert_eq!(as_plane_transpose(&[2, 3, 4, 5], &[0, 2, 3, 1]), Some((2, 3, 20)));
    assert_eq!(as_plane_transpose(&[2, 3, 4, 5], &[0, 3, 1, 2]), Some((2, 12, 5)));
    assert_eq!(as_plane_transpose(&[2, 3, 4], &[0, 1, 2]), None);
    assert_eq!(as_plane_transpose(&[2, 3, 4, 5], &[1, 0, 3, 2]), None);
    // a ragged batch of planes, written in pieces that straddle planes
    let (b, r, c) = (3, 19, 21);
    let src: Vec<u32> = (0..(b * r * c) as u32).collect();
    let mut dst = vec![0u32; b * r * c];
    for (k, piece) in dst.chunks_mut(5 * r).enumerate() {
        transpose_rows(&src, r, c, 5 * k, piece);
    }
    for p in 0..b {
        for i in 0..r {
            for j in 0..c {
                assert_eq!(dst[p * r * c + j * r + i], src[p * r * c + i * c + j]);
            }
        }
    }
}
