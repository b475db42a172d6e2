//! tile, repeat, flip/reverse, moveaxis, gather_nd, scatter_nd, slice,
//! slice_like, broadcast_axis, diag: values, errors, gradients, registry.
mod common;

use common::*;
use ferromx::engine::ErrorKind;
use ferromx::ops::{self, NONE_INDEX};
use ferromx::registry::{invoke, Attr, Attrs};
use ferromx::{DType, NDArray, Shape};

const N: i64 = NONE_INDEX;

fn attrs(v: &[(&str, Attr)]) -> Attrs {
    Attrs(v.iter().map(|(k, a)| (k.to_string(), a.clone())).collect())
}

fn ints(v: &[i64]) -> Attr {
    Attr::Ints(v.to_vec())
}

fn data(n: usize, shape: &[usize]) -> (Vec<f64>, Vec<usize>) {
    ((0..n).map(|i| (i as f64 * 0.37).sin() + 0.1 * i as f64).collect(), shape.to_vec())
}

#[test]
fn tile_values_and_shapes() {
    let x = arr(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let t = ops::tile(&x, &[2]).unwrap();
    assert_eq!(t.dims(), [2, 6]);
    assert_eq!(vals(&t), [1., 2., 3., 1., 2., 3., 4., 5., 6., 4., 5., 6.]);
    let t = ops::tile(&x, &[2, 1]).unwrap();
    assert_eq!(vals(&t), [1., 2., 3., 4., 5., 6., 1., 2., 3., 4., 5., 6.]);
    let t = ops::tile(&x, &[2, 1, 2]).unwrap();
    assert_eq!(t.dims(), [2, 2, 6]);
    assert_eq!(&vals(&t)[..12], [1., 2., 3., 1., 2., 3., 4., 5., 6., 4., 5., 6.]);
    assert_eq!(&vals(&t)[12..], &vals(&t)[..12]);
    assert_eq!(ops::tile(&x, &[0, 2]).unwrap().dims(), [0, 6]);
    assert!(ops::tile(&x, &[-1]).is_err());
    check_grad(&[data(6, &[2, 3])], |a| ops::tile(&a[0], &[3, 1, 2]), 1e-6);
}

#[test]
fn repeat_values_and_gradient() {
    let x = arr(&[1., 2., 3., 4.], &[2, 2]);
    let r = ops::repeat(&x, 2, None).unwrap();
    assert_eq!(r.dims(), [8]);
    assert_eq!(vals(&r), [1., 1., 2., 2., 3., 3., 4., 4.]);
    let r = ops::repeat(&x, 2, Some(0)).unwrap();
    assert_eq!(r.dims(), [4, 2]);
    assert_eq!(vals(&r), [1., 2., 1., 2., 3., 4., 3., 4.]);
    let r = ops::repeat(&x, 3, Some(-1)).unwrap();
    assert_eq!(vals(&r), [1., 1., 1., 2., 2., 2., 3., 3., 3., 4., 4., 4.]);
    assert_eq!(ops::repeat(&x, 0, Some(1)).unwrap().dims(), [2, 0]);
    assert!(ops::repeat(&x, -1, None).is_err());
    assert!(ops::repeat(&x, 2, Some(2)).is_err());
    check_grad(&[data(6, &[3, 2])], |a| ops::repeat(&a[0], 3, Some(0)), 1e-6);
    check_grad(&[data(6, &[3, 2])], |a| ops::repeat(&a[0], 2, None), 1e-6);
}

#[test]
fn flip_and_reverse() {
    let x = iota(&[2, 3]);
    assert_eq!(vals(&ops::flip(&x, &[0]).unwrap()), [3., 4., 5., 0., 1., 2.]);
    assert_eq!(vals(&ops::flip(&x, &[1]).unwrap()), [2., 1., 0., 5., 4., 3.]);
    assert_eq!(vals(&ops::reverse(&x, &[0, -1]).unwrap()), [5., 4., 3., 2., 1., 0.]);
    let y = iota(&[2, 2, 2]);
    assert_eq!(vals(&ops::flip(&y, &[1]).unwrap()), [2., 3., 0., 1., 6., 7., 4., 5.]);
    assert!(ops::flip(&x, &[2]).is_err());
    assert!(ops::flip(&x, &[0, 0]).is_err());
    check_grad(&[data(12, &[2, 3, 2])], |a| ops::flip(&a[0], &[0, 2]), 1e-6);
}

#[test]
fn moveaxis_permutes_like_numpy() {
    let x = iota(&[2, 3, 4]);
    let m = ops::moveaxis(&x, &[0], &[-1]).unwrap();
    assert_eq!(m.dims(), [3, 4, 2]);
    let (xv, mv) = (vals(&x), vals(&m));
    for i in 0..2 {
        for j in 0..3 {
            for k in 0..4 {
                assert_eq!(mv[(j * 4 + k) * 2 + i], xv[(i * 3 + j) * 4 + k]);
            }
        }
    }
    assert_eq!(ops::moveaxis(&x, &[-1], &[0]).unwrap().dims(), [4, 2, 3]);
    assert_eq!(ops::moveaxis(&x, &[0, 1], &[-1, -2]).unwrap().dims(), [4, 3, 2]);
    assert_eq!(ops::moveaxis(&x, &[2, 0], &[0, 2]).unwrap().dims(), [4, 3, 2]);
    assert!(ops::moveaxis(&x, &[0], &[0, 1]).is_err());
    assert!(ops::moveaxis(&x, &[0, 0], &[1, 2]).is_err());
    check_grad(&[data(24, &[2, 3, 4])], |a| ops::moveaxis(&a[0], &[1], &[0]), 1e-6);
}

#[test]
fn gather_nd_values_negative_indices_and_gradient() {
    let d = iota(&[2, 3]); // [[0,1,2],[3,4,5]]
    let idx = arr(&[1., 0., 2., 1.], &[2, 2]); // points (1,2) and (0,1)
    let g = ops::gather_nd(&d, &idx).unwrap();
    assert_eq!(g.dims(), [2]);
    assert_eq!(vals(&g), [5., 1.]);
    // M = 1: whole rows; int indices; negative index
    let idx = NDArray::from_vec(vec![1i32, -2, 1], [1, 3], Default::default()).unwrap();
    let g = ops::gather_nd(&d, &idx).unwrap();
    assert_eq!(g.dims(), [3, 3]);
    assert_eq!(vals(&g), [3., 4., 5., 0., 1., 2., 3., 4., 5.]);
    // M bigger than the rank: error at the call
    assert!(ops::gather_nd(&d, &arr(&[0., 0., 0.], &[3, 1])).is_err());
    // duplicates accumulate in the gradient
    let idx = arr(&[1., 1., 0., 2., 2., 1.], &[2, 3]);
    check_grad(&[data(6, &[2, 3])], |a| ops::gather_nd(&a[0], &idx), 1e-6);
    let idx = arr(&[0., 1., 0.], &[1, 3]);
    check_grad(&[data(6, &[2, 3])], |a| ops::gather_nd(&a[0], &idx), 1e-6);
}

#[test]
fn gather_nd_out_of_range_fails_through_the_engine() {
    let d = iota(&[2, 3]);
    let idx = arr(&[1., 0., 3., 1.], &[2, 2]); // column index 3 on an axis of 3
    let g = ops::gather_nd(&d, &idx).expect("shapes are fine: the call succeeds");
    let dep = ops::scalar(ops::BinOp::Add, &g, 1.0).unwrap();
    let e = dep.wait_to_read().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Index);
    assert!(e.to_string().contains("gather_nd"), "{e}");
    assert!(e.to_string().contains("index 3 is out of bounds"), "{e}");
    assert!(dep.wait_to_read().is_ok(), "raised once");
    let e = g.to_vec::<f32>().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Index);
    // below -n fails too
    let g = ops::gather_nd(&d, &arr(&[-3.], &[1, 1])).unwrap();
    assert_eq!(g.wait_to_read().unwrap_err().kind(), ErrorKind::Index);
}

