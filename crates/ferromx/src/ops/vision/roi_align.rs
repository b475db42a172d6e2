//! `contrib.ROIAlign` (Mask R-CNN): each region of interest averaged over a fixed grid
//! of bins, each bin the mean of bilinear samples, with no rounding of the region or
//! bin bounds; also R-FCN's position-sensitive form, where bin `(ph, pw)` of output
//! channel `c` reads input channel `c·PH·PW + ph·PW + pw`; and `contrib.RROIAlign`,
//! the same over rotated regions `[batch, cx, cy, w, h, angle in degrees]` (text
//! detection). MXNet 1.9.1 has no backward for `RROIAlign` (it aborts); ferromx's is
//! the same scatter over the rotated samples.
//!
//! The sample positions, weights and the clamping at the borders follow MXNet's CPU
//! kernel (`aligned` shifts the region by half a cell; a region with a negative batch
//! index is skipped). Two deliberate differences where MXNet reads or leaves undefined
//! memory: a skipped region's whole output is 0 (MXNet writes only its first element),
//! and a batch index past the batch is skipped too (MXNet reads past the data).

use super::{cast, check_float, float_kernel, ROI_ALIGN_BACKWARD_I, ROI_ALIGN_I};
use crate::engine::{ErrorKind, OpFailure};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{one, param, Attrs, Grad, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamDef, ParamKind as K};
use crate::ops::par::planes;
use crate::shape::Shape;
use crate::storage::Kernel;
use num_traits::{Float, Zero};

const PARAMS: &[ParamDef] = &[
    param("pooled_size", K::Shape, None, "Output (height, width) of each region."),
    param("spatial_scale", K::Float, None, "Feature-map size over image size, in [0, 1]."),
    param("sample_ratio", K::Int, Some("-1"), "Samples per bin side (≤ 0: ceil(bin size))."),
    param("position_sensitive", K::Bool, Some("False"), "R-FCN's position-sensitive pooling."),
    param("aligned", K::Bool, Some("False"), "Shift the region by -0.5 cell (pixel-centre alignment)."),
];

/// `_contrib_ROIAlign`.
pub(super) const ROI_ALIGN: OpDef = OpDef {
    name: "_contrib_ROIAlign",
    inputs: &["data", "rois"],
    params: PARAMS,
    doc: "Bilinear average pooling of regions of interest: `data` (N, C, H, W), `rois` (R, 5) rows \
          [batch_index, x1, y1, x2, y2] in image coordinates; output (R, C, ph, pw) (C / (ph·pw) \
          channels when position-sensitive). Differentiable in `data` (the gradient of `rois` is 0).",
    infer: Some(infer),
    forward: |i| {
        let (x, rois) = (i.x(0)?, i.x(1)?);
        let g = Geom::read(i, x.shape(), rois.shape())?;
        check_float(i.name(), x.dtype())?;
        if rois.dtype() != x.dtype() {
            return Err(Error::dtype(i.name(), format!("rois must have data's dtype {}", x.dtype())));
        }
        one(roi_align(x, rois, g))
    },
    grad: Grad::Recorded,
    cpu: KernelSlot::Call(forward_kernel),
    ..OpDef::BASE
};

/// `_backward_ROIAlign`.
pub(super) const ROI_ALIGN_BACKWARD: OpDef = OpDef {
    name: "_backward_ROIAlign",
    inputs: &["out_grad", "data", "rois"],
    params: PARAMS,
    doc: "Gradient of `ROIAlign` with respect to its data (pushed by its backward; `data` gives the shape).",
    infer: Some(super::infer_data_grad),
    forward: |i| {
        let (dy, x, rois) = (i.x(0)?, i.x(1)?, i.x(2)?);
        let g = Geom::read(i, x.shape(), rois.shape())?;
        super::check_out_grad(i.name(), dy, x, &g.out_shape())?;
        one(backward(dy, x, rois, g))
    },
    grad: Grad::None("second-order gradients of ROIAlign are not implemented"),
    cpu: KernelSlot::Call(backward_kernel),
    ..OpDef::BASE
};

