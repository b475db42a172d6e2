//! Operators by name, with attributes, for frontends.
//!
//! Each pushed operation is thus also describable as data — operator name,
//! attributes, inputs — which is what a future fusion layer consumes. The
//! table [`OPS`] lists every operator's input names and attribute names in
//! MXNet's positional order, so frontends can generate their functions.

use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::ops::{self, optim, random, BinOp, IndexMode, ReduceOp, UnaryOp};
use crate::shape::Shape;
use crate::{Context, DType};

/// An attribute value.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    /// Python None.
    None,
    /// bool
    Bool(bool),
    /// int
    Int(i64),
    /// float
    Float(f64),
    /// str
    Str(String),
    /// tuple of ints
    Ints(Vec<i64>),
}

impl std::fmt::Display for Attr {
    /// Python's spelling, for error messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Attr::None => write!(f, "None"),
            Attr::Bool(b) => write!(f, "{}", if *b { "True" } else { "False" }),
            Attr::Int(v) => write!(f, "{v}"),
            Attr::Float(v) => write!(f, "{v:?}"),
            Attr::Str(s) => write!(f, "'{s}'"),
            Attr::Ints(v) => {
                let s: Vec<String> = v.iter().map(|x| x.to_string()).collect();
                if v.len() == 1 {
                    write!(f, "({},)", s[0])
                } else {
                    write!(f, "({})", s.join(", "))
                }
            }
        }
    }
}

/// Named attributes of one call.
#[derive(Clone, Debug, Default)]
pub struct Attrs(pub Vec<(String, Attr)>);

impl Attrs {
    fn get(&self, k: &str) -> Option<&Attr> {
        self.0.iter().find(|(n, _)| n == k).map(|(_, v)| v).filter(|v| **v != Attr::None)
    }
    fn err(op: &str, k: &str, what: &str, v: &Attr) -> Error {
        Error::Type { op: op.into(), msg: format!("attribute '{k}' must be {what}, got {v}") }
    }
    /// Float attribute.
    pub fn f64(&self, op: &str, k: &str, d: f64) -> Result<f64> {
        match self.get(k) {
            None => Ok(d),
            Some(Attr::Float(v)) => Ok(*v),
            Some(Attr::Int(v)) => Ok(*v as f64),
            Some(Attr::Bool(v)) => Ok(*v as i64 as f64),
            Some(v) => Err(Self::err(op, k, "a number", v)),
        }
    }
    /// Optional float attribute.
    pub fn opt_f64(&self, op: &str, k: &str) -> Result<Option<f64>> {
        if self.get(k).is_none() {
            return Ok(None);
        }
        self.f64(op, k, 0.0).map(Some)
    }
    /// Int attribute.
    pub fn i64(&self, op: &str, k: &str, d: i64) -> Result<i64> {
        match self.get(k) {
            None => Ok(d),
            Some(Attr::Int(v)) => Ok(*v),
            Some(Attr::Bool(v)) => Ok(*v as i64),
            Some(Attr::Float(v)) if v.fract() == 0.0 => Ok(*v as i64),
            Some(v) => Err(Self::err(op, k, "an integer", v)),
        }
    }
    /// Optional int attribute.
    pub fn opt_i64(&self, op: &str, k: &str) -> Result<Option<i64>> {
        if self.get(k).is_none() {
            return Ok(None);
        }
        self.i64(op, k, 0).map(Some)
    }
    /// Int attribute where an explicit `None` means something (MXNet's
    /// `axis=None`: flatten): absent gives `Some(d)`, `None` gives `None`.
    pub fn i64_or_none(&self, op: &str, k: &str, d: i64) -> Result<Option<i64>> {
        match self.0.iter().find(|(n, _)| n == k).map(|(_, v)| v) {
            None => Ok(Some(d)),
            Some(Attr::None) => Ok(None),
            Some(_) => self.i64(op, k, d).map(Some),
        }
    }
    /// Required int-tuple attribute.
    pub fn req_ints(&self, op: &str, k: &str) -> Result<Vec<i64>> {
        self.ints(op, k)?.ok_or_else(|| Error::value(op, format!("required attribute '{k}' is missing")))
    }
    /// Bool attribute.
    pub fn bool(&self, op: &str, k: &str, d: bool) -> Result<bool> {
        match self.get(k) {
            None => Ok(d),
            Some(Attr::Bool(v)) => Ok(*v),
            Some(Attr::Int(v)) => Ok(*v != 0),
            Some(v) => Err(Self::err(op, k, "a bool", v)),
        }
    }
    /// String attribute.
    pub fn str<'a>(&'a self, op: &str, k: &str, d: &'a str) -> Result<&'a str> {
        match self.get(k) {
            None => Ok(d),
            Some(Attr::Str(v)) => Ok(v),
            Some(v) => Err(Self::err(op, k, "a string", v)),
        }
    }
    /// Int-tuple attribute (an int becomes a 1-tuple).
    pub fn ints(&self, op: &str, k: &str) -> Result<Option<Vec<i64>>> {
        match self.get(k) {
            None => Ok(None),
            Some(Attr::Ints(v)) => Ok(Some(v.clone())),
            Some(Attr::Int(v)) => Ok(Some(vec![*v])),
            Some(v) => Err(Self::err(op, k, "an int or tuple of ints", v)),
        }
    }
    /// Shape attribute (required unless `d` given).
    pub fn shape(&self, op: &str, k: &str) -> Result<Shape> {
        let v = self.ints(op, k)?.unwrap_or_default();
        if v.iter().any(|&d| d < 0) {
            return Err(Error::value(op, format!("negative dimensions are not allowed: {v:?}")));
        }
        Ok(Shape::new(&v.iter().map(|&d| d as usize).collect::<Vec<_>>()))
    }
    /// Dtype attribute.
    pub fn dtype(&self, op: &str, k: &str, d: DType) -> Result<DType> {
        match self.get(k) {
            None => Ok(d),
            Some(Attr::Str(s)) => DType::from_name(s).map_err(|_| Error::dtype(op, format!("unknown dtype '{s}'"))),
            Some(v) => Err(Self::err(op, k, "a dtype name", v)),
        }
    }
    /// Context attribute (`"cpu(0)"`, `"cpu_pinned(0)"`).
    pub fn ctx(&self, op: &str, k: &str) -> Result<Context> {
        match self.get(k) {
            None => Ok(Context::default()),
            Some(Attr::Str(s)) => parse_ctx(s).ok_or_else(|| Error::value(op, format!("bad context '{s}'"))),
            Some(v) => Err(Self::err(op, k, "a context", v)),
        }
    }
}

