//! Elementwise predicates: operators whose result is a bool array whatever their
//! operands' dtype.
//!
//! - NumPy's float tests `isnan`, `isinf`, `isfinite`, `isposinf`, `isneginf` (MXNet's
//!   `_npi_isnan` ...), `signbit` and `mx.np`'s `logical_not` ([`Test`]);
//! - `mx.np`'s comparisons (`_npi_equal`, `_npi_less_equal` ... and their `_scalar`
//!   forms). Legacy `nd`'s comparisons (`broadcast_equal`, in the binary family) keep the
//!   input dtype and write 1/0; MXNet's np returns bool, and so do these, in one pass.
//!
//! Every one is a zero-gradient operator, as MXNet records them: `backward` through
//! `isnan(x)` or `x == y` writes zeros.

mod cpu;
#[cfg(test)]
mod tests;

use crate::autograd::needs_record;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    param, push_call, Aliases, Attrs, Grad, GraphForm, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamDef,
    ParamKind, ScalarForm,
};
use crate::ops::binary::record_zero_grad;
use crate::ops::{self, check_ctx, BinOp};
use crate::shape::Shape;

/// An elementwise test with a bool result (the scalar form of a [`DEFS`] operator).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Test {
    /// `x != x`: NaN (false for integers).
    IsNan,
    /// ±inf.
    IsInf,
    /// Neither inf nor NaN (true for integers).
    IsFinite,
    /// +inf.
    IsPosInf,
    /// -inf.
    IsNegInf,
    /// The sign bit is set (`-0.0` and negative NaN included; `x < 0` for integers).
    SignBit,
    /// `x == 0`.
    LogicalNot,
}

impl Test {
    /// The operator computing this test (`DEFS` starts with the tests in `Test` order).
    pub fn def(self) -> &'static OpDef {
        &DEFS[self as usize]
    }
}

const N_TEST: usize = 7;
/// The comparisons, in the order of their definitions after the tests.
const CMPS: [BinOp; 6] = [BinOp::Eq, BinOp::Ne, BinOp::Gt, BinOp::Ge, BinOp::Lt, BinOp::Le];
const NOT_DIFF: &str = "a predicate's result is piecewise constant: zero gradients flow, as in MXNet";
const SCALAR: &[ParamDef] = &[param("scalar", ParamKind::Float, Some("1.0"), "The scalar operand.")];

fn cmp_slot(op: BinOp) -> Result<usize> {
    CMPS.iter().position(|&c| c == op).ok_or_else(|| Error::value(op.name(), "not a comparison: no bool-valued form"))
}

/// `s op x` as `x op' s` (`s > x` is `x < s`).
fn swapped(op: BinOp) -> BinOp {
    match op {
        BinOp::Gt => BinOp::Lt,
        BinOp::Ge => BinOp::Le,
        BinOp::Lt => BinOp::Gt,
        BinOp::Le => BinOp::Ge,
        op => op,
    }
}

/// The broadcasting bool comparison `op` (`_npi_equal` for [`BinOp::Eq`]).
pub fn compare_def(op: BinOp) -> Result<&'static OpDef> {
    Ok(&DEFS[N_TEST + cmp_slot(op)?])
}

/// The scalar bool comparison computing `x op s` (or `s op x` with `reverse`).
pub fn compare_scalar_def(op: BinOp, reverse: bool) -> Result<&'static OpDef> {
    let op = if reverse { swapped(op) } else { op };
    Ok(&DEFS[N_TEST + CMPS.len() + cmp_slot(op)?])
}

fn infer_test(_def: &OpDef, _a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    Ok(vec![Meta { shape: ins[0].shape.clone(), dtype: DType::Bool, ctx: ins[0].ctx }])
}

