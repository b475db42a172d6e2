//! Unary elementwise operators: definitions, inference and gradients.
//!
//! Each operator is one [`OpDef`] in [`DEFS`], made by the `unary!` macro
//! from its name, its function ([`UnaryOp`], the identity the kernels and a
//! fusion pass dispatch on), its derivative as an [`Expr`] in `x` and
//! `y = f(x)`, its NumPy names and a docstring. Adding a unary operator is
//! one `UnaryOp` variant, one kernel arm in `cpu.rs` and one line here.

mod cpu;
mod exp;
#[cfg(target_arch = "x86_64")]
pub(crate) use exp::{exp16, sigmoid16};
mod special;
#[cfg(test)]
mod tests;

/// The vectorisable float32 `exp` of the unary kernels (for other families' fused kernels).
pub(crate) use cpu::exp_core as exp_f32;
pub(crate) use cpu::run as unary_kernel;
pub(crate) use cpu::run_tile;
pub use cpu::unary_scalar;

use crate::autograd::{needs_record, record};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    push_call, Aliases, Attrs, Example, Expr, Grad, GradArgs, GraphForm, Invocation, KernelSlot, Meta, OpCall, OpDef,
    ScalarForm,
};
use crate::ops::{self, BinOp};

/// A unary elementwise function (the scalar form of a unary operator).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum UnaryOp {
    Negative,
    Abs,
    Sign,
    Square,
    Relu,
    Sqrt,
    Rsqrt,
    Cbrt,
    Exp,
    Expm1,
    Log,
    Log2,
    Log10,
    Log1p,
    Sin,
    Cos,
    Tan,
    Arcsin,
    Arccos,
    Arctan,
    Sinh,
    Cosh,
    Tanh,
    Arcsinh,
    Arccosh,
    Arctanh,
    Floor,
    Ceil,
    Round,
    Rint,
    Fix,
    Trunc,
    Reciprocal,
    Sigmoid,
    Softsign,
    Softrelu,
    Erf,
    Gamma,
    Gammaln,
    LogicalNot,
    Degrees,
    Radians,
    Rcbrt,
    Erfinv,
    Digamma,
    Trigamma,
    RoundSte,
    SignSte,
}

impl UnaryOp {
    /// Functions that keep an integer dtype (everything else computes in float).
    fn int_ok(self) -> bool {
        use UnaryOp::*;
        matches!(
            self,
            Negative
                | Abs
                | Sign
                | Square
                | Relu
                | LogicalNot
                | Floor
                | Ceil
                | Round
                | Rint
                | Fix
                | Trunc
                | RoundSte
                | SignSte
        )
    }

    /// Functions defined on bool arrays.
    fn bool_ok(self) -> bool {
        matches!(self, UnaryOp::LogicalNot | UnaryOp::Abs | UnaryOp::Relu | UnaryOp::Square)
    }

    /// The operator defining this function.
    ///
    /// `DEFS` lists the operators in `UnaryOp` order (a test checks this), so
    /// the lookup is an index.
    pub fn def(self) -> &'static OpDef {
        &DEFS[self as usize]
    }

    /// MXNet operator name.
    pub fn name(self) -> &'static str {
        self.def().name
    }
}

use Expr::{B, C, U, X, Y};
use UnaryOp as F;

// Derivatives, in x and y = f(x).
const ZERO: Expr = C(0.0);
const X2: Expr = B(BinOp::Mul, &X, &X);
const ONE_MINUS_X2: Expr = B(BinOp::Sub, &C(1.0), &X2);
const X2_PLUS_ONE: Expr = B(BinOp::Add, &X2, &C(1.0));
const ONE_PLUS_ABS: Expr = B(BinOp::Add, &U(F::Abs, &X), &C(1.0));

macro_rules! unary {
    ($( $name:literal $op:ident [$($np:literal),*] $fluent:literal $grad:expr, $range:expr, $doc:literal; )*) => {
        /// Every unary elementwise operator.
        pub static DEFS: &[OpDef] = &[ $( OpDef {
            name: $name,
            aliases: Aliases { nd: &[], np: &[$($np),*], npx: &[], fluent: $fluent },
            inputs: &["data"],
            outputs: &["output"],
            aux: &[],
            params: &[],
            doc: $doc,
            infer: Some(infer),
            forward,
            grad: grad_kind($grad),
            mutates: &[],
            workspace: None,
            cpu: KernelSlot::Call(cpu::run),
            gpu: KernelSlot::Empty,
            scalar: Some(ScalarForm::Unary(UnaryOp::$op, $grad)),
            example: Some(Example { shapes: &[&[2, 3]], attrs: "", range: $range }),
            graph: GraphForm::PLAIN,
        } ),* ];
    };
}

