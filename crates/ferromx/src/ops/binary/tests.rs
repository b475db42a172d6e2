//! Unit tests of the binary family's definitions.

use super::{binary_scalar, BinOp, DEFS, N_BINOP};
use crate::opdef::ScalarForm;

#[test]
fn defs_are_in_bin_op_order() {
    assert_eq!(DEFS.len(), 2 * N_BINOP + 8);
    for (i, d) in DEFS.iter().enumerate().take(2 * N_BINOP) {
        let op = match d.scalar {
            Some(ScalarForm::Binary(op)) => op,
            Some(ScalarForm::Scalar(op, false)) => op,
            _ => panic!("{} has no forward scalar form", d.name),
        };
        assert_eq!(op as usize, i % N_BINOP, "{} is out of BinOp order", d.name);
    }
    for op in
        [BinOp::Sub, BinOp::Div, BinOp::Mod, BinOp::Pow, BinOp::Arctan2, BinOp::Copysign, BinOp::Ldexp, BinOp::Fmod]
    {
        assert!(matches!(op.scalar_def(true).scalar, Some(ScalarForm::Scalar(o, true)) if o == op));
    }
    // A reversed comparison is the swapped comparison.
    assert_eq!(BinOp::Gt.scalar_def(true).name, "_lesser_scalar");
    assert_eq!(BinOp::Add.scalar_def(true).name, "_plus_scalar");
    assert_eq!(BinOp::Fmax.scalar_def(true).name, "_npi_fmax_scalar");
    assert_eq!(BinOp::Arctan2.scalar_def(true).name, "_npi_rarctan2_scalar");
}

#[test]
fn scalar_functions() {
    assert_eq!(binary_scalar(BinOp::Mod, -7.0, 3.0), 2.0);
    assert_eq!(binary_scalar(BinOp::Hypot, 3.0, 4.0), 5.0);
    assert_eq!(binary_scalar(BinOp::Ge, 2.0, 2.0), 1.0);
    assert_eq!(binary_scalar(BinOp::Arctan2, -0.0, -1.0), -std::f64::consts::PI);
    assert!(binary_scalar(BinOp::Copysign, 2.0, -0.0) == -2.0);
    assert_eq!(binary_scalar(BinOp::Ldexp, 3.0, 2.0), 12.0);
    assert_eq!(binary_scalar(BinOp::Fmax, f64::NAN, 1.0), 1.0);
    assert_eq!(binary_scalar(BinOp::Fmin, 1.0, f64::NAN), 1.0);
    assert_eq!(binary_scalar(BinOp::Fmod, -7.0, 3.0), -1.0);
}

#[test]
fn integer_functions_and_dtype_rules() {
    use super::arith::Arith;
    use crate::dtype::DType;
    assert_eq!(12i32.gcd_(-18), 6);
    assert_eq!(i64::MIN.gcd_(6), 2);
    assert_eq!(4i8.lcm_(6), 12);
    assert_eq!(0u8.lcm_(5), 0);
    assert_eq!((-7i32).fmod_(3), -1);
    assert_eq!(7i32.fmod_(0), 0);
    assert_eq!(BinOp::Arctan2.compute_dtype("t", DType::I32).unwrap(), DType::F32);
    assert_eq!(BinOp::Arctan2.compute_dtype("t", DType::F64).unwrap(), DType::F64);
    assert!(BinOp::Gcd.compute_dtype("t", DType::F32).is_err());
    assert_eq!(BinOp::Fmod.compute_dtype("t", DType::U8).unwrap(), DType::U8);
}
