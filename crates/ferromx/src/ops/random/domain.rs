//! `_check_domain`: a distribution parameter array checked on the engine.
//!
//! `np.random.exponential(scale=arr)` and its kin must reject a parameter outside the
//! distribution's domain, as MXNet's kernels do (`expect scale >= 0`, a `ValueError` at
//! the read). Reading the array to the host at the call would block the frontend; instead
//! the sampler reads the parameter through this operator, whose output is the parameter
//! itself and whose failure poisons everything computed from it, so the error surfaces
//! at the read, naming the function and the bad value.

use crate::dtype::Elem;
use crate::error::Result;
use crate::ndarray::NDArray;
use crate::opdef::{
    one, param, push_call, record_table_grad, Attrs, Grad, GradArgs, Invocation, KernelSlot, Meta, OpCall,
};
use crate::opdef::{OpDef, ParamKind as K};
use crate::storage::Kernel;
use crate::with_dtype;

/// `x` (a copy) if every element is `>= lower` and `<= upper` (strictly, unless
/// `inclusive`); otherwise the engine op fails with `"{caller}: {what} (got {value})"`.
fn check_domain(i: &Invocation<'_>) -> Result<NDArray> {
    let x = i.x(0)?;
    let out = x.empty_like()?;
    let upper = i.opt_f64("upper")?.unwrap_or(f64::INFINITY);
    let nums = [i.f64("lower")?, f64::from(u8::from(i.bool("inclusive")?)), upper];
    let msg = format!("{}: {}", i.str("caller")?, i.str("what")?);
    let call = OpCall::new(&DEFS[0], &[x], &[&out]).with_nums(&nums).with_label(msg);
    push_call(call)?;
    record_table_grad(&DEFS[0], &[x], std::slice::from_ref(&out), &nums);
    Ok(out)
}

fn kernel(c: &OpCall, k: &Kernel) -> std::result::Result<(), ferromx_engine::OpFailure> {
    let (lower, inclusive, upper) = (c.nums[0], c.nums[1] != 0.0, c.nums[2]);
    let ok = |v: f64| if inclusive { v >= lower && v <= upper } else { v > lower && v < upper };
    with_dtype!(k.in_dtype(0), T, {
        let (x, o) = (k.input::<T>(0), k.output::<T>(0));
        let bad = x.iter().map(|v| v.to_f64()).find(|&v| !ok(v));
        if let Some(v) = bad {
            let msg = format!("{} (got {v})", c.label.as_deref().unwrap_or("_check_domain"));
            return Err(ferromx_engine::OpFailure::new(ferromx_engine::ErrorKind::Value, msg));
        }
        o.copy_from_slice(x);
    });
    Ok(())
}

fn infer(_: &'static OpDef, _: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    Ok(vec![ins[0].clone()])
}

/// The identity's gradient: the check does not change the value.
fn grad(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    Ok(vec![Some(a.out_grads[0].clone())])
}

/// `_check_domain`.
pub static DEFS: &[OpDef] = &[OpDef {
    name: "_check_domain",
    inputs: &["data"],
    params: &[
        param("lower", K::Float, None, "The domain's lower bound."),
        param("inclusive", K::Bool, Some("True"), "Whether the bounds themselves are in the domain."),
        param("upper", K::Float, Some("None"), "The domain's upper bound (None: none)."),
        param("what", K::Str, Some("'parameter out of domain'"), "The error's text (MXNet's: 'expect scale >= 0')."),
        param("caller", K::Str, Some("'_check_domain'"), "The function named in the error."),
    ],
    doc: "The data, once every element is in a distribution's domain (between `lower` and \
          `upper`); otherwise a ValueError at the read naming `caller`.",
    infer: Some(infer),
    forward: |i| one(check_domain(i)),
    grad: Grad::Fn(grad),
    cpu: KernelSlot::Call(kernel),
    ..OpDef::BASE
}];
