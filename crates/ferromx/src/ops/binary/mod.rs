//! Binary elementwise operators with NumPy broadcasting, their scalar forms
//! (`_plus_scalar`, `_rminus_scalar`, ...), in-place forms and gradients.
//!
//! Each broadcasting operator and each scalar operator is one [`OpDef`];
//! the function is a [`BinOp`], which the kernels in `cpu.rs` dispatch on
//! and which a fusion pass can compose.

pub mod arith;
pub mod bitwise;
mod cpu;
#[cfg(test)]
mod tests;

pub use cpu::binary_scalar;
pub(crate) use cpu::{apply_bcast, binary_tile, scalar_tile};

use crate::autograd::{needs_record, record};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    param, push_call, Aliases, Attrs, Example, Grad, GradArgs, GraphForm, Invocation, KernelSlot, Meta, OpCall, OpDef,
    ParamDef, ParamKind, ScalarForm,
};
use crate::ops::{self, check_ctx, sum_to};
use crate::shape::Shape;
use crate::storage::push_kernel;

/// A binary elementwise function (the scalar form of a binary operator).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// a + b
    Add,
    /// a - b
    Sub,
    /// a * b
    Mul,
    /// a / b
    Div,
    /// a % b (Python semantics)
    Mod,
    /// a ** b
    Pow,
    /// elementwise max
    Max,
    /// elementwise min
    Min,
    /// sqrt(a² + b²)
    Hypot,
    /// a == b (1 or 0)
    Eq,
    /// a != b
    Ne,
    /// a > b
    Gt,
    /// a >= b
    Ge,
    /// a < b
    Lt,
    /// a <= b
    Le,
    /// logical and
    And,
    /// logical or
    Or,
    /// logical xor
    Xor,
    /// The quadrant-aware arc tangent of `a / b` (NumPy's `arctan2`; float result).
    Arctan2,
    /// `a`'s magnitude with `b`'s sign (float result).
    Copysign,
    /// `a * 2 ** b` (float result).
    Ldexp,
    /// Elementwise maximum ignoring NaN (NaN only where both are).
    Fmax,
    /// Elementwise minimum ignoring NaN.
    Fmin,
    /// The C remainder: the sign of the dividend (NumPy's `fmod`).
    Fmod,
    /// Greatest common divisor of integers (non-negative).
    Gcd,
    /// Least common multiple of integers (non-negative).
    Lcm,
}

impl BinOp {
    /// The broadcasting operator's definition.
    ///
    /// `DEFS` lists the broadcasting operators in `BinOp` order, then the
    /// scalar ones in the same order, then the four reversed ones (a test
    /// checks this), so the lookup is an index.
    pub fn def(self) -> &'static OpDef {
        &DEFS[self as usize]
    }
    /// The scalar operator computing `op(x, s)` (or `op(s, x)` with `reverse`).
    pub fn scalar_def(self, reverse: bool) -> &'static OpDef {
        match (self, reverse) {
            (op, false) => &DEFS[N_BINOP + op as usize],
            (BinOp::Gt, true) => BinOp::Lt.scalar_def(false),
            (BinOp::Ge, true) => BinOp::Le.scalar_def(false),
            (BinOp::Lt, true) => BinOp::Gt.scalar_def(false),
            (BinOp::Le, true) => BinOp::Ge.scalar_def(false),
            (op, true) => match reversed_slot(op) {
                Some(i) => &DEFS[2 * N_BINOP + i],
                None => op.scalar_def(false), // commutative
            },
        }
    }
    /// MXNet operator name.
    pub fn name(self) -> &'static str {
        self.def().name
    }
    /// Name of the scalar form.
    pub fn scalar_name(self) -> &'static str {
        self.scalar_def(false).name
    }
    fn differentiable(self) -> bool {
        use BinOp::*;
        matches!(
            self,
            Add | Sub | Mul | Div | Mod | Pow | Max | Min | Hypot | Arctan2 | Copysign | Ldexp | Fmax | Fmin | Fmod
        )
    }

    /// Functions NumPy computes in floating point only: integer and bool operands are
    /// cast to float32 (MXNet's default float) before the kernel runs.
    pub fn float_only(self) -> bool {
        matches!(self, BinOp::Arctan2 | BinOp::Copysign | BinOp::Ldexp)
    }

    /// Functions NumPy defines on integers only (`gcd`, `lcm`).
    pub fn int_only(self) -> bool {
        matches!(self, BinOp::Gcd | BinOp::Lcm)
    }

    /// The dtype `op` computes in for operands promoted to `dt`: float32 for an integer
    /// pair of a float-only function; an error for a float pair of an integer-only one.
    pub fn compute_dtype(self, name: &str, dt: DType) -> Result<DType> {
        if self.float_only() && !dt.is_float() {
            return Ok(DType::F32);
        }
        if self.int_only() && (dt.is_float() || dt == DType::Bool) {
            return Err(Error::dtype(
                name,
                format!("ufunc '{}' is not supported for {} operands (integers only)", self.numpy_name(), dt.name()),
            ));
        }
        Ok(dt)
    }

    /// NumPy's name for the function (for messages).
    fn numpy_name(self) -> &'static str {
        self.def().aliases.np.first().copied().unwrap_or(self.def().name)
    }
}

