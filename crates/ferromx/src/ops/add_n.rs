//! `add_n` (MXNet's `ElementWiseSum`): the elementwise sum of any number of arrays of one
//! shape and dtype, in one pass.
//!
//! It is an operator of its own, not a chain of `+`, because MXNet graphs name it
//! (`ElementWiseSum` nodes in `-symbol.json`, `mx.sym.ElementWiseSum` in programs) and
//! because one pass over N inputs reads each once and writes the output once.

use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{one, push_call, Aliases, Attrs, Example, KernelSlot, Meta, OpCall, OpDef};
use crate::ops::binary::arith::Arith;
use crate::ops::check_ctx;
use crate::with_dtype;

/// The sum of `xs` (at least one; same shape, dtype and context).
pub fn add_n(xs: &[NDArray]) -> Result<NDArray> {
    let name = DEFS[0].name;
    let first = xs.first().ok_or_else(|| Error::value(name, "needs at least one array"))?;
    for x in &xs[1..] {
        check_ctx(name, first, x)?;
        if x.shape() != first.shape() {
            return Err(Error::shape(name, &[first.shape(), x.shape()], "all inputs must have the same shape"));
        }
        if x.dtype() != first.dtype() {
            return Err(Error::dtype(
                name,
                format!("all inputs must have one dtype: {} and {}", first.dtype(), x.dtype()),
            ));
        }
    }
    let out = first.empty_like()?;
    let refs: Vec<&NDArray> = xs.iter().collect();
    if out.size() > 0 {
        push_call(OpCall::new(&DEFS[0], &refs, &[&out]))?;
    }
    if needs_record(&refs) {
        let n = xs.len();
        // Every input's gradient is the head gradient; each gets its own copy so that
        // accumulating into one never writes another's.
        record(name, &refs, &[&out], Box::new(move |g| (0..n).map(|_| crate::ops::copy(&g[0]).map(Some)).collect()));
    }
    Ok(out)
}

fn add_n_kernel(_c: &OpCall, k: &crate::storage::Kernel) -> std::result::Result<(), ferromx_engine::OpFailure> {
    with_dtype!(k.out_dtype(0), T, {
        let o = k.output::<T>(0);
        o.copy_from_slice(k.input::<T>(0));
        for i in 1..k.n_inputs() {
            for (d, s) in o.iter_mut().zip(k.input::<T>(i)) {
                *d = Arith::add(*d, *s);
            }
        }
    });
    Ok(())
}

fn infer_add_n(d: &OpDef, _a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let first = ins.first().ok_or_else(|| Error::value(d.name, "needs at least one array"))?;
    for m in &ins[1..] {
        if m.shape != first.shape {
            return Err(Error::shape(d.name, &[&first.shape, &m.shape], "all inputs must have the same shape"));
        }
        if m.dtype != first.dtype {
            return Err(Error::dtype(
                d.name,
                format!("all inputs must have one dtype: {} and {}", first.dtype, m.dtype),
            ));
        }
    }
    Ok(vec![first.clone()])
}

/// `add_n`.
pub static DEFS: &[OpDef] = &[OpDef {
    name: "add_n",
    aliases: Aliases { nd: &["ElementWiseSum"], np: &[], npx: &[], fluent: false },
    inputs: &["*args"],
    doc: "The elementwise sum of all the input arrays (same shape and dtype).",
    forward: |i| one(add_n(&i.all())),
    infer: Some(infer_add_n),
    cpu: KernelSlot::Call(add_n_kernel),
    example: Some(Example { shapes: &[&[2, 3], &[2, 3], &[2, 3]], attrs: "", range: (0.5, 1.5) }),
    ..OpDef::BASE
}];
