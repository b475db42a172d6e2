//! Convolution and Deconvolution (MXNet's `Convolution`, `Deconvolution`),
//! 1-, 2- and 3-d, grouped, channel-first or channel-last.
//!
//! The kernels work on channel-first data normalised to three spatial axes
//! (a 2-d convolution is a 3-d one with depth 1); channel-last layouts are
//! transposed in and out with ordinary (recorded) operators. Gradients are
//! the table operators `_backward_Convolution` / `_backward_Deconvolution`,
//! one engine op each, computing the data, weight and bias gradients. The
//! deformable convolutions (`deformable.rs`) are composites over a sampling kernel.

pub(crate) mod cpu;
mod deformable;
mod direct;
mod direct_grad;
mod epilogue;
mod fused;
mod im2row;
mod layout;
mod prepared;
#[cfg(test)]
mod tests;
pub mod unfold;
mod winograd;
mod winograd4;
mod winograd_grad;

pub(crate) use layout::{channel_last, to_cf_perm, to_cl_perm};

use crate::autograd::{needs_record, record};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    inputs_unless_no_bias, one, param, push_call, Aliases, Attrs, Example, Grad, GraphForm, Invocation, KernelSlot,
    Meta, OpCall, OpDef, ParamDef, ParamKind as K,
};
use crate::ops;
use crate::shape::Shape;

/// Convolution geometry on channel-first data with three spatial axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geom {
    /// Samples.
    pub n: usize,
    /// Input channels.
    pub c: usize,
    /// Output channels.
    pub o: usize,
    /// Groups.
    pub groups: usize,
    /// Input spatial size.
    pub ind: [usize; 3],
    /// Output spatial size.
    pub outd: [usize; 3],
    /// Kernel.
    pub k: [usize; 3],
    /// Stride.
    pub s: [usize; 3],
    /// Dilation.
    pub d: [usize; 3],
    /// Padding (each side).
    pub p: [usize; 3],
}

impl Geom {
    /// Input channels per group.
    pub fn cg(&self) -> usize {
        self.c / self.groups
    }
    /// Output channels per group.
    pub fn og(&self) -> usize {
        self.o / self.groups
    }
    /// Rows of a group's column matrix (`cg · kernel size`).
    pub fn rows(&self) -> usize {
        self.cg() * self.k.iter().product::<usize>()
    }
    /// Input positions per channel.
    pub fn ip(&self) -> usize {
        self.ind.iter().product()
    }
    /// Output positions per channel.
    pub fn op(&self) -> usize {
        self.outd.iter().product()
    }
    /// A 1×1 convolution with stride 1 and no padding (the input is its own column matrix).
    pub fn pointwise(&self) -> bool {
        self.k == [1, 1, 1] && self.s == [1, 1, 1] && self.p == [0, 0, 0]
    }
    /// The call's numeric parameters (and whether a bias is given).
    pub fn to_nums(&self, bias: bool) -> Vec<f64> {
        let mut v = vec![self.n as f64, self.c as f64, self.o as f64, self.groups as f64];
        for a in [self.ind, self.outd, self.k, self.s, self.d, self.p] {
            v.extend(a.iter().map(|&x| x as f64));
        }
        v.push(bias as u8 as f64);
        v
    }
    /// The inverse of [`Geom::to_nums`].
    pub fn from_nums(v: &[f64]) -> (Geom, bool) {
        let u = |i: usize| v.get(i).copied().unwrap_or(0.0) as usize;
        let t = |i: usize| [u(i), u(i + 1), u(i + 2)];
        let g = Geom {
            n: u(0),
            c: u(1),
            o: u(2),
            groups: u(3).max(1),
            ind: t(4),
            outd: t(7),
            k: t(10),
            s: t(13),
            d: t(16),
            p: t(19),
        };
        (g, u(22) != 0)
    }
}

/// Index in a backward call's numbers of the flag "the data gradient is not
/// needed" (after [`Geom::to_nums`]'s 23 numbers; absent means needed).
pub(crate) const SKIP_DATA_GRAD: usize = 23;