#[test]
fn scatter_nd_values_and_gradient() {
    let v = arr(&[9., 8.], &[2]);
    let idx = arr(&[1., 0., 2., 1.], &[2, 2]);
    let s = ops::scatter_nd(&v, &idx, Shape::new(&[2, 3])).unwrap();
    assert_eq!(vals(&s), [0., 8., 0., 0., 0., 9.]);
    // rows
    let v = arr(&[1., 2., 3., 4.], &[2, 2]);
    let s = ops::scatter_nd(&v, &arr(&[2., 0.], &[1, 2]), Shape::new(&[3, 2])).unwrap();
    assert_eq!(vals(&s), [3., 4., 0., 0., 1., 2.]);
    // gather_nd(scatter_nd(v)) round-trips
    assert_eq!(vals(&ops::gather_nd(&s, &arr(&[2., 0.], &[1, 2])).unwrap()), [1., 2., 3., 4.]);
    // data shape must be indices.shape[1:] + shape[M:]
    assert!(ops::scatter_nd(&v, &arr(&[2., 0.], &[1, 2]), Shape::new(&[3, 3])).is_err());
    let bad = ops::scatter_nd(&arr(&[1.], &[1]), &arr(&[5.], &[1, 1]), Shape::new(&[3])).unwrap();
    assert_eq!(bad.wait_to_read().unwrap_err().kind(), ErrorKind::Index);
    let idx = arr(&[1., 0., 1., 2., 0., 1.], &[2, 3]);
    check_grad(&[data(3, &[3])], |a| ops::scatter_nd(&a[0], &idx, Shape::new(&[2, 3])), 1e-6);
}

