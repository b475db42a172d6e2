//! Normalisation operators: `BatchNorm` (OpCall kernels), and `InstanceNorm`,
//! `GroupNorm`, `LRN` (compositions of existing operators, `compose.rs`) and the
//! legacy `BatchNorm_v1` (`batch_norm_v1.rs`).
//!
//! As in MXNet 1.9.1 on the CPU, training mode (autograd's training flag)
//! normalises with the batch's mean and biased variance, and the moving
//! statistics are updated in place by the *backward* operator
//! (`_backward_BatchNorm` writes `moving_mean` and `moving_var`):
//! `moving = moving * momentum + batch * (1 - momentum)`. A training-mode
//! forward that is not differentiated leaves them unchanged, as in MXNet. The
//! backward always uses the batch formula with the statistics its forward used
//! (MXNet's backward runs in training mode), so after a predict-mode forward
//! the "update" writes back the moving statistics themselves.

mod batch_norm_v1;
mod compose;
pub(crate) mod cpu;
#[cfg(test)]
mod tests;

use crate::autograd::{is_training, needs_record, record};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
pub use compose::{group_norm, instance_norm, lrn};

use crate::opdef::{
    one, param, push_call, Aliases, Attrs, Example, Grad, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamKind as K,
};
use crate::ops;
use crate::shape::Shape;

/// BatchNorm's view of the data and its flags (the call's numbers).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BnDims {
    /// Product of the axes before the channel axis.
    pub outer: usize,
    /// Channels.
    pub c: usize,
    /// Product of the axes after it.
    pub inner: usize,
    /// Added to the variance.
    pub eps: f64,
    /// Gamma is taken as 1 (and gets no gradient).
    pub fix_gamma: bool,
    /// Normalise with the batch's statistics (training without global stats).
    pub use_batch: bool,
    /// Momentum of the moving statistics.
    pub momentum: f64,
    /// The backward updates the moving statistics.
    pub update: bool,
}

impl BnDims {
    /// The call's numeric parameters.
    pub fn to_nums(&self) -> Vec<f64> {
        let b = |v: bool| v as u8 as f64;
        vec![
            self.outer as f64,
            self.c as f64,
            self.inner as f64,
            self.eps,
            b(self.fix_gamma),
            b(self.use_batch),
            self.momentum,
            b(self.update),
        ]
    }
    /// The inverse of [`BnDims::to_nums`].
    pub fn from_nums(v: &[f64]) -> BnDims {
        let g = |i: usize| v.get(i).copied().unwrap_or(0.0);
        BnDims {
            outer: g(0) as usize,
            c: g(1) as usize,
            inner: g(2) as usize,
            eps: g(3),
            fix_gamma: g(4) != 0.0,
            use_batch: g(5) != 0.0,
            momentum: g(6),
            update: g(7) != 0.0,
        }
    }
}

/// BatchNorm's parameters.
#[derive(Clone, Copy, Debug)]
pub struct BnParams {
    /// Added to the variance.
    pub eps: f64,
    /// Momentum of the moving statistics.
    pub momentum: f64,
    /// Gamma fixed at 1.
    pub fix_gamma: bool,
    /// Always normalise with the moving statistics.
    pub use_global_stats: bool,
    /// Also return the mean and the inverse standard deviation.
    pub output_mean_var: bool,
    /// Channel axis.
    pub axis: i64,
}

impl BnParams {
    /// Reads a call's parameters.
    pub fn read(i: &Invocation<'_>) -> Result<BnParams> {
        Ok(BnParams {
            eps: i.f64("eps")?,
            momentum: i.f64("momentum")?,
            fix_gamma: i.bool("fix_gamma")?,
            use_global_stats: i.bool("use_global_stats")?,
            output_mean_var: i.bool("output_mean_var")?,
            axis: i.i64("axis")?,
        })
    }
}

/// Checks the shapes; `(outer, channels, inner)`.
pub fn bn_shapes(name: &str, p: &BnParams, xs: &[usize], params: &[&[usize]]) -> Result<(usize, usize, usize)> {
    let nd = xs.len() as i64;
    let ax = if p.axis < 0 { p.axis + nd } else { p.axis };
    if nd < 1 || !(0..nd).contains(&ax) {
        return Err(Error::value(
            name,
            format!("axis {} is out of range for data of shape {}", p.axis, Shape::new(xs)),
        ));
    }
    let ax = ax as usize;
    let c = xs[ax];
    let names = ["gamma", "beta", "moving_mean", "moving_var"];
    for (k, s) in params.iter().enumerate() {
        if *s != [c] {
            return Err(Error::shape(
                name,
                &[&Shape::new(xs), &Shape::new(s)],
                format!(
                    "{} must have shape ({c},) for {c} channels on axis {ax}",
                    names.get(k).unwrap_or(&"parameter")
                ),
            ));
        }
    }
    Ok((xs[..ax].iter().product(), c, xs[ax + 1..].iter().product()))
}

