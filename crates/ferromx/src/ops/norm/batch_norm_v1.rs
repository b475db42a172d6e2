//! `BatchNorm_v1`: MXNet's first batch normalisation, kept for graphs saved by old
//! MXNet versions. It is `BatchNorm` on axis 1 with two differences that matter to a
//! graph using it: there is no `axis`, and `output_mean_var` returns the batch
//! *variance* (not `BatchNorm`'s inverse standard deviation). A composite: `BatchNorm`
//! (with its moving-statistics update in the backward), and the variance recovered from
//! the inverse standard deviation as `1/invstd² - eps`.

use super::{batch_norm, infer_with, BnParams};
use crate::error::Result;
use crate::ndarray::NDArray;
use crate::opdef::{param, Attrs, Invocation, KernelSlot, Meta, OpDef, ParamKind as K};
use crate::ops::{self, BinOp, UnaryOp};

/// `BatchNorm_v1`.
pub(super) const BATCH_NORM_V1: OpDef = OpDef {
    name: "BatchNorm_v1",
    inputs: &["data", "gamma", "beta", "moving_mean", "moving_var"],
    outputs: &["output", "mean", "var"],
    aux: &["moving_mean", "moving_var"],
    params: &[
        param("eps", K::Float, Some("0.001"), "Added to the variance."),
        param("momentum", K::Float, Some("0.9"), "Momentum of the moving statistics."),
        param("fix_gamma", K::Bool, Some("True"), "Take gamma as 1 (its gradient is 0)."),
        param("use_global_stats", K::Bool, Some("False"), "Normalise with the moving statistics in training too."),
        param("output_mean_var", K::Bool, Some("False"), "Also return the mean and the variance."),
    ],
    doc: "The legacy batch normalisation over every axis but 1 (as `BatchNorm`, but `output_mean_var` \
          returns the variance).",
    infer: Some(infer),
    forward,
    mutates: &[3, 4],
    cpu: KernelSlot::Composite,
    graph: crate::opdef::GraphForm {
        same_shape: true,
        visible: Some(crate::opdef::outputs_if_mean_var),
        total: crate::opdef::OutputCount::Fixed(3),
        named_outputs: true,
        param_shapes: Some(super::bn_param_shapes),
        input_init: crate::opdef::MOVING_STATS_INIT,
        ..crate::opdef::GraphForm::PLAIN
    },
    ..OpDef::BASE
};

fn read(i: &Invocation<'_>) -> Result<BnParams> {
    Ok(BnParams {
        eps: i.f64("eps")?,
        momentum: i.f64("momentum")?,
        fix_gamma: i.bool("fix_gamma")?,
        use_global_stats: i.bool("use_global_stats")?,
        output_mean_var: i.bool("output_mean_var")?,
        axis: 1,
    })
}

fn infer(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    infer_with(def, &read(&Invocation::params(def, a))?, ins)
}

fn forward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let p = read(i)?;
    let mut r = batch_norm(&p, [i.x(0)?, i.x(1)?, i.x(2)?, i.x(3)?, i.x(4)?])?;
    if p.output_mean_var {
        let inv2 = ops::unary(UnaryOp::Square, &r[2])?;
        r[2] = ops::scalar(BinOp::Sub, &ops::unary(UnaryOp::Reciprocal, &inv2)?, p.eps)?;
    }
    Ok(r)
}