/// Number of [`BinOp`] functions.
pub(crate) const N_BINOP: usize = 26;

/// Where `op`'s reversed scalar form (`op(s, x)`) sits among the reversed operators
/// at the end of [`DEFS`]; `None` for a commutative function or a comparison.
const fn reversed_slot(op: BinOp) -> Option<usize> {
    use BinOp::*;
    match op {
        Sub => Some(0),
        Div => Some(1),
        Mod => Some(2),
        Pow => Some(3),
        Arctan2 => Some(4),
        Copysign => Some(5),
        Ldexp => Some(6),
        Fmod => Some(7),
        _ => None,
    }
}

const NOT_DIFF: &str = "comparison and logical results are piecewise constant: no gradient flows";
const SCALAR: &[ParamDef] = &[param("scalar", ParamKind::Float, Some("1.0"), "The scalar operand.")];
const EX2: Example = Example { shapes: &[&[2, 3], &[1, 3]], attrs: "", range: (0.5, 1.5) };
const EX1: Example = Example { shapes: &[&[2, 3]], attrs: "scalar=1.7", range: (0.5, 1.5) };

const NOT_DIFF_INT: &str = "gcd and lcm are defined on integers: no gradient flows";

const fn grad_of(op: BinOp) -> Grad {
    use BinOp::*;
    match op {
        Add | Sub | Mul | Div | Mod | Pow | Max | Min | Hypot | Arctan2 | Copysign | Ldexp | Fmax | Fmin | Fmod => {
            Grad::Fn(grad)
        }
        Gcd | Lcm => Grad::None(NOT_DIFF_INT),
        _ => Grad::None(NOT_DIFF),
    }
}

/// The finite-difference examples: float operands, none for the integer-only functions.
const fn examples_of(op: BinOp) -> (Option<Example>, Option<Example>) {
    match op {
        BinOp::Gcd | BinOp::Lcm => (None, None),
        _ => (Some(EX2), Some(EX1)),
    }
}

macro_rules! binary {
    ($( $op:ident $name:literal [$($nd:literal),*] [$($np:literal),*] $sname:literal $doc:literal; )*) => {
        /// Every broadcasting binary operator, then every scalar operator.
        ///
        /// Every `nd` name of a broadcasting operator (its own and its
        /// aliases, MXNet's `nd.add` among them) is a function that also
        /// takes a Python scalar on either side and then runs the scalar
        /// form (`scalar_op`/`rscalar_op` in the exported table).
        pub static DEFS: &[OpDef] = &[
            $( OpDef {
                name: $name,
                aliases: Aliases { nd: &[$($nd),*], np: &[$($np),*], npx: &[], fluent: false },
                inputs: &["lhs", "rhs"],
                doc: $doc,
                infer: Some(infer_binary),
                forward: forward_binary,
                grad: grad_of(BinOp::$op),
                cpu: KernelSlot::Call(cpu::run_broadcast),
                scalar: Some(ScalarForm::Binary(BinOp::$op)),
                example: examples_of(BinOp::$op).0,
                graph: GraphForm { json_aliases: legacy_names(BinOp::$op).0, ..GraphForm::PLAIN },
                ..OpDef::BASE
            }, )*
            $( OpDef {
                name: $sname,
                inputs: &["data"],
                params: SCALAR,
                doc: $doc,
                infer: Some(infer_scalar),
                forward: forward_scalar,
                grad: grad_of(BinOp::$op),
                cpu: KernelSlot::Call(cpu::run_scalar),
                scalar: Some(ScalarForm::Scalar(BinOp::$op, false)),
                example: examples_of(BinOp::$op).1,
                graph: GraphForm { json_aliases: legacy_names(BinOp::$op).1, ..GraphForm::PLAIN },
                ..OpDef::BASE
            }, )*
            rscalar(BinOp::Sub, "_rminus_scalar"),
            rscalar(BinOp::Div, "_rdiv_scalar"),
            rscalar(BinOp::Mod, "_rmod_scalar"),
            rscalar(BinOp::Pow, "_rpower_scalar"),
            rscalar(BinOp::Arctan2, "_npi_rarctan2_scalar"),
            rscalar(BinOp::Copysign, "_npi_rcopysign_scalar"),
            rscalar(BinOp::Ldexp, "_npi_rldexp_scalar"),
            rscalar(BinOp::Fmod, "_npi_rfmod_scalar"),
        ];
    };
}