/// Parses `cpu(0)`, `cpu_pinned(0)`, `gpu(0)`.
pub fn parse_ctx(s: &str) -> Option<Context> {
    let (kind, rest) = s.split_once('(')?;
    let id: u32 = rest.trim_end_matches(')').trim().parse().ok()?;
    match kind.trim() {
        "cpu" => Some(Context::cpu(id)),
        "cpu_pinned" => Some(Context::cpu_pinned(id)),
        "gpu" => Some(Context::gpu(id)),
        _ => None,
    }
}

/// One operator's signature: input names (`*` prefix: variadic) and attribute names.
pub struct OpInfo {
    /// Name.
    pub name: &'static str,
    /// Input names.
    pub inputs: &'static [&'static str],
    /// Attribute names in positional order.
    pub attrs: &'static [&'static str],
}

macro_rules! op_table {
    ($( $name:literal : [$($i:literal),*] [$($a:literal),*] ;)*) => {
        /// Every operator reachable through [`invoke`].
        pub const OPS: &[OpInfo] = &[ $( OpInfo { name: $name, inputs: &[$($i),*], attrs: &[$($a),*] } ),* ];
    };
}

op_table! {
    "_zeros": [] ["shape", "ctx", "dtype"];
    "_ones": [] ["shape", "ctx", "dtype"];
    "_full": [] ["shape", "value", "ctx", "dtype"];
    "_arange": [] ["start", "stop", "step", "repeat", "ctx", "dtype"];
    "_linspace": [] ["start", "stop", "num", "endpoint", "ctx", "dtype"];
    "_eye": [] ["N", "M", "k", "ctx", "dtype"];
    "zeros_like": ["data"] [];
    "ones_like": ["data"] [];
    "full_like": ["data"] ["fill_value"];
    "cast": ["data"] ["dtype"];
    "_copy": ["data"] [];
    "_scalar": ["data"] ["op", "scalar", "reverse"];
    "_binary": ["lhs", "rhs"] ["op"];
    "_unary": ["data"] ["op"];
    "_reduce": ["data"] ["op", "axis", "keepdims", "exclude"];
    "norm": ["data"] ["ord", "axis", "keepdims"];
    "argmax": ["data"] ["axis", "keepdims"];
    "argmin": ["data"] ["axis", "keepdims"];
    "dot": ["lhs", "rhs"] ["transpose_a", "transpose_b"];
    "batch_dot": ["lhs", "rhs"] ["transpose_a", "transpose_b"];
    "linalg_gemm2": ["A", "B"] ["transpose_a", "transpose_b", "alpha", "axis"];
    "reshape": ["data"] ["shape", "reverse"];
    "reshape_like": ["lhs", "rhs"] ["lhs_begin", "lhs_end", "rhs_begin", "rhs_end"];
    "flatten": ["data"] [];
    "expand_dims": ["data"] ["axis"];
    "squeeze": ["data"] ["axis"];
    "broadcast_to": ["data"] ["shape"];
    "broadcast_like": ["lhs", "rhs"] ["lhs_axes", "rhs_axes"];
    "transpose": ["data"] ["axes"];
    "swapaxes": ["data"] ["dim1", "dim2"];
    "concat": ["*data"] ["dim"];
    "stack": ["*data"] ["axis"];
    "split": ["data"] ["num_outputs", "axis", "squeeze_axis"];
    "slice_axis": ["data"] ["axis", "begin", "end"];
    "take": ["a", "indices"] ["axis", "mode"];
    "pick": ["data", "index"] ["axis", "keepdims", "mode"];
    "one_hot": ["indices"] ["depth", "on_value", "off_value", "dtype"];
    "where": ["condition", "x", "y"] [];
    "clip": ["data"] ["a_min", "a_max"];
    "tile": ["data"] ["reps"];
    "repeat": ["data"] ["repeats", "axis"];
    "flip": ["data"] ["axis"];
    "reverse": ["data"] ["axis"];
    "moveaxis": ["data"] ["source", "destination"];
    "gather_nd": ["data", "indices"] [];
    "scatter_nd": ["data", "indices"] ["shape"];
    "slice": ["data"] ["begin", "end", "step"];
    "slice_like": ["data", "shape_like"] ["axes"];
    "broadcast_axis": ["data"] ["axis", "size"];
    "broadcast_axes": ["data"] ["axis", "size"];
    "diag": ["data"] ["k", "axis1", "axis2"];
    "sort": ["data"] ["axis", "is_ascend"];
    "argsort": ["data"] ["axis", "is_ascend", "dtype"];
    "topk": ["data"] ["axis", "k", "ret_typ", "is_ascend", "dtype"];
    "FullyConnected": ["data", "weight", "bias"] ["num_hidden", "no_bias", "flatten"];
    "Activation": ["data"] ["act_type"];
    "LeakyReLU": ["data", "gamma"] ["act_type", "slope"];
    "softmax": ["data"] ["axis", "temperature"];
    "log_softmax": ["data"] ["axis", "temperature"];
    "softmax_ce_loss": ["pred", "label"] [];
    "softmax_cross_entropy": ["data", "label"] [];
    "Dropout": ["data"] ["p", "mode"];
    "LayerNorm": ["data", "gamma", "beta"] ["axis", "eps"];
    "Embedding": ["data", "weight"] ["input_dim", "output_dim"];
    "sgd_update": ["weight", "grad"] ["lr", "wd", "rescale_grad", "clip_gradient"];
    "sgd_mom_update": ["weight", "grad", "mom"] ["lr", "momentum", "wd", "rescale_grad", "clip_gradient"];
    "nag_mom_update": ["weight", "grad", "mom"] ["lr", "momentum", "wd", "rescale_grad", "clip_gradient"];
    "adam_update": ["weight", "grad", "mean", "var"] ["lr", "beta1", "beta2", "epsilon", "wd", "rescale_grad", "clip_gradient"];
    "rmsprop_update": ["weight", "grad", "n"] ["lr", "gamma1", "epsilon", "wd", "rescale_grad", "clip_gradient"];
    "rmspropalex_update": ["weight", "grad", "n", "g", "delta"] ["lr", "gamma1", "gamma2", "epsilon", "wd", "rescale_grad", "clip_gradient"];
    "adagrad_update": ["weight", "grad", "history"] ["lr", "epsilon", "wd", "rescale_grad", "clip_gradient"];
    "_random_uniform": [] ["low", "high", "shape", "ctx", "dtype"];
    "_random_normal": [] ["loc", "scale", "shape", "ctx", "dtype"];
    "_random_randint": [] ["low", "high", "shape", "ctx", "dtype"];
    "_random_exponential": [] ["lam", "shape", "ctx", "dtype"];
    "_random_gamma": [] ["alpha", "beta", "shape", "ctx", "dtype"];
    "_random_poisson": [] ["lam", "shape", "ctx", "dtype"];
    "_random_negative_binomial": [] ["k", "p", "shape", "ctx", "dtype"];
    "_random_generalized_negative_binomial": [] ["mu", "alpha", "shape", "ctx", "dtype"];
    "_shuffle": ["data"] [];
    "_sample_multinomial": ["data"] ["shape", "dtype"];
    "_sample_per_element": ["p0", "p1"] ["kind", "shape", "dtype"];
}