#[test]
fn slice_follows_mxnet() {
    let x = arr(&[1., 2., 3., 4., 5., 6., 7., 8., 9., 10., 11., 12.], &[3, 4]);
    // the examples of MXNet's slice docs
    let s = ops::slice(&x, &[0, 1], &[2, 4], &[]).unwrap();
    assert_eq!(s.dims(), [2, 3]);
    assert_eq!(vals(&s), [2., 3., 4., 6., 7., 8.]);
    let s = ops::slice(&x, &[N, 0], &[N, 3], &[-1, 2]).unwrap();
    assert_eq!(s.dims(), [3, 2]);
    assert_eq!(vals(&s), [9., 11., 5., 7., 1., 3.]);
    // fewer entries than dims; negative begin/end; clipping
    assert_eq!(vals(&ops::slice(&x, &[-1], &[N], &[]).unwrap()), [9., 10., 11., 12.]);
    assert_eq!(vals(&ops::slice(&x, &[1, -3], &[100, -1], &[]).unwrap()), [6., 7., 10., 11.]);
    assert_eq!(vals(&ops::slice(&x, &[0, -100], &[1, 2], &[]).unwrap()), [1., 2.]);
    // negative steps: end None runs to the start; explicit end -5 (= -1 after +len) too
    assert_eq!(vals(&ops::slice(&x, &[0, N], &[1, N], &[1, -1]).unwrap()), [4., 3., 2., 1.]);
    assert_eq!(vals(&ops::slice(&x, &[0, 10], &[1, -5], &[1, -2]).unwrap()), [4., 2.]);
    assert_eq!(vals(&ops::slice(&x, &[0, 2], &[1, 0], &[N, -1]).unwrap()), [3., 2.]);
    // empty ranges
    assert_eq!(ops::slice(&x, &[2], &[1], &[]).unwrap().dims(), [0, 4]);
    assert_eq!(ops::slice(&x, &[0, 1], &[3, 3], &[1, -1]).unwrap().dims(), [3, 0]);
    assert_eq!(ops::slice(&x, &[5], &[N], &[]).unwrap().dims(), [0, 4]);
    // errors
    assert!(ops::slice(&x, &[0], &[1, 2], &[]).is_err());
    assert!(ops::slice(&x, &[0, 0, 0], &[1, 1, 1], &[]).is_err());
    assert!(ops::slice(&x, &[0], &[1], &[0]).is_err());
    assert!(ops::slice(&x, &[0], &[1], &[1, 1]).is_err());
    check_grad(&[data(12, &[3, 4])], |a| ops::slice(&a[0], &[N, 0], &[N, 3], &[-1, 2]), 1e-6);
    check_grad(&[data(24, &[2, 3, 4])], |a| ops::slice(&a[0], &[1, -2], &[2, N], &[]), 1e-6);
}