/// Runs `BatchNorm`: `[out]`, or `[out, mean, invstd]` with `output_mean_var`.
pub fn batch_norm(p: &BnParams, ins: [&NDArray; 5]) -> Result<Vec<NDArray>> {
    let (fwd, bwd) = (&DEFS[0], &DEFS[1]);
    let x = ins[0];
    let dt = x.dtype();
    if dt == DType::F16 && ins[1..].iter().all(|a| a.dtype() == DType::F32) {
        // MXNet: float16 data takes float32 parameters and statistics; the
        // normalisation runs in float32 and the output is float16.
        let x32 = ops::astype(x, DType::F32)?;
        let mut r = batch_norm(p, [&x32, ins[1], ins[2], ins[3], ins[4]])?;
        r[0] = ops::astype(&r[0], DType::F16)?;
        return Ok(r);
    }
    if !matches!(dt, DType::F32 | DType::F64) {
        return Err(Error::dtype(
            fwd.name,
            format!("supports float32 and float64 (float16 data with float32 parameters), got {dt}"),
        ));
    }
    for a in &ins[1..] {
        ops::check_ctx(fwd.name, x, a)?;
        if a.dtype() != dt {
            return Err(Error::dtype(
                fwd.name,
                format!("data and parameters must share a dtype, got {dt} and {}", a.dtype()),
            ));
        }
    }
    let pd: Vec<&[usize]> = ins[1..].iter().map(|a| a.dims()).collect();
    let (outer, c, inner) = bn_shapes(fwd.name, p, x.dims(), &pd)?;
    let training = is_training() && !p.use_global_stats;
    let d = BnDims {
        outer,
        c,
        inner,
        eps: p.eps,
        fix_gamma: p.fix_gamma,
        use_batch: training,
        momentum: p.momentum,
        update: false,
    };
    let out = x.empty_like()?;
    let mean = NDArray::empty(Shape::new(&[c]), dt, x.ctx())?;
    let invstd = NDArray::empty(Shape::new(&[c]), dt, x.ctx())?;
    if c > 0 {
        push_call(OpCall::new(fwd, &ins, &[&out, &mean, &invstd]).with_nums(&d.to_nums()))?;
    }
    if needs_record(&ins[..3]) {
        let (xc, gc, mc, ic) = (x.clone(), ins[1].clone(), mean.clone(), invstd.clone());
        let (mm, mv) = (ins[3].clone(), ins[4].clone());
        // MXNet's backward runs in training mode: the batch formula (with the statistics
        // the forward used) and the moving-statistics update, unless use_global_stats.
        let bd = BnDims { use_batch: !p.use_global_stats, update: !p.use_global_stats, ..d };
        // with output_mean_var the statistics are outputs of the same node (their
        // gradients are ignored, as MXNet's backward ignores them), so a graph or an
        // executor can take them as heads
        let (m2, i2) = (mean.clone(), invstd.clone());
        let outs: Vec<&NDArray> = if p.output_mean_var { vec![&out, &m2, &i2] } else { vec![&out] };
        record(
            fwd.name,
            &ins,
            &outs,
            Box::new(move |g| {
                let (dx, dg, db) = (xc.empty_like()?, gc.empty_like()?, gc.empty_like()?);
                let mut outs = vec![&dx, &dg, &db];
                if bd.update {
                    outs.extend([&mm, &mv]);
                }
                if bd.c > 0 {
                    push_call(OpCall::new(bwd, &[&g[0], &xc, &gc, &mc, &ic], &outs).with_nums(&bd.to_nums()))?;
                }
                Ok(vec![Some(dx), Some(dg), Some(db), None, None])
            }),
        );
    }
    Ok(if p.output_mean_var { vec![out, mean, invstd] } else { vec![out] })
}

fn forward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let p = BnParams::read(i)?;
    batch_norm(&p, [i.x(0)?, i.x(1)?, i.x(2)?, i.x(3)?, i.x(4)?])
}

fn infer(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    infer_with(def, &BnParams::read(&Invocation::params(def, a))?, ins)
}

/// BatchNorm's (and BatchNorm_v1's) inference for parameters `p`.
fn infer_with(def: &'static OpDef, p: &BnParams, ins: &[Meta]) -> Result<Vec<Meta>> {
    if ins.len() < 5 {
        return Err(Error::value(def.name, "needs data, gamma, beta, moving_mean and moving_var"));
    }
    let pd: Vec<&[usize]> = ins[1..5].iter().map(|m| m.shape.dims()).collect();
    let (_, c, _) = bn_shapes(def.name, p, ins[0].shape.dims(), &pd)?;
    let stat = Meta { shape: Shape::new(&[c]), ..ins[1].clone() };
    Ok(if p.output_mean_var { vec![ins[0].clone(), stat.clone(), stat] } else { vec![ins[0].clone()] })
}

