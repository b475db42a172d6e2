//! CPU kernels of the predicates: read any dtype, write bool.

use super::Test;
use crate::dtype::Elem;
use crate::engine::{ErrorKind, OpFailure};
use crate::opdef::{OpCall, ScalarForm};
use crate::ops::binary::apply_bcast;
use crate::ops::par::map1;
use crate::ops::BinOp;
use crate::storage::Kernel;
use crate::with_dtype;

fn internal(msg: &str) -> OpFailure {
    OpFailure::new(ErrorKind::Runtime, msg.to_string())
}

/// `t(x)` on one element.
#[inline(always)]
fn holds<T: Elem>(t: Test, x: T) -> bool {
    let v = x.to_f64();
    match t {
        Test::IsNan => v.is_nan(),
        Test::IsInf => v.is_infinite(),
        Test::IsFinite => v.is_finite(),
        Test::IsPosInf => v == f64::INFINITY,
        Test::IsNegInf => v == f64::NEG_INFINITY,
        Test::SignBit => v.is_sign_negative(),
        Test::LogicalNot => v == 0.0,
    }
}

/// Kernel of the tests: output 0 (bool) = t(input 0).
pub(super) fn run_test(call: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let Some(ScalarForm::Test(t)) = call.def.scalar else { return Err(internal("not a predicate test")) };
    with_dtype!(k.in_dtype(0), T, {
        let (x, o) = (k.input::<T>(0), k.output::<bool>(0));
        match t {
            // one arm per test, so each loop is a plain compare the compiler vectorizes
            Test::IsNan => map1(x, o, |v: T| holds(Test::IsNan, v)),
            Test::IsInf => map1(x, o, |v: T| holds(Test::IsInf, v)),
            Test::IsFinite => map1(x, o, |v: T| holds(Test::IsFinite, v)),
            Test::IsPosInf => map1(x, o, |v: T| holds(Test::IsPosInf, v)),
            Test::IsNegInf => map1(x, o, |v: T| holds(Test::IsNegInf, v)),
            Test::SignBit => map1(x, o, |v: T| holds(Test::SignBit, v)),
            Test::LogicalNot => map1(x, o, |v: T| holds(Test::LogicalNot, v)),
        }
    });
    Ok(())
}

macro_rules! dispatch_cmp {
    ($op:expr, $f:ident, $($args:expr),*) => {
        match $op {
            BinOp::Eq => $f($($args,)* |a, b| a == b),
            BinOp::Ne => $f($($args,)* |a, b| a != b),
            BinOp::Gt => $f($($args,)* |a, b| a > b),
            BinOp::Ge => $f($($args,)* |a, b| a >= b),
            BinOp::Lt => $f($($args,)* |a, b| a < b),
            BinOp::Le => $f($($args,)* |a, b| a <= b),
            _ => return Err(internal("not a comparison")),
        }
    };
}

/// Kernel of the comparisons: output 0 (bool) = op(input 0, input 1), the inputs read
/// through broadcast strides of the output's shape.
#[allow(clippy::bool_comparison)] // the comparisons are generic over T, bool among them
pub(super) fn run_pair(call: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let Some(ScalarForm::BoolBinary(op)) = call.def.scalar else { return Err(internal("not a comparison")) };
    let oshape = call.outputs[0].shape.clone();
    let sa = call.inputs[0].shape.broadcast_strides(&oshape);
    let sb = call.inputs[1].shape.broadcast_strides(&oshape);
    with_dtype!(k.in_dtype(0), T, {
        let (x, y, o) = (k.input::<T>(0), k.input::<T>(1), k.output::<bool>(0));
        dispatch_cmp!(op, apply_bcast, x, &sa, y, &sb, &oshape, o);
    });
    Ok(())
}

/// Kernel of the scalar comparisons: output 0 (bool) = op(input 0, s), `s` cast to the
/// input's dtype first (MXNet: `int_array == 2.5` compares with 2).
#[allow(clippy::bool_comparison)]
pub(super) fn run_scalar(call: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let Some(ScalarForm::BoolScalar(op)) = call.def.scalar else { return Err(internal("not a comparison")) };
    let s = call.nums.first().copied().ok_or_else(|| internal("scalar comparison without its scalar"))?;
    with_dtype!(k.in_dtype(0), T, {
        let (x, o) = (k.input::<T>(0), k.output::<bool>(0));
        let sv = T::from_f64(s);
        macro_rules! go {
            ($f:expr) => {{
                let f = $f;
                map1(x, o, move |v: T| f(v, sv))
            }};
        }
        match op {
            BinOp::Eq => go!(|a: T, b: T| a == b),
            BinOp::Ne => go!(|a: T, b: T| a != b),
            BinOp::Gt => go!(|a: T, b: T| a > b),
            BinOp::Ge => go!(|a: T, b: T| a >= b),
            BinOp::Lt => go!(|a: T, b: T| a < b),
            BinOp::Le => go!(|a: T, b: T| a <= b),
            _ => return Err(internal("not a comparison")),
        }
    });
    Ok(())
}