/// The parameters of a convolution call.
#[derive(Clone, Debug)]
pub struct ConvParams {
    /// Kernel size per spatial axis.
    pub kernel: Vec<usize>,
    /// Stride.
    pub stride: Vec<usize>,
    /// Dilation.
    pub dilate: Vec<usize>,
    /// Padding.
    pub pad: Vec<usize>,
    /// Deconvolution's output adjustment.
    pub adj: Vec<usize>,
    /// Deconvolution's target output shape (empty: none).
    pub target: Vec<usize>,
    /// Output channels.
    pub num_filter: usize,
    /// Groups.
    pub groups: usize,
    /// Leave the bias out.
    pub no_bias: bool,
    /// Layout name, if given.
    pub layout: Option<String>,
}

fn tuple(i: &Invocation<'_>, key: &str, kernel: &[usize], default: usize, min: usize) -> Result<Vec<usize>> {
    let v = i.ints(key)?.unwrap_or_default();
    if v.is_empty() {
        return Ok(vec![default; kernel.len()]);
    }
    if v.len() != kernel.len() {
        return Err(Error::value(
            i.name(),
            format!("{key} {} must have as many entries as kernel {}", fmt_i(&v), fmt_dims(kernel)),
        ));
    }
    if v.iter().any(|&x| x < min as i64) {
        return Err(Error::value(i.name(), format!("{key} entries must be at least {min}, got {}", fmt_i(&v))));
    }
    Ok(v.iter().map(|&x| x as usize).collect())
}

/// The `kernel` attribute: 1 to 3 positive sizes.
fn kernel_of(i: &Invocation<'_>) -> Result<Vec<usize>> {
    let kernel: Vec<usize> = i.req_ints("kernel")?.iter().map(|&k| k.max(0) as usize).collect();
    if kernel.is_empty() || kernel.len() > 3 || kernel.contains(&0) {
        return Err(Error::value(i.name(), format!("kernel must be 1 to 3 positive sizes, got {}", fmt_dims(&kernel))));
    }
    Ok(kernel)
}

impl ConvParams {
    /// Reads the parameters of a `Convolution` / `Deconvolution` call.
    pub fn read(i: &Invocation<'_>, deconv: bool) -> Result<ConvParams> {
        let name = i.name();
        let kernel = kernel_of(i)?;
        let num_filter = i.i64("num_filter")?;
        let groups = i.i64("num_group")?;
        if num_filter < 1 || groups < 1 {
            return Err(Error::value(
                name,
                format!("num_filter ({num_filter}) and num_group ({groups}) must be positive"),
            ));
        }
        let layout = Some(i.str("layout")?).filter(|s| !s.is_empty());
        Ok(ConvParams {
            stride: tuple(i, "stride", &kernel, 1, 1)?,
            dilate: tuple(i, "dilate", &kernel, 1, 1)?,
            pad: tuple(i, "pad", &kernel, 0, 0)?,
            adj: if deconv { tuple(i, "adj", &kernel, 0, 0)? } else { vec![0; kernel.len()] },
            target: if deconv {
                let t = tuple(i, "target_shape", &kernel, 0, 0)?;
                if t.iter().all(|&v| v == 0) {
                    vec![]
                } else {
                    t
                }
            } else {
                vec![]
            },
            kernel,
            num_filter: num_filter as usize,
            groups: groups as usize,
            no_bias: i.bool("no_bias")?,
            layout,
        })
    }
}

const CONV_LAYOUTS: &[&str] = &["NCW", "NCHW", "NCDHW", "NHWC", "NDHWC"];

pub(crate) fn fmt_dims(d: &[usize]) -> String {
    Shape::new(d).to_string()
}

pub(crate) fn fmt_i(v: &[i64]) -> String {
    let s: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    if v.len() == 1 {
        format!("({},)", s[0])
    } else {
        format!("({})", s.join(", "))
    }
}

