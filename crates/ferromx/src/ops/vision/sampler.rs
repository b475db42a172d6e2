//! `GridGenerator`, `BilinearSampler` and `SpatialTransformer`: the sampling half of a
//! spatial transformer network.
//!
//! A grid is (N, 2, H, W): channel 0 the source x, channel 1 the source y, both
//! normalised to [-1, 1] over the input's width and height. Sampling is bilinear, and a
//! corner outside the input reads 0 (MXNet's CPU rule, corner by corner).

use super::{cast, check_float, float_kernel, GRID_BACKWARD_I, SAMPLER_BACKWARD_I, SAMPLER_I};
use crate::autograd::{needs_record, record};
use crate::engine::OpFailure;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    one, param, push_call, Attrs, Example, Grad, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamDef, ParamKind as K,
};
use crate::ops::par::chunked;
use crate::shape::Shape;
use crate::storage::Kernel;
use num_traits::{Float, One, Zero};

const GRID_PARAMS: &[ParamDef] = &[
    param(
        "transform_type",
        K::Str,
        None,
        "'affine': data holds (N, 6) affine matrices; 'warp': data is an optical flow (N, 2, H, W).",
    ),
    param("target_shape", K::Shape, Some("(0, 0)"), "Output (H, W) of an 'affine' grid (ignored by 'warp')."),
];

/// `GridGenerator`.
pub(super) const GRID: OpDef = OpDef {
    name: "GridGenerator",
    inputs: &["data"],
    params: GRID_PARAMS,
    doc: "A sampling grid (N, 2, H, W) for `BilinearSampler`: the target pixels' normalised coordinates \
          mapped by an affine matrix, or shifted by an optical flow (in pixels).",
    infer: Some(infer_grid),
    forward: |i| one(grid_generator(i)),
    cpu: KernelSlot::Call(grid_kernel),
    example: Some(Example {
        shapes: &[&[2, 6]],
        attrs: "transform_type='affine', target_shape=(3, 4)",
        range: (-1.0, 1.0),
    }),
    // MXNet's node has 1 hidden output (its kernel's intermediates)
    graph: crate::opdef::GraphForm {
        total: crate::opdef::OutputCount::Fixed(2),
        named_outputs: true,
        ..crate::opdef::GraphForm::PLAIN
    },
    ..OpDef::BASE
};

/// `_backward_GridGenerator`.
pub(super) const GRID_BACKWARD: OpDef = OpDef {
    name: "_backward_GridGenerator",
    inputs: &["out_grad"],
    params: GRID_PARAMS,
    doc: "Gradient of `GridGenerator` with respect to its data (pushed by its backward).",
    infer: Some(infer_grid_backward),
    forward: |i| {
        let dy = i.x(0)?;
        let warp = is_warp(i)?;
        let d = dy.dims();
        if d.len() != 4 || d[1] != 2 {
            return Err(Error::shape(i.name(), &[dy.shape()], "out_grad must be (N, 2, H, W)"));
        }
        let shape = if warp { dy.shape().clone() } else { Shape::new(&[d[0], 6]) };
        one(grid_backward(dy, warp, shape))
    },
    grad: Grad::None("second-order gradients of GridGenerator are not implemented"),
    cpu: KernelSlot::Call(grid_backward_kernel),
    ..OpDef::BASE
};

/// `BilinearSampler`.
pub(super) const SAMPLER: OpDef = OpDef {
    name: "BilinearSampler",
    inputs: &["data", "grid"],
    params: &[param("cudnn_off", K::Bool, Some("None"), "Turn cuDNN off (accepted, unused).")],
    doc: "Samples `data` (N, C, H, W) bilinearly at `grid` (N, 2, H', W') (normalised source x, y in \
          [-1, 1]); corners outside the input read 0. Output (N, C, H', W'), differentiable in both.",
    infer: Some(infer_sampler),
    forward: |i| one(bilinear_sampler(i.x(0)?, i.x(1)?)),
    cpu: KernelSlot::Call(sampler_kernel),
    example: Some(Example { shapes: &[&[1, 2, 3, 4], &[1, 2, 2, 3]], attrs: "", range: (-0.9, 0.9) }),
    // MXNet's node has 1 hidden output (its kernel's intermediates)
    graph: crate::opdef::GraphForm {
        total: crate::opdef::OutputCount::Fixed(2),
        named_outputs: true,
        ..crate::opdef::GraphForm::PLAIN
    },
    ..OpDef::BASE
};

