//! `ROIPooling` (Fast R-CNN): max pooling of each region of interest into a fixed grid.
//!
//! A region `[batch_index, x1, y1, x2, y2]` is scaled by `spatial_scale` and rounded
//! (half away from zero) to feature-map cells, then split into `pooled_size` bins; each
//! output is the maximum of its bin. An empty bin or an out-of-range batch index gives 0.
//! The backward recomputes each bin's first maximum rather than keeping an index array
//! from the forward, so the operator has one visible output and no hidden state.

use super::{cast, check_float, float_kernel, ROI_BACKWARD_I, ROI_I};
use crate::engine::OpFailure;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    one, param, Aliases, Attrs, Grad, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamDef, ParamKind as K,
};
use crate::ops::par::planes;
use crate::shape::Shape;
use crate::storage::Kernel;
use num_traits::{Float, Zero};

const PARAMS: &[ParamDef] = &[
    param("pooled_size", K::Shape, None, "Output (height, width) of each region."),
    param(
        "spatial_scale",
        K::Float,
        None,
        "Feature-map size over image size (the inverse of the network's total stride), in (0, 1].",
    ),
];

/// `ROIPooling`.
pub(super) const ROI: OpDef = OpDef {
    name: "ROIPooling",
    aliases: Aliases { nd: &[], np: &[], npx: &["roi_pooling"], fluent: false },
    inputs: &["data", "rois"],
    params: PARAMS,
    doc: "Max pooling of regions of interest: `data` (N, C, H, W), `rois` (R, 5) rows \
          [batch_index, x1, y1, x2, y2] in image coordinates; output (R, C, pooled_h, pooled_w). \
          Differentiable in `data` (the gradient of `rois` is 0).",
    infer: Some(infer),
    forward: |i| {
        let (x, rois) = (i.x(0)?, i.x(1)?);
        let g = Geom::read(i, x.shape(), rois.shape())?;
        check_float(i.name(), x.dtype())?;
        if rois.dtype() != x.dtype() {
            return Err(Error::dtype(i.name(), format!("rois must have data's dtype {}", x.dtype())));
        }
        one(roi_pool(x, rois, g))
    },
    cpu: KernelSlot::Call(roi_kernel),
    // MXNet's node has 1 hidden output (its kernel's intermediates)
    graph: crate::opdef::GraphForm {
        total: crate::opdef::OutputCount::Fixed(2),
        named_outputs: true,
        ..crate::opdef::GraphForm::PLAIN
    },
    ..OpDef::BASE
};

/// `_backward_ROIPooling`.
pub(super) const ROI_BACKWARD: OpDef = OpDef {
    name: "_backward_ROIPooling",
    inputs: &["out_grad", "data", "rois"],
    params: PARAMS,
    doc: "Gradient of `ROIPooling` with respect to its data (pushed by its backward).",
    infer: Some(super::infer_data_grad),
    forward: |i| {
        let (dy, x, rois) = (i.x(0)?, i.x(1)?, i.x(2)?);
        let g = Geom::read(i, x.shape(), rois.shape())?;
        super::check_out_grad(i.name(), dy, x, &g.out_shape())?;
        one(roi_backward(dy, x, rois, g))
    },
    grad: Grad::None("second-order gradients of ROIPooling are not implemented"),
    cpu: KernelSlot::Call(roi_backward_kernel),
    ..OpDef::BASE
};

/// Sizes and parameters: data (n, c, h, w), `r` regions, bins `ph` × `pw`.
#[derive(Clone, Copy)]
struct Geom {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    r: usize,
    ph: usize,
    pw: usize,
    scale: f64,
}