/// BatchNorm's channel parameters and moving statistics: one per element of `axis`.
pub(super) fn bn_param_shapes(i: &Invocation<'_>, data: Option<&Shape>) -> Result<Vec<(&'static str, Shape)>> {
    let axis = if i.def.params.iter().any(|p| p.name == "axis") { i.i64("axis")? } else { 1 };
    Ok(data
        .map(|x| crate::opdef::per_channel(&["gamma", "beta", "moving_mean", "moving_var"], x, axis))
        .unwrap_or_default())
}

/// InstanceNorm's `gamma` and `beta`: one per channel (axis 1).
fn instance_norm_param_shapes(_: &Invocation<'_>, data: Option<&Shape>) -> Result<Vec<(&'static str, Shape)>> {
    Ok(data.map(|x| crate::opdef::per_channel(&["gamma", "beta"], x, 1)).unwrap_or_default())
}

/// GroupNorm's `gamma` and `beta`: one per group (MXNet 1.9.1), from the attributes alone.
fn group_norm_param_shapes(i: &Invocation<'_>, _: Option<&Shape>) -> Result<Vec<(&'static str, Shape)>> {
    let g = i.i64("num_groups")?.max(0) as usize;
    Ok(vec![("gamma", Shape::new(&[g])), ("beta", Shape::new(&[g]))])
}

/// `_backward_BatchNorm` is pushed by BatchNorm's recorded backward only.
fn backward_forward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    Err(Error::value(i.name(), "is BatchNorm's backward; differentiate BatchNorm with autograd instead"))
}