const fn rscalar(op: BinOp, name: &'static str) -> OpDef {
    OpDef {
        name,
        inputs: &["data"],
        params: SCALAR,
        doc: "The operator with the scalar on the left: `op(scalar, x)`.",
        infer: Some(infer_scalar),
        forward: forward_scalar,
        grad: Grad::Fn(grad),
        cpu: KernelSlot::Call(cpu::run_scalar),
        scalar: Some(ScalarForm::Scalar(op, true)),
        example: Some(EX1),
        graph: GraphForm { json_aliases: legacy_names(op).2, ..GraphForm::PLAIN },
        ..OpDef::BASE
    }
}

/// The names MXNet's graphs use for a binary operator besides the table's: the
/// broadcasting form, the scalar form and the reversed scalar form (`_plus`/`_Plus`,
/// `_PlusScalar`, `_RMinusScalar`, ...).
const fn legacy_names(op: BinOp) -> (&'static [&'static str], &'static [&'static str], &'static [&'static str]) {
    use BinOp::*;
    match op {
        Add => (&["_plus", "_Plus"], &["_PlusScalar"], &[]),
        Sub => (&["_minus", "_Minus"], &["_MinusScalar"], &["_RMinusScalar"]),
        Mul => (&["_mul", "_Mul"], &["_MulScalar"], &[]),
        Div => (&["_div", "_Div"], &["_DivScalar"], &["_RDivScalar"]),
        Mod => (&["_mod"], &["_ModScalar"], &["_RModScalar"]),
        Pow => (&["_power", "_Power"], &["_PowerScalar"], &["_RPowerScalar"]),
        Max => (&["_maximum"], &[], &[]),
        Min => (&["_minimum"], &[], &[]),
        Hypot => (&["_hypot"], &[], &[]),
        Eq => (&["_equal"], &[], &[]),
        Ne => (&["_not_equal"], &[], &[]),
        Gt => (&["_greater"], &[], &[]),
        Ge => (&["_greater_equal"], &[], &[]),
        Lt => (&["_lesser"], &[], &[]),
        Le => (&["_lesser_equal"], &[], &[]),
        _ => (&[], &[], &[]),
    }
}

