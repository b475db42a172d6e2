//! Deformable convolutions (MXNet's `contrib.DeformableConvolution`, DCN v1, and
//! `contrib.ModulatedDeformableConvolution`, DCN v2): a 2-D convolution whose every
//! kernel tap samples the input at a learned fractional offset (bilinearly), and in
//! the modulated form also scales the sample by a learned mask.
//!
//! Why a composite: the sampling is the only new arithmetic. `_deformable_im2col`
//! gathers the sampled columns `(N, C·kh·kw, OH·OW)` (one kernel, with its backward
//! giving the data, offset and mask gradients), and the filter product is the table's
//! `batch_dot` over groups, so the weight and bias gradients are the ones those
//! operators already have.
//!
//! Sampling follows MXNet's CPU kernels: DCN v1 samples a position only inside
//! `[0, H) × [0, W)` and clamps the far neighbours to the last row/column; DCN v2
//! samples inside `(-1, H) × (-1, W)` with neighbours outside the map read as 0. Each
//! backward is the exact derivative of its forward, which is what MXNet's v1 backward
//! computes; MXNet 1.9.1 has no CPU backward for v2 (it aborts), ferromx has one.

use crate::autograd::{needs_record, record};
use crate::engine::{ErrorKind, OpFailure};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    one, param, push_call, Attrs, Example, Grad, GraphForm, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamDef,
    ParamKind as K,
};
use crate::ops::par::planes;
use crate::ops::{self, linalg, BinOp};
use crate::shape::Shape;
use crate::storage::Kernel;
use num_traits::{Float, One, Zero};

macro_rules! deform_params {
    ($($extra:expr,)*) => {
        &[
            param("kernel", K::Shape, None, "Kernel size (h, w)."),
            param("stride", K::Shape, Some("()"), "Stride (default 1)."),
            param("dilate", K::Shape, Some("()"), "Dilation (default 1)."),
            param("pad", K::Shape, Some("()"), "Zero padding on both sides (default 0)."),
            param("num_filter", K::Int, None, "Number of output channels."),
            param("num_group", K::Int, Some("1"), "Number of filter groups."),
            param("num_deformable_group", K::Int, Some("1"), "Channel groups sharing one set of offsets."),
            param("workspace", K::Int, Some("1024"), "Workspace limit in MB (accepted, unused)."),
            param("no_bias", K::Bool, Some("False"), "Leave the bias out."),
            $($extra,)*
            param("layout", K::Str, Some("None"), "'NCHW' (the only layout, as in MXNet)."),
        ]
    };
}

const DEFORM_PARAMS: &[ParamDef] = deform_params!();
const MODULATED_PARAMS: &[ParamDef] =
    deform_params!(param("im2col_step", K::Int, Some("64"), "Samples per column batch (accepted, unused)."),);
const COL_PARAMS: &[ParamDef] = &[
    param("kernel", K::Shape, None, "Kernel size (h, w)."),
    param("stride", K::Shape, Some("()"), "Stride (default 1)."),
    param("dilate", K::Shape, Some("()"), "Dilation (default 1)."),
    param("pad", K::Shape, Some("()"), "Zero padding (default 0)."),
    param("num_deformable_group", K::Int, Some("1"), "Channel groups sharing one set of offsets."),
];

const R: (f64, f64) = (0.1, 0.9);

/// The family's deformable operators (appended to the convolution family's list).
pub(super) const DEFORMABLE: OpDef = OpDef {
    name: "_contrib_DeformableConvolution",
    inputs: &["data", "offset", "weight", "bias"],
    params: DEFORM_PARAMS,
    doc: "Deformable convolution (DCN v1): a 2-D convolution whose kernel taps sample `data` at \
          `offset` (N, num_deformable_group·2·kh·kw, OH, OW) added to the regular grid.",
    infer: Some(|d, a, ins| infer_conv(d, a, ins, false)),
    forward: |i| one(deformable_conv(i, false)),
    cpu: KernelSlot::Composite,
    example: Some(Example {
        shapes: &[&[1, 2, 4, 4], &[1, 18, 4, 4], &[2, 2, 3, 3], &[2]],
        attrs: "kernel=(3, 3), pad=(1, 1), num_filter=2",
        range: R,
    }),
    graph: GraphForm { inputs: Some(|i| inputs_of(i, &["data", "offset", "weight", "bias"])), ..GraphForm::PLAIN },
    ..OpDef::BASE
};

