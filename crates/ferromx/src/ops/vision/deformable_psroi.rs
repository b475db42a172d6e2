//! `contrib.DeformablePSROIPooling` (Deformable ConvNets' R-FCN head): position-sensitive
//! average pooling whose bins move by learned offsets. Bin `(ph, pw)` of output channel
//! `ctop` averages `sample_per_part²` bilinear samples of input channel
//! `(ctop·G + gh)·G + gw`, its start shifted by `trans · trans_std` times the region's
//! size (`trans`: (R, 2·classes, part, part), x then y per class; `no_trans`: no shift).
//!
//! As MXNet's CPU kernel: region corners are rounded, the far corner inclusive, scaled
//! and shifted by half a cell; a region is at least 0.1 cells wide; samples outside
//! `[-0.5, size - 0.5]` are skipped and the others clamped to the map; an empty bin gives 0.
//! The backward scatters each bin's gradient to its samples' four neighbours and, unless
//! `no_trans`, to the offsets (the bilinear value's slope times `trans_std` and the region
//! size). A batch index outside the batch gives 0.

use super::{check_float, float_kernel};
use crate::autograd::{needs_record, record};
use crate::engine::{ErrorKind, OpFailure};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    param, push_call, Attrs, Grad, GraphForm, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamDef, ParamKind as K,
};
use crate::shape::Shape;
use crate::storage::Kernel;
use num_traits::Float;

const PARAMS: &[ParamDef] = &[
    param("spatial_scale", K::Float, None, "Feature-map size over image size, in [0, 1]."),
    param("output_dim", K::Int, None, "Output channels."),
    param("group_size", K::Int, None, "Side of the position-sensitive group grid."),
    param("pooled_size", K::Int, None, "Output height and width of each region."),
    param("part_size", K::Int, Some("0"), "Side of the offset grid (0: pooled_size)."),
    param("sample_per_part", K::Int, Some("1"), "Samples per bin side."),
    param("trans_std", K::Float, Some("0.0"), "Scale of the offsets."),
    param("no_trans", K::Bool, Some("False"), "Pool without offsets (no `trans` input)."),
];