binary! {
    Add "broadcast_add" ["add", "broadcast_plus", "elemwise_add"] ["add"] "_plus_scalar" "Sum `lhs + rhs` with broadcasting.";
    Sub "broadcast_sub" ["subtract", "broadcast_minus", "elemwise_sub"] ["subtract"] "_minus_scalar"
        "Difference `lhs - rhs` with broadcasting.";
    Mul "broadcast_mul" ["multiply", "elemwise_mul"] ["multiply"] "_mul_scalar" "Product `lhs * rhs` with broadcasting.";
    Div "broadcast_div" ["divide", "elemwise_div"] ["divide", "true_divide"] "_div_scalar"
        "Quotient `lhs / rhs` with broadcasting.";
    Mod "broadcast_mod" ["modulo", "mod"] ["mod", "remainder"] "_mod_scalar" "Remainder with the divisor's sign (Python's `%`).";
    Pow "broadcast_power" ["power"] ["power"] "_power_scalar" "`lhs ** rhs` with broadcasting.";
    Max "broadcast_maximum" ["maximum"] ["maximum"] "_maximum_scalar" "Elementwise maximum (NaN propagates).";
    Min "broadcast_minimum" ["minimum"] ["minimum"] "_minimum_scalar" "Elementwise minimum (NaN propagates).";
    Hypot "broadcast_hypot" ["hypot"] ["hypot"] "_hypot_scalar" "`sqrt(lhs² + rhs²)` with broadcasting.";
    Eq "broadcast_equal" ["equal"] [] "_equal_scalar" "1 where `lhs == rhs`, else 0.";
    Ne "broadcast_not_equal" ["not_equal"] [] "_not_equal_scalar" "1 where `lhs != rhs`, else 0.";
    Gt "broadcast_greater" ["greater"] [] "_greater_scalar" "1 where `lhs > rhs`, else 0.";
    Ge "broadcast_greater_equal" ["greater_equal"] [] "_greater_equal_scalar" "1 where `lhs >= rhs`, else 0.";
    Lt "broadcast_lesser" ["lesser"] [] "_lesser_scalar" "1 where `lhs < rhs`, else 0.";
    Le "broadcast_lesser_equal" ["lesser_equal"] [] "_lesser_equal_scalar" "1 where `lhs <= rhs`, else 0.";
    And "broadcast_logical_and" ["logical_and"] ["logical_and"] "_logical_and_scalar" "1 where both are non-zero, else 0.";
    Or "broadcast_logical_or" ["logical_or"] ["logical_or"] "_logical_or_scalar" "1 where either is non-zero, else 0.";
    Xor "broadcast_logical_xor" ["logical_xor"] ["logical_xor"] "_logical_xor_scalar" "1 where exactly one is non-zero, else 0.";
    Arctan2 "_npi_arctan2" [] ["arctan2"] "_npi_arctan2_scalar"
        "The arc tangent of `lhs / rhs` in the quadrant of `(rhs, lhs)`, with IEEE's signed zeros and infinities (float; integers compute in float32).";
    Copysign "_npi_copysign" [] ["copysign"] "_npi_copysign_scalar"
        "`lhs`'s magnitude with `rhs`'s sign, `-0.0` included (float; integers compute in float32).";
    Ldexp "_npi_ldexp" [] ["ldexp"] "_npi_ldexp_scalar" "`lhs * 2 ** rhs` (float; integers compute in float32).";
    Fmax "_npi_fmax" [] ["fmax"] "_npi_fmax_scalar" "Elementwise maximum ignoring NaN: NaN only where both operands are NaN.";
    Fmin "_npi_fmin" [] ["fmin"] "_npi_fmin_scalar" "Elementwise minimum ignoring NaN: NaN only where both operands are NaN.";
    Fmod "_npi_fmod" [] ["fmod"] "_npi_fmod_scalar"
        "The C remainder of `lhs / rhs`, with the dividend's sign (integer division by zero gives 0).";
    Gcd "_npi_gcd" [] ["gcd"] "_npi_gcd_scalar" "Greatest common divisor of integer arrays (non-negative; `gcd(0, 0) = 0`).";
    Lcm "_npi_lcm" [] ["lcm"] "_npi_lcm_scalar" "Least common multiple of integer arrays (non-negative; 0 where either is 0).";
}

fn binop(def: &OpDef) -> (BinOp, bool) {
    match def.scalar {
        Some(ScalarForm::Binary(op)) => (op, false),
        Some(ScalarForm::Scalar(op, rev)) => (op, rev),
        _ => unreachable!("binary family definitions have scalar forms"),
    }
}

fn infer_binary(def: &OpDef, _a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (a, b) = (&ins[0], &ins[1]);
    if a.ctx != b.ctx {
        return Err(Error::Context { op: def.name.into(), a: a.ctx.to_string(), b: b.ctx.to_string() });
    }
    let shape = Shape::broadcast(def.name, &a.shape, &b.shape)?;
    let dtype = binop(def).0.compute_dtype(def.name, DType::promote(a.dtype, b.dtype))?;
    Ok(vec![Meta { shape, dtype, ctx: a.ctx }])
}

fn infer_scalar(def: &OpDef, _a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    use BinOp::*;
    let x = &ins[0];
    let op = binop(def).0;
    let bool_arith = x.dtype == DType::Bool && matches!(op, Add | Sub | Mul | Div | Mod | Pow);
    let dtype = if bool_arith { DType::I64 } else { op.compute_dtype(def.name, x.dtype)? };
    Ok(vec![Meta { shape: x.shape.clone(), dtype, ctx: x.ctx }])
}

fn forward_binary(inv: &Invocation<'_>) -> Result<Vec<NDArray>> {
    Ok(vec![binary(binop(inv.def).0, inv.x(0)?, inv.x(1)?)?])
}

fn forward_scalar(inv: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let (op, rev) = binop(inv.def);
    Ok(vec![user_scalar_op(op, inv.x(0)?, inv.f64("scalar")?, rev)?])
}

