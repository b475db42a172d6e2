//! Optimizer update operators. Each updates the weight (and its state) in
//! place on the engine: the weight and states are *written* vars, the
//! gradient is read, so updates order correctly after backward and before
//! the next forward without any frontend wait.

use crate::dtype::DType;
use crate::engine::OpFailure;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{push_call, KernelSlot, Meta, OpCall};
use crate::ops::par::{chunked, chunked_with};
use crate::storage::Kernel;

/// Hyper-parameters shared by all updates.
#[derive(Clone, Copy, Debug)]
pub struct UpdateParams {
    /// Learning rate.
    pub lr: f64,
    /// Weight decay.
    pub wd: f64,
    /// Gradient scale (usually 1/batch_size).
    pub rescale_grad: f64,
    /// Clip the rescaled gradient to ±this; negative means no clipping.
    pub clip_gradient: f64,
}

impl UpdateParams {
    #[inline(always)]
    fn grad(&self, g: f32) -> f32 {
        self.clip(g * self.rescale_grad as f32)
    }
    /// `clip_gradient` applied to an already rescaled (and, for Adam and RMSProp, already
    /// weight-decayed) gradient.
    #[inline(always)]
    fn clip(&self, g: f32) -> f32 {
        if self.clip_gradient >= 0.0 {
            let c = self.clip_gradient as f32;
            g.clamp(-c, c)
        } else {
            g
        }
    }
}

/// The optimizer kinds.
#[derive(Clone, Copy, Debug)]
pub enum Update {
    /// w -= lr (g + wd w)
    Sgd,
    /// m = μ m - lr (g + wd w); w += m
    SgdMom {
        /// momentum μ
        momentum: f64,
    },
    /// Nesterov momentum (MXNet nag_mom_update).
    Nag {
        /// momentum μ
        momentum: f64,
    },
    /// Adam (lr already bias-corrected by the caller, as MXNet does).
    Adam {
        /// β1
        beta1: f64,
        /// β2
        beta2: f64,
        /// ε
        epsilon: f64,
    },
    /// RMSProp (non-centered).
    RmsProp {
        /// decay γ1
        gamma1: f64,
        /// ε
        epsilon: f64,
        /// clamp the updated weight to ±this; negative: off
        clip_weights: f64,
    },
    /// Centered RMSProp (Graves 2013; MXNet `rmspropalex_update`), states n, g, delta.
    RmsPropAlex {
        /// decay of the moment estimates γ1
        gamma1: f64,
        /// momentum of the update γ2
        gamma2: f64,
        /// ε
        epsilon: f64,
        /// clamp the updated weight to ±this; negative: off
        clip_weights: f64,
    },
    /// AdaGrad.
    AdaGrad {
        /// ε
        epsilon: f64,
    },
}

impl Update {
    fn name(&self) -> &'static str {
        match self {
            Update::Sgd => "sgd_update",
            Update::SgdMom { .. } => "sgd_mom_update",
            Update::Nag { .. } => "nag_mom_update",
            Update::Adam { .. } => "adam_update",
            Update::RmsProp { .. } => "rmsprop_update",
            Update::RmsPropAlex { .. } => "rmspropalex_update",
            Update::AdaGrad { .. } => "adagrad_update",
        }
    }
    fn n_states(&self) -> usize {
        match self {
            Update::Sgd => 0,
            Update::Adam { .. } => 2,
            Update::RmsPropAlex { .. } => 3,
            _ => 1,
        }
    }
}

impl Update {
    /// The operator defining this update.
    fn def(&self) -> &'static OpDef {
        let i = match self {
            Update::Sgd => 0,
            Update::SgdMom { .. } => 1,
            Update::Nag { .. } => 2,
            Update::Adam { .. } => 3,
            Update::RmsProp { .. } => 4,
            Update::RmsPropAlex { .. } => 5,
            Update::AdaGrad { .. } => 6,
        };
        &DEFS[i]
    }

    /// The call's numeric parameters in the definition's order: `lr`, this
    /// update's own, then `wd`, `rescale_grad`, `clip_gradient`.
    fn nums(&self, p: &UpdateParams) -> Vec<f64> {
        let own: Vec<f64> = match *self {
            Update::Sgd => vec![],
            Update::SgdMom { momentum } | Update::Nag { momentum } => vec![momentum],
            Update::Adam { beta1, beta2, epsilon } => vec![beta1, beta2, epsilon],
            Update::RmsProp { gamma1, epsilon, clip_weights } => vec![gamma1, epsilon, clip_weights],
            Update::RmsPropAlex { gamma1, gamma2, epsilon, clip_weights } => {
                vec![gamma1, gamma2, epsilon, clip_weights]
            }
            Update::AdaGrad { epsilon } => vec![epsilon],
        };
        let mut v = vec![p.lr];
        v.extend(own);
        v.extend([p.wd, p.rescale_grad, p.clip_gradient]);
        v
    }
}

