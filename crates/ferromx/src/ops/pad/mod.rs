//! `Pad`: MXNet's padding operator (`nd.pad`, `mx.sym.Pad`), with its gradient
//! `_backward_Pad`.
//!
//! MXNet's operator takes a flat `pad_width` of `(before, after)` pairs, one per axis, and
//! three modes: `constant` (`constant_value` around the data), `edge` (the border element
//! repeated) and `reflect` (mirrored about the border element, which is not repeated).
//! MXNet accepts only 4-d and 5-d data padded on the spatial axes; this operator pads any
//! axis of any rank (a superset, documented in docs/for-mxnet-users.md), so `np.pad`'s
//! modes of the same names run on it too.
//!
//! Both kernels walk the output once through one index map per axis (output position →
//! input position, or none for a constant); the gradient adds each output gradient to the
//! input position it was read from, so an edge or reflected element collects several.

mod cpu;
#[cfg(test)]
mod tests;

use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{one, param, push_call, Aliases, Attrs, Example, Grad, Invocation, KernelSlot, Meta, OpCall, OpDef};
use crate::opdef::{ParamDef, ParamKind as K};
use crate::shape::Shape;

/// How the border is filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PadMode {
    /// `constant_value` everywhere outside the data.
    Constant,
    /// The border element repeated.
    Edge,
    /// Mirrored about the border element (`[2, 1 | 0, 1, 2 | 1, 0]`).
    Reflect,
}

impl PadMode {
    fn parse(op: &str, s: &str) -> Result<PadMode> {
        match s {
            "constant" => Ok(PadMode::Constant),
            "edge" => Ok(PadMode::Edge),
            "reflect" => Ok(PadMode::Reflect),
            _ => Err(Error::value(op, format!("unknown mode '{s}' (constant, edge or reflect)"))),
        }
    }
}

/// A checked padding of one input shape.
#[derive(Clone, Debug)]
pub struct PadSpec {
    /// Mode.
    pub mode: PadMode,
    /// `(before, after)` per axis.
    pub widths: Vec<(usize, usize)>,
    /// The constant of `constant` mode.
    pub value: f64,
}

impl PadSpec {
    /// Reads and checks `mode`, `pad_width` and `constant_value` against `data`'s shape.
    fn read(i: &Invocation<'_>, data: &Shape) -> Result<PadSpec> {
        let name = i.name();
        let mode = PadMode::parse(name, &i.str("mode")?)?;
        let flat = i.ints("pad_width")?.unwrap_or_default();
        if flat.len() != 2 * data.ndim() {
            return Err(Error::shape(
                name,
                &[data],
                format!("pad_width must have 2 * ndim = {} entries, got {} ({flat:?})", 2 * data.ndim(), flat.len()),
            ));
        }
        if let Some(w) = flat.iter().find(|&&w| w < 0) {
            return Err(Error::value(name, format!("pad widths must be non-negative, got {w}")));
        }
        let widths: Vec<(usize, usize)> = flat.chunks(2).map(|p| (p[0] as usize, p[1] as usize)).collect();
        for (ax, (&n, &(b, a))) in data.dims().iter().zip(&widths).enumerate() {
            if b + a == 0 {
                continue;
            }
            let bad = match mode {
                PadMode::Constant => false,
                PadMode::Edge => n == 0,
                PadMode::Reflect => b >= n || a >= n,
            };
            if bad {
                return Err(Error::shape(
                    name,
                    &[data],
                    format!(
                        "{mode:?} padding of ({b}, {a}) on axis {ax} of size {n}: {}",
                        if mode == PadMode::Edge {
                            "an empty axis has no edge"
                        } else {
                            "reflect widths must be smaller than the axis"
                        }
                    ),
                ));
            }
        }
        Ok(PadSpec { mode, widths, value: i.f64("constant_value")? })
    }

    /// The padded shape.
    fn out_shape(&self, data: &Shape) -> Shape {
        let d: Vec<usize> = data.dims().iter().zip(&self.widths).map(|(n, (b, a))| n + b + a).collect();
        Shape::new(&d)
    }

    /// The data shape a padded shape came from (the gradient's shape).
    fn unpadded(&self, padded: &Shape) -> Shape {
        let d: Vec<usize> = padded.dims().iter().zip(&self.widths).map(|(n, (b, a))| n.saturating_sub(b + a)).collect();
        Shape::new(&d)
    }

    /// `[mode, then (before, after) per axis]`: the kernels' `ints`.
    fn ints(&self) -> Vec<i64> {
        let mut v = vec![self.mode as i64];
        v.extend(self.widths.iter().flat_map(|&(b, a)| [b as i64, a as i64]));
        v
    }
}

