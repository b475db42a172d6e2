//! Operators defined once, as data.
//!
//! Every operator is one [`OpDef`]: its MXNet name and aliases, its input,
//! output and auxiliary-state names, its typed parameters with defaults and
//! documentation, its shape/dtype inference on metadata alone, its gradient,
//! the inputs it writes in place, its kernel per device kind, and (for
//! elementwise operators) its scalar form. The table ([`table`]) is the only
//! list of operators: the Python `nd`/`np`/`npx` functions, fluent methods,
//! docstrings and type stubs are generated from it, tests walk it, and a
//! fusion pass or graph executor reads it.
//!
//! This is MXNet's `NNVM_REGISTER_OP` (`FInferShape`, `FInferType`,
//! `FCompute<cpu>`, `FGradient`, `FMutateInputs`, `FResourceRequest`) done
//! as typed Rust data: a definition is a `static`, checked by the compiler;
//! nothing on the hot path dispatches on strings (a frontend looks a
//! definition up once by name and keeps the reference).

pub mod attrs;
mod call;
pub mod expr;
mod graph;
mod table;

pub use attrs::{parse_ctx, Attr, Attrs};
pub use call::{push_call, KernelFn, OpCall};
pub use expr::Expr;
pub use graph::{
    dim_at, inputs_unless_no_bias, inputs_with_used_lengths, outputs_if_mean_var, per_channel, GraphForm,
    GraphInputsFn, InputShapesFn, OutDtypesFn, OutputCount, ParamShapesFn, VisibleOutputsFn, MOVING_STATS_INIT,
};
pub use table::{find, invoke, invoke_def, table};

use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::ops::{BinOp, UnaryOp};
use crate::shape::Shape;
use crate::{Context, DType};

/// How a parameter is spelled and checked (MXNet's `DMLC_DECLARE_FIELD` types).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// An integer.
    Int,
    /// A floating-point number.
    Float,
    /// A boolean.
    Bool,
    /// A string (an enumeration in MXNet).
    Str,
    /// A tuple of integers (an int is a 1-tuple).
    Ints,
    /// A tuple of floats (a number is a 1-tuple).
    Floats,
    /// A shape (a tuple of non-negative integers).
    Shape,
    /// A dtype name (`'float32'`).
    DType,
    /// A context (`cpu(0)`).
    Context,
}

impl ParamKind {
    /// The Python annotation used in generated stubs.
    pub fn py_type(self) -> &'static str {
        match self {
            ParamKind::Int => "int",
            ParamKind::Float => "float",
            ParamKind::Bool => "bool",
            ParamKind::Str => "str",
            ParamKind::Ints | ParamKind::Shape => "int | tuple[int, ...]",
            ParamKind::Floats => "float | tuple[float, ...]",
            ParamKind::DType => "Any",
            ParamKind::Context => "Any",
        }
    }
}

/// One typed parameter of an operator.
#[derive(Clone, Copy, Debug)]
pub struct ParamDef {
    /// MXNet's attribute name.
    pub name: &'static str,
    /// Type.
    pub kind: ParamKind,
    /// Default in Python spelling (`"None"`, `"1"`, `"'clip'"`); `None` when required.
    pub default: Option<&'static str>,
    /// What it means.
    pub doc: &'static str,
}

/// Shorthand for a [`ParamDef`] in definition tables.
pub const fn param(name: &'static str, kind: ParamKind, default: Option<&'static str>, doc: &'static str) -> ParamDef {
    ParamDef { name, kind, default, doc }
}

/// What an array is without its data: what inference works on.
#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    /// Shape.
    pub shape: Shape,
    /// Element type.
    pub dtype: DType,
    /// Context.
    pub ctx: Context,
}

impl Meta {
    /// The metadata of an existing array.
    pub fn of(x: &NDArray) -> Meta {
        Meta { shape: x.shape().clone(), dtype: x.dtype(), ctx: x.ctx() }
    }
}