fn inputs_unless_no_trans(i: &Invocation<'_>) -> Result<Vec<&'static str>> {
    let no_trans = i.bool("no_trans")?;
    Ok(i.def.inputs.iter().copied().filter(|n| !(no_trans && *n == "trans")).collect())
}

/// `_contrib_DeformablePSROIPooling`.
pub(super) const DPSROI: OpDef = OpDef {
    name: "_contrib_DeformablePSROIPooling",
    inputs: &["data", "rois", "trans"],
    params: PARAMS,
    doc: "Deformable position-sensitive average pooling: `data` (N, output_dim·G·G, H, W), `rois` \
          (R, 5) rows [batch_index, x1, y1, x2, y2], `trans` (R, 2·classes, part, part) offsets \
          (absent with `no_trans`); output (R, output_dim, pooled_size, pooled_size). \
          Differentiable in `data` and `trans`.",
    infer: Some(infer),
    forward: |i| {
        let g = Geom::read(i)?;
        let (x, rois) = (i.x(0)?, i.x(1)?);
        let trans = if g.no_trans { None } else { Some(i.x(2)?) };
        g.check(i.name(), x, rois, trans)?;
        Ok(vec![forward(i.def, g, x, rois, trans)?])
    },
    grad: Grad::Recorded,
    cpu: KernelSlot::Call(forward_kernel),
    graph: GraphForm { inputs: Some(inputs_unless_no_trans), ..GraphForm::PLAIN },
    ..OpDef::BASE
};

/// `_backward_contrib_DeformablePSROIPooling`.
pub(super) const DPSROI_BACKWARD: OpDef = OpDef {
    name: "_backward_contrib_DeformablePSROIPooling",
    inputs: &["out_grad", "data", "rois", "trans"],
    outputs: &["data_grad", "trans_grad"],
    params: PARAMS,
    doc: "Gradients of `DeformablePSROIPooling` for `data` and (unless `no_trans`) `trans`.",
    infer: Some(infer_backward),
    forward: |i| {
        let g = Geom::read(i)?;
        let (dy, x, rois) = (i.x(0)?, i.x(1)?, i.x(2)?);
        let trans = if g.no_trans { None } else { Some(i.x(3)?) };
        g.check(i.name(), x, rois, trans)?;
        super::check_out_grad(i.name(), dy, x, &g.out_shape())?;
        backward(g, dy, x, rois, trans)
    },
    grad: Grad::None("second-order gradients of DeformablePSROIPooling are not implemented"),
    cpu: KernelSlot::Call(backward_kernel),
    ..OpDef::BASE
};

/// The call's geometry: data (n, c, h, w), `r` regions, attributes.
#[derive(Clone, Copy)]
struct Geom {
    r: usize,
    od: usize,
    gs: usize,
    p: usize,
    part: usize,
    spp: usize,
    no_trans: bool,
    scale: f64,
    std: f64,
}

impl Geom {
    fn read(i: &Invocation<'_>) -> Result<Geom> {
        let pos = |k: &str| -> Result<usize> {
            let v = i.i64(k)?;
            usize::try_from(v).map_err(|_| Error::value(i.name(), format!("{k} must be >= 0, got {v}")))
        };
        let (od, gs, p, spp) = (pos("output_dim")?, pos("group_size")?, pos("pooled_size")?, pos("sample_per_part")?);
        let part = match pos("part_size")? {
            0 => p,
            v => v,
        };
        if od == 0 || gs == 0 || p == 0 || spp == 0 {
            return Err(Error::value(
                i.name(),
                "output_dim, group_size, pooled_size and sample_per_part must be positive",
            ));
        }
        let r = i.opt(1).map_or(0, |x| x.shape().dims().first().copied().unwrap_or(0));
        Ok(Geom {
            r,
            od,
            gs,
            p,
            part,
            spp,
            no_trans: i.bool("no_trans")?,
            scale: i.f64("spatial_scale")?,
            std: i.f64("trans_std")?,
        })
    }

    fn out_shape(&self) -> Shape {
        Shape::new(&[self.r, self.od, self.p, self.p])
    }

    fn check(&self, name: &str, x: &NDArray, rois: &NDArray, trans: Option<&NDArray>) -> Result<()> {
        let shapes: Vec<&Shape> = [Some(x), Some(rois), trans].into_iter().flatten().map(|a| a.shape()).collect();
        let (xd, rd) = (x.shape().dims(), rois.shape().dims());
        if xd.len() != 4 || rd.len() != 2 || rd[1] != 5 {
            return Err(Error::shape(name, &shapes, "data must be (N, C, H, W) and rois (R, 5)"));
        }
        if xd[1] != self.od * self.gs * self.gs {
            return Err(Error::shape(name, &shapes, "data's channels must be output_dim * group_size²"));
        }
        if let Some(t) = trans {
            let td = t.shape().dims();
            let classes = td.get(1).map_or(0, |c| c / 2);
            let ok = td.len() == 4
                && td[0] == rd[0]
                && td[1] % 2 == 0
                && classes > 0
                && self.od.is_multiple_of(classes)
                && td[2] == self.part
                && td[3] == self.part;
            if !ok {
                return Err(Error::shape(
                    name,
                    &shapes,
                    "trans must be (R, 2·classes, part_size, part_size) with classes dividing output_dim",
                ));
            }
        }
        check_float(name, x.dtype())?;
        for a in [Some(rois), trans].into_iter().flatten() {
            if a.dtype() != x.dtype() {
                return Err(Error::dtype(name, format!("rois and trans must have data's dtype {}", x.dtype())));
            }
        }
        crate::ops::check_ctx(name, x, rois)
    }

    fn ints(&self) -> Vec<i64> {
        [self.od, self.gs, self.p, self.part, self.spp, usize::from(self.no_trans)].iter().map(|&v| v as i64).collect()
    }

    fn from_call(c: &OpCall) -> std::result::Result<Geom, OpFailure> {
        let bad = || OpFailure::new(ErrorKind::Runtime, format!("{}: missing geometry", c.def.name));
        let (i, n) = (&c.ints, &c.nums);
        if i.len() < 6 || n.len() < 2 {
            return Err(bad());
        }
        let u = |k: usize| i[k] as usize;
        Ok(Geom {
            r: 0,
            od: u(0),
            gs: u(1),
            p: u(2),
            part: u(3),
            spp: u(4),
            no_trans: i[5] != 0,
            scale: n[0],
            std: n[1],
        })
    }
}

fn infer(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let p = Invocation::params(def, a);
    let (od, ps) = (p.i64("output_dim")?.max(0) as usize, p.i64("pooled_size")?.max(0) as usize);
    let x = ins.first().ok_or_else(|| Error::value(def.name, "needs data and rois"))?;
    let r = ins.get(1).and_then(|m| m.shape.dims().first().copied()).unwrap_or(0);
    Ok(vec![Meta { shape: Shape::new(&[r, od, ps, ps]), dtype: x.dtype, ctx: x.ctx }])
}

fn infer_backward(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let x = ins.get(1).ok_or_else(|| Error::value(def.name, "needs out_grad, data and rois"))?;
    let mut out = vec![x.clone()];
    if !Invocation::params(def, a).bool("no_trans")? {
        out.push(ins.get(3).cloned().ok_or_else(|| Error::value(def.name, "needs trans"))?);
    }
    Ok(out)
}

fn forward(def: &'static OpDef, g: Geom, x: &NDArray, rois: &NDArray, trans: Option<&NDArray>) -> Result<NDArray> {
    let out = NDArray::empty(g.out_shape(), x.dtype(), x.ctx())?;
    let ins: Vec<&NDArray> = [Some(x), Some(rois), trans].into_iter().flatten().collect();
    if out.size() > 0 {
        push_call(OpCall::new(def, &ins, &[&out]).with_ints(&g.ints()).with_nums(&[g.scale, g.std]))?;
    }
    if needs_record(&ins) {
        let (xc, rc, tc) = (x.clone(), rois.clone(), trans.cloned());
        record(
            def.name,
            &ins,
            &[&out],
            Box::new(move |dy| {
                let mut grads = backward(g, &dy[0], &xc, &rc, tc.as_ref())?.into_iter();
                let dx = grads.next();
                let mut res = vec![dx, Some(crate::ops::zeros_like(&rc)?)];
                if tc.is_some() {
                    res.push(grads.next());
                }
                Ok(res)
            }),
        );
    }
    Ok(out)
}

fn backward(g: Geom, dy: &NDArray, x: &NDArray, rois: &NDArray, trans: Option<&NDArray>) -> Result<Vec<NDArray>> {
    let dx = x.empty_like()?;
    let dt = trans.map(NDArray::empty_like).transpose()?;
    let outs: Vec<&NDArray> = [Some(&dx), dt.as_ref()].into_iter().flatten().collect();
    let ins: Vec<&NDArray> = [Some(dy), Some(x), Some(rois), trans].into_iter().flatten().collect();
    push_call(
        OpCall::new(&super::DEFS[super::DPSROI_BACKWARD_I], &ins, &outs)
            .with_ints(&g.ints())
            .with_nums(&[g.scale, g.std]),
    )?;
    Ok([Some(dx), dt].into_iter().flatten().collect())
}

/// One bin's samples: for output element `(n, ctop, ph, pw)`, the input plane, the
/// offset index (x; y is `part²` later) and each in-range sample's clamped position.
struct Bin {
    batch: Option<usize>,
    plane: usize,
    toff: usize,
    roi_w: f64,
    roi_h: f64,
    samples: Vec<(f64, f64)>,
}

#[allow(clippy::too_many_arguments)]
fn bin<T: Float>(
    g: &Geom,
    dims: (usize, usize, usize, usize),
    rois: &[T],
    trans: Option<&[T]>,
    n: usize,
    ctop: usize,
    ph: usize,
    pw: usize,
) -> Bin {
    let (batch, _c, h, w) = dims;
    let f = val::<T>;
    let roi = &rois[n * 5..n * 5 + 5];
    let b = f(roi[0]);
    let batch_ok = b >= 0.0 && (b as usize) < batch;
    let start_w = f(roi[1]).round() * g.scale - 0.5;
    let start_h = f(roi[2]).round() * g.scale - 0.5;
    let roi_w = ((f(roi[3]).round() + 1.0) * g.scale - 0.5 - start_w).max(0.1);
    let roi_h = ((f(roi[4]).round() + 1.0) * g.scale - 0.5 - start_h).max(0.1);
    let (pf, spp) = (g.p as f64, g.spp as f64);
    let (bin_h, bin_w) = (roi_h / pf, roi_w / pf);
    let part_h = ((ph as f64) / pf * g.part as f64).floor() as usize;
    let part_w = ((pw as f64) / pf * g.part as f64).floor() as usize;
    let classes = trans.map_or(1, |t| t.len() / (rois.len() / 5).max(1) / 2 / (g.part * g.part).max(1));
    let class_id = ctop / (g.od / classes.max(1)).max(1);
    let toff = (((n * classes + class_id) * 2) * g.part + part_h) * g.part + part_w;
    let (tx, ty) = match trans {
        Some(t) => (f(t[toff]) * g.std, f(t[toff + g.part * g.part]) * g.std),
        None => (0.0, 0.0),
    };
    let wstart = pw as f64 * bin_w + start_w + tx * roi_w;
    let hstart = ph as f64 * bin_h + start_h + ty * roi_h;
    let gw = (((pw * g.gs) as f64 / pf).floor() as usize).min(g.gs - 1);
    let gh = (((ph * g.gs) as f64 / pf).floor() as usize).min(g.gs - 1);
    let mut samples = Vec::with_capacity(g.spp * g.spp);
    for ih in 0..g.spp {
        for iw in 0..g.spp {
            let sw = wstart + iw as f64 * bin_w / spp;
            let sh = hstart + ih as f64 * bin_h / spp;
            if sw < -0.5 || sw > w as f64 - 0.5 || sh < -0.5 || sh > h as f64 - 0.5 {
                continue;
            }
            samples.push((sw.clamp(0.0, (w - 1) as f64), sh.clamp(0.0, (h - 1) as f64)));
        }
    }
    Bin { batch: batch_ok.then_some(b as usize), plane: (ctop * g.gs + gh) * g.gs + gw, toff, roi_w, roi_h, samples }
}

fn val<T: Float>(v: T) -> f64 {
    v.to_f64().unwrap_or(f64::NAN)
}

/// The four neighbours of `(x, y)` (floor and ceil) and the fractional parts.
fn corners(x: f64, y: f64, w: usize) -> ([usize; 4], f64, f64) {
    let (x0, x1, y0, y1) = (x.floor() as usize, x.ceil() as usize, y.floor() as usize, y.ceil() as usize);
    ([y0 * w + x0, y1 * w + x0, y0 * w + x1, y1 * w + x1], x - x0 as f64, y - y0 as f64)
}

fn dims4(k: &Kernel, i: usize) -> (usize, usize, usize, usize) {
    let d = k.in_shape(i).dims();
    (d[0], d[1], d[2], d[3])
}

fn forward_kernel(c: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let g = Geom::from_call(c)?;
    let dims = dims4(k, 0);
    let (_, ch, h, w) = dims;
    float_kernel!(k.in_dtype(0), T, {
        let (x, rois) = (k.input::<T>(0), k.input::<T>(1));
        let trans = (!g.no_trans).then(|| k.input::<T>(2));
        let out = k.output::<T>(0);
        let per_roi = g.od * g.p * g.p;
        for (idx, o) in out.iter_mut().enumerate() {
            let (n, rest) = (idx / per_roi, idx % per_roi);
            let (ctop, ph, pw) = (rest / (g.p * g.p), (rest / g.p) % g.p, rest % g.p);
            let b = bin(&g, dims, rois, trans, n, ctop, ph, pw);
            let Some(batch) = b.batch else {
                *o = super::cast(0.0);
                continue;
            };
            let plane = &x[(batch * ch + b.plane) * h * w..(batch * ch + b.plane + 1) * h * w];
            let mut sum = 0.0;
            for &(sx, sy) in &b.samples {
                let (q, dx, dy) = corners(sx, sy, w);
                let v = |i: usize| val(plane[q[i]]);
                sum +=
                    (1.0 - dx) * (1.0 - dy) * v(0) + (1.0 - dx) * dy * v(1) + dx * (1.0 - dy) * v(2) + dx * dy * v(3);
            }
            let cnt = b.samples.len();
            *o = super::cast(if cnt == 0 { 0.0 } else { sum / cnt as f64 });
        }
    });
    Ok(())
}

fn backward_kernel(c: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let g = Geom::from_call(c)?;
    let dims = dims4(k, 1);
    let (_, ch, h, w) = dims;
    float_kernel!(k.in_dtype(0), T, {
        let (dy, x, rois) = (k.input::<T>(0), k.input::<T>(1), k.input::<T>(2));
        let trans = (!g.no_trans).then(|| k.input::<T>(3));
        let mut dx = vec![0.0f64; x.len()];
        let mut dt = vec![0.0f64; trans.map_or(0, <[T]>::len)];
        let per_roi = g.od * g.p * g.p;
        for (idx, &gv) in dy.iter().enumerate() {
            let (n, rest) = (idx / per_roi, idx % per_roi);
            let (ctop, ph, pw) = (rest / (g.p * g.p), (rest / g.p) % g.p, rest % g.p);
            let b = bin(&g, dims, rois, trans, n, ctop, ph, pw);
            let (Some(batch), false) = (b.batch, b.samples.is_empty()) else { continue };
            let diff = val(gv) / b.samples.len() as f64;
            let base = (batch * ch + b.plane) * h * w;
            for &(sx, sy) in &b.samples {
                let (q, fx, fy) = corners(sx, sy, w);
                let wts = [(1.0 - fx) * (1.0 - fy), (1.0 - fx) * fy, fx * (1.0 - fy), fx * fy];
                for (qi, wt) in q.iter().zip(wts) {
                    dx[base + qi] += wt * diff;
                }
                if trans.is_some() {
                    let u = |i: usize| val(x[base + q[i]]);
                    let gx = (u(3) * fy + u(2) * (1.0 - fy) - u(1) * fy - u(0) * (1.0 - fy)) * g.std * diff * b.roi_w;
                    let gy = (u(3) * fx + u(1) * (1.0 - fx) - u(2) * fx - u(0) * (1.0 - fx)) * g.std * diff * b.roi_h;
                    dt[b.toff] += gx;
                    dt[b.toff + g.part * g.part] += gy;
                }
            }
        }
        for (o, v) in k.output::<T>(0).iter_mut().zip(&dx) {
            *o = super::cast(*v);
        }
        if trans.is_some() {
            for (o, v) in k.output::<T>(1).iter_mut().zip(&dt) {
                *o = super::cast(*v);
            }
        }
    });
    Ok(())
}
