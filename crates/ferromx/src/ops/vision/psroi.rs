//! `contrib.PSROIPooling` (R-FCN): position-sensitive average pooling. Bin `(ph, pw)`
//! of output channel `ctop` averages input channel `(ctop·G + gh)·G + gw` over the bin,
//! where `(gh, gw)` is the bin's cell in a `G × G` group grid.
//!
//! Region corners are rounded half away from zero and the far corner is inclusive
//! (`+1`), then scaled; a region is at least 0.1 cell wide; bins are floored/ceiled
//! and clamped to the map, an empty bin gives 0, as in MXNet's CPU kernel. A batch
//! index outside the batch gives 0 (MXNet reads outside the data).

use super::cast;
use crate::dtype::DType;
use crate::engine::{ErrorKind, OpFailure};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{one, param, Attrs, Grad, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamDef, ParamKind as K};
use crate::ops::par::planes;
use crate::shape::Shape;
use crate::storage::Kernel;
use num_traits::Float;

const PARAMS: &[ParamDef] = &[
    param("spatial_scale", K::Float, None, "Feature-map size over image size, in [0, 1]."),
    param("output_dim", K::Int, None, "Output channels."),
    param("pooled_size", K::Int, None, "Output height and width of each region."),
    param("group_size", K::Int, Some("0"), "Side of the position-sensitive group grid (0: pooled_size)."),
];

/// `_contrib_PSROIPooling`.
pub(super) const PSROI: OpDef = OpDef {
    name: "_contrib_PSROIPooling",
    inputs: &["data", "rois"],
    params: PARAMS,
    doc: "Position-sensitive average pooling of regions: `data` (N, output_dim·G·G, H, W), `rois` \
          (R, 5) rows [batch_index, x1, y1, x2, y2]; output (R, output_dim, pooled_size, \
          pooled_size). Differentiable in `data` (the gradient of `rois` is 0).",
    infer: Some(infer),
    forward: |i| {
        let (x, rois) = (i.x(0)?, i.x(1)?);
        let g = Geom::read(i, x.shape(), rois.shape())?;
        check_dtypes(i.name(), x.dtype(), rois.dtype())?;
        one(psroi(x, rois, g))
    },
    grad: Grad::Recorded,
    cpu: KernelSlot::Call(forward_kernel),
    ..OpDef::BASE
};

/// `_backward_PSROIPooling`.
pub(super) const PSROI_BACKWARD: OpDef = OpDef {
    name: "_backward_PSROIPooling",
    inputs: &["out_grad", "data", "rois"],
    params: PARAMS,
    doc: "Gradient of `PSROIPooling` with respect to its data (pushed by its backward; `data` gives the shape).",
    infer: Some(super::infer_data_grad),
    forward: |i| {
        let (dy, x, rois) = (i.x(0)?, i.x(1)?, i.x(2)?);
        let g = Geom::read(i, x.shape(), rois.shape())?;
        super::check_out_grad(i.name(), dy, x, &g.out_shape())?;
        one(backward(dy, x, rois, g))
    },
    grad: Grad::None("second-order gradients of PSROIPooling are not implemented"),
    cpu: KernelSlot::Call(backward_kernel),
    ..OpDef::BASE
};

fn check_dtypes(name: &str, x: DType, rois: DType) -> Result<()> {
    if !matches!(x, DType::F16 | DType::F32 | DType::F64) {
        return Err(Error::dtype(name, format!("takes float16, float32 or float64, got {x}")));
    }
    if rois != x {
        return Err(Error::dtype(name, format!("rois must have data's dtype {x}, got {rois}")));
    }
    Ok(())
}

/// data (n, c, h, w), `r` regions, `od` output channels, `p` × `p` bins, `G` = `gs`.
#[derive(Clone, Copy)]
struct Geom {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    r: usize,
    od: usize,
    p: usize,
    gs: usize,
    scale: f64,
}