#[test]
fn slice_like_and_broadcast_axis() {
    let x = iota(&[3, 4]);
    let like = ops::zeros([2, 3], DType::F32, Default::default()).expect("zeros");
    let s = ops::slice_like(&x, &like, &[]).unwrap();
    assert_eq!(vals(&s), [0., 1., 2., 4., 5., 6.]);
    let s = ops::slice_like(&x, &like, &[1]).unwrap();
    assert_eq!(s.dims(), [3, 3]);
    assert_eq!(vals(&s), [0., 1., 2., 4., 5., 6., 8., 9., 10.]);
    let big = ops::zeros([4, 4], DType::F32, Default::default()).expect("zeros");
    assert!(ops::slice_like(&x, &big, &[]).is_err());
    assert!(ops::slice_like(&x, &ops::zeros([2], DType::F32, Default::default()).expect("zeros"), &[]).is_err());
    let like2 = arr64(&[0.; 6], &[2, 3]);
    check_grad(&[data(12, &[3, 4])], |a| ops::slice_like(&a[0], &like2, &[0]), 1e-6);

    let y = arr(&[1., 2., 3.], &[1, 3]);
    let b = ops::broadcast_axis(&y, &[0], &[2]).unwrap();
    assert_eq!(vals(&b), [1., 2., 3., 1., 2., 3.]);
    let z = arr(&[1., 2.], &[2, 1, 1]);
    let b = ops::broadcast_axis(&z, &[1, -1], &[2, 3]).unwrap();
    assert_eq!(b.dims(), [2, 2, 3]);
    assert_eq!(vals(&b), [1., 1., 1., 1., 1., 1., 2., 2., 2., 2., 2., 2.]);
    assert_eq!(ops::broadcast_axis(&y, &[0], &[0]).unwrap().dims(), [0, 3]);
    assert!(ops::broadcast_axis(&y, &[1], &[2]).is_err());
    assert!(ops::broadcast_axis(&y, &[0], &[2, 3]).is_err());
    check_grad(&[data(3, &[3, 1])], |a| ops::broadcast_axis(&a[0], &[1], &[4]), 1e-6);
}

#[test]
fn diag_builds_and_extracts() {
    let v = arr(&[1., 2.], &[2]);
    assert_eq!(vals(&ops::diag(&v, 0, 0, 1).unwrap()), [1., 0., 0., 2.]);
    let d = ops::diag(&v, 1, 0, 1).unwrap();
    assert_eq!(d.dims(), [3, 3]);
    assert_eq!(vals(&d), [0., 1., 0., 0., 0., 2., 0., 0., 0.]);
    assert_eq!(vals(&ops::diag(&v, -1, 0, 1).unwrap()), [0., 0., 0., 1., 0., 0., 0., 2., 0.]);
    let m = iota(&[3, 4]);
    assert_eq!(vals(&ops::diag(&m, 0, 0, 1).unwrap()), [0., 5., 10.]);
    assert_eq!(vals(&ops::diag(&m, 1, 0, 1).unwrap()), [1., 6., 11.]);
    assert_eq!(vals(&ops::diag(&m, -1, 0, 1).unwrap()), [4., 9.]);
    assert_eq!(ops::diag(&m, 5, 0, 1).unwrap().dims(), [0]);
    let t = iota(&[2, 2, 3]);
    let e = ops::diag(&t, 0, 1, 2).unwrap();
    assert_eq!(e.dims(), [2, 2]);
    assert_eq!(vals(&e), [0., 4., 6., 10.]);
    let e = ops::diag(&t, 0, 0, 2).unwrap(); // t[i, j, i]
    assert_eq!(e.dims(), [2, 2]);
    assert_eq!(vals(&e), [0., 7., 3., 10.]);
    assert!(ops::diag(&t, 0, 1, 1).is_err());
    check_grad(&[data(3, &[3])], |a| ops::diag(&a[0], -1, 0, 1), 1e-6);
    check_grad(&[data(12, &[3, 4])], |a| ops::diag(&a[0], 1, 0, 1), 1e-6);
    check_grad(&[data(12, &[2, 2, 3])], |a| ops::diag(&a[0], 0, -1, 0), 1e-6);
}

