//! Resizing operators, composed of existing ones (so backward runs on the engine):
//! `UpSampling` (nearest: `repeat`; bilinear: a grouped `Deconvolution` with the
//! given weight, as MXNet), `_contrib_AdaptiveAvgPooling2D` and
//! `_contrib_BilinearResize2D` (a separable linear map: two gemms with small
//! interpolation matrices built from the shapes).

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{one, param, Attrs, Example, Invocation, KernelSlot, Meta, OpDef, ParamKind as K};
use crate::ops;
use crate::ops::conv::{convolution, fmt_dims, ConvParams};
use crate::shape::Shape;

fn dims4(name: &str, x: &NDArray) -> Result<[usize; 4]> {
    match *x.dims() {
        [n, c, h, w] if matches!(x.dtype(), DType::F32 | DType::F64) => Ok([n, c, h, w]),
        [_, _, _, _] => Err(Error::dtype(name, format!("supports float32 and float64, got {}", x.dtype()))),
        _ => Err(Error::shape(name, &[x.shape()], "data must be 4-d (batch, channel, height, width)")),
    }
}

/// A constant `rows × cols` matrix in `x`'s dtype and context.
fn matrix(x: &NDArray, m: Vec<f64>, rows: usize, cols: usize) -> Result<NDArray> {
    let s = Shape::new(&[rows, cols]);
    match x.dtype() {
        DType::F64 => NDArray::from_vec(m, s, x.ctx()),
        _ => NDArray::from_vec(m.into_iter().map(|v| v as f32).collect::<Vec<f32>>(), s, x.ctx()),
    }
}

/// `y[n, c, i, j] = Σ_{h, w} a[i, h] · x[n, c, h, w] · b[j, w]` with two gemms.
fn separable(x: &NDArray, a: Vec<f64>, oh: usize, b: Vec<f64>, ow: usize) -> Result<NDArray> {
    let [n, c, h, w] = [x.dims()[0], x.dims()[1], x.dims()[2], x.dims()[3]];
    let (am, bm) = (matrix(x, a, oh, h)?, matrix(x, b, ow, w)?);
    let t = [0i64, 2, 1];
    let y1 = ops::dot(&ops::reshape_to(x, Shape::new(&[n * c * h, w]))?, &bm, false, true)?;
    let y1 = ops::transpose(&ops::reshape_to(&y1, Shape::new(&[n * c, h, ow]))?, Some(&t))?;
    let y2 = ops::dot(&ops::reshape_to(&y1, Shape::new(&[n * c * ow, h]))?, &am, false, true)?;
    let y2 = ops::transpose(&ops::reshape_to(&y2, Shape::new(&[n * c, ow, oh]))?, Some(&t))?;
    ops::reshape_to(&y2, Shape::new(&[n, c, oh, ow]))
}

/// Averaging weights of adaptive pooling from `inn` to `out` positions.
fn adaptive_weights(inn: usize, out: usize) -> Vec<f64> {
    let mut m = vec![0.0; out * inn];
    for i in 0..out {
        let (s, e) = ((i * inn) / out, ((i + 1) * inn).div_ceil(out));
        for h in s..e {
            m[i * inn + h] = 1.0 / (e - s) as f64;
        }
    }
    m
}

/// Bilinear interpolation weights from `inn` to `out` positions.
fn bilinear_weights(inn: usize, out: usize, align_corners: bool) -> Vec<f64> {
    let mut m = vec![0.0; out * inn];
    for i in 0..out {
        let src = if align_corners {
            if out > 1 {
                i as f64 * (inn as f64 - 1.0) / (out as f64 - 1.0)
            } else {
                0.0
            }
        } else {
            ((i as f64 + 0.5) * inn as f64 / out as f64 - 0.5).max(0.0)
        };
        let h0 = (src.floor() as usize).min(inn - 1);
        let h1 = (h0 + 1).min(inn - 1);
        let l = (src - h0 as f64).clamp(0.0, 1.0);
        m[i * inn + h0] += 1.0 - l;
        m[i * inn + h1] += l;
    }
    m
}

/// MXNet `_contrib_AdaptiveAvgPooling2D`.
pub fn adaptive_avg_pool2d(x: &NDArray, out: (usize, usize)) -> Result<NDArray> {
    let name = "AdaptiveAvgPooling2D";
    let [_, _, h, w] = dims4(name, x)?;
    if out.0 == 0 || out.1 == 0 || h == 0 || w == 0 {
        return Err(Error::value(
            name,
            format!("output_size {:?} and input {} must be positive", out, fmt_dims(x.dims())),
        ));
    }
    separable(x, adaptive_weights(h, out.0), out.0, adaptive_weights(w, out.1), out.1)
}

/// MXNet `_contrib_BilinearResize2D` to `(height, width)`.
pub fn bilinear_resize2d(x: &NDArray, oh: usize, ow: usize, align_corners: bool) -> Result<NDArray> {
    let name = "BilinearResize2D";
    let [_, _, h, w] = dims4(name, x)?;
    if oh == 0 || ow == 0 || h == 0 || w == 0 {
        return Err(Error::value(
            name,
            format!("output ({oh}, {ow}) and input {} must be positive", fmt_dims(x.dims())),
        ));
    }
    separable(x, bilinear_weights(h, oh, align_corners), oh, bilinear_weights(w, ow, align_corners), ow)
}