impl Geom {
    fn read(i: &Invocation<'_>, x: &Shape, rois: &Shape) -> Result<Geom> {
        let (&[n, c, h, w], &[r, 5]) = (x.dims(), rois.dims()) else {
            return Err(Error::shape(i.name(), &[x, rois], "data must be (N, C, H, W) and rois (R, 5)"));
        };
        if h == 0 || w == 0 {
            return Err(Error::shape(i.name(), &[x, rois], "the feature map must not be empty"));
        }
        let (od, p, gs) = (i.i64("output_dim")?, i.i64("pooled_size")?, i.i64("group_size")?);
        if od < 1 || p < 1 || gs < 0 {
            return Err(Error::value(
                i.name(),
                format!("output_dim and pooled_size must be positive, group_size non-negative; got {od}, {p}, {gs}"),
            ));
        }
        let gs = if gs == 0 { p } else { gs } as usize;
        let (od, p) = (od as usize, p as usize);
        if c < od * gs * gs {
            return Err(Error::shape(
                i.name(),
                &[x],
                format!("data needs at least output_dim·group_size² = {} channels", od * gs * gs),
            ));
        }
        let scale = i.f64("spatial_scale")?;
        if !(0.0..=1.0).contains(&scale) {
            return Err(Error::value(i.name(), format!("spatial_scale must be in [0, 1], got {scale}")));
        }
        Ok(Geom { n, c, h, w, r, od, p, gs, scale })
    }
    fn out_shape(&self) -> Shape {
        Shape::new(&[self.r, self.od, self.p, self.p])
    }
    fn ints(&self) -> [i64; 8] {
        [self.n, self.c, self.h, self.w, self.r, self.od, self.p, self.gs].map(|v| v as i64)
    }
    fn from_call(call: &OpCall) -> Geom {
        let u = |k| call.us(k);
        Geom { n: u(0), c: u(1), h: u(2), w: u(3), r: u(4), od: u(5), p: u(6), gs: u(7), scale: call.nums[0] }
    }
    /// The input channel of bin `(py, px)` of output channel `ctop`.
    fn channel(&self, ctop: usize, py: usize, px: usize) -> usize {
        let cell = |v: usize| ((v * self.gs) as f64 / self.p as f64).floor().clamp(0.0, (self.gs - 1) as f64) as usize;
        (ctop * self.gs + cell(py)) * self.gs + cell(px)
    }
}

fn infer(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let [x, rois] = ins else { return Err(Error::value(def.name, "needs data and rois")) };
    let g = Geom::read(&Invocation::params(def, a), &x.shape, &rois.shape)?;
    check_dtypes(def.name, x.dtype, rois.dtype)?;
    Ok(vec![Meta { shape: g.out_shape(), ..x.clone() }])
}

fn call(g: &Geom) -> super::RegionCall {
    super::RegionCall {
        fwd: &super::DEFS[super::PSROI_I],
        bwd: &super::DEFS[super::PSROI_BACKWARD_I],
        ints: g.ints().to_vec(),
        nums: vec![g.scale],
    }
}

fn psroi(x: &NDArray, rois: &NDArray, g: Geom) -> Result<NDArray> {
    super::region_op(call(&g), x, rois, g.out_shape())
}

fn backward(dy: &NDArray, x: &NDArray, rois: &NDArray, g: Geom) -> Result<NDArray> {
    super::region_backward(&call(&g), dy, x, rois)
}

/// A region's batch image (`None`: skipped) and its bins as clamped cell ranges
/// `(h0, h1, w0, w1)`, row-major.
type Bins = (Option<usize>, Vec<(usize, usize, usize, usize)>);