impl Geom {
    fn read(i: &Invocation<'_>, x: &Shape, rois: &Shape) -> Result<Geom> {
        let (&[n, c, h, w], &[r, 5]) = (x.dims(), rois.dims()) else {
            return Err(Error::shape(i.name(), &[x, rois], "data must be (N, C, H, W) and rois (R, 5)"));
        };
        let ps = i.shape("pooled_size")?;
        let &[ph, pw] = ps.dims() else {
            return Err(Error::value(i.name(), format!("pooled_size must be (h, w), got {ps}")));
        };
        if ph == 0 || pw == 0 {
            return Err(Error::value(i.name(), format!("pooled_size must be positive, got {ps}")));
        }
        let scale = i.f64("spatial_scale")?;
        if !(0.0..=1.0).contains(&scale) {
            return Err(Error::value(i.name(), format!("spatial_scale must be in [0, 1], got {scale}")));
        }
        Ok(Geom { n, c, h, w, r, ph, pw, scale })
    }
    fn out_shape(&self) -> Shape {
        Shape::new(&[self.r, self.c, self.ph, self.pw])
    }
    fn ints(&self) -> [i64; 7] {
        [self.n, self.c, self.h, self.w, self.r, self.ph, self.pw].map(|v| v as i64)
    }
    fn from_call(call: &OpCall) -> Geom {
        let u = |k| call.us(k);
        Geom { n: u(0), c: u(1), h: u(2), w: u(3), r: u(4), ph: u(5), pw: u(6), scale: call.nums[0] }
    }
}

fn infer(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let [x, rois] = ins else { return Err(Error::value(def.name, "needs data and rois")) };
    let g = Geom::read(&Invocation::params(def, a), &x.shape, &rois.shape)?;
    check_float(def.name, x.dtype)?;
    Ok(vec![Meta { shape: g.out_shape(), ..x.clone() }])
}

fn call(g: &Geom) -> super::RegionCall {
    super::RegionCall {
        fwd: &super::DEFS[ROI_I],
        bwd: &super::DEFS[ROI_BACKWARD_I],
        ints: g.ints().to_vec(),
        nums: vec![g.scale],
    }
}

fn roi_pool(x: &NDArray, rois: &NDArray, g: Geom) -> Result<NDArray> {
    super::region_op(call(&g), x, rois, g.out_shape())
}

fn roi_backward(dy: &NDArray, x: &NDArray, rois: &NDArray, g: Geom) -> Result<NDArray> {
    super::region_backward(&call(&g), dy, x, rois)
}

/// One region's cells: its batch image (or `None` when the index is out of range) and
/// the bin sizes, as MXNet's kernel rounds them.
struct Region<T> {
    batch: Option<usize>,
    x0: i64,
    y0: i64,
    bin_h: T,
    bin_w: T,
}

fn region<T: Float>(row: &[T], g: &Geom) -> Region<T> {
    let s = cast::<T>(g.scale);
    let cell = |v: T| (v * s).round().to_i64().unwrap_or(0);
    let (x0, y0, x1, y1) = (cell(row[1]), cell(row[2]), cell(row[3]), cell(row[4]));
    let b = row[0].to_i64().unwrap_or(-1);
    let rh = (y1 - y0 + 1).max(1);
    let rw = (x1 - x0 + 1).max(1);
    let tf = |v: i64| cast::<T>(v as f64);
    Region {
        batch: (b >= 0 && (b as usize) < g.n).then_some(b as usize),
        x0,
        y0,
        bin_h: tf(rh) / tf(g.ph as i64),
        bin_w: tf(rw) / tf(g.pw as i64),
    }
}

/// The bin (py, px) of a region as clamped cell ranges `[h0, h1) × [w0, w1)`.
fn bin<T: Float>(q: &Region<T>, py: usize, px: usize, g: &Geom) -> (usize, usize, usize, usize) {
    let f = |v: usize| cast::<T>(v as f64);
    let i = |v: T| v.to_i64().unwrap_or(0);
    let clamp = |v: i64, hi: usize| v.clamp(0, hi as i64) as usize;
    let h0 = clamp(i((f(py) * q.bin_h).floor()) + q.y0, g.h);
    let h1 = clamp(i((f(py + 1) * q.bin_h).ceil()) + q.y0, g.h);
    let w0 = clamp(i((f(px) * q.bin_w).floor()) + q.x0, g.w);
    let w1 = clamp(i((f(px + 1) * q.bin_w).ceil()) + q.x0, g.w);
    (h0, h1, w0, w1)
}