fn unify(op: BinOp, a: &NDArray, b: &NDArray) -> Result<(NDArray, NDArray, DType)> {
    let name = op.def().name;
    check_ctx(name, a, b)?;
    let dt = op.compute_dtype(name, DType::promote(a.dtype(), b.dtype()))?;
    // An integer or bool operand promoted to a float gets a zero gradient, as MXNet's
    // mixed-precision kernels give it (a plain cast would pass the float gradient back).
    let cast = |x: &NDArray| {
        if x.dtype() == dt {
            Ok(x.clone())
        } else if !x.dtype().is_float() {
            ops::astype_zero_grad(x, dt)
        } else {
            ops::astype(x, dt)
        }
    };
    Ok((cast(a)?, cast(b)?, dt))
}

/// `op(a, b)` with broadcasting and type promotion.
pub fn binary(op: BinOp, a: &NDArray, b: &NDArray) -> Result<NDArray> {
    let def = op.def();
    let oshape = Shape::broadcast(def.name, a.shape(), b.shape())?;
    let (a2, b2, dt) = unify(op, a, b)?;
    let out = NDArray::empty(oshape.clone(), dt, a.ctx())?;
    if oshape.size() > 0 {
        push_call(OpCall::new(def, &[&a2, &b2], &[&out]))?;
    }
    if needs_record(&[a, b]) {
        if op.differentiable() {
            // Through the casts `unify` made: the gradient is computed on the operands
            // as the kernel saw them (`power(bool, float)`'s `log(base)` of a float).
            record_grad(def, &[&a2, &b2], &out, &[]);
        } else {
            record_zero_grad(def, &[a, b], &out, &[]);
        }
    }
    Ok(out)
}

/// Records `def`'s gradient function for one call.
///
/// The closure keeps only the arrays the gradient reads (MXNet's backward
/// dependencies): `a + b` and `a - b` keep neither operand (only their shapes, for
/// the broadcast reduction), `a * b` keeps the operands but not the product, and a
/// scalar form keeps its input only where the derivative reads it, so an
/// activation that nothing else needs is freed as soon as its consumers ran.
fn record_grad(def: &'static OpDef, ins: &[&NDArray], out: &NDArray, nums: &[f64]) {
    let attrs = match nums.first() {
        Some(&s) => crate::opdef::Attrs(vec![("scalar".into(), crate::opdef::Attr::Float(s))]),
        None => crate::opdef::Attrs::default(),
    };
    let opt: Vec<Option<&NDArray>> = ins.iter().map(|x| Some(*x)).collect();
    let (op, reverse) = binop(def);
    let keep = |want: bool, x: &NDArray| want.then(|| x.clone());
    let backward: crate::autograd::BackwardFn = if let Some(ScalarForm::Scalar(..)) = def.scalar {
        let s = nums.first().copied().unwrap_or(0.0);
        let (nx, no) = scalar_deps(op, reverse);
        let (x, o) = (keep(nx, ins[0]), no.then(|| crate::autograd::save_output(out)));
        Box::new(move |g| {
            let g = &g[0];
            let o = o.as_ref().map(crate::autograd::Saved::get);
            // A slot the derivative does not read is never touched: `g` stands in.
            let (x, o) = (x.as_ref().unwrap_or(g), o.as_ref().unwrap_or(g));
            Ok(vec![Some(scalar_grad(op, reverse, x, o, g, s)?)])
        })
    } else {
        let (na, nb, no) = binary_deps(op);
        let (sa, sb) = (ins[0].shape().clone(), ins[1].shape().clone());
        let (a, b, o) = (keep(na, ins[0]), keep(nb, ins[1]), no.then(|| crate::autograd::save_output(out)));
        Box::new(move |g| {
            let g = &g[0];
            let o = o.as_ref().map(crate::autograd::Saved::get);
            let (a, b, o) = (a.as_ref().unwrap_or(g), b.as_ref().unwrap_or(g), o.as_ref().unwrap_or(g));
            let (ga, gb) = binary_grad(op, a, b, o, g)?;
            Ok(vec![Some(sum_to(&ga, &sa)?), Some(sum_to(&gb, &sb)?)])
        })
    };
    record(def.name, ins, &[out], backward);
    crate::autograd::annotate(def.name, &attrs, &opt, &[out]);
}