fn infer_pair(def: &OpDef, _a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (a, b) = (&ins[0], &ins[1]);
    if a.ctx != b.ctx {
        return Err(Error::Context { op: def.name.into(), a: a.ctx.to_string(), b: b.ctx.to_string() });
    }
    let shape = Shape::broadcast(def.name, &a.shape, &b.shape)?;
    Ok(vec![Meta { shape, dtype: DType::Bool, ctx: a.ctx }])
}

fn forward_test(inv: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let Some(ScalarForm::Test(t)) = inv.def.scalar else { unreachable!("predicate tests have a Test form") };
    Ok(vec![test(t, inv.x(0)?)?])
}

fn forward_pair(inv: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let Some(ScalarForm::BoolBinary(op)) = inv.def.scalar else { unreachable!("comparisons have a BoolBinary form") };
    Ok(vec![compare(op, inv.x(0)?, inv.x(1)?)?])
}

fn forward_scalar(inv: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let Some(ScalarForm::BoolScalar(op)) = inv.def.scalar else { unreachable!("comparisons have a BoolScalar form") };
    Ok(vec![compare_scalar(op, inv.x(0)?, inv.f64("scalar")?, false)?])
}

/// `t(x)` as a bool array.
pub fn test(t: Test, x: &NDArray) -> Result<NDArray> {
    let def = t.def();
    let out = NDArray::empty(x.shape().clone(), DType::Bool, x.ctx())?;
    if out.size() > 0 {
        push_call(OpCall::new(def, &[x], &[&out]))?;
    }
    if needs_record(&[x]) {
        record_zero_grad(def, &[x], &out, &[]);
    }
    Ok(out)
}

/// `op(a, b)` of a comparison as a bool array, with broadcasting; operands of different
/// dtypes are compared in the promoted one.
pub fn compare(op: BinOp, a: &NDArray, b: &NDArray) -> Result<NDArray> {
    let def = compare_def(op)?;
    check_ctx(def.name, a, b)?;
    let shape = Shape::broadcast(def.name, a.shape(), b.shape())?;
    let dt = DType::promote(a.dtype(), b.dtype());
    let cast = |x: &NDArray| if x.dtype() == dt { Ok(x.clone()) } else { ops::astype(x, dt) };
    let (a2, b2) = (cast(a)?, cast(b)?);
    let out = NDArray::empty(shape, DType::Bool, a.ctx())?;
    if out.size() > 0 {
        push_call(OpCall::new(def, &[&a2, &b2], &[&out]))?;
    }
    if needs_record(&[a, b]) {
        record_zero_grad(def, &[a, b], &out, &[]);
    }
    Ok(out)
}

/// `x op s` (or `s op x` with `reverse`) as a bool array, `s` cast to `x`'s dtype.
pub fn compare_scalar(op: BinOp, x: &NDArray, s: f64, reverse: bool) -> Result<NDArray> {
    let def = compare_scalar_def(op, reverse)?;
    let out = NDArray::empty(x.shape().clone(), DType::Bool, x.ctx())?;
    if out.size() > 0 {
        push_call(OpCall::new(def, &[x], &[&out]).with_nums(&[s]))?;
    }
    if needs_record(&[x]) {
        record_zero_grad(def, &[x], &out, &[s]);
    }
    Ok(out)
}