/// Splits a call's numbers into the shared parameters and the update's own.
fn split(n: &[f64]) -> (UpdateParams, &[f64]) {
    let k = n.len();
    (UpdateParams { lr: n[0], wd: n[k - 3], rescale_grad: n[k - 2], clip_gradient: n[k - 1] }, &n[1..k - 3])
}

macro_rules! kernels {
    ($( $f:ident => |$o:ident| $kind:expr; )*) => {
        $(
            fn $f(c: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
                let (p, $o) = split(&c.nums);
                run($kind, p, k)
            }
        )*
    };
}

kernels! {
    sgd_kernel => |_o| Update::Sgd;
    sgd_mom_kernel => |o| Update::SgdMom { momentum: o[0] };
    nag_kernel => |o| Update::Nag { momentum: o[0] };
    adam_kernel => |o| Update::Adam { beta1: o[0], beta2: o[1], epsilon: o[2] };
    rmsprop_kernel => |o| Update::RmsProp { gamma1: o[0], epsilon: o[1], clip_weights: o[2] };
    rmspropalex_kernel => |o| Update::RmsPropAlex { gamma1: o[0], gamma2: o[1], epsilon: o[2], clip_weights: o[3] };
    adagrad_kernel => |o| Update::AdaGrad { epsilon: o[0] };
}

/// An update's result is its weight, updated in place.
fn infer_update(_d: &'static OpDef, _a: &crate::opdef::Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    Ok(vec![ins[0].clone()])
}

/// Applies an update in place to `weight` and `states` using `grad`.
pub fn update(kind: Update, weight: &NDArray, grad: &NDArray, states: &[&NDArray], p: UpdateParams) -> Result<()> {
    let name = kind.name();
    if states.len() != kind.n_states() {
        return Err(Error::value(name, format!("expects {} state arrays, got {}", kind.n_states(), states.len())));
    }
    for a in std::iter::once(grad).chain(states.iter().copied()) {
        if a.shape() != weight.shape() {
            return Err(Error::shape(
                name,
                &[weight.shape(), a.shape()],
                "grad and states must match the weight's shape",
            ));
        }
        if a.dtype() != weight.dtype() {
            return Err(Error::dtype(name, "grad and states must match the weight's dtype"));
        }
    }
    if weight.dtype() != DType::F32 {
        return Err(Error::dtype(name, format!("updates support float32 weights, got {}", weight.dtype())));
    }
    let mut outs: Vec<&NDArray> = vec![weight];
    outs.extend(states.iter().copied());
    push_call(OpCall::new(kind.def(), &[grad], &outs).with_nums(&kind.nums(&p)))?;
    Ok(())
}