/// `_contrib_RROIAlign`.
pub(super) const RROI_ALIGN: OpDef = OpDef {
    name: "_contrib_RROIAlign",
    inputs: &["data", "rois"],
    params: &[
        param("pooled_size", K::Shape, None, "Output (height, width) of each region."),
        param("spatial_scale", K::Float, None, "Feature-map size over image size, in [0, 1]."),
        param("sampling_ratio", K::Int, Some("-1"), "Samples per bin side (≤ 0: ceil(bin size))."),
    ],
    doc: "Bilinear average pooling of rotated regions: `data` (N, C, H, W), `rois` (R, 6) rows \
          [batch_index, cx, cy, w, h, angle (degrees)]; output (R, C, ph, pw). Differentiable in \
          `data` (the gradient of `rois` is 0).",
    infer: Some(infer),
    forward: |i| {
        let (x, rois) = (i.x(0)?, i.x(1)?);
        let g = Geom::read(i, x.shape(), rois.shape())?;
        check_float(i.name(), x.dtype())?;
        if rois.dtype() != x.dtype() {
            return Err(Error::dtype(i.name(), format!("rois must have data's dtype {}", x.dtype())));
        }
        one(roi_align(x, rois, g))
    },
    grad: Grad::Recorded,
    cpu: KernelSlot::Call(forward_kernel),
    ..OpDef::BASE
};

/// Sizes and parameters: data (n, c, h, w), `r` regions, bins `ph` × `pw`; `c` is the
/// input's channel count; `rot`: rotated regions (`RROIAlign`, 6 columns).
#[derive(Clone, Copy)]
struct Geom {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    r: usize,
    ph: usize,
    pw: usize,
    ratio: i64,
    ps: bool,
    aligned: bool,
    rot: bool,
    scale: f64,
}

impl Geom {
    fn read(i: &Invocation<'_>, x: &Shape, rois: &Shape) -> Result<Geom> {
        let rot = i.def.name == RROI_ALIGN.name;
        let cols = if rot { 6 } else { 5 };
        let (&[n, c, h, w], &[r, rc]) = (x.dims(), rois.dims()) else {
            return Err(Error::shape(i.name(), &[x, rois], format!("data must be (N, C, H, W) and rois (R, {cols})")));
        };
        if rc != cols {
            return Err(Error::shape(i.name(), &[x, rois], format!("data must be (N, C, H, W) and rois (R, {cols})")));
        }
        if h == 0 || w == 0 {
            return Err(Error::shape(i.name(), &[x, rois], "the feature map must not be empty"));
        }
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
        let pos = !rot && i.bool("position_sensitive")?;
        if pos && c % (ph * pw) != 0 {
            return Err(Error::shape(
                i.name(),
                &[x],
                format!("position_sensitive needs channels divisible by {}×{}", ph, pw),
            ));
        }
        let (ratio, aligned) =
            if rot { (i.i64("sampling_ratio")?, false) } else { (i.i64("sample_ratio")?, i.bool("aligned")?) };
        Ok(Geom { n, c, h, w, r, ph, pw, ratio, ps: pos, aligned, rot, scale })
    }
    /// Output channels.
    fn oc(&self) -> usize {
        if self.ps {
            self.c / (self.ph * self.pw)
        } else {
            self.c
        }
    }
    fn out_shape(&self) -> Shape {
        Shape::new(&[self.r, self.oc(), self.ph, self.pw])
    }
    fn ints(&self) -> [i64; 11] {
        let u = |v: usize| v as i64;
        let b = i64::from;
        [
            u(self.n),
            u(self.c),
            u(self.h),
            u(self.w),
            u(self.r),
            u(self.ph),
            u(self.pw),
            self.ratio,
            b(self.ps),
            b(self.aligned),
            b(self.rot),
        ]
    }
    /// Columns of a region row.
    fn cols(&self) -> usize {
        if self.rot {
            6
        } else {
            5
        }
    }
    fn from_call(call: &OpCall) -> Geom {
        let u = |k| call.us(k);
        Geom {
            n: u(0),
            c: u(1),
            h: u(2),
            w: u(3),
            r: u(4),
            ph: u(5),
            pw: u(6),
            ratio: call.ints[7],
            ps: call.ints[8] != 0,
            aligned: call.ints[9] != 0,
            rot: call.ints[10] != 0,
            scale: call.nums[0],
        }
    }
    /// The input channel bin `bin` of output channel `c` reads.
    fn in_channel(&self, c: usize, bin: usize) -> usize {
        if self.ps {
            c * self.ph * self.pw + bin
        } else {
            c
        }
    }
}