/// Records a comparison's or logical operator's gradient: zeros for every input (as
/// MXNet's `MakeZeroGradNodes`), so `backward` through `x > y` gives zero gradients
/// whether the call came from an operator, a named function or a graph.
pub(crate) fn record_zero_grad(def: &'static OpDef, ins: &[&NDArray], out: &NDArray, nums: &[f64]) {
    let attrs = match nums.first() {
        Some(&s) => crate::opdef::Attrs(vec![("scalar".into(), crate::opdef::Attr::Float(s))]),
        None => crate::opdef::Attrs::default(),
    };
    let opt: Vec<Option<&NDArray>> = ins.iter().map(|x| Some(*x)).collect();
    let metas: Vec<_> = ins.iter().map(|x| (x.shape().clone(), x.dtype(), x.ctx())).collect();
    let backward: crate::autograd::BackwardFn =
        Box::new(move |_g| metas.iter().map(|(s, d, c)| ops::zeros(s.clone(), *d, *c).map(Some)).collect());
    record(def.name, ins, &[out], backward);
    crate::autograd::annotate(def.name, &attrs, &opt, &[out]);
}

/// Which of `(lhs, rhs, output)` [`binary_grad`] reads for `op`.
fn binary_deps(op: BinOp) -> (bool, bool, bool) {
    use BinOp::*;
    match op {
        Add | Sub => (false, false, false),
        Mul | Mod | Max | Min | Arctan2 | Copysign | Fmax | Fmin | Fmod => (true, true, false),
        Div | Ldexp => (false, true, true),
        _ => (true, true, true),
    }
}

/// Which of `(input, output)` [`scalar_grad`] reads for `op` (`reverse`: scalar on the left).
fn scalar_deps(op: BinOp, reverse: bool) -> (bool, bool) {
    use BinOp::*;
    match (op, reverse) {
        (Add, _) | (Sub, _) | (Mul, _) | (Div, false) | (Mod, false) | (Ldexp, false) | (Fmod, false) => (false, false),
        (Copysign, true) => (false, false),
        (Div, true) | (Hypot, _) => (true, true),
        (Pow, true) | (Ldexp, true) => (false, true),
        (Pow, false)
        | (Max, _)
        | (Min, _)
        | (Mod, true)
        | (Arctan2, _)
        | (Copysign, false)
        | (Fmax, _)
        | (Fmin, _)
        | (Fmod, true) => (true, false),
        _ => (true, true),
    }
}

/// [`scalar_op`] as a user's `x + 1` means it: arithmetic on a bool array
/// computes in int64, as in MXNet (internal callers keep the array's dtype).
pub fn user_scalar_op(op: BinOp, a: &NDArray, s: f64, reverse: bool) -> Result<NDArray> {
    use BinOp::*;
    if a.dtype() == DType::Bool && matches!(op, Add | Sub | Mul | Div | Mod | Pow) {
        return scalar_op(op, &ops::astype(a, DType::I64)?, s, reverse);
    }
    scalar_op(op, a, s, reverse)
}

/// `op(a, s)` (or `op(s, a)` when `reverse`) for a Python scalar `s`.
///
/// As in MXNet's `nd`, the result keeps `a`'s dtype (the scalar is cast).
pub fn scalar_op(op: BinOp, a: &NDArray, s: f64, reverse: bool) -> Result<NDArray> {
    let def = op.scalar_def(reverse);
    let dt = op.compute_dtype(def.name, a.dtype())?;
    let cast;
    let a = if dt == a.dtype() {
        a
    } else {
        // an integer operand of a float-only function: zero gradient, as `unify` gives
        cast = ops::astype_zero_grad(a, dt)?;
        &cast
    };
    let out = NDArray::empty(a.shape().clone(), a.dtype(), a.ctx())?;
    if a.size() > 0 {
        push_call(OpCall::new(def, &[a], &[&out]).with_nums(&[s]))?;
    }
    if needs_record(&[a]) {
        if op.differentiable() {
            record_grad(def, &[a], &out, &[s]);
        } else {
            record_zero_grad(def, &[a], &out, &[s]);
        }
    }
    Ok(out)
}

/// The gradient of every differentiable binary and scalar operator.
fn grad(args: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    let (op, reverse) = binop(args.def);
    let (o, g) = (&args.outputs[0], &args.out_grads[0]);
    if let Some(ScalarForm::Scalar(..)) = args.def.scalar {
        let s = args.nums.first().copied().unwrap_or(0.0);
        return Ok(vec![Some(scalar_grad(op, reverse, &args.inputs[0], o, g, s)?)]);
    }
    let (a, b) = (&args.inputs[0], &args.inputs[1]);
    let (ga, gb) = binary_grad(op, a, b, o, g)?;
    Ok(vec![Some(sum_to(&ga, a.shape())?), Some(sum_to(&gb, b.shape())?)])
}