/// Checks shapes and computes the geometry and the output dims (in the call's layout).
///
/// `xs`, `ws`, `bs` are the data, weight and bias dims as given.
pub fn conv_shapes(
    name: &str,
    p: &ConvParams,
    xs: &[usize],
    ws: &[usize],
    bs: Option<&[usize]>,
    deconv: bool,
) -> Result<(Geom, Vec<usize>, bool)> {
    let nk = p.kernel.len();
    if xs.len() != nk + 2 {
        return Err(Error::value(
            name,
            format!("kernel {} needs {}-d data, got data of shape {}", fmt_dims(&p.kernel), nk + 2, fmt_dims(xs)),
        ));
    }
    let cl = channel_last(name, p.layout.as_deref(), xs.len(), CONV_LAYOUTS)?;
    let cf = |d: &[usize]| -> Vec<usize> {
        if cl && d.len() == xs.len() {
            to_cf_perm(d.len()).iter().map(|&a| d[a]).collect()
        } else {
            d.to_vec()
        }
    };
    let from_cf = |d: &[usize]| -> Vec<usize> {
        if cl {
            to_cl_perm(d.len()).iter().map(|&a| d[a]).collect()
        } else {
            d.to_vec()
        }
    };
    let x = cf(xs);
    let (cin, g) = (x[1], p.groups);
    let f = p.num_filter;
    let (wrows, wcols) = if deconv { (cin, f / g) } else { (f, cin / g) };
    if cin % g != 0 || !f.is_multiple_of(g) {
        return Err(Error::value(
            name,
            format!(
                "num_group={g} must divide the input channels ({cin}) and num_filter ({f}); data shape {}",
                fmt_dims(xs)
            ),
        ));
    }
    let mut want_w = vec![wrows, wcols];
    want_w.extend(&p.kernel);
    if cf(ws) != want_w {
        return Err(Error::shape(
            name,
            &[&Shape::new(xs), &Shape::new(ws)],
            format!(
                "weight must have shape {} for {cin} input channels, num_filter={f}, num_group={g}, kernel {}",
                fmt_dims(&from_cf(&want_w)),
                fmt_dims(&p.kernel)
            ),
        ));
    }
    if let Some(b) = bs {
        if b != [f] {
            return Err(Error::shape(name, &[&Shape::new(ws), &Shape::new(b)], format!("bias must have shape ({f},)")));
        }
    }
    let mut outd = vec![x[0], f];
    let mut pads = p.pad.clone();
    for a in 0..nk {
        let (inn, k, s, d) = (x[2 + a], p.kernel[a], p.stride[a], p.dilate[a]);
        let dk = d * (k - 1) + 1;
        if deconv {
            let full = s * inn.saturating_sub(1) + dk;
            let o = if p.target.is_empty() {
                (full + p.adj[a]).checked_sub(2 * p.pad[a])
            } else {
                let t = p.target[a];
                let total = full.checked_sub(t);
                if let Some(total) = total {
                    pads[a] = total.div_ceil(2);
                }
                total.map(|_| t)
            };
            match o {
                Some(o) if o > 0 && (o + 2 * pads[a]).checked_sub(dk).map(|v| v / s + 1) == Some(inn) => outd.push(o),
                _ => {
                    return Err(Error::value(
                        name,
                        format!(
                            "no output size on spatial axis {a}: input {inn}, kernel {k}, stride {s}, dilate {d}, pad {}, adj {}, target_shape {}",
                            p.pad[a],
                            p.adj[a],
                            fmt_dims(&p.target)
                        ),
                    ))
                }
            }
        } else {
            if inn + 2 * p.pad[a] < dk {
                return Err(Error::shape(
                    name,
                    &[&Shape::new(xs)],
                    format!(
                        "kernel {} (dilated size {dk} on spatial axis {a}) is larger than the padded input ({} + 2*{})",
                        fmt_dims(&p.kernel),
                        inn,
                        p.pad[a]
                    ),
                ));
            }
            outd.push((inn + 2 * p.pad[a] - dk) / s + 1);
        }
    }
    let three = |v: &[usize], fill: usize| -> [usize; 3] {
        let mut r = [fill; 3];
        r[3 - v.len()..].copy_from_slice(v);
        r
    };
    let (small, big) = if deconv { (&x[2..], &outd[2..]) } else { (&outd[2..], &x[2..]) };
    let geom = Geom {
        n: x[0],
        c: if deconv { f } else { cin },
        o: if deconv { cin } else { f },
        groups: g,
        ind: three(big, 1),
        outd: three(small, 1),
        k: three(&p.kernel, 1),
        s: three(&p.stride, 1),
        d: three(&p.dilate, 1),
        p: three(&pads, 0),
    };
    Ok((geom, from_cf(&outd), cl))
}

