//! `_contrib_allclose`: whether two arrays agree within tolerance, as one engine pass (what
//! MXNet's `assert_almost_equal` runs on the device before copying anything to host).

use crate::dtype::{DType, Elem};
use crate::engine::OpFailure;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    one, param, push_call, Aliases, Attrs, Example, Grad, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamKind as K,
};
use crate::shape::Shape;
use crate::storage::Kernel;
use crate::with_dtype;

fn infer_allclose(d: &OpDef, _a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (a, b) = (&ins[0], &ins[1]);
    if a.shape != b.shape {
        return Err(Error::shape(d.name, &[&a.shape, &b.shape], "the inputs must have the same shape"));
    }
    if a.dtype != b.dtype {
        return Err(Error::value(
            d.name,
            format!("the inputs must have one dtype, got {:?} and {:?}", a.dtype, b.dtype),
        ));
    }
    Ok(vec![Meta { shape: Shape::new(&[1]), dtype: DType::U8, ctx: a.ctx }])
}

fn allclose(i: &Invocation<'_>) -> Result<NDArray> {
    let (a, b) = (i.x(0)?, i.x(1)?);
    let metas = infer_allclose(i.def, i.attrs, &[Meta::of(a), Meta::of(b)])?;
    let out = NDArray::empty(metas[0].shape.clone(), DType::U8, a.ctx())?;
    let nan = if i.bool("equal_nan")? { 1.0 } else { 0.0 };
    let nums = [i.f64("rtol")?, i.f64("atol")?, nan];
    push_call(OpCall::new(i.def, &[a, b], &[&out]).with_nums(&nums))?;
    Ok(out)
}

/// `|a - b| <= atol + rtol * |b|` everywhere (equal values, infinities included, always
/// agree; NaNs agree with NaNs when `equal_nan`), compared in float64.
fn allclose_kernel(c: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let (rtol, atol, equal_nan) = (c.nums[0], c.nums[1], c.nums[2] != 0.0);
    let ok = with_dtype!(k.in_dtype(0), T, {
        let (x, y) = (k.input::<T>(0), k.input::<T>(1));
        x.iter().zip(y.iter()).all(|(&p, &q)| {
            let (p, q) = (p.to_f64(), q.to_f64());
            p == q || (p - q).abs() <= atol + rtol * q.abs() || (equal_nan && p.is_nan() && q.is_nan())
        })
    });
    k.output::<u8>(0)[0] = u8::from(ok);
    Ok(())
}

/// The comparison operator.
pub static DEFS: &[OpDef] = &[OpDef {
    name: "_contrib_allclose",
    aliases: Aliases::NONE,
    inputs: &["a", "b"],
    params: &[
        param("rtol", K::Float, Some("1e-05"), "Relative tolerance (times |b|)."),
        param("atol", K::Float, Some("1e-08"), "Absolute tolerance."),
        param("equal_nan", K::Bool, Some("True"), "Whether NaNs in the same places agree."),
    ],
    doc: "1 (uint8, one element) when `|a - b| <= atol + rtol * |b|` everywhere, else 0.",
    forward: |i| one(allclose(i)),
    infer: Some(infer_allclose),
    grad: Grad::None("a boolean test"),
    cpu: KernelSlot::Call(allclose_kernel),
    example: Some(Example { shapes: &[&[2, 3], &[2, 3]], attrs: "", range: (0.5, 1.5) }),
    ..OpDef::BASE
}];
