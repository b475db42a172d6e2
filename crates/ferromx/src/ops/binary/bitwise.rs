//! Integer bitwise operators of `mx.np`: `bitwise_and`/`or`/`xor` of two
//! arrays (NumPy broadcasting and promotion) or of an array and a Python
//! integer (cast to the array's dtype with wrap-around, as MXNet).
//!
//! Kernel layout in [`OpCall::ints`]: `[op]` (0 and, 1 or, 2 xor) for the array
//! forms, `[op, scalar]` for the scalar forms. Integer and bool dtypes only.

use crate::dtype::DType;
use crate::engine::{ErrorKind, OpFailure};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{param, push_call, Aliases, Attrs, Grad, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamKind};
use crate::ops::{self, check_ctx};
use crate::shape::Shape;
use crate::storage::Kernel;

const NOT_DIFF: Grad = Grad::None("bitwise operators act on integers: no gradient flows");
const SCALAR: &[crate::opdef::ParamDef] = &[param("scalar", ParamKind::Int, Some("0"), "The integer operand.")];

fn code(def: &OpDef) -> i64 {
    match def.name.trim_start_matches("_npi_bitwise_") {
        n if n.starts_with("and") => 0,
        n if n.starts_with("or") => 1,
        _ => 2,
    }
}

fn check_int(name: &str, dt: DType) -> Result<()> {
    if matches!(dt, DType::F32 | DType::F64 | DType::F16 | DType::BF16) {
        return Err(Error::dtype(name, format!("bitwise operators need integer or bool arrays, got {dt}")));
    }
    Ok(())
}

fn infer_pair(def: &'static OpDef, _a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (a, b) = (&ins[0], &ins[1]);
    let dt = DType::promote(a.dtype, b.dtype);
    check_int(def.name, dt)?;
    let shape = Shape::broadcast(def.name, &a.shape, &b.shape)?;
    Ok(vec![Meta { shape, dtype: dt, ctx: a.ctx }])
}

fn infer_scalar(def: &'static OpDef, _a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    check_int(def.name, ins[0].dtype)?;
    Ok(vec![ins[0].clone()])
}

fn forward_pair(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let (a, b) = (i.x(0)?, i.x(1)?);
    let name = i.name();
    check_ctx(name, a, b)?;
    let m = infer_pair(i.def, i.attrs, &[Meta::of(a), Meta::of(b)])?.remove(0);
    let prep = |x: &NDArray| -> Result<NDArray> {
        let x = if x.dtype() != m.dtype { ops::astype(x, m.dtype)? } else { x.clone() };
        if x.shape() != &m.shape {
            return ops::broadcast_to(&x, m.shape.clone());
        }
        Ok(x)
    };
    let (a2, b2) = (prep(a)?, prep(b)?);
    let out = NDArray::empty(m.shape.clone(), m.dtype, m.ctx)?;
    if out.size() > 0 {
        push_call(OpCall::new(i.def, &[&a2, &b2], &[&out]).with_ints(&[code(i.def)]))?;
    }
    Ok(vec![out])
}

fn forward_scalar(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let x = i.x(0)?;
    check_int(i.name(), x.dtype())?;
    let out = NDArray::empty(x.shape().clone(), x.dtype(), x.ctx())?;
    if out.size() > 0 {
        push_call(OpCall::new(i.def, &[x], &[&out]).with_ints(&[code(i.def), i.i64("scalar")?]))?;
    }
    Ok(vec![out])
}

macro_rules! apply_int {
    ($dt:expr, $k:ident, $body:ident) => {
        match $dt {
            DType::U8 => $body!(u8, |s: i64| s as u8),
            DType::I8 => $body!(i8, |s: i64| s as i8),
            DType::I32 => $body!(i32, |s: i64| s as i32),
            DType::I64 => $body!(i64, |s: i64| s),
            DType::Bool => $body!(bool, |s: i64| s != 0),
            dt => {
                return Err(OpFailure::new(
                    ErrorKind::Type,
                    format!("bitwise operators need integer or bool arrays, got {dt}"),
                ))
            }
        }
    };
}

fn pair_kernel(c: &OpCall, kk: &Kernel) -> std::result::Result<(), OpFailure> {
    let op = c.ints[0];
    macro_rules! go {
        ($t:ty, $cast:expr) => {{
            let _ = $cast;
            let (a, b, o) = (kk.input::<$t>(0), kk.input::<$t>(1), kk.output::<$t>(0));
            for ((d, &x), &y) in o.iter_mut().zip(a).zip(b) {
                *d = match op {
                    0 => x & y,
                    1 => x | y,
                    _ => x ^ y,
                };
            }
        }};
    }
    apply_int!(kk.out_dtype(0), kk, go);
    Ok(())
}

fn scalar_kernel(c: &OpCall, kk: &Kernel) -> std::result::Result<(), OpFailure> {
    let (op, s) = (c.ints[0], c.ints[1]);
    macro_rules! go {
        ($t:ty, $cast:expr) => {{
            let y: $t = ($cast)(s);
            let (a, o) = (kk.input::<$t>(0), kk.output::<$t>(0));
            for (d, &x) in o.iter_mut().zip(a) {
                *d = match op {
                    0 => x & y,
                    1 => x | y,
                    _ => x ^ y,
                };
            }
        }};
    }
    apply_int!(kk.out_dtype(0), kk, go);
    Ok(())
}

const fn pair(name: &'static str, doc: &'static str) -> OpDef {
    OpDef {
        name,
        aliases: Aliases::NONE,
        inputs: &["x1", "x2"],
        doc,
        infer: Some(infer_pair),
        forward: forward_pair,
        grad: NOT_DIFF,
        cpu: KernelSlot::Call(pair_kernel),
        ..OpDef::BASE
    }
}

const fn scalar(name: &'static str, doc: &'static str) -> OpDef {
    OpDef {
        name,
        aliases: Aliases::NONE,
        inputs: &["x"],
        params: SCALAR,
        doc,
        infer: Some(infer_scalar),
        forward: forward_scalar,
        grad: NOT_DIFF,
        cpu: KernelSlot::Call(scalar_kernel),
        ..OpDef::BASE
    }
}

/// The bitwise operators.
pub static DEFS: &[OpDef] = &[
    pair("_npi_bitwise_and", "Bitwise AND of integer (or bool) arrays, with broadcasting."),
    pair("_npi_bitwise_or", "Bitwise OR of integer (or bool) arrays, with broadcasting."),
    pair("_npi_bitwise_xor", "Bitwise XOR of integer (or bool) arrays, with broadcasting."),
    scalar("_npi_bitwise_and_scalar", "Bitwise AND of an integer array and an integer (cast to the array's dtype)."),
    scalar("_npi_bitwise_or_scalar", "Bitwise OR of an integer array and an integer (cast to the array's dtype)."),
    scalar("_npi_bitwise_xor_scalar", "Bitwise XOR of an integer array and an integer (cast to the array's dtype)."),
];