/// `_backward_BilinearSampler`.
pub(super) const SAMPLER_BACKWARD: OpDef = OpDef {
    name: "_backward_BilinearSampler",
    inputs: &["out_grad", "data", "grid"],
    outputs: &["data_grad", "grid_grad"],
    params: &[param("cudnn_off", K::Bool, Some("None"), "Turn cuDNN off (accepted, unused).")],
    doc: "Gradients of `BilinearSampler` with respect to data and grid (pushed by its backward).",
    infer: Some(|def, _, ins| {
        if ins.len() != 3 {
            return Err(Error::value(def.name, "needs out_grad, data and grid"));
        }
        Ok(vec![ins[1].clone(), ins[2].clone()])
    }),
    forward: |i| {
        let (dy, x, g) = (i.x(0)?, i.x(1)?, i.x(2)?);
        let want = sampler_shape(i.name(), x.shape(), g.shape())?;
        if dy.shape() != &want {
            return Err(Error::shape(i.name(), &[dy.shape(), &want], "out_grad must have the output's shape"));
        }
        let (dx, dg) = sampler_backward(dy, x, g)?;
        Ok(vec![dx, dg])
    },
    grad: Grad::None("second-order gradients of BilinearSampler are not implemented"),
    cpu: KernelSlot::Call(sampler_backward_kernel),
    ..OpDef::BASE
};

/// `SpatialTransformer`.
pub(super) const STN: OpDef = OpDef {
    name: "SpatialTransformer",
    inputs: &["data", "loc"],
    params: &[
        param("target_shape", K::Shape, Some("(0, 0)"), "Output (H, W)."),
        param("transform_type", K::Str, None, "'affine' (the only type)."),
        param("sampler_type", K::Str, None, "'bilinear' (the only type)."),
        param("cudnn_off", K::Bool, Some("None"), "Turn cuDNN off (accepted, unused)."),
    ],
    doc: "A spatial transformer: the affine grid of `loc` (N, 6) over `target_shape`, sampled \
          bilinearly from `data` (N, C, H, W). `GridGenerator` then `BilinearSampler`.",
    infer: Some(infer_stn),
    forward: |i| {
        let (x, loc) = (i.x(0)?, i.x(1)?);
        let (h, w) = stn_target(i)?;
        check_loc(i.name(), x, loc)?;
        let grid = affine_grid(loc, h, w)?;
        one(bilinear_sampler(x, &grid))
    },
    cpu: KernelSlot::Composite,
    example: Some(Example {
        shapes: &[&[1, 2, 3, 4], &[1, 6]],
        attrs: "target_shape=(2, 3), transform_type='affine', sampler_type='bilinear'",
        range: (-0.6, 0.6),
    }),
    // MXNet's node has 2 hidden outputs (its kernel's intermediates)
    graph: crate::opdef::GraphForm {
        total: crate::opdef::OutputCount::Fixed(3),
        named_outputs: true,
        ..crate::opdef::GraphForm::PLAIN
    },
    ..OpDef::BASE
};

fn is_warp(i: &Invocation<'_>) -> Result<bool> {
    match i.str("transform_type")?.trim_matches('\'') {
        "affine" => Ok(false),
        "warp" => Ok(true),
        t => Err(Error::value(i.name(), format!("transform_type must be 'affine' or 'warp', got '{t}'"))),
    }
}

/// The affine grid's (H, W): both at least 2 (the normalisation divides by size - 1).
fn target_hw(i: &Invocation<'_>) -> Result<(usize, usize)> {
    let t = i.shape("target_shape")?;
    match t.dims() {
        [h, w] if *h >= 2 && *w >= 2 => Ok((*h, *w)),
        d => Err(Error::value(i.name(), format!("target_shape must be (H, W) with both at least 2, got {d:?}"))),
    }
}

/// The output shape of `GridGenerator` on input `d`.
fn grid_shape(i: &Invocation<'_>, d: &Shape) -> Result<Shape> {
    if is_warp(i)? {
        match d.dims() {
            [_, 2, h, w] if *h >= 2 && *w >= 2 => Ok(d.clone()),
            _ => Err(Error::shape(i.name(), &[d], "a 'warp' flow must be (N, 2, H, W) with H, W at least 2")),
        }
    } else {
        let (h, w) = target_hw(i)?;
        match d.dims() {
            [n, 6] => Ok(Shape::new(&[*n, 2, h, w])),
            _ => Err(Error::shape(i.name(), &[d], "'affine' data must be (N, 6)")),
        }
    }
}

fn infer_grid(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let x = ins.first().ok_or_else(|| Error::value(def.name, "needs data"))?;
    check_float(def.name, x.dtype)?;
    Ok(vec![Meta { shape: grid_shape(&Invocation::params(def, a), &x.shape)?, ..x.clone() }])
}