/// `x` padded as `spec` says (recorded for autograd).
pub fn pad(x: &NDArray, spec: &PadSpec) -> Result<NDArray> {
    let out = NDArray::empty(spec.out_shape(x.shape()), x.dtype(), x.ctx())?;
    if out.size() > 0 {
        push_call(OpCall::new(&DEFS[0], &[x], &[&out]).with_ints(&spec.ints()).with_nums(&[spec.value]))?;
    }
    if needs_record(&[x]) {
        let s = spec.clone();
        record(DEFS[0].name, &[x], &[&out], Box::new(move |g| Ok(vec![Some(pad_backward(&g[0], &s)?)])));
    }
    Ok(out)
}

/// The gradient of [`pad`]: each element of `g` added to the input position it was read
/// from (`constant` positions read none).
pub fn pad_backward(g: &NDArray, spec: &PadSpec) -> Result<NDArray> {
    let out = NDArray::empty(spec.unpadded(g.shape()), g.dtype(), g.ctx())?;
    if out.size() > 0 {
        push_call(OpCall::new(&DEFS[1], &[g], &[&out]).with_ints(&spec.ints()))?;
    }
    if needs_record(&[g]) {
        let s = spec.clone();
        // the backward of the backward is the forward with a zero constant
        record(
            DEFS[1].name,
            &[g],
            &[&out],
            Box::new(move |gg| Ok(vec![Some(pad(&gg[0], &PadSpec { value: 0.0, ..s.clone() })?)])),
        );
    }
    Ok(out)
}

fn forward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let x = i.x(0)?;
    let spec = PadSpec::read(i, x.shape())?;
    one(pad(x, &spec))
}

fn infer(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let spec = PadSpec::read(&Invocation::params(def, a), &ins[0].shape)?;
    Ok(vec![Meta { shape: spec.out_shape(&ins[0].shape), ..ins[0].clone() }])
}

/// `_backward_Pad`'s `pad_width` describes the forward, so its input is the padded shape.
fn backward_forward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let g = i.x(0)?;
    let spec = backward_spec(i, g.shape())?;
    one(pad_backward(g, &spec))
}

/// The forward's spec, checked against the data shape the padded gradient implies.
fn backward_spec(i: &Invocation<'_>, g: &Shape) -> Result<PadSpec> {
    let flat = i.ints("pad_width")?.unwrap_or_default();
    if flat.len() != 2 * g.ndim() || flat.iter().any(|&w| w < 0) {
        return Err(Error::shape(i.name(), &[g], format!("pad_width {flat:?} does not fit the gradient")));
    }
    let d: Vec<usize> = g
        .dims()
        .iter()
        .zip(flat.chunks(2))
        .map(|(&n, p)| n.checked_sub((p[0] + p[1]) as usize))
        .collect::<Option<_>>()
        .ok_or_else(|| Error::shape(i.name(), &[g], format!("the gradient is smaller than pad_width {flat:?}")))?;
    PadSpec::read(i, &Shape::new(&d))
}

fn infer_backward(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let spec = backward_spec(&i, &ins[0].shape)?;
    Ok(vec![Meta { shape: spec.unpadded(&ins[0].shape), ..ins[0].clone() }])
}

const PARAMS: &[ParamDef] = &[
    param("mode", K::Str, Some("'constant'"), "'constant', 'edge' (the border repeated) or 'reflect' (mirrored)."),
    param("pad_width", K::Shape, None, "(before, after) per axis, flat: (b0, a0, b1, a1, ...)."),
    param("constant_value", K::Float, Some("0.0"), "The value of 'constant' padding."),
];

/// `Pad` and its gradient.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "Pad",
        aliases: Aliases { nd: &["pad"], np: &[], npx: &[], fluent: true },
        inputs: &["data"],
        params: PARAMS,
        doc: "Pads `data` on each axis by `pad_width` with a constant, the border element (`edge`) or \
              its mirror image (`reflect`).",
        infer: Some(infer),
        forward,
        cpu: KernelSlot::Call(cpu::pad_kernel),
        example: Some(Example {
            shapes: &[&[2, 3, 4]],
            attrs: "mode='reflect', pad_width=(0, 0, 1, 2, 2, 1)",
            range: (-1.0, 1.0),
        }),
        ..OpDef::BASE
    },
    OpDef {
        name: "_backward_Pad",
        inputs: &["out_grad"],
        params: PARAMS,
        doc: "Gradient of `Pad`: each output gradient added to the input element it was read from.",
        infer: Some(infer_backward),
        forward: backward_forward,
        grad: Grad::Recorded,
        cpu: KernelSlot::Call(cpu::pad_backward_kernel),
        ..OpDef::BASE
    },
];
