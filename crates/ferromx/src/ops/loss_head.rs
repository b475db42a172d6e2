//! Gradient-shaping identities: `BlockGrad` (no gradient flows back) and `MakeLoss`
//! (marks a loss: its backward ignores the head gradient and gives `grad_scale`).
//!
//! Both forwards are a copy (`_copy`'s kernel); only what they record differs, which is
//! what lets symbolic graphs (`mx.sym.make_loss(...)` trained by a Module) and `nd` code
//! share one definition.

use crate::autograd::{needs_record, record};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{one, param, push_call, Aliases, Example, Invocation, KernelSlot, OpCall, OpDef, ParamKind as K};
use crate::ops::{self, BinOp, ReduceOp};

/// The forward of both operators: a copy of input 0 through `def`'s own call.
fn copy_as(def: &'static OpDef, x: &NDArray) -> Result<NDArray> {
    let out = x.empty_like()?;
    if x.size() > 0 {
        push_call(OpCall::new(def, &[x], &[&out]))?;
    }
    Ok(out)
}

/// `BlockGrad`: a copy whose gradient is zeros (MXNet's `MakeZeroGradNodes`).
pub fn block_grad(x: &NDArray) -> Result<NDArray> {
    let out = copy_as(&DEFS[0], x)?;
    if needs_record(&[x]) {
        record("BlockGrad", &[x], &[&out], Box::new(|g| Ok(vec![Some(ops::zeros_like(&g[0])?)])));
    }
    Ok(out)
}

/// `MakeLoss`'s normalisation of the constant gradient.
#[derive(Clone, Copy)]
enum Norm {
    Null,
    Batch,
    Valid(f64),
}

fn parse_norm(i: &Invocation<'_>) -> Result<Norm> {
    match i.str("normalization")?.as_str() {
        "null" => Ok(Norm::Null),
        "batch" => Ok(Norm::Batch),
        "valid" => Ok(Norm::Valid(i.f64("valid_thresh")?)),
        other => {
            Err(Error::value(i.name(), format!("normalization must be 'null', 'batch' or 'valid', got '{other}'")))
        }
    }
}

/// `MakeLoss`: a copy whose gradient is `grad_scale` everywhere, whatever the head gradient
/// (divided by the batch size for `Batch`, by the number of elements above the threshold,
/// at least 1, for `Valid`).
fn make_loss(x: &NDArray, grad_scale: f64, norm: Norm) -> Result<NDArray> {
    let out = copy_as(&DEFS[1], x)?;
    if needs_record(&[x]) {
        let data = x.clone();
        let bw = move |g: &[NDArray]| -> Result<Vec<Option<NDArray>>> {
            let ones = ops::ones_like(&g[0])?;
            let grad = match norm {
                Norm::Null => ops::scalar(BinOp::Mul, &ones, grad_scale)?,
                Norm::Batch => {
                    let n = data.dims().first().copied().unwrap_or(1).max(1) as f64;
                    ops::scalar(BinOp::Mul, &ones, grad_scale / n)?
                }
                Norm::Valid(thresh) => {
                    let valid = ops::scalar(BinOp::Gt, &data, thresh)?;
                    let count = ops::reduce(ReduceOp::Sum, &ops::astype(&valid, DType::F32)?, None, false, false)?;
                    let count = ops::scalar(BinOp::Max, &count, 1.0)?;
                    let scaled = ops::scalar(BinOp::Mul, &ones, grad_scale)?;
                    ops::div(&scaled, &ops::astype(&count, g[0].dtype())?)?
                }
            };
            Ok(vec![Some(grad)])
        };
        record("MakeLoss", &[x], &[&out], Box::new(bw));
    }
    Ok(out)
}

/// The gradient-shaping identities.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "BlockGrad",
        aliases: Aliases { nd: &["stop_gradient"], np: &[], npx: &["stop_gradient"], fluent: false },
        inputs: &["data"],
        doc: "A copy of `data` that stops gradients: its gradient is zeros.",
        forward: |i| one(block_grad(i.x(0)?)),
        infer: Some(super::infer_same),
        cpu: KernelSlot::Call(super::copy_kernel),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "MakeLoss",
        aliases: Aliases { nd: &["make_loss"], np: &[], npx: &[], fluent: false },
        inputs: &["data"],
        params: &[
            param("grad_scale", K::Float, Some("1.0"), "The constant gradient of the loss."),
            param("valid_thresh", K::Float, Some("0.0"), "Elements above it count as valid ('valid' normalization)."),
            param("normalization", K::Str, Some("'null'"), "'null', 'batch' (divide by the batch size) or 'valid' (by the valid count)."),
        ],
        doc: "Marks `data` as a loss: forward is a copy; backward gives `grad_scale` everywhere, whatever the head gradient.",
        forward: |i| one(make_loss(i.x(0)?, i.f64("grad_scale")?, parse_norm(i)?)),
        infer: Some(super::infer_same),
        cpu: KernelSlot::Call(super::copy_kernel),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "grad_scale=2.0", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
];