/// `_contrib_ModulatedDeformableConvolution`.
pub(super) const MODULATED: OpDef = OpDef {
    name: "_contrib_ModulatedDeformableConvolution",
    inputs: &["data", "offset", "mask", "weight", "bias"],
    params: MODULATED_PARAMS,
    doc: "Modulated deformable convolution (DCN v2): as `DeformableConvolution`, each sample also \
          scaled by `mask` (N, num_deformable_group·kh·kw, OH, OW).",
    infer: Some(|d, a, ins| infer_conv(d, a, ins, true)),
    forward: |i| one(deformable_conv(i, true)),
    cpu: KernelSlot::Composite,
    example: Some(Example {
        shapes: &[&[1, 4, 4, 3], &[1, 36, 4, 3], &[1, 18, 4, 3], &[2, 2, 3, 3], &[2]],
        attrs: "kernel=(3, 3), pad=(1, 1), num_filter=2, num_group=2, num_deformable_group=2",
        range: R,
    }),
    graph: GraphForm {
        inputs: Some(|i| inputs_of(i, &["data", "offset", "mask", "weight", "bias"])),
        ..GraphForm::PLAIN
    },
    ..OpDef::BASE
};

/// `_deformable_im2col` (ferromx's internal column operator).
pub(super) const COLUMNS: OpDef = OpDef {
    name: "_deformable_im2col",
    inputs: &["data", "offset", "mask"],
    params: COL_PARAMS,
    doc: "The sampled columns (N, C·kh·kw, OH·OW) of a deformable convolution (modulated when \
          `mask` is given).",
    infer: Some(infer_columns),
    forward: |i| {
        let g = Geom::read(i, i.x(0)?.shape(), i.x(1)?.shape(), i.opt(2).map(|m| m.shape()))?;
        one(columns(i.x(0)?, i.x(1)?, i.opt(2), g))
    },
    grad: Grad::Recorded,
    cpu: KernelSlot::Call(columns_kernel),
    example: Some(Example { shapes: &[&[1, 2, 3, 4], &[1, 8, 2, 3], &[1, 4, 2, 3]], attrs: "kernel=(2, 2)", range: R }),
    ..OpDef::BASE
};

/// `_backward_deformable_im2col`.
pub(super) const COLUMNS_BACKWARD: OpDef = OpDef {
    name: "_backward_deformable_im2col",
    inputs: &["out_grad", "data", "offset", "mask"],
    outputs: &["data_grad", "offset_grad", "mask_grad"],
    params: COL_PARAMS,
    doc: "Gradients of `_deformable_im2col`: data, offset and (when modulated) mask.",
    infer: Some(|def, _, ins| {
        let metas: Vec<Meta> = ins.iter().skip(1).cloned().collect();
        if metas.len() < 2 {
            return Err(Error::value(def.name, "needs out_grad, data and offset"));
        }
        Ok(metas)
    }),
    forward: |i| {
        let (dy, x, off) = (i.x(0)?, i.x(1)?, i.x(2)?);
        let g = Geom::read(i, x.shape(), off.shape(), i.opt(3).map(|m| m.shape()))?;
        columns_backward(dy, x, off, i.opt(3), g)
    },
    grad: Grad::None("second-order deformable convolution gradients are not implemented"),
    cpu: KernelSlot::Call(columns_backward_kernel),
    ..OpDef::BASE
};

fn inputs_of(i: &Invocation<'_>, all: &[&'static str]) -> Result<Vec<&'static str>> {
    let n = if i.bool("no_bias")? { all.len() - 1 } else { all.len() };
    Ok(all[..n].to_vec())
}