fn check_dtypes(name: &str, xs: &[&NDArray]) -> Result<DType> {
    let dt = xs[0].dtype();
    if !matches!(dt, DType::F32 | DType::F64) {
        return Err(Error::dtype(name, format!("supports float32 and float64, got {dt}")));
    }
    for a in &xs[1..] {
        ops::check_ctx(name, xs[0], a)?;
        if a.dtype() != dt {
            return Err(Error::dtype(
                name,
                format!("data, weight and bias must share a dtype, got {dt} and {}", a.dtype()),
            ));
        }
    }
    Ok(dt)
}

fn perm(p: Vec<usize>) -> Vec<i64> {
    p.into_iter().map(|a| a as i64).collect()
}

/// Runs `Convolution` (`deconv == false`) or `Deconvolution`.
pub fn convolution(p: &ConvParams, x: &NDArray, w: &NDArray, b: Option<&NDArray>, deconv: bool) -> Result<NDArray> {
    let (fwd, bwd) = if deconv { (&DEFS[2], &DEFS[3]) } else { (&DEFS[0], &DEFS[1]) };
    let mut ins = vec![x, w];
    ins.extend(b);
    check_dtypes(fwd.name, &ins)?;
    let (g, od, cl) = conv_shapes(fwd.name, p, x.dims(), w.dims(), b.map(|b| b.dims()), deconv)?;
    if cl {
        let nd = x.ndim();
        let to_cf = perm(to_cf_perm(nd));
        let (xt, wt) = (ops::transpose(x, Some(&to_cf))?, ops::transpose(w, Some(&to_cf))?);
        let cf_out: Vec<usize> = to_cf_perm(nd).iter().map(|&a| od[a]).collect();
        let y = conv_cf(fwd, bwd, g, &xt, &wt, b, cf_out)?;
        return ops::transpose(&y, Some(&perm(to_cl_perm(nd))));
    }
    conv_cf(fwd, bwd, g, x, w, b, od)
}

fn conv_cf(
    fwd: &'static OpDef,
    bwd: &'static OpDef,
    g: Geom,
    x: &NDArray,
    w: &NDArray,
    b: Option<&NDArray>,
    od: Vec<usize>,
) -> Result<NDArray> {
    let out = NDArray::empty(Shape::new(&od), x.dtype(), x.ctx())?;
    let nums = g.to_nums(b.is_some());
    let mut ins = vec![x, w];
    ins.extend(b);
    if out.size() > 0 {
        push_call(OpCall::new(fwd, &ins, &[&out]).with_nums(&nums))?;
    }
    if needs_record(&ins) {
        let (xc, wc, bs) = (x.clone(), w.clone(), b.map(|b| b.shape().clone()));
        // The first layer's data gradient (its input is not differentiated) is
        // a whole col2im pass a training step would discard: the kernel skips it.
        let need_dx = x.has_entry();
        let mut bnums = nums.clone();
        bnums.push(if need_dx { 0.0 } else { 1.0 });
        record(
            fwd.name,
            &ins,
            &[&out],
            Box::new(move |gr| {
                let mut r: Vec<Option<NDArray>> =
                    backward_call(bwd, &bnums, &gr[0], &xc, &wc, bs.as_ref())?.into_iter().map(Some).collect();
                if !need_dx {
                    r[0] = None;
                }
                Ok(r)
            }),
        );
    }
    Ok(out)
}

/// Pushes the backward operator: data, weight and (with `bias` its shape) bias gradients.
fn backward_call(
    bwd: &'static OpDef,
    nums: &[f64],
    dy: &NDArray,
    x: &NDArray,
    w: &NDArray,
    bias: Option<&Shape>,
) -> Result<Vec<NDArray>> {
    let mut outs = vec![x.empty_like()?, w.empty_like()?];
    if let Some(bs) = bias {
        outs.push(NDArray::empty(bs.clone(), x.dtype(), x.ctx())?);
    }
    if dy.size() == 0 || x.size() == 0 || w.size() == 0 {
        return outs.iter().map(ops::zeros_like).collect();
    }
    let refs: Vec<&NDArray> = outs.iter().collect();
    push_call(OpCall::new(bwd, &[dy, x, w], &refs).with_nums(nums))?;
    Ok(outs)
}