/// Shape and dtype inference: parameters and input metadata to output metadata.
pub type InferFn = fn(&'static OpDef, &Attrs, &[Meta]) -> Result<Vec<Meta>>;
/// The frontend entry of an operator: checks, allocates, pushes, records.
pub type ForwardFn = fn(&Invocation<'_>) -> Result<Vec<NDArray>>;
/// A gradient: given the call and the output gradients, the input gradients.
pub type GradFn = fn(&GradArgs<'_>) -> Result<Vec<Option<NDArray>>>;

/// How an operator is differentiated (MXNet's `FGradient`).
pub enum Grad {
    /// The gradient function of this definition, recorded by the forward.
    Fn(GradFn),
    /// The forward records a family-specific backward (not yet expressed as a [`GradFn`]).
    Recorded,
    /// Not differentiable, with the reason (integer outputs, in-place updates, ...).
    None(&'static str),
}

/// A device kind's kernel slot.
pub enum KernelSlot {
    /// No kernel for this device kind: calls on it fail with a clear error.
    Empty,
    /// A kernel over an [`OpCall`]: what the engine runs, and what fusion rewrites.
    Call(KernelFn),
    /// The forward builds its engine closures itself; it runs on host memory
    /// only. Transitional (the default of `OpDef::BASE`): no table operator is
    /// `Inline`, and the walking test (`tests/op_table.rs`) rejects one.
    Inline,
    /// The operator is a composition of other table operators (its forward pushes
    /// only `OpCall`s of other definitions: InstanceNorm's reductions and arithmetic,
    /// the fused `RNN`'s gemms and gates). A graph executor or fusion pass expands it
    /// into those calls; it has inference and a gradient like any other operator.
    Composite,
}

/// Names an operator has in each frontend namespace.
pub struct Aliases {
    /// Extra names in `nd` (the MXNet name itself is always there unless it starts with `_`).
    pub nd: &'static [&'static str],
    /// Names in `np` (empty: not a NumPy function).
    pub np: &'static [&'static str],
    /// Names in `npx`.
    pub npx: &'static [&'static str],
    /// Whether `x.<name>(...)` is an NDArray method.
    pub fluent: bool,
}

impl Aliases {
    /// No extra names, not fluent.
    pub const NONE: Aliases = Aliases { nd: &[], np: &[], npx: &[], fluent: false };
}

/// An elementwise operator's scalar function, for fusion: the per-element
/// function by identity and its derivative as an expression.
pub enum ScalarForm {
    /// `f(x)`, with `df/dx` in terms of `x` and `y = f(x)`.
    Unary(UnaryOp, Option<&'static Expr>),
    /// `f(a, b)` with broadcasting.
    Binary(BinOp),
    /// `f(x, s)` (or `f(s, x)` with `reverse`) for a scalar parameter `s`.
    Scalar(BinOp, bool),
    /// No inputs: every element is the call's first numeric parameter (`_zeros`,
    /// `ones_like`, ...). A fusion pass folds it into the chain that reads it, so the
    /// head gradient of `backward()` or a zero initial value is never stored.
    Fill,
    /// `clip(x, lo, hi)` with the bounds as the call's two numeric parameters.
    Clip,
    /// `where(c, x, y)`: `x` where `c` is non-zero, else `y` (the condition may have
    /// any dtype; `x`, `y` and the result share one).
    Where,
    /// `f(x)` as a bool array, whatever `x`'s dtype (`isnan`, `signbit`, `logical_not`).
    Test(crate::ops::predicate::Test),
    /// `op(a, b)` of a comparison as a bool array, with broadcasting (`mx.np`'s `equal` ...).
    BoolBinary(BinOp),
    /// `op(x, s)` of a comparison as a bool array, `s` cast to `x`'s dtype as MXNet does.
    BoolScalar(BinOp),
}

/// Small inputs for generic tests (the finite-difference gradient check).
pub struct Example {
    /// Input shapes.
    pub shapes: &'static [&'static [usize]],
    /// Attributes as Python keyword arguments (`"axis=1, keepdims=True"`).
    pub attrs: &'static str,
    /// Inputs are drawn uniformly from this range.
    pub range: (f64, f64),
}

/// One operator, defined once.
pub struct OpDef {
    /// MXNet's operator name.
    pub name: &'static str,
    /// Names in the frontends.
    pub aliases: Aliases,
    /// Input names (`*name`: variadic).
    pub inputs: &'static [&'static str],
    /// Output names.
    pub outputs: &'static [&'static str],
    /// Auxiliary states the operator writes in place (BatchNorm's running statistics).
    pub aux: &'static [&'static str],
    /// Typed parameters in MXNet's positional order.
    pub params: &'static [ParamDef],
    /// One-paragraph description (the docstring's first part).
    pub doc: &'static str,
    /// Shape and dtype inference on metadata alone.
    pub infer: Option<InferFn>,
    /// Frontend entry.
    pub forward: ForwardFn,
    /// Gradient.
    pub grad: Grad,
    /// Inputs written in place (`FMutateInputs`).
    pub mutates: &'static [usize],
    /// Scratch memory a kernel needs, in bytes (`FResourceRequest`).
    pub workspace: Option<fn(&Attrs, &[Meta]) -> usize>,
    /// CPU kernel.
    pub cpu: KernelSlot,
    /// GPU kernel (no GPU backend exists yet: empty everywhere).
    pub gpu: KernelSlot,
    /// Scalar form of an elementwise operator.
    pub scalar: Option<ScalarForm>,
    /// Inputs for generic tests.
    pub example: Option<Example>,
    /// How a graph node of the operator looks.
    pub graph: GraphForm,
}

