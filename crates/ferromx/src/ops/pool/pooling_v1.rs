//! `Pooling_v1`: MXNet's first pooling operator, kept for graphs saved by old MXNet
//! versions. It differs from `Pooling` in one way a graph can see: its padding is
//! zeros taken into the window, so a max over a window that reaches into the padding
//! is at least 0 (`Pooling` ignores padded cells for max). A composite: explicit zero
//! padding, then `Pooling` without padding (the same output sizes under both
//! conventions, and averages over the whole window, as `Pooling_v1` divides).

use super::DEFS;
use crate::error::Result;
use crate::ndarray::NDArray;
use crate::opdef::{invoke_def, param, Attrs, Invocation, KernelSlot, Meta, OpDef, ParamKind as K};
use crate::ops;
use crate::shape::Shape;

/// `Pooling_v1`.
pub(super) const POOLING_V1: OpDef = OpDef {
    name: "Pooling_v1",
    inputs: &["data"],
    params: &[
        param("kernel", K::Shape, Some("()"), "Window size per spatial axis."),
        param("pool_type", K::Str, Some("'max'"), "'max', 'avg' or 'sum'."),
        param("global_pool", K::Bool, Some("False"), "Pool over all spatial positions (ignores kernel, stride, pad)."),
        param("pooling_convention", K::Str, Some("'valid'"), "'valid' (floor) or 'full' (ceil) output sizes."),
        param("stride", K::Shape, Some("()"), "Stride per spatial axis (default 1)."),
        param("pad", K::Shape, Some("()"), "Zero padding per spatial axis, taken into the windows."),
    ],
    doc: "The legacy pooling: `Pooling` over zero-padded data (a max may pick a padded 0; an average \
          counts padded cells).",
    infer: Some(infer),
    forward: |i| {
        let (x, attrs) = padded(i, i.x(0)?)?;
        invoke_def(&DEFS[0], &[Some(x)], &attrs)
    },
    cpu: KernelSlot::Composite,
    ..OpDef::BASE
};

/// The attributes for `Pooling` (no padding) and the padding per spatial axis.
fn split(i: &Invocation<'_>) -> Result<(Attrs, Vec<usize>)> {
    let pad = if i.bool("global_pool")? { Vec::new() } else { i.shape("pad")?.dims().to_vec() };
    let attrs = Attrs(i.attrs.0.iter().filter(|(k, _)| k != "pad").cloned().collect());
    Ok((attrs, pad))
}

/// `x` zero-padded on its trailing `pad.len()` axes, and `Pooling`'s attributes.
fn padded(i: &Invocation<'_>, x: &NDArray) -> Result<(NDArray, Attrs)> {
    let (attrs, pad) = split(i)?;
    let nd = x.ndim();
    let mut y = x.clone();
    for (j, &p) in pad.iter().enumerate() {
        if p == 0 || nd < pad.len() {
            continue;
        }
        let ax = nd - pad.len() + j;
        let mut side = y.dims().to_vec();
        side[ax] = p;
        let z = ops::zeros(Shape::new(&side), y.dtype(), y.ctx())?;
        y = ops::concat(&[z.clone(), y, z], ax as i64)?;
    }
    Ok((y, attrs))
}

fn infer(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let (attrs, pad) = split(&i)?;
    let mut m = ins.first().cloned().ok_or_else(|| crate::Error::value(def.name, "needs data"))?;
    let mut d = m.shape.dims().to_vec();
    let nd = d.len();
    if nd >= pad.len() {
        for (j, &p) in pad.iter().enumerate() {
            d[nd - pad.len() + j] += 2 * p;
        }
    }
    m.shape = Shape::new(&d);
    DEFS[0].infer_meta(&attrs, &[m])
}
