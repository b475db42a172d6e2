//! Unit tests of the predicate family.

use super::{compare, compare_def, compare_scalar, compare_scalar_def, test, Test, CMPS, DEFS, N_TEST};
use crate::opdef::ScalarForm;
use crate::ops::{self, BinOp};
use crate::{Context, DType, NDArray, Shape};

fn arr(v: &[f32], shape: &[usize]) -> NDArray {
    NDArray::from_vec(v.to_vec(), Shape::new(shape), Context::default()).unwrap()
}

#[test]
fn defs_are_in_test_and_comparison_order() {
    assert_eq!(DEFS.len(), N_TEST + 2 * CMPS.len());
    for t in [Test::IsNan, Test::IsInf, Test::IsFinite, Test::IsPosInf, Test::IsNegInf, Test::SignBit, Test::LogicalNot]
    {
        assert!(matches!(t.def().scalar, Some(ScalarForm::Test(u)) if u == t), "{}", t.def().name);
    }
    for op in CMPS {
        assert!(matches!(compare_def(op).unwrap().scalar, Some(ScalarForm::BoolBinary(o)) if o == op));
        assert!(matches!(compare_scalar_def(op, false).unwrap().scalar, Some(ScalarForm::BoolScalar(o)) if o == op));
    }
    assert_eq!(compare_scalar_def(BinOp::Gt, true).unwrap().name, "_npi_less_scalar");
    assert!(compare_def(BinOp::Add).is_err());
}

#[test]
fn tests_of_special_floats() {
    let x = arr(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0, -2.0], &[6]);
    let got = |t| test(t, &x).unwrap().to_vec::<bool>().unwrap();
    assert_eq!(got(Test::IsNan), [true, false, false, false, false, false]);
    assert_eq!(got(Test::IsInf), [false, true, true, false, false, false]);
    assert_eq!(got(Test::IsFinite), [false, false, false, true, true, true]);
    assert_eq!(got(Test::IsPosInf), [false, true, false, false, false, false]);
    assert_eq!(got(Test::IsNegInf), [false, false, true, false, false, false]);
    assert_eq!(got(Test::SignBit), [false, false, true, true, false, true]);
    assert_eq!(got(Test::LogicalNot), [false, false, false, true, true, false]);
}

#[test]
fn comparisons_broadcast_promote_and_cast_scalars() {
    let a = arr(&[1.0, 2.0, 3.0], &[1, 3]);
    let b = ops::astype(&arr(&[2.0, 3.0], &[2, 1]), DType::I32).unwrap();
    let r = compare(BinOp::Ge, &a, &b).unwrap();
    assert_eq!((r.shape().dims().to_vec(), r.dtype()), (vec![2, 3], DType::Bool));
    assert_eq!(r.to_vec::<bool>().unwrap(), [false, true, true, false, false, true]);
    let i = ops::astype(&arr(&[2.0, 3.0], &[2]), DType::I32).unwrap();
    // the scalar is cast to the array's dtype: 2.5 -> 2
    assert_eq!(compare_scalar(BinOp::Eq, &i, 2.5, false).unwrap().to_vec::<bool>().unwrap(), [true, false]);
    // 2.5 < x, i.e. x > 2
    assert_eq!(compare_scalar(BinOp::Lt, &i, 2.5, true).unwrap().to_vec::<bool>().unwrap(), [false, true]);
}