#[test]
fn registry_entries() {
    let x = iota(&[3, 4]);
    let one = |name: &str, ins: &[&NDArray], a: &[(&str, Attr)]| {
        let ins: Vec<Option<NDArray>> = ins.iter().map(|x| Some((*x).clone())).collect();
        let mut r = invoke(name, &ins, &attrs(a)).unwrap();
        assert_eq!(r.len(), 1);
        r.remove(0)
    };
    assert_eq!(one("tile", &[&x], &[("reps", ints(&[1, 2]))]).dims(), [3, 8]);
    assert_eq!(one("repeat", &[&x], &[("repeats", Attr::Int(2))]).dims(), [24]);
    assert_eq!(one("repeat", &[&x], &[("repeats", Attr::Int(2)), ("axis", Attr::Int(1))]).dims(), [3, 8]);
    assert_eq!(vals(&one("reverse", &[&x], &[("axis", Attr::Int(0))]))[..4], [8., 9., 10., 11.]);
    assert_eq!(vals(&one("flip", &[&x], &[("axis", ints(&[1]))]))[..4], [3., 2., 1., 0.]);
    assert_eq!(one("moveaxis", &[&x], &[("source", Attr::Int(0)), ("destination", Attr::Int(1))]).dims(), [4, 3]);
    let idx = arr(&[2., 1.], &[2, 1]);
    assert_eq!(vals(&one("gather_nd", &[&x, &idx], &[])), [9.]);
    let s = one("scatter_nd", &[&arr(&[7.], &[1]), &idx], &[("shape", ints(&[3, 2]))]);
    assert_eq!(vals(&s), [0., 0., 0., 0., 0., 7.]);
    let s = one("slice", &[&x], &[("begin", ints(&[N, 1])), ("end", ints(&[N, N])), ("step", ints(&[2, N]))]);
    assert_eq!(vals(&s), [1., 2., 3., 9., 10., 11.]);
    let s = one("slice", &[&x], &[("begin", ints(&[1])), ("end", ints(&[2])), ("step", Attr::None)]);
    assert_eq!(vals(&s), [4., 5., 6., 7.]);
    assert!(invoke("slice", &[Some(x.clone())], &attrs(&[("begin", ints(&[1]))])).is_err());
    let like = ops::zeros([1, 2], DType::F32, Default::default()).expect("zeros");
    assert_eq!(vals(&one("slice_like", &[&x, &like], &[])), [0., 1.]);
    assert_eq!(vals(&one("slice_like", &[&x, &like], &[("axes", ints(&[1]))])), [0., 1., 4., 5., 8., 9.]);
    let y = arr(&[1., 2.], &[2, 1]);
    assert_eq!(
        vals(&one("broadcast_axis", &[&y], &[("axis", Attr::Int(1)), ("size", Attr::Int(2))])),
        [1., 1., 2., 2.]
    );
    assert_eq!(vals(&one("diag", &[&x], &[("k", Attr::Int(2))])), [2., 7.]);
    for name in [
        "tile",
        "repeat",
        "flip",
        "reverse",
        "moveaxis",
        "gather_nd",
        "scatter_nd",
        "slice",
        "slice_like",
        "broadcast_axis",
        "diag",
    ] {
        assert!(ferromx::registry::OPS.iter().any(|o| o.name == name), "{name} missing from OPS");
    }
}
