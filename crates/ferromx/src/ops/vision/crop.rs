//! `Crop`: MXNet's legacy spatial crop of an (N, C, H, W) array (fully convolutional
//! networks crop upsampled score maps to the input's size with it).
//!
//! A composite: the crop is one `slice` of the two spatial axes, so its gradient is
//! `slice`'s (the cropped window of the output gradient, zeros elsewhere). The
//! `crop_like` input only lends its shape and gets no gradient, as in MXNet.

use crate::error::{Error, Result};
use crate::opdef::{one, param, Attrs, Example, Invocation, KernelSlot, Meta, OpDef, ParamKind as K};
use crate::shape::Shape;

/// `Crop`.
pub(super) const CROP: OpDef = OpDef {
    name: "Crop",
    inputs: &["*data"],
    params: &[
        param("num_args", K::Int, None, "1: crop to `h_w`; 2: crop to the second input's height and width."),
        param("offset", K::Shape, Some("(0, 0)"), "Top-left corner (y, x) of the crop."),
        param("h_w", K::Shape, Some("(0, 0)"), "Crop (height, width) when num_args is 1."),
        param("center_crop", K::Bool, Some("False"), "Centre the crop (ignores `offset`)."),
    ],
    doc: "Crops the spatial axes of `data` (N, C, H, W) to `h_w`, or to the height and width of a \
          second input `crop_like`, at `offset` or centred.",
    infer: Some(infer),
    forward: |i| {
        let xs = i.all();
        let shapes: Vec<&Shape> = xs.iter().map(|x| x.shape()).collect();
        let (begin, end) = window(i, &shapes)?;
        one(crate::ops::index::slice(&xs[0], &begin, &end, &[]))
    },
    cpu: KernelSlot::Composite,
    example: Some(Example {
        shapes: &[&[1, 2, 4, 5]],
        attrs: "num_args=1, h_w=(2, 3), offset=(1, 1)",
        range: (-1.0, 1.0),
    }),
    ..OpDef::BASE
};

/// The crop as `slice` bounds over the four axes.
fn window(i: &Invocation<'_>, ins: &[&Shape]) -> Result<(Vec<i64>, Vec<i64>)> {
    let name = i.name();
    let n = i.i64("num_args")?;
    if !(1..=2).contains(&n) || ins.len() != n as usize {
        return Err(Error::value(
            name,
            format!("num_args={n} must be 1 or 2 and match the {} inputs given", ins.len()),
        ));
    }
    let x = ins[0];
    let &[bn, c, h, w] = x.dims() else {
        return Err(Error::shape(name, &[x], "data must be 4-D (N, C, H, W)"));
    };
    let (ch, cw) = if n == 2 {
        match ins[1].dims() {
            [_, _, lh, lw] => (*lh, *lw),
            _ => return Err(Error::shape(name, &[x, ins[1]], "crop_like must be 4-D (N, C, H, W)")),
        }
    } else {
        match i.shape("h_w")?.dims() {
            [a, b] if *a >= 1 && *b >= 1 => (*a, *b),
            d => return Err(Error::value(name, format!("h_w must be (h, w) with both at least 1, got {d:?}"))),
        }
    };
    if ch > h || cw > w {
        return Err(Error::shape(name, &[x], format!("the crop ({ch}, {cw}) is larger than the data's ({h}, {w})")));
    }
    let (oy, ox) = if i.bool("center_crop")? {
        ((h - ch) / 2, (w - cw) / 2)
    } else {
        match i.shape("offset")?.dims() {
            [a, b] if *a <= h - ch && *b <= w - cw => (*a, *b),
            d => {
                return Err(Error::value(
                    name,
                    format!("offset {d:?} must be (y, x) within the room left by the crop ({}, {})", h - ch, w - cw),
                ))
            }
        }
    };
    let to = |v: &[usize]| v.iter().map(|&u| u as i64).collect::<Vec<i64>>();
    Ok((to(&[0, 0, oy, ox]), to(&[bn, c, oy + ch, ox + cw])))
}

fn infer(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let shapes: Vec<&Shape> = ins.iter().map(|m| &m.shape).collect();
    let (b, e) = window(&Invocation::params(def, a), &shapes)?;
    let dims: Vec<usize> = b.iter().zip(&e).map(|(b, e)| (e - b) as usize).collect();
    let x = ins.first().ok_or_else(|| Error::value(def.name, "needs data"))?;
    Ok(vec![Meta { shape: Shape::new(&dims), ..x.clone() }])
}