/// MXNet `UpSampling`: nearest (each input to the first's size times `scale`,
/// then concatenated on channels or summed) or bilinear (data and weight).
pub fn upsampling(xs: &[NDArray], scale: usize, sample_type: &str, mode: &str, num_filter: usize) -> Result<NDArray> {
    let name = "UpSampling";
    if xs.is_empty() || scale == 0 {
        return Err(Error::value(
            name,
            format!("needs at least one input and a positive scale, got {} inputs, scale {scale}", xs.len()),
        ));
    }
    let [_, c, h, w] = dims4(name, &xs[0])?;
    match sample_type {
        "nearest" => {
            let (oh, ow) = (h * scale, w * scale);
            let mut ups = vec![];
            for x in xs {
                let [_, _, hi, wi] = dims4(name, x)?;
                if hi == 0 || wi == 0 || oh % hi != 0 || ow % wi != 0 || oh / hi != ow / wi {
                    return Err(Error::shape(
                        name,
                        &[xs[0].shape(), x.shape()],
                        format!("inputs must scale to ({oh}, {ow}) by one integer factor"),
                    ));
                }
                let s = (oh / hi) as i64;
                ups.push(if s == 1 { x.clone() } else { ops::repeat(&ops::repeat(x, s, Some(2))?, s, Some(3))? });
            }
            match (ups.len(), mode) {
                (1, _) => Ok(ups.remove(0)),
                (_, "concat") => ops::concat(&ups, 1),
                (_, "sum") => ups[1..].iter().try_fold(ups[0].clone(), |a, b| ops::add(&a, b)),
                _ => Err(Error::value(name, format!("unknown multi_input_mode '{mode}' (expected 'concat' or 'sum')"))),
            }
        }
        "bilinear" => {
            if xs.len() != 2 {
                return Err(Error::value(name, "bilinear upsampling takes data and weight"));
            }
            let k = 2 * scale - scale % 2;
            let nf = if num_filter == 0 { c } else { num_filter };
            let p = ConvParams {
                kernel: vec![k, k],
                stride: vec![scale, scale],
                dilate: vec![1, 1],
                pad: vec![(scale - 1).div_ceil(2); 2],
                adj: vec![0, 0],
                target: vec![],
                num_filter: nf,
                groups: nf,
                no_bias: true,
                layout: None,
            };
            convolution(&p, &xs[0], &xs[1], None, true).map_err(|e| match e {
                Error::Shape { shapes, msg, .. } => Error::Shape { op: name.into(), shapes, msg },
                Error::Value { msg, .. } => Error::Value { op: name.into(), msg },
                e => e,
            })
        }
        _ => Err(Error::value(name, format!("unknown sample_type '{sample_type}' (expected 'nearest' or 'bilinear')"))),
    }
}

fn out_size(i: &Invocation<'_>) -> Result<(usize, usize)> {
    let v = i.ints("output_size")?.unwrap_or_default();
    match v.as_slice() {
        [] => Ok((1, 1)),
        [s] if *s > 0 => Ok((*s as usize, *s as usize)),
        [a, b] if *a > 0 && *b > 0 => Ok((*a as usize, *b as usize)),
        _ => Err(Error::value(i.name(), format!("output_size must be one or two positive sizes, got {v:?}"))),
    }
}

fn resize_size(i: &Invocation<'_>, x: &[usize], like: Option<&[usize]>) -> Result<(usize, usize)> {
    let mode = i.str("mode")?;
    match mode.as_str() {
        "size" => {
            let sh = i.opt_f64("scale_height")?;
            let sw = i.opt_f64("scale_width")?;
            let h = match sh {
                Some(s) => (x[2] as f64 * s) as i64,
                None => i.i64("height")?,
            };
            let w = match sw {
                Some(s) => (x[3] as f64 * s) as i64,
                None => i.i64("width")?,
            };
            Ok((h.max(0) as usize, w.max(0) as usize))
        }
        "like" => match like {
            Some(l) if l.len() == 4 => Ok((l[2], l[3])),
            _ => Err(Error::value(i.name(), "mode='like' needs a 4-d `like` input")),
        },
        m => Err(Error::value(i.name(), format!("mode '{m}' is not supported (supported: 'size', 'like')"))),
    }
}

fn infer_adaptive(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (oh, ow) = out_size(&Invocation::params(def, a))?;
    let x = ins.first().ok_or_else(|| Error::value(def.name, "needs data"))?;
    let d = x.shape.dims();
    if d.len() != 4 {
        return Err(Error::shape(def.name, &[&x.shape], "data must be 4-d (batch, channel, height, width)"));
    }
    Ok(vec![Meta { shape: Shape::new(&[d[0], d[1], oh, ow]), ..x.clone() }])
}

