//! sort / argsort / topk: values, stability, NaN order, layouts, dtypes,
//! gradients and the registry entries.
mod common;

use common::*;
use ferromx::autograd::{self, GradReq};
use ferromx::ops::{self, ReduceOp, TopKRet};
use ferromx::registry::{invoke, Attr, Attrs};
use ferromx::{DType, NDArray};

fn attrs(v: &[(&str, Attr)]) -> Attrs {
    Attrs(v.iter().map(|(k, a)| (k.to_string(), a.clone())).collect())
}

#[test]
fn sort_along_axes_and_flattened() {
    let x = arr(&[3., 1., 2., 0., 5., 4.], &[2, 3]);
    assert_eq!(vals(&ops::sort(&x, Some(-1), true).unwrap()), [1., 2., 3., 0., 4., 5.]);
    assert_eq!(vals(&ops::sort(&x, Some(1), false).unwrap()), [3., 2., 1., 5., 4., 0.]);
    assert_eq!(vals(&ops::sort(&x, Some(0), true).unwrap()), [0., 1., 2., 3., 5., 4.]);
    let f = ops::sort(&x, None, true).unwrap();
    assert_eq!(f.dims(), [6]);
    assert_eq!(vals(&f), [0., 1., 2., 3., 4., 5.]);
    // integer input keeps its dtype
    let xi = NDArray::from_vec(vec![5i32, -2, 9, 0], [4], Default::default()).unwrap();
    let s = ops::sort(&xi, Some(0), false).unwrap();
    assert_eq!(s.dtype(), DType::I32);
    assert_eq!(s.to_vec::<i32>().unwrap(), [9, 5, 0, -2]);
}

#[test]
fn argsort_is_stable_both_ways_and_float32_by_default() {
    let x = arr(&[3., 1., 2., 1., 3.], &[5]);
    let a = ops::argsort(&x, Some(-1), true, DType::F32).unwrap();
    assert_eq!(a.dtype(), DType::F32);
    assert_eq!(vals(&a), [1., 3., 2., 0., 4.]);
    let d = ops::argsort(&x, Some(-1), false, DType::I32).unwrap();
    assert_eq!(d.dtype(), DType::I32);
    assert_eq!(d.to_vec::<i32>().unwrap(), [0, 4, 2, 1, 3]);
    // 3-d, middle axis (strided rows)
    let x = arr(&[4., 1., 2., 3., 0., 5., 9., 8., 7., 6., 5., 4.], &[2, 3, 2]);
    let a = ops::argsort(&x, Some(1), true, DType::F32).unwrap();
    assert_eq!(a.dims(), [2, 3, 2]);
    // column (0,:,0) = 4,2,0 -> 2,1,0 ; (0,:,1) = 1,3,5 -> 0,1,2
    // column (1,:,0) = 9,7,5 -> 2,1,0 ; (1,:,1) = 8,6,4 -> 2,1,0
    assert_eq!(vals(&a), [2., 0., 1., 1., 0., 2., 2., 2., 1., 1., 0., 0.]);
}

#[test]
fn nan_sorts_like_numpy() {
    let n = f32::NAN;
    let x = arr(&[n, 1., n, 0.], &[4]);
    let s = vals(&ops::sort(&x, Some(0), true).unwrap());
    assert_eq!(&s[..2], [0., 1.]);
    assert!(s[2].is_nan() && s[3].is_nan());
    assert_eq!(vals(&ops::argsort(&x, Some(0), true, DType::F32).unwrap()), [3., 1., 0., 2.]);
    // descending: NaN is the largest, so it comes first (and topk picks it, like argmax)
    assert_eq!(vals(&ops::argsort(&x, Some(0), false, DType::F32).unwrap()), [0., 2., 1., 3.]);
    let t = ops::topk(&x, Some(0), 1, TopKRet::Indices, false, DType::F32).unwrap();
    assert_eq!(vals(&t[0]), [0.]);
    let t = ops::topk(&x, Some(0), 2, TopKRet::Value, true, DType::F32).unwrap();
    assert_eq!(vals(&t[0]), [0., 1.]);
}