fn infer_grid_backward(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let dy = ins.first().ok_or_else(|| Error::value(def.name, "needs out_grad"))?;
    let i = Invocation::params(def, a);
    let d = dy.shape.dims();
    let shape = if is_warp(&i)? { dy.shape.clone() } else { Shape::new(&[d.first().copied().unwrap_or(0), 6]) };
    Ok(vec![Meta { shape, ..dy.clone() }])
}

fn grid_generator(i: &Invocation<'_>) -> Result<NDArray> {
    let x = i.x(0)?;
    check_float(i.name(), x.dtype())?;
    let shape = grid_shape(i, x.shape())?;
    if is_warp(i)? {
        grid_call(x, true, shape)
    } else {
        let d = shape.dims();
        affine_grid(x, d[2], d[3])
    }
}

/// The affine grid of `theta` (N, 6) over (h, w).
pub(super) fn affine_grid(theta: &NDArray, h: usize, w: usize) -> Result<NDArray> {
    grid_call(theta, false, Shape::new(&[theta.dims()[0], 2, h, w]))
}

fn grid_call(x: &NDArray, warp: bool, shape: Shape) -> Result<NDArray> {
    let out = NDArray::empty(shape, x.dtype(), x.ctx())?;
    let d = out.dims().to_vec();
    let ints = [i64::from(warp), d[0] as i64, d[2] as i64, d[3] as i64];
    if out.size() > 0 {
        push_call(OpCall::new(&super::DEFS[super::GRID_I], &[x], &[&out]).with_ints(&ints))?;
    }
    if needs_record(&[x]) {
        let xs = x.shape().clone();
        record(
            super::DEFS[super::GRID_I].name,
            &[x],
            &[&out],
            Box::new(move |g| Ok(vec![Some(grid_backward(&g[0], warp, xs.clone())?)])),
        );
    }
    Ok(out)
}

fn grid_backward(dy: &NDArray, warp: bool, data_shape: Shape) -> Result<NDArray> {
    let out = NDArray::empty(data_shape, dy.dtype(), dy.ctx())?;
    let d = dy.dims();
    let ints = [i64::from(warp), d[0] as i64, d[2] as i64, d[3] as i64];
    if out.size() > 0 {
        push_call(OpCall::new(&super::DEFS[GRID_BACKWARD_I], &[dy], &[&out]).with_ints(&ints))?;
    }
    Ok(out)
}

/// The normalised target coordinates MXNet's affine grid uses: `-1 + i·(2/(n-1))`,
/// the step rounded to the dtype first.
fn coord<T: Float>(i: usize, n: usize) -> T {
    let step = cast::<T>(2.0 / (n as f64 - 1.0));
    cast::<T>(i as f64) * step - T::one()
}

/// The (size - 1) / 2 a warp grid divides by.
fn half<T: Float>(n: usize) -> T {
    cast::<T>((n as f64 - 1.0) / 2.0)
}

/// ints: warp (0/1), N, H, W.
fn grid_kernel(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let (warp, h, w) = (call.ints[0] != 0, call.us(2), call.us(3));
    float_kernel!(k.in_dtype(0), T, {
        let (x, out) = (k.input::<T>(0), k.output::<T>(0));
        let hw = h * w;
        let (hx, hy) = (half::<T>(w), half::<T>(h));
        chunked(out, 1 << 14, |start, o| {
            for (j, v) in o.iter_mut().enumerate() {
                let idx = start + j;
                let (n, ch, p) = (idx / (2 * hw), (idx / hw) % 2, idx % hw);
                let (r, c) = (p / w, p % w);
                *v = if warp {
                    let (pos, hh) = if ch == 0 { (c, hx) } else { (r, hy) };
                    (x[idx] + cast::<T>(pos as f64)) / hh - T::one()
                } else {
                    let t = &x[n * 6 + ch * 3..n * 6 + ch * 3 + 3];
                    t[0] * coord::<T>(c, w) + t[1] * coord::<T>(r, h) + t[2]
                };
            }
        });
    });
    Ok(())
}