/// The first maximum of a bin of `plane` (row-major `w` wide): (value, index), or
/// `None` for an empty bin. Starts below every finite value, as MXNet's `-FLT_MAX`.
fn bin_max<T: Float>(plane: &[T], w: usize, (h0, h1, w0, w1): (usize, usize, usize, usize)) -> Option<(T, usize)> {
    if h1 <= h0 || w1 <= w0 {
        return None;
    }
    let mut best = (cast::<T>(-f64::from(f32::MAX)), usize::MAX);
    for y in h0..h1 {
        for x in w0..w1 {
            let v = plane[y * w + x];
            if v > best.0 {
                best = (v, y * w + x);
            }
        }
    }
    Some(best)
}

/// Every region's bins as clamped cell ranges, `(batch, [bins])` per region; computed
/// once per call.
type Bins = Vec<(Option<usize>, Vec<(usize, usize, usize, usize)>)>;

fn all_bins<T: Float>(rois: &[T], g: &Geom) -> Bins {
    (0..g.r)
        .map(|r| {
            let q = region(&rois[r * 5..r * 5 + 5], g);
            let b = (0..g.ph * g.pw).map(|p| bin(&q, p / g.pw, p % g.pw, g)).collect();
            (q.batch, b)
        })
        .collect()
}

/// ints: N, C, H, W, R, pooled h, pooled w; nums: spatial_scale. One output plane
/// (all channels of one region) per task.
fn roi_kernel(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let g = Geom::from_call(call);
    float_kernel!(k.in_dtype(0), T, {
        let (x, rois, out) = (k.input::<T>(0), k.input::<T>(1), k.output::<T>(0));
        let (bins, plane) = (g.ph * g.pw, g.h * g.w);
        let regions = all_bins(rois, &g);
        planes(out, g.c * bins, 1 << 12, |r, o| {
            let (batch, ref bs) = regions[r];
            for (c, oc) in o.chunks_mut(bins).enumerate() {
                for (v, &bb) in oc.iter_mut().zip(bs) {
                    *v = batch
                        .and_then(|b| bin_max(&x[(b * g.c + c) * plane..(b * g.c + c + 1) * plane], g.w, bb))
                        .map_or(T::zero(), |(m, _)| m);
                }
            }
        });
    });
    Ok(())
}

/// As [`roi_kernel`]; adds each output gradient to its bin's first maximum. One input
/// plane (image, channel) per task, so the scatter never crosses threads.
fn roi_backward_kernel(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let g = Geom::from_call(call);
    float_kernel!(k.in_dtype(1), T, {
        let (dy, x, rois, dx) = (k.input::<T>(0), k.input::<T>(1), k.input::<T>(2), k.output::<T>(0));
        let (nbins, plane) = (g.ph * g.pw, g.h * g.w);
        let regions = all_bins(rois, &g);
        planes(dx, plane, 1 << 12, |k, d| {
            d.fill(T::zero());
            let (b, c) = (k / g.c, k % g.c);
            let xp = &x[k * plane..(k + 1) * plane];
            for (r, (batch, bs)) in regions.iter().enumerate() {
                if *batch != Some(b) {
                    continue;
                }
                let go = &dy[(r * g.c + c) * nbins..(r * g.c + c + 1) * nbins];
                for (&bb, &gv) in bs.iter().zip(go) {
                    if let Some((_, at)) = bin_max(xp, g.w, bb) {
                        if at != usize::MAX {
                            d[at] += gv;
                        }
                    }
                }
            }
        });
    });
    Ok(())
}
