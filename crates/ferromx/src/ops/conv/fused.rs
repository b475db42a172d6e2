//! `_fused_convolution`: a channel-first `Convolution` followed, in one engine
//! op, by any of BatchNorm in inference, a residual sum and ReLU.
//!
//! Why: a hybridized block's inference plan (`symbol/_fuse.py`) replaces
//! `Convolution → BatchNorm → (+ residual) → relu` chains by this operator, so
//! the steps after the convolution run on each output row while it is in cache
//! (`epilogue.rs`) instead of as separate passes over memory (MXNet's oneDNN
//! subgraph backend fuses the same patterns into `_sg_mkldnn_conv`). It is an
//! execution detail of the plan: graphs, `export` and autograd never see it,
//! and it refuses to run under recording, since it has no gradient.

use super::cpu::{forward_with, with_conv_dtype, ConvElem};
use super::epilogue::{BnAffine, Epilogue};
use super::prepared;
use super::{conv_shapes, fmt_dims, ConvParams, Geom, DEFS};
use crate::autograd::needs_record;
use crate::dtype::{DType, Elem};
use crate::engine::OpFailure;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{one, push_call, Invocation, OpCall};
use crate::shape::Shape;
use crate::storage::Kernel;

/// Which steps follow the convolution (the call's `with_*` attributes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Steps {
    /// BatchNorm in inference with the moving statistics.
    pub bn: bool,
    /// BatchNorm's `eps`.
    pub eps: f64,
    /// BatchNorm's `fix_gamma` (gamma taken as 1).
    pub fix_gamma: bool,
    /// A residual of the output's shape is added.
    pub sum: bool,
    /// ReLU last.
    pub relu: bool,
}

impl Steps {
    fn read(i: &Invocation<'_>) -> Result<Steps> {
        Ok(Steps {
            bn: i.bool("with_bn")?,
            eps: i.f64("eps")?,
            fix_gamma: i.bool("fix_gamma")?,
            sum: i.bool("with_sum")?,
            relu: i.bool("with_relu")?,
        })
    }

    fn to_nums(self) -> [f64; 5] {
        let b = |v: bool| v as u8 as f64;
        [b(self.bn), self.eps, b(self.fix_gamma), b(self.sum), b(self.relu)]
    }

    fn from_nums(v: &[f64]) -> Steps {
        let at = |i: usize| v.get(i).copied().unwrap_or(0.0);
        Steps { bn: at(0) != 0.0, eps: at(1), fix_gamma: at(2) != 0.0, sum: at(3) != 0.0, relu: at(4) != 0.0 }
    }
}

/// Where each optional input sits: `(bias, first BatchNorm parameter, sum)`.
fn positions(no_bias: bool, s: Steps) -> (Option<usize>, Option<usize>, Option<usize>) {
    let mut at = 2;
    let mut take = |present: bool, n: usize| {
        let p = present.then_some(at);
        if present {
            at += n;
        }
        p
    };
    (take(!no_bias, 1), take(s.bn, 4), take(s.sum, 1))
}