fn unary_by_name(s: &str) -> Option<UnaryOp> {
    UnaryOp::ALL.iter().copied().find(|u| u.name() == s)
}

fn binop_by_name(s: &str) -> Option<BinOp> {
    use BinOp::*;
    Some(match s {
        "add" => Add,
        "sub" => Sub,
        "mul" => Mul,
        "div" => Div,
        "mod" => Mod,
        "pow" => Pow,
        "maximum" => Max,
        "minimum" => Min,
        "hypot" => Hypot,
        "equal" => Eq,
        "not_equal" => Ne,
        "greater" => Gt,
        "greater_equal" => Ge,
        "lesser" => Lt,
        "lesser_equal" => Le,
        "logical_and" => And,
        "logical_or" => Or,
        "logical_xor" => Xor,
        _ => return None,
    })
}

fn reduce_by_name(s: &str) -> Option<ReduceOp> {
    use ReduceOp::*;
    Some(match s {
        "sum" => Sum,
        "mean" => Mean,
        "prod" => Prod,
        "max" => Max,
        "min" => Min,
        "nansum" => NanSum,
        "nanprod" => NanProd,
        _ => return None,
    })
}

fn req<'a>(op: &str, inputs: &'a [Option<NDArray>], i: usize) -> Result<&'a NDArray> {
    inputs.get(i).and_then(|x| x.as_ref()).ok_or_else(|| Error::value(op, format!("missing input {i}")))
}