fn read_call(i: &Invocation<'_>, deconv: bool, first: usize) -> Result<(ConvParams, Option<NDArray>)> {
    let p = ConvParams::read(i, deconv)?;
    let b = if p.no_bias { None } else { Some(i.x(first + 2)?.clone()) };
    Ok((p, b))
}

fn forward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let deconv = i.def.name == "Deconvolution";
    let (p, b) = read_call(i, deconv, 0)?;
    one(convolution(&p, i.x(0)?, i.x(1)?, b.as_ref(), deconv))
}

/// `_backward_Convolution` / `_backward_Deconvolution` called directly: inputs out_grad, data, weight.
fn backward_forward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let deconv = i.def.name == "_backward_Deconvolution";
    let p = ConvParams::read(i, deconv)?;
    let (dy, x, w) = (i.x(0)?, i.x(1)?, i.x(2)?);
    check_dtypes(i.name(), &[dy, x, w])?;
    let bshape = Shape::new(&[p.num_filter]);
    let (g, od, cl) = conv_shapes(i.name(), &p, x.dims(), w.dims(), None, deconv)?;
    if dy.dims() != od.as_slice() {
        return Err(Error::shape(
            i.name(),
            &[dy.shape(), x.shape()],
            format!("out_grad must have shape {}", fmt_dims(&od)),
        ));
    }
    let bias = (!p.no_bias).then_some(&bshape);
    let nums = g.to_nums(bias.is_some());
    if !cl {
        return backward_call(i.def, &nums, dy, x, w, bias);
    }
    let nd = x.ndim();
    let to_cf = perm(to_cf_perm(nd));
    let t = |a: &NDArray| ops::transpose(a, Some(&to_cf));
    let mut r = backward_call(i.def, &nums, &t(dy)?, &t(x)?, &t(w)?, bias)?;
    for a in r.iter_mut().take(2) {
        *a = ops::transpose(a, Some(&perm(to_cl_perm(nd))))?;
    }
    Ok(r)
}

fn params_of(a: &Attrs, def: &'static OpDef) -> Result<ConvParams> {
    ConvParams::read(&Invocation::params(def, a), def.name.contains("Deconvolution"))
}

/// The weight's and bias's shapes from the data's (MXNet's `FInferShape` for the
/// parameters): `(num_filter, C / num_group, *kernel)` for a convolution,
/// `(C, num_filter / num_group, *kernel)` for a deconvolution, channel-last for a
/// channel-last layout, as [`conv_shapes`] checks them.
pub(crate) fn param_shapes(i: &Invocation<'_>, data: Option<&Shape>) -> Result<Vec<(&'static str, Shape)>> {
    let Some(x) = data else { return Ok(Vec::new()) };
    let deconv = i.def.name.contains("Deconvolution");
    let p = ConvParams::read(i, deconv)?;
    let xs = x.dims();
    if xs.len() != p.kernel.len() + 2 {
        return Ok(Vec::new()); // the forward inference names the mismatch
    }
    let cl = channel_last(i.name(), p.layout.as_deref(), xs.len(), CONV_LAYOUTS)?;
    let cin = if cl { xs[xs.len() - 1] } else { xs[1] };
    let (f, g) = (p.num_filter, p.groups.max(1));
    let mut w = if deconv { vec![cin, f / g] } else { vec![f, cin / g] };
    w.extend(&p.kernel);
    if cl {
        w = to_cl_perm(w.len()).iter().map(|&a| w[a]).collect();
    }
    Ok(vec![("weight", Shape::new(&w)), ("bias", Shape::new(&[f]))])
}

/// A channel-first convolution's data shape from its output's: the batch, the data's own
/// channels, and each spatial size when the stride is 1 (with a larger stride several
/// sizes give the same output, so it stays unknown). Nothing for a deconvolution or a
/// channel-last layout.
fn input_shapes(i: &Invocation<'_>, ins: &[Option<Shape>], outs: &[Option<Shape>]) -> Result<Vec<Option<Shape>>> {
    let mut res = vec![None; ins.len()];
    let Some(out) = outs.first().cloned().flatten() else { return Ok(res) };
    let p = ConvParams::read(i, false)?;
    let o = out.dims();
    if i.def.name.contains("Deconvolution") || p.layout.as_deref().is_some_and(|l| l.ends_with('C')) {
        return Ok(res);
    }
    if o.len() != p.kernel.len() + 2 || res.is_empty() {
        return Ok(res);
    }
    let c = ins[0].as_ref().filter(|d| d.ndim() > 1).map_or(0, |d| d.dims()[1]);
    let mut d = vec![o[0], c];
    for (a, &od) in o[2..].iter().enumerate() {
        let span = p.dilate[a] * (p.kernel[a] - 1) + 1;
        let x = (od - 1) + span;
        d.push(if od > 0 && p.stride[a] == 1 && x >= 2 * p.pad[a] { x - 2 * p.pad[a] } else { 0 });
    }
    res[0] = Some(Shape::new(&d));
    Ok(res)
}