/// The sampling geometry: data (n, c, h, w), kernel, stride, dilation, padding, output
/// (oh, ow), `dg` offset groups, modulated or not.
#[derive(Clone, Copy, Debug)]
struct Geom {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    k: [usize; 2],
    s: [usize; 2],
    d: [usize; 2],
    p: [usize; 2],
    oh: usize,
    ow: usize,
    dg: usize,
    modulated: bool,
}

fn pair(i: &Invocation<'_>, key: &str, default: usize, min: usize) -> Result<[usize; 2]> {
    let v = i.ints(key)?.unwrap_or_default();
    match v.as_slice() {
        [] => Ok([default; 2]),
        [a, b] if *a >= min as i64 && *b >= min as i64 => Ok([*a as usize, *b as usize]),
        _ => Err(Error::value(
            i.name(),
            format!("{key} must be 2 entries of at least {min} (2-D only, as MXNet), got {v:?}"),
        )),
    }
}

impl Geom {
    fn read(i: &Invocation<'_>, x: &Shape, off: &Shape, mask: Option<&Shape>) -> Result<Geom> {
        let &[n, c, h, w] = x.dims() else {
            return Err(Error::shape(i.name(), &[x], "data must be 4-d (N, C, H, W): 2-D only, as in MXNet"));
        };
        let k = pair(i, "kernel", 0, 1)?;
        let (s, d, p) = (pair(i, "stride", 1, 1)?, pair(i, "dilate", 1, 1)?, pair(i, "pad", 0, 0)?);
        let dg = i.i64("num_deformable_group")?;
        if dg < 1 || c % dg as usize != 0 {
            return Err(Error::value(i.name(), format!("num_deformable_group {dg} must divide the {c} channels")));
        }
        let span = |a: usize| d[a] * (k[a] - 1) + 1;
        let (eh, ew) = (h + 2 * p[0], w + 2 * p[1]);
        if eh < span(0) || ew < span(1) {
            return Err(Error::shape(
                i.name(),
                &[x],
                format!("the dilated kernel ({}, {}) is larger than the padded input ({eh}, {ew})", span(0), span(1)),
            ));
        }
        let g = Geom {
            n,
            c,
            h,
            w,
            k,
            s,
            d,
            p,
            oh: (eh - span(0)) / s[0] + 1,
            ow: (ew - span(1)) / s[1] + 1,
            dg: dg as usize,
            modulated: mask.is_some(),
        };
        let taps = g.k[0] * g.k[1];
        let want = Shape::new(&[n, g.dg * 2 * taps, g.oh, g.ow]);
        if off != &want {
            return Err(Error::shape(i.name(), &[x, off], format!("offset must be {want} for this data and kernel")));
        }
        if let Some(m) = mask {
            let want = Shape::new(&[n, g.dg * taps, g.oh, g.ow]);
            if m != &want {
                return Err(Error::shape(i.name(), &[x, m], format!("mask must be {want} for this data and kernel")));
            }
        }
        Ok(g)
    }
    fn taps(&self) -> usize {
        self.k[0] * self.k[1]
    }
    fn l(&self) -> usize {
        self.oh * self.ow
    }
    fn cols_shape(&self) -> Shape {
        Shape::new(&[self.n, self.c * self.taps(), self.l()])
    }
    fn ints(&self) -> Vec<i64> {
        let mut v: Vec<i64> =
            [self.n, self.c, self.h, self.w, self.oh, self.ow, self.dg].iter().map(|&x| x as i64).collect();
        for a in [self.k, self.s, self.d, self.p] {
            v.extend(a.iter().map(|&x| x as i64));
        }
        v.push(i64::from(self.modulated));
        v
    }
    fn from_call(c: &OpCall) -> Geom {
        let u = |i: usize| c.us(i);
        let t = |i: usize| [u(i), u(i + 1)];
        Geom {
            n: u(0),
            c: u(1),
            h: u(2),
            w: u(3),
            oh: u(4),
            ow: u(5),
            dg: u(6).max(1),
            k: t(7),
            s: t(9),
            d: t(11),
            p: t(13),
            modulated: c.ints.get(15).copied().unwrap_or(0) != 0,
        }
    }
}