const fn grad_kind(d: Option<&'static Expr>) -> Grad {
    match d {
        Some(_) => Grad::Fn(grad),
        None => Grad::None("the derivative (the tetragamma function) is not implemented"),
    }
}

const R: (f64, f64) = (0.1, 0.45);

unary! {
    "negative" Negative ["negative"] true Some(&C(-1.0)), R, "Numerical negative, elementwise: `-x`.";
    "abs" Abs ["abs", "absolute"] true Some(&U(F::Sign, &X)), R, "Absolute value, elementwise.";
    "sign" Sign ["sign"] true Some(&ZERO), R, "Sign (-1, 0 or 1; NaN stays NaN), elementwise.";
    "square" Square ["square"] true Some(&B(BinOp::Mul, &X, &C(2.0))), R, "Square, elementwise.";
    // sign(y): 1 where x > 0, 0 where x <= 0, NaN at NaN (MXNet propagates NaN into the gradient)
    "relu" Relu [] true Some(&U(F::Sign, &Y)), R, "Rectified linear unit: `max(x, 0)`.";
    "sqrt" Sqrt ["sqrt"] true Some(&B(BinOp::Div, &C(0.5), &Y)), R, "Square root, elementwise.";
    "rsqrt" Rsqrt [] true Some(&B(BinOp::Mul, &B(BinOp::Mul, &Y, &B(BinOp::Mul, &Y, &Y)), &C(-0.5))), R,
        "Reciprocal square root: `1/sqrt(x)`.";
    "cbrt" Cbrt ["cbrt"] true Some(&B(BinOp::Div, &C(1.0), &B(BinOp::Mul, &B(BinOp::Mul, &Y, &Y), &C(3.0)))), R,
        "Cube root, elementwise.";
    "exp" Exp ["exp"] true Some(&Y), R, "Exponential `e^x`, elementwise.";
    "expm1" Expm1 ["expm1"] true Some(&B(BinOp::Add, &Y, &C(1.0))), R, "`exp(x) - 1`, accurate near 0.";
    "log" Log ["log"] true Some(&U(F::Reciprocal, &X)), R, "Natural logarithm, elementwise.";
    "log2" Log2 ["log2"] true Some(&B(BinOp::Div, &C(1.0), &B(BinOp::Mul, &X, &C(std::f64::consts::LN_2)))), R,
        "Base-2 logarithm, elementwise.";
    "log10" Log10 ["log10"] true Some(&B(BinOp::Div, &C(1.0), &B(BinOp::Mul, &X, &C(std::f64::consts::LN_10)))), R,
        "Base-10 logarithm, elementwise.";
    "log1p" Log1p ["log1p"] true Some(&B(BinOp::Div, &C(1.0), &B(BinOp::Add, &X, &C(1.0)))), R,
        "`log(1 + x)`, accurate near 0.";
    "sin" Sin ["sin"] true Some(&U(F::Cos, &X)), R, "Sine (radians), elementwise.";
    "cos" Cos ["cos"] true Some(&U(F::Negative, &U(F::Sin, &X))), R, "Cosine (radians), elementwise.";
    "tan" Tan ["tan"] true Some(&B(BinOp::Add, &B(BinOp::Mul, &Y, &Y), &C(1.0))), R, "Tangent, elementwise.";
    "arcsin" Arcsin ["arcsin"] true Some(&U(F::Rsqrt, &ONE_MINUS_X2)), R, "Inverse sine, elementwise.";
    "arccos" Arccos ["arccos"] true Some(&U(F::Negative, &U(F::Rsqrt, &ONE_MINUS_X2))), R,
        "Inverse cosine, elementwise.";
    "arctan" Arctan ["arctan"] true Some(&B(BinOp::Div, &C(1.0), &X2_PLUS_ONE)), R, "Inverse tangent, elementwise.";
    "sinh" Sinh ["sinh"] true Some(&U(F::Cosh, &X)), R, "Hyperbolic sine, elementwise.";
    "cosh" Cosh ["cosh"] true Some(&U(F::Sinh, &X)), R, "Hyperbolic cosine, elementwise.";
    "tanh" Tanh ["tanh"] true Some(&B(BinOp::Sub, &C(1.0), &B(BinOp::Mul, &Y, &Y))), R,
        "Hyperbolic tangent, elementwise.";
    "arcsinh" Arcsinh ["arcsinh"] true Some(&U(F::Rsqrt, &X2_PLUS_ONE)), R, "Inverse hyperbolic sine, elementwise.";
    "arccosh" Arccosh ["arccosh"] true Some(&U(F::Rsqrt, &B(BinOp::Sub, &X2, &C(1.0)))), (1.2, 2.0),
        "Inverse hyperbolic cosine, elementwise.";
    "arctanh" Arctanh ["arctanh"] true Some(&B(BinOp::Div, &C(1.0), &ONE_MINUS_X2)), R,
        "Inverse hyperbolic tangent, elementwise.";
    "floor" Floor ["floor"] true Some(&ZERO), R, "Largest integer not above x, elementwise.";
    "ceil" Ceil ["ceil"] true Some(&ZERO), R, "Smallest integer not below x, elementwise.";
    "round" Round [] true Some(&ZERO), R, "Nearest integer, halves away from zero (MXNet's round).";
    "rint" Rint ["rint"] true Some(&ZERO), R, "Nearest integer, halves down (MXNet's rint: n.5 -> n).";
    "fix" Fix ["fix"] true Some(&ZERO), R, "Rounds towards zero, elementwise.";
    "trunc" Trunc ["trunc"] true Some(&ZERO), R, "Integer part (towards zero), elementwise.";
    "reciprocal" Reciprocal ["reciprocal"] true Some(&U(F::Negative, &B(BinOp::Mul, &Y, &Y))), R,
        "Reciprocal `1/x`, elementwise.";
    "sigmoid" Sigmoid [] true Some(&B(BinOp::Mul, &Y, &B(BinOp::Sub, &C(1.0), &Y))), R,
        "Logistic sigmoid `1/(1+e^-x)`.";
    "softsign" Softsign [] true Some(&B(BinOp::Div, &C(1.0), &B(BinOp::Mul, &ONE_PLUS_ABS, &ONE_PLUS_ABS))), R,
        "Softsign `x/(1+|x|)`.";
    "softrelu" Softrelu [] false Some(&U(F::Sigmoid, &X)), R, "Softplus `log(1+e^x)` (MXNet's softrelu).";
    "erf" Erf [] true Some(&B(BinOp::Mul, &U(F::Exp, &U(F::Negative, &X2)), &C(std::f64::consts::FRAC_2_SQRT_PI))),
        R, "Gauss error function, elementwise.";
    // MXNet: Γ'(x) = Γ(x)·ψ(x), (ln|Γ|)'(x) = ψ(x)
    "gamma" Gamma [] true Some(&B(BinOp::Mul, &Y, &U(F::Digamma, &X))), R, "Gamma function, elementwise.";
    "gammaln" Gammaln [] true Some(&U(F::Digamma, &X)), R,
        "Log of the absolute value of the gamma function, elementwise.";
    "logical_not" LogicalNot [] true Some(&ZERO), R, "Logical not (1 where x is 0, else 0), elementwise.";
    "degrees" Degrees ["degrees", "rad2deg"] true Some(&C(180.0 / std::f64::consts::PI)), R,
        "Radians to degrees, elementwise.";
    "radians" Radians ["radians", "deg2rad"] true Some(&C(std::f64::consts::PI / 180.0)), R,
        "Degrees to radians, elementwise.";
    "rcbrt" Rcbrt [] true Some(&B(BinOp::Mul, &B(BinOp::Div, &Y, &X), &C(-1.0 / 3.0))), R,
        "Reciprocal cube root `1/cbrt(x)`, elementwise.";
    // MXNet's gradient uses the output: (erf⁻¹)'(x) = √π/2 · e^(y²)
    "erfinv" Erfinv [] false Some(&B(BinOp::Mul, &U(F::Exp, &B(BinOp::Mul, &Y, &Y)), &C(1.0 / std::f64::consts::FRAC_2_SQRT_PI))),
        R, "Inverse error function, elementwise (`±inf` at `±1`, NaN outside `[-1, 1]`).";
    // Not MXNet operators: the derivatives of `gammaln` (for `gamma`'s and `gammaln`'s gradients).
    "_digamma" Digamma [] false Some(&U(F::Trigamma, &X)), R, "The digamma function ψ = (ln Γ)', elementwise.";
    "_trigamma" Trigamma [] false None, R, "The trigamma function ψ' = ψ₁, elementwise.";
    // Straight-through estimators (MXNet's contrib): the gradient passes unchanged.
    "_contrib_round_ste" RoundSte [] false Some(&C(1.0)), R,
        "`round(x)` forward, identity gradient (straight-through estimator).";
    "_contrib_sign_ste" SignSte [] false Some(&C(1.0)), R,
        "`sign(x)` forward, identity gradient (straight-through estimator).";
}