fn infer(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let [x, rois] = ins else { return Err(Error::value(def.name, "needs data and rois")) };
    let g = Geom::read(&Invocation::params(def, a), &x.shape, &rois.shape)?;
    check_float(def.name, x.dtype)?;
    Ok(vec![Meta { shape: g.out_shape(), ..x.clone() }])
}

fn call(g: &Geom) -> super::RegionCall {
    let fwd =
        if g.rot { crate::opdef::find(RROI_ALIGN.name).unwrap_or(&RROI_ALIGN) } else { &super::DEFS[ROI_ALIGN_I] };
    super::RegionCall { fwd, bwd: &super::DEFS[ROI_ALIGN_BACKWARD_I], ints: g.ints().to_vec(), nums: vec![g.scale] }
}

fn roi_align(x: &NDArray, rois: &NDArray, g: Geom) -> Result<NDArray> {
    super::region_op(call(&g), x, rois, g.out_shape())
}

fn backward(dy: &NDArray, x: &NDArray, rois: &NDArray, g: Geom) -> Result<NDArray> {
    super::region_backward(&call(&g), dy, x, rois)
}

/// One bilinear sample: four cell offsets in a plane and their weights (all 0 outside).
#[derive(Clone, Copy)]
struct Sample<T> {
    pos: [usize; 4],
    wt: [T; 4],
}

/// A region's samples, `grid` per bin, bins in row-major order; `None` for a skipped region.
struct Region<T> {
    batch: usize,
    grid: usize,
    count: T,
    samples: Vec<Sample<T>>,
}

fn sample<T: Float>(g: &Geom, mut y: T, mut x: T) -> Sample<T> {
    let (hf, wf) = (cast::<T>(g.h as f64), cast::<T>(g.w as f64));
    let zero = T::zero();
    if y < cast(-1.0) || y > hf || x < cast(-1.0) || x > wf {
        return Sample { pos: [0; 4], wt: [zero; 4] };
    }
    y = if y <= zero { zero } else { y };
    x = if x <= zero { zero } else { x };
    let (mut yl, mut xl) = (y.to_usize().unwrap_or(0), x.to_usize().unwrap_or(0));
    let (yh, xh);
    if yl >= g.h - 1 {
        yl = g.h - 1;
        yh = yl;
        y = cast(yl as f64);
    } else {
        yh = yl + 1;
    }
    if xl >= g.w - 1 {
        xl = g.w - 1;
        xh = xl;
        x = cast(xl as f64);
    } else {
        xh = xl + 1;
    }
    let (ly, lx) = (y - cast(yl as f64), x - cast(xl as f64));
    let (hy, hx) = (T::one() - ly, T::one() - lx);
    Sample {
        pos: [yl * g.w + xl, yl * g.w + xh, yh * g.w + xl, yh * g.w + xh],
        wt: [hy * hx, hy * lx, ly * hx, ly * lx],
    }
}

fn region<T: Float>(row: &[T], g: &Geom) -> std::result::Result<Option<Region<T>>, OpFailure> {
    let b = row[0].to_i64().unwrap_or(-1);
    if b < 0 || b as usize >= g.n {
        return Ok(None);
    }
    let s = cast::<T>(g.scale);
    // (start y, start x, height, width, rotation (cos, sin) and centre) of the region
    let (y0, x0, rh, rw, rot) = if g.rot {
        let (cx, cy) = (row[1] * s, row[2] * s);
        let (rw, rh) = ((row[3] * s).max(T::one()), (row[4] * s).max(T::one()));
        let theta = row[5] * cast(std::f64::consts::PI) / cast(180.0);
        let two = cast::<T>(2.0);
        (-rh / two, -rw / two, rh, rw, Some((theta.cos(), theta.sin(), cy, cx)))
    } else {
        let off = if g.aligned { cast::<T>(0.5) } else { T::zero() };
        let (x0, y0) = (row[1] * s - off, row[2] * s - off);
        let (mut rw, mut rh) = (row[3] * s - off - x0, row[4] * s - off - y0);
        if g.aligned {
            if !(rw > T::zero() && rh > T::zero()) {
                return Err(OpFailure::new(
                    ErrorKind::Value,
                    format!(
                        "ROIAlign: an aligned region must have a positive size, got {} × {}",
                        rw.to_f64().unwrap_or(f64::NAN),
                        rh.to_f64().unwrap_or(f64::NAN)
                    ),
                ));
            }
        } else {
            rw = rw.max(T::one());
            rh = rh.max(T::one());
        }
        (y0, x0, rh, rw, None)
    };
    let (bh, bw) = (rh / cast(g.ph as f64), rw / cast(g.pw as f64));
    let side = |len: T, bins: usize| {
        if g.ratio > 0 {
            g.ratio as usize
        } else {
            (len / cast(bins as f64)).ceil().to_usize().unwrap_or(0)
        }
    };
    let (gh, gw) = (side(rh, g.ph), side(rw, g.pw));
    let mut samples = Vec::with_capacity(g.ph * g.pw * gh * gw);
    for py in 0..g.ph {
        for px in 0..g.pw {
            for iy in 0..gh {
                let y = y0 + cast::<T>(py as f64) * bh + cast::<T>(iy as f64 + 0.5) * bh / cast(gh as f64);
                for ix in 0..gw {
                    let x = x0 + cast::<T>(px as f64) * bw + cast::<T>(ix as f64 + 0.5) * bw / cast(gw as f64);
                    samples.push(match rot {
                        Some((c, sn, cy, cx)) => sample(g, y * c - x * sn + cy, x * c + y * sn + cx),
                        None => sample(g, y, x),
                    });
                }
            }
        }
    }
    Ok(Some(Region { batch: b as usize, grid: gh * gw, count: cast((gh * gw) as f64), samples }))
}

