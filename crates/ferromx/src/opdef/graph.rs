//! How an operator appears in a graph: [`GraphForm`], MXNet's per-operator attribute
//! functions (`FListInputNames`, `FNumVisibleOutputs`, `FNumOutputs`, `FListOutputNames`,
//! the parameter and backward halves of `FInferShape`, `FSetInputVarAttrOnCompose`) as
//! data on each [`OpDef`], with the helpers the families share.

use super::{Attrs, Invocation, OpDef};
use crate::error::Result;
use crate::shape::Shape;
use crate::DType;

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

    /// A node's outputs: how many it shows, how many it has in all (hidden ones
    /// included), and MXNet's names of the visible ones (`output`, `mean`, `var`;
    /// `output0`, `output1`; or `output`), the suffixes of `list_outputs`.
    pub fn outputs(def: &'static OpDef, attrs: &Attrs) -> Result<(usize, usize, Vec<String>)> {
        let visible = Self::visible_outputs(def, attrs)?;
        let total = match def.graph.total {
            OutputCount::Visible => visible,
            OutputCount::Fixed(n) => n,
            OutputCount::Rule(f) => f(&Invocation::params(def, attrs)).map_err(|e| e.in_op(def.name))?,
        }
        .max(visible);
        let names = if def.graph.named_outputs {
            def.outputs.iter().take(visible).map(|s| s.to_string()).collect()
        } else if total > 1 {
            (0..visible).map(|i| format!("output{i}")).collect()
        } else {
            vec!["output".to_string()]
        };
        Ok((visible, total, names))
    }

    /// How many outputs a node of `def` with attributes `attrs` has in all.
    pub fn total_outputs(def: &'static OpDef, attrs: &Attrs) -> Result<usize> {
        Ok(Self::outputs(def, attrs)?.1)
    }

    /// MXNet's names of the visible outputs of a node (see [`GraphForm::outputs`]).
    pub fn output_names(def: &'static OpDef, attrs: &Attrs) -> Result<Vec<String>> {
        Ok(Self::outputs(def, attrs)?.2)
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