/// Runs operator `name` on `inputs` with `attrs`.
pub fn invoke(name: &str, inputs: &[Option<NDArray>], a: &Attrs) -> Result<Vec<NDArray>> {
    invoke_op(name, inputs, a).map_err(|e| e.in_op(name))
}

fn invoke_op(name: &str, inputs: &[Option<NDArray>], a: &Attrs) -> Result<Vec<NDArray>> {
    let x = |i: usize| req(name, inputs, i);
    let one = |r: Result<NDArray>| r.map(|v| vec![v]);
    let n = name;
    match name {
        "_zeros" => Ok(vec![ops::zeros(a.shape(n, "shape")?, a.dtype(n, "dtype", DType::F32)?, a.ctx(n, "ctx")?)?]),
        "_ones" => Ok(vec![ops::ones(a.shape(n, "shape")?, a.dtype(n, "dtype", DType::F32)?, a.ctx(n, "ctx")?)?]),
        "_full" => Ok(vec![ops::full(
            a.shape(n, "shape")?,
            a.f64(n, "value", 0.0)?,
            a.dtype(n, "dtype", DType::F32)?,
            a.ctx(n, "ctx")?,
        )?]),
        "_arange" => one(ops::arange(
            a.f64(n, "start", 0.0)?,
            a.opt_f64(n, "stop")?,
            a.f64(n, "step", 1.0)?,
            a.i64(n, "repeat", 1)?.max(0) as usize,
            a.dtype(n, "dtype", DType::F32)?,
            a.ctx(n, "ctx")?,
        )),
        "_linspace" => one(ops::linspace(
            a.f64(n, "start", 0.0)?,
            a.f64(n, "stop", 1.0)?,
            a.i64(n, "num", 50)?.max(0) as usize,
            a.bool(n, "endpoint", true)?,
            a.dtype(n, "dtype", DType::F32)?,
            a.ctx(n, "ctx")?,
        )),
        "_eye" => Ok(vec![ops::eye(
            a.i64(n, "N", 0)?.max(0) as usize,
            a.opt_i64(n, "M")?.filter(|&m| m > 0).map(|m| m as usize),
            a.i64(n, "k", 0)?,
            a.dtype(n, "dtype", DType::F32)?,
            a.ctx(n, "ctx")?,
        )?]),
        "zeros_like" => Ok(vec![ops::zeros_like(x(0)?)?]),
        "ones_like" => Ok(vec![ops::ones_like(x(0)?)?]),
        "full_like" => Ok(vec![ops::full_like(x(0)?, a.f64(n, "fill_value", 0.0)?)?]),
        "cast" => one(ops::astype(x(0)?, a.dtype(n, "dtype", DType::F32)?)),
        "_copy" => one(ops::copy(x(0)?)),
        "_scalar" => {
            let op = a.str(n, "op", "")?;
            let b = binop_by_name(op).ok_or_else(|| Error::value(n, format!("unknown scalar op '{op}'")))?;
            one(ops::user_scalar_op(b, x(0)?, a.f64(n, "scalar", 0.0)?, a.bool(n, "reverse", false)?))
        }
        "_binary" => {
            let op = a.str(n, "op", "")?;
            let b = binop_by_name(op).ok_or_else(|| Error::value(n, format!("unknown binary op '{op}'")))?;
            one(ops::binary(b, x(0)?, x(1)?))
        }
        "_unary" => {
            let op = a.str(n, "op", "")?;
            let u = unary_by_name(op).ok_or_else(|| Error::value(n, format!("unknown unary op '{op}'")))?;
            one(ops::unary(u, x(0)?))
        }
        "_reduce" => {
            let op = a.str(n, "op", "")?;
            let r = reduce_by_name(op).ok_or_else(|| Error::value(n, format!("unknown reduction '{op}'")))?;
            let axes = a.ints(op, "axis")?;
            one(ops::reduce(r, x(0)?, axes.as_deref(), a.bool(n, "keepdims", false)?, a.bool(n, "exclude", false)?))
        }
        "norm" => {
            let axes = a.ints(n, "axis")?;
            one(ops::norm(x(0)?, a.i64(n, "ord", 2)? as u32, axes.as_deref(), a.bool(n, "keepdims", false)?))
        }
        "argmax" | "argmin" => {
            // MXNet returns the indices in the input's dtype (float32 for bool).
            let x0 = x(0)?;
            let odt = if x0.dtype() == DType::Bool { DType::F32 } else { x0.dtype() };
            one(ops::argmax(x0, a.opt_i64(n, "axis")?, a.bool(n, "keepdims", false)?, name == "argmin", odt))
        }
        "dot" => one(ops::dot(x(0)?, x(1)?, a.bool(n, "transpose_a", false)?, a.bool(n, "transpose_b", false)?)),
        "batch_dot" => {
            one(ops::batch_dot(x(0)?, x(1)?, a.bool(n, "transpose_a", false)?, a.bool(n, "transpose_b", false)?))
        }
        "linalg_gemm2" => one(ops::gemm2_axis(
            x(0)?,
            x(1)?,
            a.bool(n, "transpose_a", false)?,
            a.bool(n, "transpose_b", false)?,
            a.f64(n, "alpha", 1.0)?,
            a.i64(n, "axis", -2)?,
        )),
        "reshape" => {
            let s = a.ints(n, "shape")?.unwrap_or_default();
            one(ops::reshape(x(0)?, &s, a.bool(n, "reverse", false)?))
        }
        "reshape_like" => one(ops::reshape_like(
            x(0)?,
            x(1)?,
            [a.opt_i64(n, "lhs_begin")?, a.opt_i64(n, "lhs_end")?],
            [a.opt_i64(n, "rhs_begin")?, a.opt_i64(n, "rhs_end")?],
        )),
        "flatten" => one(ops::flatten(x(0)?)),
        "expand_dims" => one(ops::expand_dims(x(0)?, a.i64(n, "axis", 0)?)),
        "squeeze" => one(ops::squeeze(x(0)?, a.ints(n, "axis")?.as_deref())),
        "broadcast_to" => one(ops::broadcast_to_mx(x(0)?, a.shape(n, "shape")?)),
        "broadcast_like" => {
            one(ops::broadcast_like(x(0)?, x(1)?, a.ints(n, "lhs_axes")?.as_deref(), a.ints(n, "rhs_axes")?.as_deref()))
        }
        "transpose" => one(ops::transpose(x(0)?, a.ints(n, "axes")?.as_deref())),
        "swapaxes" => one(ops::swapaxes(x(0)?, a.i64(n, "dim1", 0)?, a.i64(n, "dim2", 0)?)),
        "concat" | "stack" => {
            let xs: Vec<NDArray> = inputs.iter().flatten().cloned().collect();
            if name == "concat" {
                one(ops::concat(&xs, a.i64(n, "dim", 1)?))
            } else {
                one(ops::stack(&xs, a.i64(n, "axis", 0)?))
            }
        }
        "split" => {
            let d = x(0)?;
            let k = a.i64(n, "num_outputs", 1)?;
            let ax = crate::shape::norm_axis(n, a.i64(n, "axis", 1)?, d.ndim())?;
            let len = d.dims()[ax] as i64;
            if k <= 0 || len % k != 0 {
                return Err(Error::value(
                    n,
                    format!("axis {ax} of size {len} cannot be split into {k} equal parts (shape {})", d.shape()),
                ));
            }
            let step = len / k;
            let sq = a.bool(n, "squeeze_axis", false)?;
            (0..k)
                .map(|i| {
                    let p = ops::slice_axis(d, ax as i64, i * step, Some((i + 1) * step))?;
                    if sq && step == 1 {
                        ops::squeeze(&p, Some(&[ax as i64]))
                    } else {
                        Ok(p)
                    }
                })
                .collect()
        }
        "slice_axis" => one(ops::slice_axis(x(0)?, a.i64(n, "axis", 0)?, a.i64(n, "begin", 0)?, a.opt_i64(n, "end")?)),
        "take" => one(ops::take(x(0)?, x(1)?, a.i64(n, "axis", 0)?, IndexMode::parse(a.str(n, "mode", "clip")?)?)),
        "pick" => one(ops::pick(
            x(0)?,
            x(1)?,
            a.i64(n, "axis", -1)?,
            a.bool(n, "keepdims", false)?,
            IndexMode::parse(a.str(n, "mode", "clip")?)?,
        )),
        "one_hot" => one(ops::one_hot(
            x(0)?,
            a.i64(n, "depth", 0)?.max(0) as usize,
            a.f64(n, "on_value", 1.0)?,
            a.f64(n, "off_value", 0.0)?,
            a.dtype(n, "dtype", DType::F32)?,
        )),
        "where" => one(ops::where_(x(0)?, x(1)?, x(2)?)),
        "clip" => one(ops::clip(x(0)?, a.f64(n, "a_min", f64::NEG_INFINITY)?, a.f64(n, "a_max", f64::INFINITY)?)),
        "tile" => one(ops::tile(x(0)?, &a.req_ints(n, "reps")?)),
        "repeat" => {
            let r =
                a.opt_i64(n, "repeats")?.ok_or_else(|| Error::value(n, "required attribute 'repeats' is missing"))?;
            one(ops::repeat(x(0)?, r, a.opt_i64(n, "axis")?))
        }
        "flip" | "reverse" => one(ops::flip(x(0)?, &a.req_ints(n, "axis")?)),
        "moveaxis" => one(ops::moveaxis(x(0)?, &a.req_ints(n, "source")?, &a.req_ints(n, "destination")?)),
        "gather_nd" => one(ops::gather_nd(x(0)?, x(1)?)),
        "scatter_nd" => one(ops::scatter_nd(x(0)?, x(1)?, a.shape(n, "shape")?)),
        // `None` entries of begin/end/step arrive as ops::NONE_INDEX (i64::MIN).
        "slice" => one(ops::slice(
            x(0)?,
            &a.req_ints(n, "begin")?,
            &a.req_ints(n, "end")?,
            &a.ints(n, "step")?.unwrap_or_default(),
        )),
        "slice_like" => one(ops::slice_like(x(0)?, x(1)?, &a.ints(n, "axes")?.unwrap_or_default())),
        "broadcast_axis" | "broadcast_axes" => one(ops::broadcast_axis(
            x(0)?,
            &a.ints(n, "axis")?.unwrap_or_default(),
            &a.ints(n, "size")?.unwrap_or_default(),
        )),
        "diag" => one(ops::diag(x(0)?, a.i64(n, "k", 0)?, a.i64(n, "axis1", 0)?, a.i64(n, "axis2", 1)?)),
        "sort" => one(ops::sort(x(0)?, a.i64_or_none(n, "axis", -1)?, a.bool(n, "is_ascend", true)?)),
        "argsort" => one(ops::argsort(
            x(0)?,
            a.i64_or_none(n, "axis", -1)?,
            a.bool(n, "is_ascend", true)?,
            a.dtype(n, "dtype", DType::F32)?,
        )),
        "topk" => ops::topk(
            x(0)?,
            a.i64_or_none(n, "axis", -1)?,
            a.i64(n, "k", 1)?,
            ops::TopKRet::parse(a.str(n, "ret_typ", "indices")?)?,
            a.bool(n, "is_ascend", false)?,
            a.dtype(n, "dtype", DType::F32)?,
        ),
        "FullyConnected" => {
            let no_bias = a.bool(n, "no_bias", false)?;
            let bias = if no_bias { None } else { inputs.get(2).and_then(|b| b.as_ref()) };
            let w = x(1)?;
            let nh = a.opt_i64(n, "num_hidden")?.map(|v| v as usize).unwrap_or(w.dims().first().copied().unwrap_or(0));
            one(ops::nn::fully_connected(x(0)?, w, bias, nh, a.bool(n, "flatten", true)?))
        }
        "Activation" => one(ops::nn::activation(x(0)?, a.str(n, "act_type", "relu")?)),
        "LeakyReLU" => one(ops::nn::leaky_relu(
            x(0)?,
            a.str(n, "act_type", "leaky")?,
            a.f64(n, "slope", 0.25)?,
            inputs.get(1).and_then(|g| g.as_ref()),
        )),
        "softmax" => one(ops::nn::softmax(x(0)?, a.i64(n, "axis", -1)?, a.opt_f64(n, "temperature")?)),
        "log_softmax" => one(ops::nn::log_softmax(x(0)?, a.i64(n, "axis", -1)?, a.opt_f64(n, "temperature")?)),
        "softmax_ce_loss" => one(ops::nn::softmax_ce_loss(x(0)?, x(1)?)),
        "softmax_cross_entropy" => {
            let l = ops::nn::softmax_ce_loss(x(0)?, x(1)?)?;
            one(ops::reduce(ReduceOp::Sum, &l, None, false, false).and_then(|s| ops::reshape_to(&s, Shape::new(&[1]))))
        }
        "Dropout" => one(ops::nn::dropout(x(0)?, a.f64(n, "p", 0.5)?, a.str(n, "mode", "training")? == "always")),
        "LayerNorm" => one(ops::nn::layer_norm(x(0)?, x(1)?, x(2)?, a.i64(n, "axis", -1)?, a.f64(n, "eps", 1e-5)?)),
        "Embedding" => one(ops::nn::embedding(x(0)?, x(1)?)),
        "sgd_update" | "sgd_mom_update" | "nag_mom_update" | "adam_update" | "rmsprop_update"
        | "rmspropalex_update" | "adagrad_update" => {
            let p = optim::UpdateParams {
                lr: a.f64(n, "lr", 0.01)?,
                wd: a.f64(n, "wd", 0.0)?,
                rescale_grad: a.f64(n, "rescale_grad", 1.0)?,
                clip_gradient: a.f64(n, "clip_gradient", -1.0)?,
            };
            let kind = match name {
                "sgd_update" => optim::Update::Sgd,
                "sgd_mom_update" => optim::Update::SgdMom { momentum: a.f64(n, "momentum", 0.0)? },
                "nag_mom_update" => optim::Update::Nag { momentum: a.f64(n, "momentum", 0.0)? },
                "adam_update" => optim::Update::Adam {
                    beta1: a.f64(n, "beta1", 0.9)?,
                    beta2: a.f64(n, "beta2", 0.999)?,
                    epsilon: a.f64(n, "epsilon", 1e-8)?,
                },
                "rmspropalex_update" => optim::Update::RmsPropAlex {
                    gamma1: a.f64(n, "gamma1", 0.95)?,
                    gamma2: a.f64(n, "gamma2", 0.9)?,
                    epsilon: a.f64(n, "epsilon", 1e-8)?,
                },
                "rmsprop_update" => {
                    optim::Update::RmsProp { gamma1: a.f64(n, "gamma1", 0.95)?, epsilon: a.f64(n, "epsilon", 1e-8)? }
                }
                _ => optim::Update::AdaGrad { epsilon: a.f64(n, "epsilon", 1e-7)? },
            };
            let w = x(0)?;
            let states: Vec<&NDArray> = (2..inputs.len()).map(x).collect::<Result<_>>()?;
            optim::update(kind, w, x(1)?, &states, p)?;
            Ok(vec![w.clone()])
        }
        "_random_uniform"
        | "_random_normal"
        | "_random_randint"
        | "_random_exponential"
        | "_random_gamma"
        | "_random_poisson"
        | "_random_negative_binomial"
        | "_random_generalized_negative_binomial" => {
            let dist = match name {
                "_random_uniform" => random::Dist::Uniform(a.f64(n, "low", 0.0)?, a.f64(n, "high", 1.0)?),
                "_random_normal" => random::Dist::Normal(a.f64(n, "loc", 0.0)?, a.f64(n, "scale", 1.0)?),
                "_random_randint" => random::Dist::RandInt(a.i64(n, "low", 0)?, a.i64(n, "high", 1)?),
                "_random_exponential" => random::Dist::Exponential(a.f64(n, "lam", 1.0)?),
                "_random_gamma" => random::Dist::Gamma(a.f64(n, "alpha", 1.0)?, a.f64(n, "beta", 1.0)?),
                "_random_negative_binomial" => random::Dist::NegBinomial(a.f64(n, "k", 1.0)?, a.f64(n, "p", 1.0)?),
                "_random_generalized_negative_binomial" => {
                    random::Dist::GenNegBinomial(a.f64(n, "mu", 1.0)?, a.f64(n, "alpha", 1.0)?)
                }
                _ => random::Dist::Poisson(a.f64(n, "lam", 1.0)?),
            };
            let default_dt = if name == "_random_randint" { DType::I32 } else { DType::F32 };
            one(random::sample(dist, a.shape(n, "shape")?, a.dtype(n, "dtype", default_dt)?, a.ctx(n, "ctx")?))
        }
        "_shuffle" => one(random::shuffle(x(0)?)),
        "_sample_per_element" => {
            let ps: Vec<NDArray> = inputs.iter().flatten().cloned().collect();
            one(random::sample_per_element(
                a.str(n, "kind", "")?,
                &ps,
                a.shape(n, "shape")?,
                a.dtype(n, "dtype", DType::F32)?,
            ))
        }
        "_sample_multinomial" => {
            let s = a.ints(n, "shape")?.unwrap_or_default();
            let num = s.iter().product::<i64>().max(1) as usize;
            let p = x(0)?;
            let r = random::multinomial(p, num, a.dtype(n, "dtype", DType::I32)?)?;
            // Output shape: data.shape[:-1] + shape (MXNet).
            let mut od = p.dims()[..p.ndim().saturating_sub(1)].to_vec();
            od.extend(s.iter().map(|&d| d.max(0) as usize));
            one(ops::reshape_to(&r, Shape::new(&od)))
        }
        _ => Err(Error::value(name, "no such operator")),
    }
}