fn infer_bilinear(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let x = ins.first().ok_or_else(|| Error::value(def.name, "needs data"))?;
    let d = x.shape.dims();
    if d.len() != 4 {
        return Err(Error::shape(def.name, &[&x.shape], "data must be 4-d (batch, channel, height, width)"));
    }
    let (oh, ow) = resize_size(&Invocation::params(def, a), d, ins.get(1).map(|m| m.shape.dims()))?;
    Ok(vec![Meta { shape: Shape::new(&[d[0], d[1], oh, ow]), ..x.clone() }])
}

/// `UpSampling`'s output: the first input's spatial size times `scale`; nearest
/// up-sampling of several inputs concatenates their channels (`multi_input_mode='concat'`)
/// or keeps the first's (`'sum'`).
fn infer_upsampling(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let p = Invocation::params(def, a);
    let x = ins.first().ok_or_else(|| Error::value(def.name, "needs data"))?;
    let d = x.shape.dims();
    if d.len() != 4 {
        return Err(Error::shape(def.name, &[&x.shape], "data must be 4-d (batch, channel, height, width)"));
    }
    let scale = p.i64("scale")?.max(0) as usize;
    let nearest = p.str("sample_type")? == "nearest";
    let channels = if nearest && p.str("multi_input_mode")? == "concat" {
        ins.iter().map(|m| m.shape.dims().get(1).copied().unwrap_or(0)).sum()
    } else {
        d[1]
    };
    Ok(vec![Meta { shape: Shape::new(&[d[0], channels, d[2] * scale, d[3] * scale]), ..x.clone() }])
}

/// `_contrib_AdaptiveAvgPooling2D`.
pub(super) const ADAPTIVE: OpDef = OpDef {
    name: "_contrib_AdaptiveAvgPooling2D",
    inputs: &["data"],
    params: &[param("output_size", K::Shape, Some("()"), "Output (height, width), or one size for both (default 1).")],
    doc: "Adaptive average pooling to a fixed output size (windows `floor(i*H/oh)` to `ceil((i+1)*H/oh)`).",
    infer: Some(infer_adaptive),
    forward: |i| one(adaptive_avg_pool2d(i.x(0)?, out_size(i)?)),
    example: Some(Example { shapes: &[&[1, 2, 5, 7]], attrs: "output_size=(3, 4)", range: (-1.0, 1.0) }),
    cpu: KernelSlot::Composite,
    ..OpDef::BASE
};

/// `_contrib_BilinearResize2D`.
pub(super) const BILINEAR: OpDef = OpDef {
    name: "_contrib_BilinearResize2D",
    inputs: &["data", "like"],
    params: &[
        param("height", K::Int, Some("1"), "Output height (mode 'size')."),
        param("width", K::Int, Some("1"), "Output width (mode 'size')."),
        param("scale_height", K::Float, Some("None"), "Output height as a multiple of the input's."),
        param("scale_width", K::Float, Some("None"), "Output width as a multiple of the input's."),
        param("mode", K::Str, Some("'size'"), "'size' or 'like' (the size of the second input)."),
        param("align_corners", K::Bool, Some("True"), "Map corner pixels onto corner pixels."),
    ],
    doc: "Bilinear resize of 4-d (N, C, H, W) data.",
    infer: Some(infer_bilinear),
    forward: |i| {
        let x = i.x(0)?;
        let (oh, ow) = resize_size(i, x.dims(), i.opt(1).map(|l| l.dims()))?;
        one(bilinear_resize2d(x, oh, ow, i.bool("align_corners")?))
    },
    example: Some(Example { shapes: &[&[1, 2, 3, 4]], attrs: "height=5, width=7", range: (-1.0, 1.0) }),
    cpu: KernelSlot::Composite,
    ..OpDef::BASE
};

/// `UpSampling`.
pub(super) const UPSAMPLING: OpDef = OpDef {
    name: "UpSampling",
    inputs: &["*data"],
    params: &[
        param("scale", K::Int, None, "Up-sampling factor."),
        param("num_filter", K::Int, Some("0"), "Channels of bilinear up-sampling (default: the data's)."),
        param("sample_type", K::Str, Some("'nearest'"), "'nearest' or 'bilinear' (inputs data and weight)."),
        param("multi_input_mode", K::Str, Some("'concat'"), "'concat' or 'sum' of several nearest inputs."),
        param("num_args", K::Int, Some("None"), "Number of inputs (default: as given)."),
        param("workspace", K::Int, Some("512"), "Workspace limit in MB (accepted, unused)."),
    ],
    doc: "Up-sampling by an integer factor: nearest neighbour, or bilinear through a grouped deconvolution.",
    forward: |i| {
        let xs = i.all();
        if let Some(n) = i.opt_i64("num_args")? {
            if n as usize != xs.len() {
                return Err(Error::value(i.name(), format!("num_args={n} but {} inputs given", xs.len())));
            }
        }
        let scale = i.i64("scale")?.max(0) as usize;
        let nf = i.i64("num_filter")?.max(0) as usize;
        one(upsampling(&xs, scale, &i.str("sample_type")?, &i.str("multi_input_mode")?, nf))
    },
    infer: Some(infer_upsampling),
    cpu: KernelSlot::Composite,
    ..OpDef::BASE
};