fn check_float(name: &str, x: &Meta, others: &[&Meta]) -> Result<()> {
    if !matches!(x.dtype, crate::DType::F32 | crate::DType::F64) {
        return Err(Error::dtype(name, format!("takes float32 or float64, got {}", x.dtype)));
    }
    if others.iter().any(|m| m.dtype != x.dtype) {
        return Err(Error::dtype(name, format!("every input must have data's dtype {}", x.dtype)));
    }
    Ok(())
}

fn infer_columns(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (x, off) = match ins {
        [x, off, ..] => (x, off),
        _ => return Err(Error::value(def.name, "needs data and offset")),
    };
    let mask = ins.get(2);
    let g = Geom::read(&Invocation::params(def, a), &x.shape, &off.shape, mask.map(|m| &m.shape))?;
    let others: Vec<&Meta> = ins[1..].iter().collect();
    check_float(def.name, x, &others)?;
    Ok(vec![Meta { shape: g.cols_shape(), ..x.clone() }])
}

/// Filters: (num_filter, groups, weight shape, bias given).
fn filters(i: &Invocation<'_>, c: usize, w: &Shape, b: Option<&Shape>, g: &Geom) -> Result<(usize, usize)> {
    let (f, groups) = (i.i64("num_filter")?, i.i64("num_group")?);
    if f < 1 || groups < 1 || !c.is_multiple_of(groups as usize) || f % groups != 0 {
        return Err(Error::value(
            i.name(),
            format!("num_filter ({f}) and the {c} channels must be divisible by num_group ({groups})"),
        ));
    }
    let (f, groups) = (f as usize, groups as usize);
    let want = Shape::new(&[f, c / groups, g.k[0], g.k[1]]);
    if w != &want {
        return Err(Error::shape(i.name(), &[w], format!("weight must be {want}")));
    }
    if let Some(b) = b {
        if b.dims() != [f] {
            return Err(Error::shape(i.name(), &[b], format!("bias must be ({f},)")));
        }
    }
    Ok((f, groups))
}

/// Checks a deformable convolution's operands (data, offset, (mask,) weight, bias): the
/// geometry, the filter count and the groups.
fn read_conv(i: &Invocation<'_>, ins: &[Meta], modulated: bool) -> Result<(Geom, usize, usize)> {
    let first_w = if modulated { 3 } else { 2 };
    if ins.len() < first_w + 1 {
        return Err(Error::value(i.name(), "needs data, offset, (mask,) weight"));
    }
    let (x, off) = (&ins[0], &ins[1]);
    let mask = modulated.then(|| &ins[2].shape);
    let g = Geom::read(i, &x.shape, &off.shape, mask)?;
    let bias = if i.bool("no_bias")? { None } else { ins.get(first_w + 1).map(|m| &m.shape) };
    let (f, groups) = filters(i, g.c, &ins[first_w].shape, bias, &g)?;
    let others: Vec<&Meta> = ins[1..].iter().collect();
    check_float(i.name(), x, &others)?;
    Ok((g, f, groups))
}

fn infer_conv(def: &'static OpDef, a: &Attrs, ins: &[Meta], modulated: bool) -> Result<Vec<Meta>> {
    let (g, f, _) = read_conv(&Invocation::params(def, a), ins, modulated)?;
    Ok(vec![Meta { shape: Shape::new(&[g.n, f, g.oh, g.ow]), ..ins[0].clone() }])
}