/// Runs one update on the call's views: input 0 the gradient, output 0 the
/// weight, outputs 1.. the states (all float32, checked at the push).
fn run(kind: Update, p: UpdateParams, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let g = k.input::<f32>(0);
    let w = k.output::<f32>(0);
    let (lr, wd) = (p.lr as f32, p.wd as f32);
    const GRAIN: usize = 1 << 15;
    match kind {
        Update::Sgd => chunked(w, GRAIN, move |s, w| {
            for (wi, &gi) in w.iter_mut().zip(&g[s..]) {
                *wi -= lr * (p.grad(gi) + wd * *wi);
            }
        }),
        Update::SgdMom { momentum } | Update::Nag { momentum } => {
            let mu = momentum as f32;
            let nag = matches!(kind, Update::Nag { .. });
            chunked_with(w, [k.output::<f32>(1)], GRAIN, move |s, w, [m]| {
                for ((wi, mi), &g) in w.iter_mut().zip(m.iter_mut()).zip(&g[s..]) {
                    let gi = p.grad(g) + wd * *wi;
                    *mi = mu * *mi - lr * gi;
                    // MXNet's NAGMomKernel: the buffer holds the step, as for SGD.
                    *wi += if nag { mu * *mi - lr * gi } else { *mi };
                }
            })
        }
        Update::Adam { beta1, beta2, epsilon } => {
            let (b1, b2, eps) = (beta1 as f32, beta2 as f32, epsilon as f32);
            let st = [k.output::<f32>(1), k.output::<f32>(2)];
            chunked_with(w, st, GRAIN, move |s, w, [m, v]| {
                for (i, wi) in w.iter_mut().enumerate() {
                    // MXNet's AdamUpdateKernel: weight decay joins before clipping
                    let gi = p.clip(g[s + i] * p.rescale_grad as f32 + wd * *wi);
                    m[i] = b1 * m[i] + (1.0 - b1) * gi;
                    v[i] = b2 * v[i] + (1.0 - b2) * gi * gi;
                    *wi -= lr * m[i] / (v[i].sqrt() + eps);
                }
            })
        }
        Update::RmsProp { gamma1, epsilon, clip_weights } => {
            let (g1, eps) = (gamma1 as f32, epsilon as f32);
            chunked_with(w, [k.output::<f32>(1)], GRAIN, move |s, w, [n]| {
                for (i, wi) in w.iter_mut().enumerate() {
                    // as MXNet's RMSPropUpdateKernel: decay, then clip
                    let gi = p.clip(g[s + i] * p.rescale_grad as f32 + wd * *wi);
                    n[i] = (1.0 - g1) * gi * gi + g1 * n[i];
                    *wi = clip_weight(*wi - lr * gi / (n[i] + eps).sqrt(), clip_weights);
                }
            })
        }
        Update::RmsPropAlex { gamma1, gamma2, epsilon, clip_weights } => {
            let (g1, g2, eps) = (gamma1 as f32, gamma2 as f32, epsilon as f32);
            let st = [k.output::<f32>(1), k.output::<f32>(2), k.output::<f32>(3)];
            chunked_with(w, st, GRAIN, move |s, w, [n, gm, d]| {
                for (i, wi) in w.iter_mut().enumerate() {
                    let gi = p.clip(g[s + i] * p.rescale_grad as f32 + wd * *wi);
                    n[i] = (1.0 - g1) * gi * gi + g1 * n[i];
                    gm[i] = (1.0 - g1) * gi + g1 * gm[i];
                    d[i] = g2 * d[i] - lr * gi / (n[i] - gm[i] * gm[i] + eps).sqrt();
                    *wi = clip_weight(*wi + d[i], clip_weights);
                }
            })
        }
        Update::AdaGrad { epsilon } => {
            let eps = epsilon as f32;
            chunked_with(w, [k.output::<f32>(1)], GRAIN, move |s, w, [h]| {
                for (i, wi) in w.iter_mut().enumerate() {
                    let gi = p.grad(g[s + i]);
                    h[i] += gi * gi;
                    *wi -= lr * (gi / (h[i] + eps).sqrt() + wd * *wi);
                }
            })
        }
    }
    Ok(())
}

use crate::opdef::{param, Grad, Invocation, OpDef, ParamDef, ParamKind as K};

const COMMON: [ParamDef; 4] = [
    param("lr", K::Float, None, "Learning rate."),
    param("wd", K::Float, Some("0.0"), "Weight decay (L2 penalty)."),
    param("rescale_grad", K::Float, Some("1.0"), "Gradient scale (usually 1/batch_size)."),
    param("clip_gradient", K::Float, Some("-1.0"), "Clip the rescaled gradient to ±this; negative: off."),
];
const MOMENTUM: ParamDef = param("momentum", K::Float, Some("0.0"), "Momentum.");
const CLIP_WEIGHTS: ParamDef =
    param("clip_weights", K::Float, Some("-1.0"), "Clamp the updated weight to ±this; negative: off.");

/// `w` clamped to `±c` (no clamp for negative `c`).
#[inline(always)]
fn clip_weight(w: f32, c: f64) -> f32 {
    if c >= 0.0 {
        w.clamp(-c as f32, c as f32)
    } else {
        w
    }
}
const UPDATE: Grad = Grad::None("an in-place optimizer update");

