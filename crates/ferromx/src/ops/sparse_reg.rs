//! `IdentityAttachKLSparseReg`: the identity forward, and a backward that adds the
//! gradient of a KL-divergence sparseness penalty on the mean activation of each unit
//! (Hinton's practical guide to RBMs, section 11), as MXNet's legacy operator does.
//!
//! The running mean activation is the auxiliary state `moving_avg` (one value per
//! unit); the backward updates it in place before using it, as MXNet's does:
//! `moving_avg = momentum·moving_avg + (1 - momentum)·mean(data, axis 0)`, then
//! `d data = d out + penalty·(-ρ / moving_avg + (1 - ρ) / (1 - moving_avg))` for the
//! sparseness target ρ. Meant to follow a sigmoid (values in (0, 1)).

use crate::autograd::{needs_record, record};
use crate::engine::{ErrorKind, OpFailure};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    one, param, push_call, Attrs, Grad, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamDef, ParamKind as K,
};
use crate::storage::Kernel;
use crate::DType;
use num_traits::Float;

const PARAMS: &[ParamDef] = &[
    param("sparseness_target", K::Float, Some("0.1"), "The target mean activation ρ, in [0, 1]."),
    param("penalty", K::Float, Some("0.001"), "Weight of the sparseness penalty."),
    param("momentum", K::Float, Some("0.9"), "Momentum of the running mean activation, in [0, 1]."),
];

/// The operator and its backward.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "IdentityAttachKLSparseReg",
        inputs: &["data", "moving_avg"],
        aux: &["moving_avg"],
        params: PARAMS,
        doc: "The identity, whose backward adds a KL sparseness penalty's gradient on each unit's \
              running mean activation `moving_avg` (updated by the backward).",
        infer: Some(infer),
        forward,
        cpu: KernelSlot::Call(copy_kernel),
        graph: crate::opdef::GraphForm {
            param_shapes: Some(|_, data| {
                Ok(data.map(|x| crate::opdef::per_channel(&["moving_avg"], x, 1)).unwrap_or_default())
            }),
            ..crate::opdef::GraphForm::PLAIN
        },
        ..OpDef::BASE
    },
    OpDef {
        name: "_backward_IdentityAttachKLSparseReg",
        inputs: &["out_grad", "data"],
        outputs: &["data_grad", "moving_avg"],
        params: PARAMS,
        doc: "Gradient of `IdentityAttachKLSparseReg` (pushed by its backward; updates moving_avg).",
        infer: Some(|def, _, ins| {
            ins.get(1).map(|m| vec![m.clone()]).ok_or_else(|| Error::value(def.name, "needs out_grad and data"))
        }),
        forward: |i| Err(Error::value(i.name(), "is IdentityAttachKLSparseReg's backward; use autograd instead")),
        grad: Grad::None("second-order gradients of IdentityAttachKLSparseReg are not implemented"),
        cpu: KernelSlot::Call(backward_kernel),
        ..OpDef::BASE
    },
];

/// Rows and units of `data` (N, ...) seen as (N, D), checked against `moving_avg`.
fn units(name: &str, x: &crate::Shape, avg: &crate::Shape) -> Result<(usize, usize)> {
    let d = x.dims();
    let (n, units) = match d {
        [n, ..] if d.len() >= 2 => (*n, d[1..].iter().product::<usize>()),
        _ => return Err(Error::shape(name, &[x], "data must have a batch axis and at least one more")),
    };
    if avg.dims() != [units] {
        return Err(Error::shape(name, &[x, avg], format!("moving_avg must have shape ({units},), one per unit")));
    }
    Ok((n, units))
}

fn infer(def: &'static OpDef, _: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let [x, avg] = ins else { return Err(Error::value(def.name, "needs data and moving_avg")) };
    units(def.name, &x.shape, &avg.shape)?;
    if !matches!(x.dtype, DType::F32 | DType::F64) || avg.dtype != x.dtype {
        return Err(Error::dtype(
            def.name,
            format!("takes float32 or float64 data and moving_avg, got {} and {}", x.dtype, avg.dtype),
        ));
    }
    Ok(vec![x.clone()])
}

fn forward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let (x, avg) = (i.x(0)?, i.x(1)?);
    infer(i.def, i.attrs, &[Meta::of(x), Meta::of(avg)])?;
    crate::ops::check_ctx(i.name(), x, avg)?;
    let nums = [i.f64("sparseness_target")?, i.f64("penalty")?, i.f64("momentum")?];
    for (k, v) in [("sparseness_target", nums[0]), ("momentum", nums[2])] {
        if !(0.0..=1.0).contains(&v) {
            return Err(Error::value(i.name(), format!("{k} must be in [0, 1], got {v}")));
        }
    }
    let out = x.empty_like()?;
    if out.size() > 0 {
        push_call(OpCall::new(i.def, &[x], &[&out]))?;
    }
    if needs_record(&[x]) {
        let (xc, ac) = (x.clone(), avg.clone());
        record(
            i.name(),
            &[x, avg],
            &[&out],
            Box::new(move |g| {
                let dx = xc.empty_like()?;
                if dx.size() > 0 {
                    push_call(OpCall::new(&DEFS[1], &[&g[0], &xc], &[&dx, &ac]).with_nums(&nums))?;
                }
                Ok(vec![Some(dx), None])
            }),
        );
    }
    one(Ok(out))
}

fn copy_kernel(_: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    match k.in_dtype(0) {
        DType::F32 => k.output::<f32>(0).copy_from_slice(k.input::<f32>(0)),
        DType::F64 => k.output::<f64>(0).copy_from_slice(k.input::<f64>(0)),
        d => return Err(OpFailure::new(ErrorKind::Runtime, format!("takes float32/float64, got {d}"))),
    }
    Ok(())
}

/// nums: sparseness_target, penalty, momentum.
fn backward_kernel(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    match k.in_dtype(1) {
        DType::F32 => kl_backward::<f32>(call, k),
        DType::F64 => kl_backward::<f64>(call, k),
        d => Err(OpFailure::new(ErrorKind::Runtime, format!("takes float32/float64, got {d}"))),
    }
}

fn kl_backward<T: Float + crate::dtype::Elem>(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let c = |v: f64| T::from(v).unwrap_or_else(T::nan);
    let (rho, penalty, momentum) = (c(call.nums[0]), c(call.nums[1]), c(call.nums[2]));
    let (dy, x) = (k.input::<T>(0), k.input::<T>(1));
    let (dx, avg) = (k.output::<T>(0), k.output::<T>(1));
    let units = avg.len().max(1);
    let rows = x.len() / units;
    let mut mean = vec![T::zero(); units];
    for row in x.chunks(units) {
        for (m, &v) in mean.iter_mut().zip(row) {
            *m = *m + v;
        }
    }
    let nr = c(rows as f64);
    for (a, m) in avg.iter_mut().zip(&mean) {
        *a = momentum * *a + (T::one() - momentum) * (*m / nr);
    }
    for (g, o) in dy.chunks(units).zip(dx.chunks_mut(units)) {
        for ((o, &g), &a) in o.iter_mut().zip(g).zip(avg.iter()) {
            *o = g + penalty * (-rho / a + (T::one() - rho) / (T::one() - a));
        }
    }
    Ok(())
}