/// The composite forward: sampled columns, a grouped `batch_dot` with the filters, the bias.
fn deformable_conv(i: &Invocation<'_>, modulated: bool) -> Result<NDArray> {
    let first_w = if modulated { 3 } else { 2 };
    let (x, off) = (i.x(0)?, i.x(1)?);
    let mask = if modulated { Some(i.x(2)?) } else { None };
    let metas: Vec<Meta> = i.inputs.iter().flatten().map(Meta::of).collect();
    let (g, f, groups) = read_conv(i, &metas, modulated)?;
    let w = i.x(first_w)?;
    let bias = if i.bool("no_bias")? { None } else { i.opt(first_w + 1) };
    let cols = columns(x, off, mask, g)?;
    let kg = g.c / groups * g.taps();
    let (n, l) = (g.n as i64, g.l() as i64);
    // (N, G·Kg, L) -> (G, Kg, N·L): each group's columns side by side over the batch
    let cols = ops::reshape(&cols, &[n, groups as i64, kg as i64, l], false)?;
    let cols = ops::transpose(&cols, Some(&[1, 2, 0, 3]))?;
    let cols = ops::reshape(&cols, &[groups as i64, kg as i64, n * l], false)?;
    let wg = ops::reshape(w, &[groups as i64, (f / groups) as i64, kg as i64], false)?;
    let y = linalg::batch_dot(&wg, &cols, false, false)?;
    let y = ops::reshape(&y, &[groups as i64, (f / groups) as i64, n, l], false)?;
    let y = ops::transpose(&y, Some(&[2, 0, 1, 3]))?;
    let y = ops::reshape(&y, &[n, f as i64, g.oh as i64, g.ow as i64], false)?;
    match bias {
        Some(b) => ops::binary(BinOp::Add, &y, &ops::reshape(b, &[1, f as i64, 1, 1], false)?),
        None => Ok(y),
    }
}

fn columns(x: &NDArray, off: &NDArray, mask: Option<&NDArray>, g: Geom) -> Result<NDArray> {
    let def = crate::opdef::find(COLUMNS.name).unwrap_or(&COLUMNS);
    let metas: Vec<Meta> = [Some(x), Some(off), mask].iter().flatten().map(|a| Meta::of(a)).collect();
    check_float(def.name, &metas[0], &metas[1..].iter().collect::<Vec<_>>())?;
    let out = NDArray::empty(g.cols_shape(), x.dtype(), x.ctx())?;
    let ins: Vec<&NDArray> = [Some(x), Some(off), mask].into_iter().flatten().collect();
    if out.size() > 0 {
        push_call(OpCall::new(def, &ins, &[&out]).with_ints(&g.ints()))?;
    }
    if needs_record(&ins) {
        let (xc, oc, mc) = (x.clone(), off.clone(), mask.cloned());
        record(
            def.name,
            &ins,
            &[&out],
            Box::new(move |dy| {
                columns_backward(&dy[0], &xc, &oc, mc.as_ref(), g).map(|v| v.into_iter().map(Some).collect())
            }),
        );
    }
    Ok(out)
}

fn columns_backward(dy: &NDArray, x: &NDArray, off: &NDArray, mask: Option<&NDArray>, g: Geom) -> Result<Vec<NDArray>> {
    let def = crate::opdef::find(COLUMNS_BACKWARD.name).unwrap_or(&COLUMNS_BACKWARD);
    if dy.shape() != &g.cols_shape() {
        return Err(Error::shape(def.name, &[dy.shape(), x.shape()], "out_grad must have the columns' shape"));
    }
    let targets: Vec<&NDArray> = [Some(x), Some(off), mask].into_iter().flatten().collect();
    if x.size() == 0 {
        return targets.iter().map(|a| ops::zeros_like(a)).collect();
    }
    let outs = targets.iter().map(|a| a.empty_like()).collect::<Result<Vec<_>>>()?;
    let ins: Vec<&NDArray> = [Some(dy), Some(x), Some(off), mask].into_iter().flatten().collect();
    let orefs: Vec<&NDArray> = outs.iter().collect();
    push_call(OpCall::new(def, &ins, &orefs).with_ints(&g.ints()))?;
    Ok(outs)
}

/// A task over one (sample, offset group) block of an offset or mask gradient.
type BlockFn<'a, T> = dyn Fn(usize, usize, usize, &mut [T]) + Sync + 'a;
/// A per-channel term of an offset or mask gradient: (sample, input plane, column gradient).
type TapFn<'a, T> = dyn Fn(&Tap<T>, &[T], T) -> T + 'a;