fn binary_grad(op: BinOp, a: &NDArray, b: &NDArray, o: &NDArray, g: &NDArray) -> Result<(NDArray, NDArray)> {
    use ops::{div, mul, neg, sub};
    Ok(match op {
        BinOp::Add => (g.clone(), g.clone()),
        BinOp::Sub => (g.clone(), neg(g)?),
        BinOp::Mul => (mul(g, b)?, mul(g, a)?),
        BinOp::Div => (div(g, b)?, neg(&div(&mul(g, o)?, b)?)?),
        // MXNet 1.9.1 gives integer `mod` zero gradients (nd and np, recorded)
        BinOp::Mod if !a.dtype().is_float() => (ops::zeros_like(g)?, ops::zeros_like(g)?),
        BinOp::Mod => (g.clone(), neg(&mul(g, &ops::unary(ops::UnaryOp::Floor, &div(a, b)?)?)?)?),
        BinOp::Pow => {
            let ga = mul(g, &mul(b, &binary(BinOp::Pow, a, &ops::scalar(BinOp::Sub, b, 1.0)?)?)?)?;
            let gb = mul(g, &mul(o, &ops::unary(ops::UnaryOp::Log, a)?)?)?;
            (ga, gb)
        }
        BinOp::Max | BinOp::Min => {
            let cmp = if op == BinOp::Max { BinOp::Ge } else { BinOp::Le };
            let m = binary(cmp, a, b)?;
            (mul(g, &m)?, mul(g, &ops::scalar_r(BinOp::Sub, &m, 1.0)?)?)
        }
        BinOp::Hypot => (mul(g, &div(a, o)?)?, mul(g, &div(b, o)?)?),
        BinOp::Arctan2 => {
            // d/da atan2(a, b) = b / (a² + b²), d/db = -a / (a² + b²)
            let den = ops::add(&mul(a, a)?, &mul(b, b)?)?;
            (div(&mul(g, b)?, &den)?, neg(&div(&mul(g, a)?, &den)?)?)
        }
        BinOp::Copysign => {
            // MXNet's copysign_grad: 1 where the signs (`>= 0`) agree, else -1; rhs: 0
            let differ = binary(BinOp::Xor, &ops::scalar(BinOp::Ge, a, 0.0)?, &ops::scalar(BinOp::Ge, b, 0.0)?)?;
            let sign = ops::scalar(BinOp::Add, &ops::scalar(BinOp::Mul, &differ, -2.0)?, 1.0)?;
            (mul(g, &sign)?, ops::zeros_like(g)?)
        }
        BinOp::Ldexp => {
            // d/da a·2^b = 2^b; d/db = a·2^b·ln 2
            let ga = mul(g, &ops::scalar_r(BinOp::Pow, b, 2.0)?)?;
            (ga, mul(g, &ops::scalar(BinOp::Mul, o, std::f64::consts::LN_2)?)?)
        }
        BinOp::Fmax | BinOp::Fmin => {
            // the operand the result took: `a` where it wins or `b` is NaN
            let cmp = if op == BinOp::Fmax { BinOp::Ge } else { BinOp::Le };
            let m = binary(BinOp::Or, &binary(cmp, a, b)?, &binary(BinOp::Ne, b, b)?)?;
            (mul(g, &m)?, mul(g, &ops::scalar_r(BinOp::Sub, &m, 1.0)?)?)
        }
        BinOp::Fmod if !a.dtype().is_float() => (ops::zeros_like(g)?, ops::zeros_like(g)?),
        BinOp::Fmod => (g.clone(), neg(&mul(g, &ops::unary(ops::UnaryOp::Trunc, &div(a, b)?)?)?)?),
        _ => (sub(g, g)?, sub(g, g)?),
    })
}