/// ints: warp (0/1), N, H, W of the grid.
fn grid_backward_kernel(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let (warp, n, h, w) = (call.ints[0] != 0, call.us(1), call.us(2), call.us(3));
    float_kernel!(k.in_dtype(0), T, {
        let (dy, out) = (k.input::<T>(0), k.output::<T>(0));
        let hw = h * w;
        if warp {
            let (hx, hy) = (half::<T>(w), half::<T>(h));
            for (idx, v) in out.iter_mut().enumerate() {
                *v = dy[idx] / if (idx / hw) % 2 == 0 { hx } else { hy };
            }
        } else {
            for s in 0..n {
                for ch in 0..2 {
                    let g = &dy[(s * 2 + ch) * hw..(s * 2 + ch + 1) * hw];
                    let mut acc = [T::zero(); 3];
                    for (p, &gv) in g.iter().enumerate() {
                        acc[0] += gv * coord::<T>(p % w, w);
                        acc[1] += gv * coord::<T>(p / w, h);
                        acc[2] += gv;
                    }
                    out[s * 6 + ch * 3..s * 6 + ch * 3 + 3].copy_from_slice(&acc);
                }
            }
        }
    });
    Ok(())
}

/// The sampler's output shape for data (N, C, H, W) and grid (N, 2, H', W').
fn sampler_shape(name: &str, x: &Shape, g: &Shape) -> Result<Shape> {
    match (x.dims(), g.dims()) {
        ([n, c, _, _], [gn, 2, gh, gw]) if n == gn => Ok(Shape::new(&[*n, *c, *gh, *gw])),
        _ => Err(Error::shape(name, &[x, g], "data must be (N, C, H, W) and grid (N, 2, H', W')")),
    }
}

fn infer_sampler(def: &'static OpDef, _: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let [x, g] = ins else { return Err(Error::value(def.name, "needs data and grid")) };
    check_float(def.name, x.dtype)?;
    if g.dtype != x.dtype {
        return Err(Error::dtype(def.name, format!("grid must have data's dtype {}, got {}", x.dtype, g.dtype)));
    }
    Ok(vec![Meta { shape: sampler_shape(def.name, &x.shape, &g.shape)?, ..x.clone() }])
}

/// Runs `BilinearSampler`, recording its gradient.
pub(super) fn bilinear_sampler(x: &NDArray, g: &NDArray) -> Result<NDArray> {
    let def = &super::DEFS[SAMPLER_I];
    let meta = infer_sampler(def, &Attrs::default(), &[Meta::of(x), Meta::of(g)])?.remove(0);
    crate::ops::check_ctx(def.name, x, g)?;
    let out = NDArray::empty(meta.shape, meta.dtype, meta.ctx)?;
    if out.size() > 0 {
        push_call(OpCall::new(def, &[x, g], &[&out]))?;
    }
    if needs_record(&[x, g]) {
        let (xc, gc) = (x.clone(), g.clone());
        record(
            def.name,
            &[x, g],
            &[&out],
            Box::new(move |dy| {
                let (dx, dg) = sampler_backward(&dy[0], &xc, &gc)?;
                Ok(vec![Some(dx), Some(dg)])
            }),
        );
    }
    Ok(out)
}

fn sampler_backward(dy: &NDArray, x: &NDArray, g: &NDArray) -> Result<(NDArray, NDArray)> {
    let (dx, dg) = (x.empty_like()?, g.empty_like()?);
    if dx.size() + dg.size() > 0 {
        push_call(OpCall::new(&super::DEFS[SAMPLER_BACKWARD_I], &[dy, x, g], &[&dx, &dg]))?;
    }
    Ok((dx, dg))
}

/// A sample position's top-left corner and its weights, as MXNet's CPU kernel computes them.
struct Corner<T> {
    x0: i64,
    y0: i64,
    wx: T,
    wy: T,
}

fn corner<T: Float>(gx: T, gy: T, ih: usize, iw: usize) -> Corner<T> {
    let two = T::one() + T::one();
    let yr = (gy + T::one()) * cast::<T>(ih as f64 - 1.0) / two;
    let xr = (gx + T::one()) * cast::<T>(iw as f64 - 1.0) / two;
    let (fy, fx) = (yr.floor(), xr.floor());
    Corner {
        x0: fx.to_i64().unwrap_or(i64::MIN / 2),
        y0: fy.to_i64().unwrap_or(i64::MIN / 2),
        wx: T::one() - (xr - fx),
        wy: T::one() - (yr - fy),
    }
}

/// Index of (y, x) in an (ih, iw) plane, or `None` outside it.
fn at(y: i64, x: i64, ih: usize, iw: usize) -> Option<usize> {
    (y >= 0 && x >= 0 && (y as usize) < ih && (x as usize) < iw).then(|| y as usize * iw + x as usize)
}