/// One bilinear sample: the four neighbours (`None` outside the map), their weights and
/// the weights' derivatives in the row and column position.
#[derive(Clone, Copy)]
struct Tap<T> {
    at: [Option<usize>; 4],
    wt: [T; 4],
    dh: [T; 4],
    dw: [T; 4],
}

fn tap<T: Float>(g: &Geom, mut y: T, mut x: T) -> Option<Tap<T>> {
    let (hf, wf) = (T::from(g.h).unwrap_or_else(T::zero), T::from(g.w).unwrap_or_else(T::zero));
    let (zero, one) = (T::zero(), T::one());
    let (ylo, xlo, yhi, xhi);
    if g.modulated {
        if !(y > -one && x > -one && y < hf && x < wf) {
            return None;
        }
        ylo = y.floor().to_i64().unwrap_or(-1);
        xlo = x.floor().to_i64().unwrap_or(-1);
        (yhi, xhi) = (ylo + 1, xlo + 1);
    } else {
        if !(y >= zero && x >= zero && y < hf && x < wf) {
            return None;
        }
        let (h1, w1) = (g.h as i64 - 1, g.w as i64 - 1);
        let (mut yl, mut xl) = (y.floor().to_i64().unwrap_or(0), x.floor().to_i64().unwrap_or(0));
        if yl >= h1 {
            yl = h1;
            y = T::from(yl).unwrap_or(zero);
        }
        if xl >= w1 {
            xl = w1;
            x = T::from(xl).unwrap_or(zero);
        }
        (ylo, xlo) = (yl, xl);
        (yhi, xhi) = ((yl + 1).min(h1), (xl + 1).min(w1));
    }
    let ly = y - T::from(ylo).unwrap_or(zero);
    let lx = x - T::from(xlo).unwrap_or(zero);
    let (hy, hx) = (one - ly, one - lx);
    let cell =
        |r: i64, c: i64| (r >= 0 && c >= 0 && r < g.h as i64 && c < g.w as i64).then(|| r as usize * g.w + c as usize);
    Some(Tap {
        at: [cell(ylo, xlo), cell(ylo, xhi), cell(yhi, xlo), cell(yhi, xhi)],
        wt: [hy * hx, hy * lx, ly * hx, ly * lx],
        dh: [-hx, -lx, hx, lx],
        dw: [-hy, hy, -ly, ly],
    })
}

/// The sample of tap `t` at output position `l` of offset group `dg` in sample `n`:
/// its position, and its mask (1 unmodulated).
fn position<T: Float>(g: &Geom, off: &[T], mask: Option<&[T]>, n: usize, dg: usize, t: usize, l: usize) -> (T, T, T) {
    let (taps, ll) = (g.taps(), g.l());
    let base = (n * g.dg + dg) * 2 * taps;
    let (oy, ox) = (l / g.ow, l % g.ow);
    let (i, j) = (t / g.k[1], t % g.k[1]);
    let f = |v: usize| T::from(v).unwrap_or_else(T::zero);
    let y = f(oy * g.s[0] + i * g.d[0]) - f(g.p[0]) + off[(base + 2 * t) * ll + l];
    let x = f(ox * g.s[1] + j * g.d[1]) - f(g.p[1]) + off[(base + 2 * t + 1) * ll + l];
    let m = mask.map_or(T::one(), |m| m[((n * g.dg + dg) * taps + t) * ll + l]);
    (y, x, m)
}

fn value<T: Float>(tp: &Tap<T>, plane: &[T]) -> T {
    (0..4).fold(T::zero(), |acc, k| acc + tp.at[k].map_or(T::zero(), |p| tp.wt[k] * plane[p]))
}