fn bins<T: Float>(row: &[T], g: &Geom) -> Bins {
    let s = cast::<T>(g.scale);
    // C's round: halves away from zero (Rust's `round` does the same)
    let (x0, y0) = (row[1].round() * s, row[2].round() * s);
    let (x1, y1) = ((row[3].round() + T::one()) * s, (row[4].round() + T::one()) * s);
    let tenth = cast::<T>(0.1);
    let (rw, rh) = ((x1 - x0).max(tenth), (y1 - y0).max(tenth));
    let pf = cast::<T>(g.p as f64);
    let (bh, bw) = (rh / pf, rw / pf);
    let clamp = |v: T, hi: usize| v.to_i64().unwrap_or(0).clamp(0, hi as i64) as usize;
    let mut out = Vec::with_capacity(g.p * g.p);
    for py in 0..g.p {
        for px in 0..g.p {
            let (fy, fx) = (cast::<T>(py as f64), cast::<T>(px as f64));
            out.push((
                clamp((fy * bh + y0).floor(), g.h),
                clamp(((fy + T::one()) * bh + y0).ceil(), g.h),
                clamp((fx * bw + x0).floor(), g.w),
                clamp(((fx + T::one()) * bw + x0).ceil(), g.w),
            ));
        }
    }
    let b = row[0].to_i64().unwrap_or(-1);
    ((b >= 0 && (b as usize) < g.n).then_some(b as usize), out)
}

macro_rules! real_kernel {
    ($dt:expr, $T:ident, $body:expr) => {
        match $dt {
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            DType::F16 => {
                type $T = half::f16;
                $body
            }
            d => return Err(OpFailure::new(ErrorKind::Runtime, format!("PSROIPooling takes float16/32/64, got {d}"))),
        }
    };
}

/// ints: see [`Geom::ints`]; nums: spatial_scale. One region's output per task.
fn forward_kernel(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let g = Geom::from_call(call);
    real_kernel!(k.in_dtype(0), T, {
        let (x, rois, out) = (k.input::<T>(0), k.input::<T>(1), k.output::<T>(0));
        let (nb, plane) = (g.p * g.p, g.h * g.w);
        let regions: Vec<Bins> = (0..g.r).map(|r| bins(&rois[r * 5..r * 5 + 5], &g)).collect();
        planes(out, g.od * nb, 1 << 12, |r, o| {
            let (batch, ref bs) = regions[r];
            for (ctop, oc) in o.chunks_mut(nb).enumerate() {
                for (bin, v) in oc.iter_mut().enumerate() {
                    let (h0, h1, w0, w1) = bs[bin];
                    *v = match batch {
                        Some(b) if h1 > h0 && w1 > w0 => {
                            let ch = g.channel(ctop, bin / g.p, bin % g.p);
                            let src = &x[(b * g.c + ch) * plane..][..plane];
                            let mut sum = cast::<T>(0.0);
                            for y in h0..h1 {
                                for xx in w0..w1 {
                                    sum += src[y * g.w + xx];
                                }
                            }
                            sum / cast::<T>(((h1 - h0) * (w1 - w0)) as f64)
                        }
                        _ => cast(0.0),
                    };
                }
            }
        });
    });
    Ok(())
}

/// Spreads each output gradient evenly over its bin. One input plane per task.
fn backward_kernel(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let g = Geom::from_call(call);
    real_kernel!(k.in_dtype(1), T, {
        let (dy, rois, dx) = (k.input::<T>(0), k.input::<T>(2), k.output::<T>(0));
        let (nb, plane) = (g.p * g.p, g.h * g.w);
        let regions: Vec<Bins> = (0..g.r).map(|r| bins(&rois[r * 5..r * 5 + 5], &g)).collect();
        planes(dx, plane, 1 << 12, |pl, d| {
            d.fill(cast(0.0));
            let (b, ch) = (pl / g.c, pl % g.c);
            for (r, (batch, bs)) in regions.iter().enumerate() {
                if *batch != Some(b) {
                    continue;
                }
                for ctop in 0..g.od {
                    for (bin, &(h0, h1, w0, w1)) in bs.iter().enumerate() {
                        if g.channel(ctop, bin / g.p, bin % g.p) != ch || h1 <= h0 || w1 <= w0 {
                            continue;
                        }
                        let gv = dy[(r * g.od + ctop) * nb + bin] / cast::<T>(((h1 - h0) * (w1 - w0)) as f64);
                        for y in h0..h1 {
                            for xx in w0..w1 {
                                d[y * g.w + xx] += gv;
                            }
                        }
                    }
                }
            }
        });
    });
    Ok(())
}