/// The graph's input names for the call's flags.
pub(crate) fn input_names(i: &Invocation<'_>) -> Result<Vec<&'static str>> {
    let s = Steps::read(i)?;
    let mut names = vec!["data", "weight"];
    if !i.bool("no_bias")? {
        names.push("bias");
    }
    if s.bn {
        names.extend(["gamma", "beta", "moving_mean", "moving_var"]);
    }
    if s.sum {
        names.push("sum");
    }
    Ok(names)
}

/// Checks the call and returns the inputs, the geometry and the output dims.
fn check<'a>(i: &'a Invocation<'_>, p: &ConvParams, s: Steps) -> Result<(Vec<&'a NDArray>, Geom, Vec<usize>)> {
    let name = i.name();
    let (bias_at, bn_at, sum_at) = positions(p.no_bias, s);
    let n = 2 + bias_at.map_or(0, |_| 1) + bn_at.map_or(0, |_| 4) + sum_at.map_or(0, |_| 1);
    let ins: Vec<&NDArray> = (0..n).map(|k| i.x(k)).collect::<Result<_>>()?;
    let dt = ins[0].dtype();
    if !matches!(dt, DType::F32 | DType::F64) || ins.iter().any(|a| a.dtype() != dt) {
        let dts: Vec<String> = ins.iter().map(|a| a.dtype().to_string()).collect();
        return Err(Error::dtype(
            name,
            format!("needs float32 or float64 inputs of one dtype, got {}", dts.join(", ")),
        ));
    }
    for a in &ins[1..] {
        crate::ops::check_ctx(name, ins[0], a)?;
    }
    let bias = bias_at.map(|k| ins[k].dims());
    let (g, od, cl) = conv_shapes(name, p, ins[0].dims(), ins[1].dims(), bias, false)?;
    if cl {
        return Err(Error::value(name, "fuses channel-first convolutions only (NCW, NCHW, NCDHW)"));
    }
    if let Some(k) = bn_at {
        for a in &ins[k..k + 4] {
            if a.dims() != [p.num_filter] {
                return Err(Error::shape(
                    name,
                    &[a.shape()],
                    format!("BatchNorm parameters must have shape ({},)", p.num_filter),
                ));
            }
        }
    }
    if let Some(k) = sum_at {
        if ins[k].dims() != od.as_slice() {
            return Err(Error::shape(
                name,
                &[ins[k].shape()],
                format!("the summand must have the output's shape {}", fmt_dims(&od)),
            ));
        }
    }
    Ok((ins, g, od))
}

/// The frontend: checks, then one engine op writing the output.
pub(crate) fn forward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let p = ConvParams::read(i, false)?;
    let s = Steps::read(i)?;
    let (ins, g, od) = check(i, &p, s)?;
    if needs_record(&ins) {
        return Err(Error::value(
            i.name(),
            "is an inference-only fused operator (no gradient); run the unfused graph under autograd.record()",
        ));
    }
    let out = NDArray::empty(Shape::new(&od), ins[0].dtype(), ins[0].ctx())?;
    if out.size() > 0 {
        let mut nums = g.to_nums(!p.no_bias);
        nums.extend(s.to_nums());
        push_call(OpCall::new(&DEFS[FUSED], &ins, &[&out]).with_nums(&nums))?;
    }
    one(Ok(out))
}

/// Position of `_fused_convolution` in the family's `DEFS`.
pub(crate) const FUSED: usize = 8;

/// BatchNorm's per-channel scale, as its kernel computes it: `gamma · invstd`
/// (`invstd` alone under `fix_gamma`), `invstd = 1 / sqrt(var + eps)` in f64.
fn bn_scale<T: ConvElem>(gamma: &[T], var: &[T], eps: f64, fix_gamma: bool) -> Vec<T> {
    let t = |v: f64| <T as Elem>::from_f64(v);
    gamma
        .iter()
        .zip(var)
        .map(|(&gm, &v)| {
            let invstd = t(1.0 / (Elem::to_f64(v) + eps).sqrt());
            if fix_gamma {
                invstd
            } else {
                gm * invstd
            }
        })
        .collect()
}

/// The kernel: inputs as [`positions`] places them, output 0.
pub(crate) fn fused_fwd(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let (g, bias) = Geom::from_nums(&call.nums);
    let s = Steps::from_nums(call.nums.get(23..).unwrap_or(&[]));
    let (bias_at, bn_at, sum_at) = positions(!bias, s);
    with_conv_dtype!(k.in_dtype(0), T, {
        let scale = bn_at.map(|b| bn_scale::<T>(k.input(b), k.input(b + 3), s.eps, s.fix_gamma));
        let epi = Epilogue {
            bn: bn_at.zip(scale.as_deref()).map(|(b, scale)| BnAffine {
                mean: k.input::<T>(b + 2),
                scale,
                shift: k.input::<T>(b + 1),
            }),
            sum: sum_at.map(|p| k.input::<T>(p)),
            relu: s.relu,
        };
        let b = bias_at.map(|p| k.input::<T>(p));
        let (x, w, out) = (k.input::<T>(0), k.input::<T>(1), k.output::<T>(0));
        if !prepared::forward::<T>(&g, x, w, k.input_identity(1), b, &epi, out) {
            forward_with::<T>(&g, x, w, b, &epi, out);
        }
    });
    Ok(())
}