/// ints: see [`Geom::ints`]. One (sample, channel) block of columns per task.
fn columns_kernel(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let g = Geom::from_call(call);
    crate::with_f32_f64!(k.in_dtype(0), T, "deformable convolution kernels", {
        let (x, off, out) = (k.input::<T>(0), k.input::<T>(1), k.output::<T>(0));
        let mask = g.modulated.then(|| k.input::<T>(2));
        let (taps, ll, plane) = (g.taps(), g.l(), g.h * g.w);
        planes(out, taps * ll, 1 << 12, |nc, o| {
            let (n, c) = (nc / g.c, nc % g.c);
            let dg = c / (g.c / g.dg);
            let src = &x[nc * plane..(nc + 1) * plane];
            for t in 0..taps {
                for l in 0..ll {
                    let (y, xx, m) = position(&g, off, mask, n, dg, t, l);
                    o[t * ll + l] = tap(&g, y, xx).map_or(T::zero(), |tp| value(&tp, src) * m);
                }
            }
        });
    });
    Ok(())
}

/// Outputs: data gradient (one (sample, channel) plane per task: the scatter stays in its
/// plane), offset gradient and mask gradient (one (sample, offset group) block per task).
fn columns_backward_kernel(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let g = Geom::from_call(call);
    if call.outputs.len() < 2 {
        return Err(OpFailure::new(ErrorKind::Runtime, "_backward_deformable_im2col: missing outputs"));
    }
    crate::with_f32_f64!(k.in_dtype(0), T, "deformable convolution kernels", {
        let (dy, x, off) = (k.input::<T>(0), k.input::<T>(1), k.input::<T>(2));
        let mask = g.modulated.then(|| k.input::<T>(3));
        let (taps, ll, plane, cpg) = (g.taps(), g.l(), g.h * g.w, g.c / g.dg);
        planes(k.output::<T>(0), plane, 1 << 12, |nc, d| {
            d.fill(T::zero());
            let (n, c) = (nc / g.c, nc % g.c);
            for t in 0..taps {
                let grow = &dy[(nc * taps + t) * ll..][..ll];
                for (l, &gv) in grow.iter().enumerate() {
                    let (y, xx, m) = position(&g, off, mask, n, c / cpg, t, l);
                    if let Some(tp) = tap(&g, y, xx) {
                        for q in 0..4 {
                            if let Some(p) = tp.at[q] {
                                d[p] += gv * m * tp.wt[q];
                            }
                        }
                    }
                }
            }
        });
        // offset (and mask) gradients: sums over the channels of each offset group
        let blocks = |o: &mut [T], per: usize, f: &BlockFn<'_, T>| {
            planes(o, per * ll, 1 << 10, |nd, blk| f(nd / g.dg, nd % g.dg, per, blk));
        };
        let sum_over = |n: usize, dg: usize, t: usize, l: usize, f: &TapFn<'_, T>| -> T {
            let (y, xx, _) = position(&g, off, mask, n, dg, t, l);
            let Some(tp) = tap(&g, y, xx) else { return T::zero() };
            let mut acc = T::zero();
            for c in dg * cpg..(dg + 1) * cpg {
                let gv = dy[((n * g.c + c) * taps + t) * ll + l];
                acc += f(&tp, &x[(n * g.c + c) * plane..][..plane], gv);
            }
            acc
        };
        let deriv = |tp: &Tap<T>, src: &[T], dir: &[T; 4]| {
            (0..4).fold(T::zero(), |a, q| a + tp.at[q].map_or(T::zero(), |p| dir[q] * src[p]))
        };
        blocks(k.output::<T>(1), 2 * taps, &|n, dg, _, blk| {
            for t in 0..taps {
                for l in 0..ll {
                    let m = mask.map_or(T::one(), |mk| mk[((n * g.dg + dg) * taps + t) * ll + l]);
                    blk[2 * t * ll + l] = m * sum_over(n, dg, t, l, &|tp, src, gv| gv * deriv(tp, src, &tp.dh));
                    blk[(2 * t + 1) * ll + l] = m * sum_over(n, dg, t, l, &|tp, src, gv| gv * deriv(tp, src, &tp.dw));
                }
            }
        });
        if g.modulated && call.outputs.len() > 2 {
            blocks(k.output::<T>(2), taps, &|n, dg, _, blk| {
                for t in 0..taps {
                    for l in 0..ll {
                        blk[t * ll + l] = sum_over(n, dg, t, l, &|tp, src, gv| gv * value(tp, src));
                    }
                }
            });
        }
    });
    Ok(())
}