/// How a convolution node looks in a graph.
const CONV_GRAPH: GraphForm = GraphForm {
    inputs: Some(inputs_unless_no_bias),
    param_shapes: Some(param_shapes),
    input_shapes: Some(input_shapes),
    ..GraphForm::PLAIN
};

fn infer(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let deconv = def.name.contains("Deconvolution");
    let p = params_of(a, def)?;
    if ins.len() < 2 {
        return Err(Error::value(def.name, "needs data and weight"));
    }
    let bs = if p.no_bias { None } else { ins.get(2).map(|m| m.shape.dims()) };
    let (_, od, _) = conv_shapes(def.name, &p, ins[0].shape.dims(), ins[1].shape.dims(), bs, deconv)?;
    Ok(vec![Meta { shape: Shape::new(&od), dtype: ins[0].dtype, ctx: ins[0].ctx }])
}

fn infer_backward(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let p = params_of(a, def)?;
    if ins.len() < 3 {
        return Err(Error::value(def.name, "needs out_grad, data and weight"));
    }
    let mut r = vec![ins[1].clone(), ins[2].clone()];
    if !p.no_bias {
        r.push(Meta { shape: Shape::new(&[p.num_filter]), ..ins[1].clone() });
    }
    Ok(r)
}

macro_rules! conv_params {
    ($($extra:expr,)* ; $ws:literal, $nb:literal) => {
        &[
            param("kernel", K::Shape, None, "Kernel size: (w,), (h, w) or (d, h, w)."),
            param("stride", K::Shape, Some("()"), "Stride per spatial axis (default 1)."),
            param("dilate", K::Shape, Some("()"), "Dilation per spatial axis (default 1)."),
            param("pad", K::Shape, Some("()"), "Zero padding on both sides per spatial axis (default 0)."),
            $($extra,)*
            param("num_filter", K::Int, None, "Number of output channels."),
            param("num_group", K::Int, Some("1"), "Number of groups (channels split into groups)."),
            param("workspace", K::Int, Some($ws), "Workspace limit in MB (accepted, unused)."),
            param("no_bias", K::Bool, Some($nb), "Leave the bias out."),
            param("cudnn_tune", K::Str, Some("None"), "cuDNN tuning (accepted, unused)."),
            param("cudnn_off", K::Bool, Some("False"), "Turn cuDNN off (accepted, unused)."),
            param("layout", K::Str, Some("None"), "'NCW', 'NCHW', 'NCDHW', 'NHWC' or 'NDHWC' (default channel-first)."),
        ]
    };
}

pub(crate) const CONV_PARAMS: &[ParamDef] = conv_params!(; "1024", "False");
const DECONV_PARAMS: &[ParamDef] = conv_params!(
    param("adj", K::Shape, Some("()"), "Extra output size at the end of each spatial axis."),
    param("target_shape", K::Shape, Some("()"), "Output spatial shape (overrides pad and adj)."),
    ; "512", "True");

const FUSED_PARAMS: &[ParamDef] = conv_params!(
    param("with_bn", K::Bool, Some("False"), "Apply BatchNorm in inference (moving statistics) to the convolution."),
    param("eps", K::Float, Some("0.001"), "BatchNorm's `eps`."),
    param("fix_gamma", K::Bool, Some("True"), "BatchNorm's `fix_gamma` (gamma taken as 1)."),
    param("with_sum", K::Bool, Some("False"), "Add the input `sum` (the output's shape) after BatchNorm."),
    param("with_relu", K::Bool, Some("False"), "Apply ReLU last."),
    ; "1024", "False");

