//! Elementwise expressions over an operator's input `x` and output `y`.
//!
//! An elementwise operator's derivative is data, not code: `tanh`'s is
//! `1 - y*y`. Autograd evaluates it with ordinary operators (so the backward
//! runs on the engine and can itself be differentiated), and a fusion pass
//! can compose it with its neighbours instead of calling an opaque closure.

use crate::error::Result;
use crate::ndarray::NDArray;
use crate::ops::{self, BinOp, UnaryOp};

/// An expression in `x` (the input) and `y` (the output).
#[derive(Debug)]
pub enum Expr {
    /// The operator's input.
    X,
    /// The operator's output.
    Y,
    /// A constant.
    C(f64),
    /// A unary operator applied to an expression.
    U(UnaryOp, &'static Expr),
    /// A binary operator of two expressions.
    B(BinOp, &'static Expr, &'static Expr),
}

impl Expr {
    /// Evaluates the expression with operators (pushed to the engine).
    pub fn eval(&self, x: &NDArray, y: &NDArray) -> Result<NDArray> {
        Ok(match self {
            Expr::X => x.clone(),
            Expr::Y => y.clone(),
            Expr::C(c) => ops::full_like(x, *c)?,
            Expr::U(u, a) => ops::unary(*u, &a.eval(x, y)?)?,
            Expr::B(op, Expr::C(c), b) => ops::scalar_r(*op, &b.eval(x, y)?, *c)?,
            Expr::B(op, a, Expr::C(c)) => ops::scalar(*op, &a.eval(x, y)?, *c)?,
            Expr::B(op, a, b) => ops::binary(*op, &a.eval(x, y)?, &b.eval(x, y)?)?,
        })
    }

    /// Whether the expression reads `(x, y)`: a backward keeps only those arrays
    /// (a constant's shape comes from either, they have the same shape and dtype).
    pub fn reads(&self) -> (bool, bool) {
        match self {
            Expr::X => (true, false),
            Expr::Y => (false, true),
            Expr::C(_) => (false, false),
            Expr::U(_, a) => a.reads(),
            Expr::B(_, a, b) => {
                let ((ax, ay), (bx, by)) = (a.reads(), b.reads());
                (ax || bx, ay || by)
            }
        }
    }

    /// Evaluates the expression on one element (fusion and tests).
    pub fn eval_scalar(&self, x: f64, y: f64) -> f64 {
        match self {
            Expr::X => x,
            Expr::Y => y,
            Expr::C(c) => *c,
            Expr::U(u, a) => ops::unary_scalar(*u, a.eval_scalar(x, y)),
            Expr::B(op, a, b) => ops::binary_scalar(*op, a.eval_scalar(x, y), b.eval_scalar(x, y)),
        }
    }
}