fn sampler_kernel(_: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let (xd, gd) = (k.in_shape(0).dims().to_vec(), k.in_shape(1).dims().to_vec());
    let (c, ih, iw, oh, ow) = (xd[1], xd[2], xd[3], gd[2], gd[3]);
    float_kernel!(k.in_dtype(0), T, {
        let (x, g, out) = (k.input::<T>(0), k.input::<T>(1), k.output::<T>(0));
        let (ohw, ip) = (oh * ow, ih * iw);
        chunked(out, 1 << 13, |start, o| {
            for (j, v) in o.iter_mut().enumerate() {
                let idx = start + j;
                let (n, ch, p) = (idx / (c * ohw), (idx / ohw) % c, idx % ohw);
                let gi = n * 2 * ohw + p;
                let q = corner(g[gi], g[gi + ohw], ih, iw);
                let plane = &x[(n * c + ch) * ip..(n * c + ch + 1) * ip];
                let read = |dy: i64, dx: i64| at(q.y0 + dy, q.x0 + dx, ih, iw).map_or(T::zero(), |i| plane[i]);
                let (one, wx, wy) = (T::one(), q.wx, q.wy);
                *v = read(0, 0) * wy * wx
                    + read(0, 1) * wy * (one - wx)
                    + read(1, 0) * (one - wy) * wx
                    + read(1, 1) * (one - wy) * (one - wx);
            }
        });
    });
    Ok(())
}

fn sampler_backward_kernel(_: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let (xd, gd) = (k.in_shape(1).dims().to_vec(), k.in_shape(2).dims().to_vec());
    let (nb, c, ih, iw, oh, ow) = (xd[0], xd[1], xd[2], xd[3], gd[2], gd[3]);
    float_kernel!(k.in_dtype(1), T, {
        let (dy, x, g) = (k.input::<T>(0), k.input::<T>(1), k.input::<T>(2));
        let (dx, dg) = (k.output::<T>(0), k.output::<T>(1));
        dx.fill(T::zero());
        let (ohw, ip, one) = (oh * ow, ih * iw, T::one());
        let two = one + one;
        for n in 0..nb {
            for p in 0..ohw {
                let gi = n * 2 * ohw + p;
                let q = corner(g[gi], g[gi + ohw], ih, iw);
                let (wx, wy) = (q.wx, q.wy);
                let corners = [
                    (0, 0, wy * wx),
                    (0, 1, wy * (one - wx)),
                    (1, 0, (one - wy) * wx),
                    (1, 1, (one - wy) * (one - wx)),
                ];
                let idx: [Option<usize>; 4] = corners.map(|(a, b, _)| at(q.y0 + a, q.x0 + b, ih, iw));
                let (mut gy, mut gx) = (T::zero(), T::zero());
                for ch in 0..c {
                    let base = (n * c + ch) * ip;
                    let go = dy[(n * c + ch) * ohw + p];
                    let mut v = [T::zero(); 4];
                    for (m, (&i, &(_, _, wgt))) in idx.iter().zip(corners.iter()).enumerate() {
                        if let Some(i) = i {
                            dx[base + i] += go * wgt;
                            v[m] = x[base + i];
                        }
                    }
                    let cross = v[0] - v[1] - v[2] + v[3];
                    gy -= go * (v[1] - v[3] + cross * wx);
                    gx -= go * (v[2] - v[3] + cross * wy);
                }
                dg[gi + ohw] = gy * cast::<T>(ih as f64 - 1.0) / two;
                dg[gi] = gx * cast::<T>(iw as f64 - 1.0) / two;
            }
        }
    });
    Ok(())
}

fn stn_target(i: &Invocation<'_>) -> Result<(usize, usize)> {
    for (k, want) in [("transform_type", "affine"), ("sampler_type", "bilinear")] {
        let v = i.str(k)?;
        if v.trim_matches('\'') != want {
            return Err(Error::value(i.name(), format!("{k} must be '{want}', got '{v}'")));
        }
    }
    target_hw(i)
}

fn check_loc(name: &str, x: &NDArray, loc: &NDArray) -> Result<()> {
    match (x.dims(), loc.dims()) {
        ([n, _, _, _], [ln, 6]) if n == ln => Ok(()),
        _ => Err(Error::shape(name, &[x.shape(), loc.shape()], "data must be (N, C, H, W) and loc (N, 6)")),
    }
}

fn infer_stn(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let [x, loc] = ins else { return Err(Error::value(def.name, "needs data and loc")) };
    let (h, w) = stn_target(&Invocation::params(def, a))?;
    check_float(def.name, x.dtype)?;
    match (x.shape.dims(), loc.shape.dims()) {
        ([n, c, _, _], [ln, 6]) if n == ln => Ok(vec![Meta { shape: Shape::new(&[*n, *c, h, w]), ..x.clone() }]),
        _ => Err(Error::shape(def.name, &[&x.shape, &loc.shape], "data must be (N, C, H, W) and loc (N, 6)")),
    }
}