fn forward_update(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let p = UpdateParams {
        lr: i.f64("lr")?,
        wd: i.f64("wd")?,
        rescale_grad: i.f64("rescale_grad")?,
        clip_gradient: i.f64("clip_gradient")?,
    };
    let kind = match i.def.name {
        "sgd_update" => Update::Sgd,
        "sgd_mom_update" => Update::SgdMom { momentum: i.f64("momentum")? },
        "nag_mom_update" => Update::Nag { momentum: i.f64("momentum")? },
        "adam_update" => Update::Adam { beta1: i.f64("beta1")?, beta2: i.f64("beta2")?, epsilon: i.f64("epsilon")? },
        "rmspropalex_update" => Update::RmsPropAlex {
            gamma1: i.f64("gamma1")?,
            gamma2: i.f64("gamma2")?,
            epsilon: i.f64("epsilon")?,
            clip_weights: i.f64("clip_weights")?,
        },
        "rmsprop_update" => Update::RmsProp {
            gamma1: i.f64("gamma1")?,
            epsilon: i.f64("epsilon")?,
            clip_weights: i.f64("clip_weights")?,
        },
        _ => Update::AdaGrad { epsilon: i.f64("epsilon")? },
    };
    let w = i.x(0)?;
    let states: Vec<&NDArray> = (2..i.inputs.len()).map(|k| i.x(k)).collect::<Result<_>>()?;
    update(kind, w, i.x(1)?, &states, p)?;
    Ok(vec![w.clone()])
}

macro_rules! updates {
    ($( $name:literal $kernel:ident [$($inp:literal),*] [$($extra:expr),*] $mutates:expr, $doc:literal; )*) => {
        /// The optimizer updates.
        pub static DEFS: &[OpDef] = &[ $( OpDef {
            name: $name,
            inputs: &[$($inp),*],
            params: &[COMMON[0], $($extra,)* COMMON[1], COMMON[2], COMMON[3]],
            doc: $doc,
            forward: forward_update,
            infer: Some(infer_update),
            cpu: KernelSlot::Call($kernel),
            grad: UPDATE,
            mutates: $mutates,
            ..OpDef::BASE
        } ),* ];
    };
}

updates! {
    "sgd_update" sgd_kernel ["weight", "grad"] [] &[0], "SGD: `w -= lr * (clip(rescale_grad * g) + wd * w)`, in place.";
    "sgd_mom_update" sgd_mom_kernel ["weight", "grad", "mom"] [MOMENTUM] &[0, 2], "SGD with momentum, in place.";
    "nag_mom_update" nag_kernel ["weight", "grad", "mom"] [MOMENTUM] &[0, 2], "Nesterov momentum SGD, in place.";
    "adam_update" adam_kernel ["weight", "grad", "mean", "var"] [
        param("beta1", K::Float, Some("0.9"), "Decay of the first moment."),
        param("beta2", K::Float, Some("0.999"), "Decay of the second moment."),
        param("epsilon", K::Float, Some("1e-08"), "Added to the denominator.")
    ] &[0, 2, 3], "Adam, in place (bias correction is the caller's, as in MXNet).";
    "rmsprop_update" rmsprop_kernel ["weight", "grad", "n"] [
        param("gamma1", K::Float, Some("0.95"), "Decay of the squared-gradient average."),
        param("epsilon", K::Float, Some("1e-08"), "Added to the denominator."),
        CLIP_WEIGHTS
    ] &[0, 2], "RMSProp, in place.";
    "rmspropalex_update" rmspropalex_kernel ["weight", "grad", "n", "g", "delta"] [
        param("gamma1", K::Float, Some("0.95"), "Decay of the squared-gradient average."),
        param("gamma2", K::Float, Some("0.9"), "Momentum of the update."),
        param("epsilon", K::Float, Some("1e-08"), "Added to the denominator."),
        CLIP_WEIGHTS
    ] &[0, 2, 3, 4], "Centered RMSProp (Graves), in place.";
    "adagrad_update" adagrad_kernel ["weight", "grad", "history"] [
        param("epsilon", K::Float, Some("1e-07"), "Added to the denominator.")
    ] &[0, 2], "AdaGrad, in place.";
}