#[test]
fn topk_return_types() {
    let x = arr(&[1., 5., 3., 4., 9., 2., 8., 7.], &[2, 4]);
    // default: indices of the largest, float32, axis keeps size k
    let i = &ops::topk(&x, Some(-1), 1, TopKRet::Indices, false, DType::F32).unwrap()[0];
    assert_eq!((i.dims(), i.dtype()), ([2, 1].as_slice(), DType::F32));
    assert_eq!(vals(i), [1., 0.]);
    let v = &ops::topk(&x, Some(-1), 2, TopKRet::Value, false, DType::F32).unwrap()[0];
    assert_eq!(vals(v), [5., 4., 9., 8.]);
    let v = &ops::topk(&x, Some(-1), 3, TopKRet::Value, true, DType::F32).unwrap()[0];
    assert_eq!(vals(v), [1., 3., 4., 2., 7., 8.]);
    let b = ops::topk(&x, Some(1), 2, TopKRet::Both, false, DType::I64).unwrap();
    assert_eq!(b.len(), 2);
    assert_eq!(vals(&b[0]), [5., 4., 9., 8.]);
    assert_eq!(b[1].to_vec::<i64>().unwrap(), [1, 3, 0, 2]);
    let m = &ops::topk(&x, Some(-1), 2, TopKRet::Mask, false, DType::F32).unwrap()[0];
    assert_eq!(m.dims(), [2, 4]);
    assert_eq!(vals(m), [0., 1., 0., 1., 1., 0., 1., 0.]);
    // axis 0
    let v = &ops::topk(&x, Some(0), 1, TopKRet::Value, false, DType::F32).unwrap()[0];
    assert_eq!(v.dims(), [1, 4]);
    assert_eq!(vals(v), [9., 5., 8., 7.]);
    // axis None: flattened
    let i = &ops::topk(&x, None, 3, TopKRet::Indices, false, DType::F32).unwrap()[0];
    assert_eq!(i.dims(), [3]);
    assert_eq!(vals(i), [4., 6., 7.]);
    let m = &ops::topk(&x, None, 3, TopKRet::Mask, false, DType::F32).unwrap()[0];
    assert_eq!(vals(m), [0., 0., 0., 0., 1., 0., 1., 1.]);
    // k <= 0: the whole axis (a full descending sort)
    let v = &ops::topk(&x, Some(-1), 0, TopKRet::Value, false, DType::F32).unwrap()[0];
    assert_eq!(vals(v), [5., 4., 3., 1., 9., 8., 7., 2.]);
}

#[test]
fn topk_and_argsort_reject_bad_arguments() {
    let x = arr(&[1., 2., 3.], &[3]);
    assert!(ops::topk(&x, Some(0), 4, TopKRet::Value, false, DType::F32).is_err());
    assert!(ops::topk(&x, Some(1), 1, TopKRet::Value, false, DType::F32).is_err());
    assert!(TopKRet::parse("values").is_err());
    assert!(ops::argsort(&x, Some(0), true, DType::Bool).is_err());
    let big = NDArray::from_vec(vec![0f32; 300], [300], Default::default()).unwrap();
    assert!(ops::argsort(&big, Some(0), true, DType::U8).is_err());
    assert!(ops::argsort(&big, Some(0), true, DType::I32).is_ok());
}

#[test]
fn large_rows_use_the_parallel_path_and_match_a_host_sort() {
    let (rows, n) = (64usize, 600usize);
    let data: Vec<f32> = (0..rows * n).map(|i| ((i * 7919) % 1009) as f32 - 500.0).collect();
    let x = arr(&data, &[rows, n]);
    let s = vals(&ops::sort(&x, Some(1), false).unwrap());
    let t = &ops::topk(&x, Some(1), 5, TopKRet::Both, false, DType::I32).unwrap();
    let (tv, ti) = (vals(&t[0]), t[1].to_vec::<i32>().unwrap());
    for r in 0..rows {
        let mut want: Vec<(f32, usize)> = data[r * n..(r + 1) * n].iter().copied().zip(0..).collect();
        want.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap().then(a.1.cmp(&b.1)));
        let ws: Vec<f32> = want.iter().map(|p| p.0).collect();
        assert_eq!(&s[r * n..(r + 1) * n], ws.as_slice(), "row {r}");
        for j in 0..5 {
            assert_eq!(tv[r * 5 + j], want[j].0);
            assert_eq!(ti[r * 5 + j] as usize, want[j].1);
        }
    }
}

