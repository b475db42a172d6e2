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
mod table;

pub use attrs::{parse_ctx, Attr, Attrs};
pub use call::{push_call, KernelFn, OpCall};
pub use expr::Expr;
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
            ParamKind::Ints | ParamKind::Shape => "Union[int, Tuple[int, ...]]",
            ParamKind::Floats => "Union[float, Tuple[float, ...]]",
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
}

/// Which of its inputs a graph node of the operator has, for its attributes
/// (MXNet's `FListInputNames`): a bias is absent under `no_bias`.
pub type GraphInputsFn = fn(&Invocation<'_>) -> Result<Vec<&'static str>>;
/// How many outputs a graph node shows for its attributes (`FNumVisibleOutputs`).
pub type VisibleOutputsFn = fn(&Invocation<'_>) -> Result<usize>;
/// Shapes of an operator's parameter inputs, by input name, from the data shape (the half
/// of MXNet's `FInferShape` that fills in a weight's shape from the data's). The data
/// shape is partial (a 0 dimension is unknown, MXNet 1.x) or absent; a returned shape
/// with a 0 in it is not known yet.
pub type ParamShapesFn = fn(&Invocation<'_>, Option<&Shape>) -> Result<Vec<(&'static str, Shape)>>;

/// Input shapes from what is known of the outputs and inputs (the backward half of MXNet's
/// `FInferShape`: FullyConnected's batch from its output's). Shapes are partial (0 dims
/// unknown, `None` unknown shapes); the result has one entry per input, `None` where the
/// rule says nothing.
pub type InputShapesFn = fn(&Invocation<'_>, &[Option<Shape>], &[Option<Shape>]) -> Result<Vec<Option<Shape>>>;

/// The dtypes of a node's visible outputs from its first input's dtype, for an operator
/// whose outputs do not all share one dtype (topk's values and indices): a graph's type
/// pass runs before shapes are known, so it cannot run the operator's inference.
pub type OutDtypesFn = fn(&Invocation<'_>, DType) -> Result<Vec<DType>>;

/// How many outputs MXNet's graph node of an operator has in all (`FNumOutputs`): its
/// graph JSON counts hidden outputs in `node_row_ptr`, and a node with several names its
/// outputs by number.
#[derive(Clone, Copy)]
pub enum OutputCount {
    /// As many as are visible.
    Visible,
    /// A fixed count (Dropout and its mask: 2; BatchNorm and its statistics: 3).
    Fixed(usize),
    /// A function of the attributes (max pooling's oneDNN workspace, topk's values).
    Rule(VisibleOutputsFn),
}

/// How an operator appears in a graph (a `Symbol`, MXNet's graph JSON), beyond its call.
///
/// Why it is data on the definition: a graph lists a node's inputs and outputs, and the
/// shapes of its weights, before any array exists, and MXNet's graph JSON counts hidden
/// outputs in `node_row_ptr`. MXNet answers these with per-operator attribute functions;
/// here they sit beside the operator's inference, so the symbol layer (Python) holds no
/// per-operator table of its own.
pub struct GraphForm {
    /// Inputs present for given attributes (`None`: all of [`OpDef::inputs`]; auxiliary
    /// states are always listed).
    pub inputs: Option<GraphInputsFn>,
    /// Visible outputs for given attributes (`None`: all of [`OpDef::outputs`]).
    pub visible: Option<VisibleOutputsFn>,
    /// Whether MXNet names the outputs as [`OpDef::outputs`] does (`FListOutputNames`:
    /// BatchNorm's `output`, `mean`, `var`); otherwise a node with more than one output
    /// in all names them `output0`, `output1`, ... and a node with one `output`.
    pub named_outputs: bool,
    /// Outputs MXNet's graph node has in all, hidden ones included (`FNumOutputs`).
    pub total: OutputCount,
    /// Parameter shapes from the data shape.
    pub param_shapes: Option<ParamShapesFn>,
    /// Whether output 0 always has input 0's shape, so graph inference carries a partial
    /// shape across the node both ways (MXNet's `ElemwiseShape`; the elementwise unary
    /// and scalar operators have it through their scalar form).
    pub same_shape: bool,
    /// Input shapes from output shapes.
    pub input_shapes: Option<InputShapesFn>,
    /// Output dtypes without shapes (`None`: all outputs take the `dtype` attribute if the
    /// operator has one, else the first input's dtype).
    pub out_dtypes: Option<OutDtypesFn>,
    /// MXNet's name for the operator in graph JSON where the table's differs (`Reshape`
    /// for `reshape`): what a graph written by ferromx says, so MXNet can load it.
    pub json_name: Option<&'static str>,
    /// Further names graphs written by MXNet use for the operator (the legacy `_Plus`,
    /// `_PlusScalar`, `identity`, ...).
    pub json_aliases: &'static [&'static str],
    /// Initializers for input variables without one, as `(input, initializer JSON)`
    /// (MXNet's `FSetInputVarAttrOnCompose`: BatchNorm's moving variance starts at one,
    /// PReLU's slope at 0.25).
    pub input_init: &'static [(&'static str, &'static str)],
}

impl GraphForm {
    /// Every input, every output visible and numbered, no parameter rule.
    pub const PLAIN: GraphForm = GraphForm {
        inputs: None,
        visible: None,
        named_outputs: false,
        total: OutputCount::Visible,
        param_shapes: None,
        same_shape: false,
        input_shapes: None,
        out_dtypes: None,
        json_name: None,
        json_aliases: &[],
        input_init: &[],
    };

    /// The inputs of a node of `def` with attributes `attrs`, auxiliary states last.
    pub fn input_names(def: &'static OpDef, attrs: &Attrs) -> Result<Vec<&'static str>> {
        let mut names = match def.graph.inputs {
            Some(f) => f(&Invocation::params(def, attrs)).map_err(|e| e.in_op(def.name))?,
            None => def.inputs.to_vec(),
        };
        for a in def.aux {
            if !names.contains(a) {
                names.push(a);
            }
        }
        Ok(names)
    }

    /// How many outputs a node of `def` with attributes `attrs` shows.
    pub fn visible_outputs(def: &'static OpDef, attrs: &Attrs) -> Result<usize> {
        match def.graph.visible {
            Some(f) => f(&Invocation::params(def, attrs)).map_err(|e| e.in_op(def.name)),
            None => Ok(def.outputs.len()),
        }
    }

    /// How many outputs a node of `def` with attributes `attrs` has in all.
    pub fn total_outputs(def: &'static OpDef, attrs: &Attrs) -> Result<usize> {
        let visible = Self::visible_outputs(def, attrs)?;
        let total = match def.graph.total {
            OutputCount::Visible => visible,
            OutputCount::Fixed(n) => n,
            OutputCount::Rule(f) => f(&Invocation::params(def, attrs)).map_err(|e| e.in_op(def.name))?,
        };
        Ok(total.max(visible))
    }

    /// MXNet's names of the visible outputs of a node (`output`, `mean`, `var`;
    /// `output0`, `output1`; or `output`), the suffixes of `list_outputs`.
    pub fn output_names(def: &'static OpDef, attrs: &Attrs) -> Result<Vec<String>> {
        let n = Self::visible_outputs(def, attrs)?;
        Ok(if def.graph.named_outputs {
            def.outputs.iter().take(n).map(|s| s.to_string()).collect()
        } else if Self::total_outputs(def, attrs)? > 1 {
            (0..n).map(|i| format!("output{i}")).collect()
        } else {
            vec!["output".to_string()]
        })
    }

    /// The visible outputs' dtypes of a node of `def` whose first input has dtype `first`
    /// (see [`OutDtypesFn`]); `None` when the operator has no rule.
    pub fn out_dtypes(def: &'static OpDef, attrs: &Attrs, first: DType) -> Result<Option<Vec<DType>>> {
        match def.graph.out_dtypes {
            Some(f) => f(&Invocation::params(def, attrs), first).map(Some).map_err(|e| e.in_op(def.name)),
            None => Ok(None),
        }
    }

    /// Input shapes of a node of `def` from its partial input and output shapes (see
    /// [`InputShapesFn`]); all `None` when the operator has no rule.
    pub fn input_shapes(
        def: &'static OpDef,
        attrs: &Attrs,
        ins: &[Option<Shape>],
        outs: &[Option<Shape>],
    ) -> Result<Vec<Option<Shape>>> {
        match def.graph.input_shapes {
            Some(f) => f(&Invocation::params(def, attrs), ins, outs).map_err(|e| e.in_op(def.name)),
            None => Ok(vec![None; ins.len()]),
        }
    }

    /// Parameter shapes of a node of `def` from its data shape (see [`ParamShapesFn`]);
    /// empty when the operator has no rule.
    pub fn param_shapes(
        def: &'static OpDef,
        attrs: &Attrs,
        data: Option<&Shape>,
    ) -> Result<Vec<(&'static str, Shape)>> {
        match def.graph.param_shapes {
            Some(f) => f(&Invocation::params(def, attrs), data).map_err(|e| e.in_op(def.name)),
            None => Ok(Vec::new()),
        }
    }
}

/// Inputs without `bias` when the call's `no_bias` is set (FullyConnected, Convolution).
pub fn inputs_unless_no_bias(i: &Invocation<'_>) -> Result<Vec<&'static str>> {
    let no_bias = i.bool("no_bias")?;
    Ok(i.def.inputs.iter().copied().filter(|n| !(no_bias && *n == "bias")).collect())
}

/// Inputs without each `*_length(s)` input whose `use_*` flag is off (RNN, CTCLoss,
/// the sequence operators): MXNet lists them only when used.
pub fn inputs_with_used_lengths(i: &Invocation<'_>) -> Result<Vec<&'static str>> {
    let mut out = Vec::with_capacity(i.def.inputs.len());
    for n in i.def.inputs {
        let flag = format!("use_{n}");
        if i.def.params.iter().any(|p| p.name == flag) && !i.bool(&flag)? {
            continue;
        }
        out.push(*n);
    }
    Ok(out)
}

/// BatchNorm's moving statistics start at zero (mean) and one (variance).
pub const MOVING_STATS_INIT: &[(&str, &str)] = &[("moving_mean", "[\"zero\", {}]"), ("moving_var", "[\"one\", {}]")];

/// All outputs with `output_mean_var`, else one (BatchNorm, LayerNorm, GroupNorm).
pub fn outputs_if_mean_var(i: &Invocation<'_>) -> Result<usize> {
    Ok(if i.bool("output_mean_var")? { i.def.outputs.len() } else { 1 })
}

/// The size of `data`'s axis `axis` (negative: from the end; 0, unknown, when out of range).
pub fn dim_at(data: &Shape, axis: i64) -> usize {
    let nd = data.ndim() as i64;
    let a = if axis < 0 { axis + nd } else { axis };
    if (0..nd).contains(&a) {
        data.dims()[a as usize]
    } else {
        0
    }
}

/// Each named parameter gets shape `(c,)`, `c` being the data's `axis` (the channel
/// parameters of the normalisation layers).
pub fn per_channel(names: &[&'static str], data: &Shape, axis: i64) -> Vec<(&'static str, Shape)> {
    let c = dim_at(data, axis);
    names.iter().map(|n| (*n, Shape::new(&[c]))).collect()
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
