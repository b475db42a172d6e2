//! Unit tests of the unary family's definitions.

use super::{unary_scalar, UnaryOp, DEFS};
use crate::opdef::ScalarForm;

#[test]
fn defs_are_in_unary_op_order() {
    for (i, d) in DEFS.iter().enumerate() {
        let u = d.unary_op().expect("unary definition");
        assert_eq!(u as usize, i, "{} is out of UnaryOp order", d.name);
        assert!(std::ptr::eq(u.def(), d));
    }
    assert_eq!(DEFS.len(), UnaryOp::SignSte as usize + 1);
}

/// Each derivative expression agrees with a central difference of the
/// scalar function at points inside the operator's example range.
#[test]
fn derivative_expressions_match_finite_differences() {
    for d in DEFS {
        let Some(ScalarForm::Unary(op, Some(expr))) = &d.scalar else { continue };
        if matches!(op, UnaryOp::RoundSte | UnaryOp::SignSte) {
            // straight-through estimators: the gradient is deliberately not the derivative
            assert_eq!(expr.eval_scalar(0.3, unary_scalar(*op, 0.3)), 1.0, "{}", d.name);
            continue;
        }
        let (lo, hi) = d.example.as_ref().map(|e| e.range).unwrap_or((0.1, 0.45));
        for k in 0..5 {
            let x = lo + (hi - lo) * (k as f64 + 0.5) / 5.0;
            let h = 1e-6;
            let num = (unary_scalar(*op, x + h) - unary_scalar(*op, x - h)) / (2.0 * h);
            let ana = expr.eval_scalar(x, unary_scalar(*op, x));
            assert!((num - ana).abs() <= 1e-5 * (1.0 + num.abs()), "{} at {x}: {ana} vs {num}", d.name);
        }
    }
}
