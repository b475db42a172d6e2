//! Unit tests of the reduction family.

use super::{argmax, norm, reduce, ReduceOp, DEFS};
use crate::ops::test_support::{all_call_kernels_with_inference, arr};
use crate::{Context, DType, NDArray};

#[test]
fn defs_are_in_reduce_op_order_and_run_calls() {
    use ReduceOp::*;
    for op in [Sum, Mean, Prod, Max, Min, NanSum, NanProd] {
        assert_eq!(op.def().name, op.name());
    }
    assert_eq!([DEFS[7].name, DEFS[8].name, DEFS[9].name], ["norm", "argmax", "argmin"]);
    assert!(all_call_kernels_with_inference(DEFS));
}

#[test]
fn mean_over_split_axes_is_one_mean() {
    let x = arr((0..24).map(|v| v as f32).collect(), &[2, 3, 4]);
    let m = reduce(ReduceOp::Mean, &x, Some(&[0, 2]), false, false).unwrap();
    assert_eq!(m.to_vec::<f32>().unwrap(), [7.5, 11.5, 15.5]);
}

#[test]
fn norm_reduces_any_axes_in_float64() {
    let x = arr(vec![3.0, -4.0, 1e30, 0.0, 1.0, 1e30], &[2, 3]);
    let l2 = norm(&x, 2, Some(&[0]), false).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(l2[0], 3.0);
    assert!((l2[2] - 1.4142135e30).abs() < 1e24, "{l2:?}");
    let l1 = norm(&x, 1, None, true).unwrap();
    assert_eq!(l1.dims(), [1, 1]);
    let empty = NDArray::from_vec(Vec::<f32>::new(), [0, 3], Context::default()).unwrap();
    assert_eq!(norm(&empty, 2, None, false).unwrap().to_vec::<f32>().unwrap(), [0.0]);
    let xi = NDArray::from_vec(vec![3i32, -4], [2], Context::default()).unwrap();
    let n = norm(&xi, 2, None, false).unwrap();
    assert_eq!((n.dtype(), n.to_vec::<f32>().unwrap()), (DType::F32, vec![5.0]));
}

#[test]
fn argmin_reads_its_definition() {
    let x = arr(vec![2.0, 0.5, 3.0, 1.0], &[2, 2]);
    let a = argmax(&x, Some(1), false, true, DType::F32).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), [1.0, 1.0]);
}