/// The convolution operators.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "Convolution",
        aliases: Aliases { nd: &["Convolution_v1"], np: &[], npx: &["convolution"], fluent: false },
        inputs: &["data", "weight", "bias"],
        params: CONV_PARAMS,
        doc: "N-d convolution (1-d to 3-d) of `data` with `weight` plus `bias`; grouped with `num_group`.",
        infer: Some(infer),
        forward,
        cpu: KernelSlot::Call(cpu::conv_fwd),
        example: Some(Example {
            shapes: &[&[2, 2, 4, 4], &[3, 2, 3, 3], &[3]],
            attrs: "kernel=(3, 3), num_filter=3, pad=(1, 1), stride=(2, 1)",
            range: (-1.0, 1.0),
        }),
        graph: CONV_GRAPH,
        ..OpDef::BASE
    },
    OpDef {
        name: "_backward_Convolution",
        inputs: &["out_grad", "data", "weight"],
        outputs: &["data_grad", "weight_grad", "bias_grad"],
        params: CONV_PARAMS,
        doc: "Gradients of `Convolution`: data, weight and (without `no_bias`) bias.",
        infer: Some(infer_backward),
        forward: backward_forward,
        grad: Grad::None("second-order convolution gradients are not implemented"),
        cpu: KernelSlot::Call(cpu::conv_bwd),
        ..OpDef::BASE
    },
    OpDef {
        name: "Deconvolution",
        aliases: Aliases { nd: &[], np: &[], npx: &["deconvolution"], fluent: false },
        inputs: &["data", "weight", "bias"],
        params: DECONV_PARAMS,
        doc: "Transposed convolution (the gradient of `Convolution` with respect to its data); \
              weight is (in_channels, num_filter / num_group, *kernel).",
        infer: Some(infer),
        forward,
        cpu: KernelSlot::Call(cpu::deconv_fwd),
        example: Some(Example {
            shapes: &[&[2, 2, 3, 3], &[2, 3, 3, 3], &[3]],
            attrs: "kernel=(3, 3), num_filter=3, stride=(2, 2), pad=(1, 1), adj=(1, 0), no_bias=False",
            range: (-1.0, 1.0),
        }),
        graph: CONV_GRAPH,
        ..OpDef::BASE
    },
    OpDef {
        name: "_backward_Deconvolution",
        inputs: &["out_grad", "data", "weight"],
        outputs: &["data_grad", "weight_grad", "bias_grad"],
        params: DECONV_PARAMS,
        doc: "Gradients of `Deconvolution`: data, weight and (without `no_bias`) bias.",
        infer: Some(infer_backward),
        forward: backward_forward,
        grad: Grad::None("second-order deconvolution gradients are not implemented"),
        cpu: KernelSlot::Call(cpu::deconv_bwd),
        ..OpDef::BASE
    },
    deformable::DEFORMABLE,
    deformable::MODULATED,
    deformable::COLUMNS,
    deformable::COLUMNS_BACKWARD,
    OpDef {
        name: "_fused_convolution",
        inputs: &["data", "weight", "bias", "gamma", "beta", "moving_mean", "moving_var", "sum"],
        params: FUSED_PARAMS,
        doc: "A channel-first `Convolution` followed in one pass by BatchNorm in inference \
              (`with_bn`), `+ sum` (`with_sum`) and ReLU (`with_relu`), in that order; bias, \
              BatchNorm parameters and `sum` are inputs only when used. A hybridized block's \
              inference plan uses it in place of those chains; inference only.",
        infer: Some(infer),
        forward: fused::forward,
        grad: Grad::None("an inference-only fusion: training runs the unfused operators"),
        cpu: KernelSlot::Call(fused::fused_fwd),
        example: Some(Example {
            shapes: &[&[2, 2, 4, 4], &[3, 2, 3, 3], &[3], &[3], &[3], &[3], &[3], &[2, 3, 4, 4]],
            attrs: "kernel=(3, 3), num_filter=3, pad=(1, 1), with_bn=True, fix_gamma=False, with_sum=True, \
                    with_relu=True",
            range: (0.1, 0.9),
        }),
        graph: GraphForm { inputs: Some(fused::input_names), ..GraphForm::PLAIN },
        ..OpDef::BASE
    },
];