fn scalar_grad(op: BinOp, reverse: bool, x: &NDArray, o: &NDArray, g: &NDArray, s: f64) -> Result<NDArray> {
    use ops::{div, mul, scalar, scalar_r};
    Ok(match (op, reverse) {
        (BinOp::Mod, _) if !x.dtype().is_float() => ops::zeros_like(g)?, // as MXNet
        (BinOp::Add, _) | (BinOp::Sub, false) | (BinOp::Mod, false) => g.clone(),
        (BinOp::Sub, true) => ops::neg(g)?,
        (BinOp::Mul, _) => scalar(BinOp::Mul, g, s)?,
        (BinOp::Div, false) => scalar(BinOp::Div, g, s)?,
        (BinOp::Div, true) => ops::neg(&div(&mul(g, o)?, x)?)?,
        (BinOp::Pow, false) => mul(g, &scalar(BinOp::Mul, &scalar(BinOp::Pow, x, s - 1.0)?, s)?)?,
        (BinOp::Pow, true) => mul(g, &scalar(BinOp::Mul, o, s.ln())?)?,
        (BinOp::Max, _) => mul(g, &scalar(BinOp::Ge, x, s)?)?,
        (BinOp::Min, _) => mul(g, &scalar(BinOp::Le, x, s)?)?,
        (BinOp::Hypot, _) => mul(g, &div(x, o)?)?,
        (BinOp::Mod, true) => {
            let q = ops::unary(ops::UnaryOp::Floor, &scalar_r(BinOp::Div, x, s)?)?;
            ops::neg(&mul(g, &q)?)?
        }
        (BinOp::Fmod, _) if !x.dtype().is_float() => ops::zeros_like(g)?,
        (BinOp::Fmod, false) => g.clone(),
        (BinOp::Fmod, true) => {
            let q = ops::unary(ops::UnaryOp::Trunc, &scalar_r(BinOp::Div, x, s)?)?;
            ops::neg(&mul(g, &q)?)?
        }
        // atan2(x, s)' = s / (x² + s²); atan2(s, x)' = -s / (s² + x²)
        (BinOp::Arctan2, rev) => {
            let den = scalar(BinOp::Add, &mul(x, x)?, s * s)?;
            mul(g, &scalar_r(BinOp::Div, &den, if rev { -s } else { s })?)?
        }
        (BinOp::Copysign, false) => {
            // ±1 by whether x's sign (`>= 0`) agrees with s's, as MXNet's copysign_grad
            let pos = scalar(BinOp::Ge, x, 0.0)?;
            let sign = if s >= 0.0 {
                scalar(BinOp::Sub, &scalar(BinOp::Mul, &pos, 2.0)?, 1.0)?
            } else {
                scalar_r(BinOp::Sub, &scalar(BinOp::Mul, &pos, 2.0)?, 1.0)?
            };
            mul(g, &sign)?
        }
        (BinOp::Ldexp, false) => scalar(BinOp::Mul, g, s.exp2())?,
        (BinOp::Ldexp, true) => mul(g, &scalar(BinOp::Mul, o, std::f64::consts::LN_2)?)?,
        (BinOp::Fmax | BinOp::Fmin, _) if s.is_nan() => g.clone(),
        (BinOp::Fmax, _) => mul(g, &scalar(BinOp::Ge, x, s)?)?,
        (BinOp::Fmin, _) => mul(g, &scalar(BinOp::Le, x, s)?)?,
        _ => ops::zeros_like(g)?,
    })
}

/// In place: `dst = op(dst, b)` (b broadcast to dst's shape). Writes dst's chunk.
pub fn binary_inplace(op: BinOp, dst: &NDArray, b: &NDArray) -> Result<()> {
    use BinOp::*;
    let name = op.def().name;
    if !matches!(op, Add | Sub | Mul | Div | Mod | Pow | Max | Min) {
        return Err(Error::value(name, "this operator has no in-place form"));
    }
    check_ctx(name, dst, b)?;
    let oshape = Shape::broadcast(name, dst.shape(), b.shape())?;
    if &oshape != dst.shape() {
        return Err(Error::shape(name, &[dst.shape(), b.shape()], "in-place result would need a different shape"));
    }
    let b = if b.dtype() != dst.dtype() { ops::astype(b, dst.dtype())? } else { b.clone() };
    let b = if b.shares_storage(dst) { ops::copy(&b)? } else { b };
    if oshape.size() == 0 {
        return Ok(());
    }
    let sb = b.shape().broadcast_strides(&oshape);
    let dt = dst.dtype();
    push_kernel(name, vec![b.view()], vec![dst.view()], move |k| {
        cpu::run_inplace(op, dt, &oshape, &sb, k);
        Ok(())
    });
    Ok(())
}

/// In place with a scalar: `dst = op(dst, s)`.
pub fn scalar_inplace(op: BinOp, dst: &NDArray, s: f64) -> Result<()> {
    let b = NDArray::scalar(s, dst.ctx());
    binary_inplace(op, dst, &b)
}