const fn test_def(name: &'static str, np: &'static [&'static str], t: Test, doc: &'static str) -> OpDef {
    OpDef {
        name,
        aliases: Aliases { nd: &[], np, npx: &[], fluent: false },
        inputs: &["x"],
        doc,
        infer: Some(infer_test),
        forward: forward_test,
        grad: Grad::None(NOT_DIFF),
        cpu: KernelSlot::Call(cpu::run_test),
        scalar: Some(ScalarForm::Test(t)),
        graph: GraphForm::PLAIN,
        ..OpDef::BASE
    }
}

const fn pair(name: &'static str, np: &'static [&'static str], op: BinOp, doc: &'static str) -> OpDef {
    OpDef {
        name,
        aliases: Aliases { nd: &[], np, npx: &[], fluent: false },
        inputs: &["x1", "x2"],
        doc,
        infer: Some(infer_pair),
        forward: forward_pair,
        grad: Grad::None(NOT_DIFF),
        cpu: KernelSlot::Call(cpu::run_pair),
        scalar: Some(ScalarForm::BoolBinary(op)),
        ..OpDef::BASE
    }
}

const fn scalar(name: &'static str, op: BinOp, doc: &'static str) -> OpDef {
    OpDef {
        name,
        inputs: &["x"],
        params: SCALAR,
        doc,
        infer: Some(infer_test),
        forward: forward_scalar,
        grad: Grad::None(NOT_DIFF),
        cpu: KernelSlot::Call(cpu::run_scalar),
        scalar: Some(ScalarForm::BoolScalar(op)),
        ..OpDef::BASE
    }
}

/// The predicates: the tests in [`Test`] order, then the comparisons and their scalar
/// forms in `CMPS` order (a unit test checks both).
pub static DEFS: &[OpDef] = &[
    test_def("_npi_isnan", &["isnan"], Test::IsNan, "Whether each element is NaN (a bool array; false for integers)."),
    test_def(
        "_npi_isinf",
        &["isinf"],
        Test::IsInf,
        "Whether each element is positive or negative infinity (a bool array).",
    ),
    test_def(
        "_npi_isfinite",
        &["isfinite"],
        Test::IsFinite,
        "Whether each element is finite: neither infinity nor NaN (a bool array).",
    ),
    test_def(
        "_npi_isposinf",
        &["isposinf"],
        Test::IsPosInf,
        "Whether each element is positive infinity (a bool array).",
    ),
    test_def(
        "_npi_isneginf",
        &["isneginf"],
        Test::IsNegInf,
        "Whether each element is negative infinity (a bool array).",
    ),
    test_def(
        "_npi_signbit",
        &["signbit"],
        Test::SignBit,
        "Whether each element's sign bit is set, `-0.0` included (a bool array).",
    ),
    test_def(
        "_npi_logical_not",
        &["logical_not"],
        Test::LogicalNot,
        "Logical NOT: true where the element is zero (a bool array).",
    ),
    pair("_npi_equal", &["equal"], BinOp::Eq, "`x1 == x2` elementwise, with broadcasting (a bool array)."),
    pair("_npi_not_equal", &["not_equal"], BinOp::Ne, "`x1 != x2` elementwise, with broadcasting (a bool array)."),
    pair("_npi_greater", &["greater"], BinOp::Gt, "`x1 > x2` elementwise, with broadcasting (a bool array)."),
    pair(
        "_npi_greater_equal",
        &["greater_equal"],
        BinOp::Ge,
        "`x1 >= x2` elementwise, with broadcasting (a bool array).",
    ),
    pair("_npi_less", &["less"], BinOp::Lt, "`x1 < x2` elementwise, with broadcasting (a bool array)."),
    pair("_npi_less_equal", &["less_equal"], BinOp::Le, "`x1 <= x2` elementwise, with broadcasting (a bool array)."),
    scalar("_npi_equal_scalar", BinOp::Eq, "`x == scalar` (the scalar cast to x's dtype; a bool array)."),
    scalar("_npi_not_equal_scalar", BinOp::Ne, "`x != scalar` (the scalar cast to x's dtype; a bool array)."),
    scalar("_npi_greater_scalar", BinOp::Gt, "`x > scalar` (the scalar cast to x's dtype; a bool array)."),
    scalar("_npi_greater_equal_scalar", BinOp::Ge, "`x >= scalar` (the scalar cast to x's dtype; a bool array)."),
    scalar("_npi_less_scalar", BinOp::Lt, "`x < scalar` (the scalar cast to x's dtype; a bool array)."),
    scalar("_npi_less_equal_scalar", BinOp::Le, "`x <= scalar` (the scalar cast to x's dtype; a bool array)."),
];