/// The result dtype of `op` on `dt`, or the error for a dtype it does not take.
fn out_dtype(op: UnaryOp, name: &str, dt: DType) -> Result<DType> {
    if dt == DType::Bool && !op.bool_ok() {
        return Err(Error::dtype(name, "operator is not defined for bool arrays"));
    }
    Ok(if !op.int_ok() && !dt.is_float() { DType::F32 } else { dt })
}

fn infer(def: &OpDef, _a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (op, x) = (def.unary_op().expect("unary def"), &ins[0]);
    Ok(vec![Meta { shape: x.shape.clone(), dtype: out_dtype(op, def.name, x.dtype)?, ctx: x.ctx }])
}

fn forward(inv: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let op = inv.def.unary_op().expect("unary def");
    Ok(vec![unary(op, inv.x(0)?)?])
}

/// Applies a unary operator. Integer inputs of float-only operators are cast to float32 first.
pub fn unary(op: UnaryOp, x: &NDArray) -> Result<NDArray> {
    unary_as(op.def(), op, x)
}

/// [`unary`] as a call of `call_def`: the function's own definition, or an
/// operator that names a unary function by a parameter (`Activation`), whose
/// call carries the [`UnaryOp`] code in `ints[0]`. The gradient is the function's.
pub(crate) fn unary_as(call_def: &'static OpDef, op: UnaryOp, x: &NDArray) -> Result<NDArray> {
    let def = op.def();
    let dt = out_dtype(op, call_def.name, x.dtype())?;
    let x = if dt != x.dtype() { ops::astype(x, dt)? } else { x.clone() };
    let out = NDArray::empty(x.shape().clone(), dt, x.ctx())?;
    if x.size() > 0 {
        let call = OpCall::new(call_def, &[&x], &[&out]);
        push_call(if std::ptr::eq(call_def, def) { call } else { call.with_ints(&[op as i64]) })?;
    }
    if needs_record(&[&x]) {
        // Keep only what the derivative reads (`relu`, `sigmoid`, `tanh`: the output),
        // so an input nothing else needs is freed once its consumers ran. The two have
        // the same shape and dtype, so the one kept stands in for the other.
        let (rx, ry) = match def.scalar {
            Some(ScalarForm::Unary(_, Some(d))) => d.reads(),
            _ => (true, true),
        };
        let xs = rx.then(|| x.clone());
        let ys = (ry || !rx).then(|| crate::autograd::save_output(&out));
        record(
            call_def.name,
            &[&x],
            &[&out],
            Box::new(move |g| {
                let y = ys.as_ref().map(crate::autograd::Saved::get);
                let (xc, oc) = match (&xs, y) {
                    (Some(x), Some(y)) => (x.clone(), y),
                    (Some(x), None) => (x.clone(), x.clone()),
                    (None, Some(y)) => (y.clone(), y),
                    (None, None) => {
                        return Err(Error::value(def.name, "backward without saved arrays (internal error)"))
                    }
                };
                let (inputs, outputs) = (std::slice::from_ref(&xc), std::slice::from_ref(&oc));
                let args = GradArgs { def, inputs, outputs, out_grads: g, nums: &[] };
                match &def.grad {
                    Grad::Fn(f) => f(&args),
                    Grad::None(why) => Err(Error::value(def.name, format!("not differentiable: {why}"))),
                    Grad::Recorded => unreachable!("unary operators have gradient functions"),
                }
            }),
        );
        // The function's own name: an operator naming it by a parameter (`Activation`)
        // annotates its call itself when invoked from the table.
        crate::autograd::annotate(def.name, &crate::opdef::Attrs::default(), &[Some(&x)], &[&out]);
    }
    Ok(out)
}

/// The result dtype of a unary function on `dt` (for operators naming one).
pub(crate) fn unary_dtype(op: UnaryOp, name: &str, dt: DType) -> Result<DType> {
    out_dtype(op, name, dt)
}

/// `g * f'(x)`, with `f'` the definition's derivative expression.
fn grad(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    let (x, y, g) = (&a.inputs[0], &a.outputs[0], &a.out_grads[0]);
    let d = match a.def.scalar {
        Some(ScalarForm::Unary(_, Some(d))) => d,
        _ => return Err(Error::value(a.def.name, "no derivative defined")),
    };
    // A constant derivative under `create_graph` is tied to the saved array (the
    // input or the output), so the gradient's own derivative is zeros, as in MXNet.
    let tied = crate::autograd::needs_record(&[x]);
    let r = match d {
        C(c) if *c == 0.0 && tied => ops::const_like_rec(x, 0.0)?,
        C(c) if *c == 0.0 => ops::zeros_like(g)?,
        C(c) if tied => ops::mul(g, &ops::const_like_rec(x, *c)?)?,
        C(c) => ops::scalar(BinOp::Mul, g, *c)?,
        d => ops::mul(g, &d.eval(x, y)?)?,
    };
    Ok(vec![Some(r)])
}
