//! Unit tests of the binary family's definitions.

use super::{binary_scalar, BinOp, DEFS, N_BINOP};
use crate::opdef::ScalarForm;

#[test]
fn defs_are_in_bin_op_order() {
    assert_eq!(DEFS.len(), 2 * N_BINOP + 4);
    for (i, d) in DEFS.iter().enumerate().take(2 * N_BINOP) {
        let op = match d.scalar {
            Some(ScalarForm::Binary(op)) => op,
            Some(ScalarForm::Scalar(op, false)) => op,
            _ => panic!("{} has no forward scalar form", d.name),
        };
        assert_eq!(op as usize, i % N_BINOP, "{} is out of BinOp order", d.name);
    }
    for op in [BinOp::Sub, BinOp::Div, BinOp::Mod, BinOp::Pow] {
        assert!(matches!(op.scalar_def(true).scalar, Some(ScalarForm::Scalar(o, true)) if o == op));
    }
    // A reversed comparison is the swapped comparison.
    assert_eq!(BinOp::Gt.scalar_def(true).name, "_lesser_scalar");
    assert_eq!(BinOp::Add.scalar_def(true).name, "_plus_scalar");
}

#[test]
fn scalar_functions() {
    assert_eq!(binary_scalar(BinOp::Mod, -7.0, 3.0), 2.0);
    assert_eq!(binary_scalar(BinOp::Hypot, 3.0, 4.0), 5.0);
    assert_eq!(binary_scalar(BinOp::Ge, 2.0, 2.0), 1.0);
}