type Regions<T> = Vec<Option<Region<T>>>;

fn regions<T: Float>(rois: &[T], g: &Geom) -> std::result::Result<Regions<T>, OpFailure> {
    let w = g.cols();
    (0..g.r).map(|r| region(&rois[r * w..(r + 1) * w], g)).collect()
}

/// ints: see [`Geom::ints`]; nums: spatial_scale. One region's output per task.
fn forward_kernel(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let g = Geom::from_call(call);
    float_kernel!(k.in_dtype(0), T, {
        let (x, rois, out) = (k.input::<T>(0), k.input::<T>(1), k.output::<T>(0));
        let (bins, plane) = (g.ph * g.pw, g.h * g.w);
        let regs = regions(rois, &g)?;
        planes(out, g.oc() * bins, 1 << 12, |r, o| {
            let Some(q) = &regs[r] else {
                o.fill(T::zero());
                return;
            };
            for (c, oc) in o.chunks_mut(bins).enumerate() {
                for (bin, v) in oc.iter_mut().enumerate() {
                    let src = &x[(q.batch * g.c + g.in_channel(c, bin)) * plane..][..plane];
                    let mut acc = T::zero();
                    for s in &q.samples[bin * q.grid..(bin + 1) * q.grid] {
                        acc += s.wt[0] * src[s.pos[0]]
                            + s.wt[1] * src[s.pos[1]]
                            + s.wt[2] * src[s.pos[2]]
                            + s.wt[3] * src[s.pos[3]];
                    }
                    *v = acc / q.count;
                }
            }
        });
    });
    Ok(())
}

/// Scatters each output gradient over its bin's samples. One input plane (image,
/// channel) per task, so the scatter never crosses threads.
fn backward_kernel(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let g = Geom::from_call(call);
    float_kernel!(k.in_dtype(1), T, {
        let (dy, rois, dx) = (k.input::<T>(0), k.input::<T>(2), k.output::<T>(0));
        let (bins, plane) = (g.ph * g.pw, g.h * g.w);
        let regs = regions(rois, &g)?;
        planes(dx, plane, 1 << 12, |p, d| {
            d.fill(T::zero());
            let (b, cu) = (p / g.c, p % g.c);
            // the output channel and bins that read input channel `cu`
            let (c, only) = if g.ps { (cu / bins, Some(cu % bins)) } else { (cu, None) };
            for (r, q) in regs.iter().enumerate() {
                let Some(q) = q.as_ref().filter(|q| q.batch == b) else { continue };
                let go = &dy[(r * g.oc() + c) * bins..][..bins];
                for bin in only.map_or(0..bins, |o| o..o + 1) {
                    let gv = go[bin];
                    for s in &q.samples[bin * q.grid..(bin + 1) * q.grid] {
                        if s.wt.iter().all(|w| *w == T::zero()) && s.pos == [0; 4] {
                            continue;
                        }
                        for j in 0..4 {
                            d[s.pos[j]] += gv * s.wt[j] / q.count;
                        }
                    }
                }
            }
        });
    });
    Ok(())
}