#[test]
fn sort_gradient_scatters_back() {
    let x = arr(&[3., 1., 2.], &[3]);
    x.attach_grad(GradReq::Write).unwrap();
    let prev = autograd::set_recording(true);
    let y = ops::sort(&x, Some(0), true).unwrap();
    let l = ops::reduce(ReduceOp::Sum, &ops::mul(&y, &arr(&[1., 2., 3.], &[3])).unwrap(), None, false, false).unwrap();
    autograd::set_recording(prev);
    l.backward(None, false).unwrap();
    assert_eq!(vals(&x.grad().unwrap()), [3., 1., 2.]);
    // finite differences, 2-d, both orders and the flattened form
    let d = (vec![0.3, -1.2, 2.5, 0.7, 1.9, -0.4], vec![2, 3]);
    check_grad(std::slice::from_ref(&d), |a| ops::sort(&a[0], Some(1), true), 1e-6);
    check_grad(std::slice::from_ref(&d), |a| ops::sort(&a[0], Some(0), false), 1e-6);
    check_grad(&[d], |a| ops::sort(&a[0], None, false), 1e-6);
}

#[test]
fn topk_gradients() {
    let d = (vec![0.3, -1.2, 2.5, 0.7, 1.9, -0.4, 1.1, 0.0], vec![2, 4]);
    check_grad(
        std::slice::from_ref(&d),
        |a| Ok(ops::topk(&a[0], Some(-1), 2, TopKRet::Value, false, DType::F32)?.remove(0)),
        1e-6,
    );
    check_grad(
        std::slice::from_ref(&d),
        |a| Ok(ops::topk(&a[0], Some(0), 1, TopKRet::Both, true, DType::F32)?.remove(0)),
        1e-6,
    );
    // explicit scatter: values 2.5 (pos 2) and 0.7 (pos 3) of row 0; 1.9 (pos 0), 1.1 (pos 2) of row 1
    let x = arr64(&d.0, &d.1);
    x.attach_grad(GradReq::Write).unwrap();
    let prev = autograd::set_recording(true);
    let v = ops::topk(&x, Some(-1), 2, TopKRet::Value, false, DType::F32).unwrap().remove(0);
    autograd::set_recording(prev);
    v.backward(Some(&arr64(&[10., 20., 30., 40.], &[2, 2])), false).unwrap();
    assert_eq!(vals64(&x.grad().unwrap()), [0., 0., 10., 20., 30., 0., 40., 0.]);
    // indices carry a zero gradient
    let prev = autograd::set_recording(true);
    let i = ops::argsort(&x, Some(-1), true, DType::F32).unwrap();
    autograd::set_recording(prev);
    i.backward(None, false).unwrap();
    assert_eq!(vals64(&x.grad().unwrap()), [0.; 8]);
}

#[test]
fn registry_entries() {
    let x = arr(&[1., 5., 3., 4., 9., 2.], &[2, 3]);
    let r = invoke("topk", &[Some(x.clone())], &attrs(&[("k", Attr::Int(2)), ("ret_typ", Attr::Str("both".into()))]))
        .unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(vals(&r[0]), [5., 3., 9., 4.]);
    assert_eq!(vals(&r[1]), [1., 2., 1., 0.]);
    assert_eq!(r[1].dtype(), DType::F32);
    // absent axis: -1; explicit None: flattened
    let s = invoke("sort", &[Some(x.clone())], &attrs(&[])).unwrap();
    assert_eq!(vals(&s[0]), [1., 3., 5., 2., 4., 9.]);
    let s =
        invoke("sort", &[Some(x.clone())], &attrs(&[("axis", Attr::None), ("is_ascend", Attr::Bool(false))])).unwrap();
    assert_eq!(s[0].dims(), [6]);
    assert_eq!(vals(&s[0]), [9., 5., 4., 3., 2., 1.]);
    let a =
        invoke("argsort", &[Some(x.clone())], &attrs(&[("axis", Attr::Int(0)), ("dtype", Attr::Str("int64".into()))]))
            .unwrap();
    assert_eq!(a[0].dtype(), DType::I64);
    assert_eq!(a[0].to_vec::<i64>().unwrap(), [0, 0, 1, 1, 1, 0]);
    let m =
        invoke("topk", &[Some(x)], &attrs(&[("ret_typ", Attr::Str("mask".into())), ("axis", Attr::Int(0))])).unwrap();
    assert_eq!(vals(&m[0]), [0., 0., 1., 1., 1., 0.]);
}