impl OpDef {
    /// The kernel for a device kind.
    pub fn kernel(&self, ctx: Context) -> &KernelSlot {
        match ctx.kind {
            crate::engine::DeviceKind::Gpu => &self.gpu,
            _ => &self.cpu,
        }
    }

    /// Runs inference, failing clearly when the operator has none.
    pub fn infer_meta(&'static self, attrs: &Attrs, inputs: &[Meta]) -> Result<Vec<Meta>> {
        match self.infer {
            Some(f) => f(self, attrs, inputs).map_err(|e| e.in_op(self.name)),
            None => Err(Error::value(self.name, "shape inference without data is not defined for this operator yet")),
        }
    }

    /// The unary function of an elementwise unary operator.
    pub fn unary_op(&self) -> Option<UnaryOp> {
        match self.scalar {
            Some(ScalarForm::Unary(u, _)) => Some(u),
            _ => None,
        }
    }
}

/// One call of an operator from a frontend.
pub struct Invocation<'a> {
    /// The definition.
    pub def: &'static OpDef,
    /// Inputs (`None`: an optional input left out).
    pub inputs: &'a [Option<NDArray>],
    /// Attributes as given.
    pub attrs: &'a Attrs,
}

impl<'a> Invocation<'a> {
    /// Typed access to `attrs` with `def`'s defaults, without inputs (for inference).
    pub fn params(def: &'static OpDef, attrs: &'a Attrs) -> Invocation<'a> {
        Invocation { def, inputs: &[], attrs }
    }
    /// The operator's name (for errors).
    pub fn name(&self) -> &'static str {
        self.def.name
    }
    /// Required input `i`.
    pub fn x(&self, i: usize) -> Result<&NDArray> {
        self.inputs.get(i).and_then(|x| x.as_ref()).ok_or_else(|| {
            let nm = self.def.inputs.get(i).copied().unwrap_or("?");
            Error::value(self.def.name, format!("missing input {i} ('{nm}')"))
        })
    }
    /// Optional input `i`.
    pub fn opt(&self, i: usize) -> Option<&NDArray> {
        self.inputs.get(i).and_then(|x| x.as_ref())
    }
    /// Every given input, in order (variadic operators).
    pub fn all(&self) -> Vec<NDArray> {
        self.inputs.iter().flatten().cloned().collect()
    }
}

/// What a [`GradFn`] receives.
pub struct GradArgs<'a> {
    /// The definition.
    pub def: &'static OpDef,
    /// The forward's inputs.
    pub inputs: &'a [NDArray],
    /// The forward's outputs.
    pub outputs: &'a [NDArray],
    /// Gradients of the outputs.
    pub out_grads: &'a [NDArray],
    /// The call's numeric parameters ([`OpCall::nums`]).
    pub nums: &'a [f64],
}

/// Allocates `def`'s outputs from `metas`, pushes the call with `nums` and records the
/// table gradient: the whole forward of an operator with one kernel and a `Grad::Fn`.
pub(crate) fn apply_table(def: &'static OpDef, ins: &[&NDArray], nums: &[f64], metas: &[Meta]) -> Result<Vec<NDArray>> {
    let outs = metas.iter().map(|m| NDArray::empty(m.shape.clone(), m.dtype, m.ctx)).collect::<Result<Vec<_>>>()?;
    if outs.iter().any(|o| o.size() > 0) {
        let orefs: Vec<&NDArray> = outs.iter().collect();
        push_call(OpCall::new(def, ins, &orefs).with_nums(nums))?;
    }
    record_table_grad(def, ins, &outs, nums);
    Ok(outs)
}

/// Records `def`'s table gradient (if it has one and some input needs a
/// gradient) for a call that produced `outs` from `ins` with `nums`.
pub(crate) fn record_table_grad(def: &'static OpDef, ins: &[&NDArray], outs: &[NDArray], nums: &[f64]) {
    if let Grad::Fn(f) = def.grad {
        if crate::autograd::needs_record(ins) {
            let inputs: Vec<NDArray> = ins.iter().map(|x| (*x).clone()).collect();
            let saved: Vec<crate::autograd::Saved> = outs.iter().map(crate::autograd::save_output).collect();
            let nums = nums.to_vec();
            let orefs: Vec<&NDArray> = outs.iter().collect();
            crate::autograd::record(
                def.name,
                ins,
                &orefs,
                Box::new(move |g| {
                    let outputs: Vec<NDArray> = saved.iter().map(crate::autograd::Saved::get).collect();
                    f(&GradArgs { def, inputs: &inputs, outputs: &outputs, out_grads: g, nums: &nums })
                }),
            );
        }
    }
}

/// Wraps one result as a forward's output list.
pub fn one(r: Result<NDArray>) -> Result<Vec<NDArray>> {
    r.map(|v| vec![v])
}