/// The normalisation operators.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "BatchNorm",
        aliases: Aliases { nd: &[], np: &[], npx: &["batch_norm"], fluent: false },
        inputs: &["data", "gamma", "beta", "moving_mean", "moving_var"],
        // MXNet's names; the third holds the inverse standard deviation, as MXNet's does
        outputs: &["output", "mean", "var"],
        aux: &["moving_mean", "moving_var"],
        params: &[
            param("eps", K::Float, Some("0.001"), "Added to the variance."),
            param("momentum", K::Float, Some("0.9"), "Momentum of the moving statistics."),
            param("fix_gamma", K::Bool, Some("True"), "Take gamma as 1 (its gradient is 0)."),
            param("use_global_stats", K::Bool, Some("False"), "Normalise with the moving statistics in training too."),
            param("output_mean_var", K::Bool, Some("False"), "Also return the mean and 1/sqrt(var + eps)."),
            param("axis", K::Int, Some("1"), "The channel axis."),
            param("cudnn_off", K::Bool, Some("False"), "Turn cuDNN off (accepted, unused)."),
            param("min_calib_range", K::Float, Some("None"), "Quantisation calibration (accepted, unused)."),
            param("max_calib_range", K::Float, Some("None"), "Quantisation calibration (accepted, unused)."),
        ],
        doc: "Batch normalisation over every axis but `axis`: batch statistics in training mode \
              (the moving statistics are updated in place by the backward pass, as MXNet does on \
              the CPU), moving statistics otherwise.",
        infer: Some(infer),
        forward,
        mutates: &[3, 4],
        cpu: KernelSlot::Call(cpu::bn_fwd),
        graph: crate::opdef::GraphForm { same_shape: true,
            visible: Some(crate::opdef::outputs_if_mean_var),
            total: crate::opdef::OutputCount::Fixed(3),
            named_outputs: true,
            param_shapes: Some(bn_param_shapes),
            input_init: crate::opdef::MOVING_STATS_INIT,
            ..crate::opdef::GraphForm::PLAIN
        },
        ..OpDef::BASE
    },
    OpDef {
        name: "_backward_BatchNorm",
        inputs: &["out_grad", "data", "gamma", "mean", "invstd"],
        outputs: &["data_grad", "gamma_grad", "beta_grad"],
        doc: "Gradients of `BatchNorm` (pushed by its backward; updates the moving statistics in training).",
        infer: Some(infer_bn_backward),
        forward: backward_forward,
        grad: Grad::None("second-order BatchNorm gradients are not implemented"),
        cpu: KernelSlot::Call(cpu::bn_bwd),
        ..OpDef::BASE
    },
    OpDef {
        name: "InstanceNorm",
        inputs: &["data", "gamma", "beta"],
        params: &[param("eps", K::Float, Some("0.001"), "Added to the variance.")],
        doc: "Instance normalisation: each (sample, channel) over its spatial axes, then `gamma`, `beta` per channel.",
        infer: Some(same_shape),
        forward: |i| one(instance_norm(i.x(0)?, i.x(1)?, i.x(2)?, i.f64("eps")?)),
        example: Some(Example { shapes: &[&[2, 3, 4], &[3], &[3]], attrs: "", range: (0.5, 1.5) }),
        cpu: KernelSlot::Composite,
        // MXNet's node has the mean and variance as hidden outputs
        graph: crate::opdef::GraphForm { same_shape: true,
            total: crate::opdef::OutputCount::Fixed(3),
            named_outputs: true,
            param_shapes: Some(instance_norm_param_shapes),
            ..crate::opdef::GraphForm::PLAIN
        },
        ..OpDef::BASE
    },
    OpDef {
        name: "GroupNorm",
        inputs: &["data", "gamma", "beta"],
        params: &[
            param("num_groups", K::Int, Some("1"), "Number of channel groups."),
            param("eps", K::Float, Some("1e-05"), "Added to the variance."),
            param(
                "output_mean_var",
                K::Bool,
                Some("False"),
                "Also return each (sample, group)'s mean and sqrt(var + eps), shape (n, num_groups).",
            ),
        ],
        outputs: &["output", "mean", "std"],
        doc: "Group normalisation: each sample's channel groups normalised together; `gamma`, `beta` have \
              one entry per group (MXNet 1.9.1).",
        infer: Some(infer_group_norm),
        forward: |i| {
            let g = i.i64("num_groups")?;
            if g < 1 {
                return Err(Error::value(i.name(), format!("num_groups must be positive, got {g}")));
            }
            let [out, mean, std] = group_norm(i.x(0)?, i.x(1)?, i.x(2)?, g as usize, i.f64("eps")?)?;
            Ok(if i.bool("output_mean_var")? { vec![out, mean, std] } else { vec![out] })
        },
        example: Some(Example { shapes: &[&[2, 4, 3], &[2], &[2]], attrs: "num_groups=2", range: (0.5, 1.5) }),
        cpu: KernelSlot::Composite,
        graph: crate::opdef::GraphForm {
            visible: Some(crate::opdef::outputs_if_mean_var),
            total: crate::opdef::OutputCount::Fixed(3),
            named_outputs: true,
            param_shapes: Some(group_norm_param_shapes),
            ..crate::opdef::GraphForm::PLAIN
        },
        ..OpDef::BASE
    },
    OpDef {
        name: "LRN",
        inputs: &["data"],
        params: &[
            param("alpha", K::Float, Some("0.0001"), "Scale of the squared sum."),
            param("beta", K::Float, Some("0.75"), "Exponent."),
            param("knorm", K::Float, Some("2.0"), "Added to the scaled sum."),
            param("nsize", K::Int, None, "Channels in the window (odd)."),
        ],
        doc: "Local response normalisation across channels: `x / (knorm + alpha/nsize * sum(x^2 over nsize channels))^beta`.",
        infer: Some(same_shape),
        forward: |i| {
            let n = i.i64("nsize")?.max(0) as usize;
            one(lrn(i.x(0)?, i.f64("alpha")?, i.f64("beta")?, i.f64("knorm")?, n))
        },
        example: Some(Example { shapes: &[&[2, 5, 3]], attrs: "nsize=3, alpha=0.5", range: (0.5, 1.5) }),
        cpu: KernelSlot::Composite,
        ..OpDef::BASE
    },
    batch_norm_v1::BATCH_NORM_V1,
];

fn same_shape(def: &'static OpDef, _a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    ins.first().map(|m| vec![m.clone()]).ok_or_else(|| Error::value(def.name, "needs data"))
}

/// GroupNorm: the output like `data`; with `output_mean_var` also `(n, num_groups)` moments.
fn infer_group_norm(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let data = ins.first().ok_or_else(|| Error::value(def.name, "needs data"))?;
    if !i.bool("output_mean_var")? {
        return Ok(vec![data.clone()]);
    }
    let n = data.shape.dims().first().copied().unwrap_or(0);
    let stat = Meta { shape: Shape::new(&[n, i.i64("num_groups")?.max(0) as usize]), ..data.clone() };
    Ok(vec![data.clone(), stat.clone(), stat])
}

/// `_backward_BatchNorm`'s outputs are shaped like `data`, `gamma` and `gamma` (beta).
fn infer_bn_backward(def: &'static OpDef, _: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    match ins {
        [_, data, gamma, ..] => Ok(vec![data.clone(), gamma.clone(), gamma.clone()]),
        _ => Err(Error::value(def.name, format!("expected 5 inputs, got {}", ins.len()))),
    }
}
