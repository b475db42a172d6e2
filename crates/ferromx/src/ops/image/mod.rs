//! Image operators (MXNet's `src/operator/image`): `nd.image.*` / `npx.image.*`.
//!
//! Images are HWC (or NHWC batches) as decoded; [`to_tensor`] turns them into
//! CHW floats. Layout numbers (batch, height, width, channels, ...) travel in
//! the call's `nums`, so kernels see only flat slices. The random operators
//! draw a seed on the pushing thread (like `ops::random`) and their factor
//! inside the kernel, so nothing waits and results repeat after `seed`.

mod cpu;
#[cfg(test)]
mod tests;

use crate::autograd::{needs_record, record};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    one, param, push_call, Attrs, Example, ForwardFn, Grad, GradArgs, Invocation, KernelFn, KernelSlot, Meta, OpCall,
    OpDef, ParamDef, ParamKind as K,
};
use crate::shape::Shape;

pub use cpu::{resize_image, resize_image_u8, Interp};

/// `(batch, height, width, channels)` of an HWC or NHWC image, checked.
fn nhwc(op: &str, s: &Shape, batch_ok: bool) -> Result<(usize, usize, usize, usize)> {
    match *s.dims() {
        [h, w, c] => Ok((1, h, w, c)),
        [n, h, w, c] if batch_ok => Ok((n, h, w, c)),
        _ => Err(Error::shape(
            op,
            &[s],
            if batch_ok {
                "expected an image (H, W, C) or a batch (N, H, W, C)"
            } else {
                "expected an image of shape (H, W, C)"
            },
        )),
    }
}

/// An image with 1 or 3 channels (MXNet's colour operators).
fn rgb_or_gray(op: &str, s: &Shape) -> Result<(usize, usize, usize, usize)> {
    let d = nhwc(op, s, false)?;
    if d.3 != 1 && d.3 != 3 {
        return Err(Error::shape(op, &[s], "the last axis must be 1 (grey) or 3 (RGB) channels"));
    }
    Ok(d)
}

fn same_meta(_d: &'static OpDef, _a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    Ok(vec![ins[0].clone()])
}

/// Pushes `def` on `x` into `out` with `nums` and records its gradient.
fn run(def: &'static OpDef, x: &NDArray, out: NDArray, nums: Vec<f64>) -> Result<NDArray> {
    if out.size() > 0 {
        push_call(OpCall::new(def, &[x], &[&out]).with_nums(&nums))?;
    }
    if needs_record(&[x]) {
        let (xc, os) = (x.clone(), crate::autograd::save_output(&out));
        record(
            def.name,
            &[x],
            &[&out],
            Box::new(move |g| {
                let oc = os.get();
                let args = GradArgs {
                    def,
                    inputs: std::slice::from_ref(&xc),
                    outputs: std::slice::from_ref(&oc),
                    out_grads: g,
                    nums: &nums,
                };
                match &def.grad {
                    Grad::Fn(f) => f(&args),
                    Grad::None(why) => Err(Error::value(def.name, format!("not differentiable: {why}"))),
                    Grad::Recorded => Err(Error::value(def.name, "internal error: no gradient function")),
                }
            }),
        );
    }
    Ok(out)
}

// ------------------------------------------------------------------ to_tensor

fn infer_to_tensor(d: &'static OpDef, _a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (n, h, w, c) = nhwc(d.name, &ins[0].shape, true)?;
    let shape = if ins[0].shape.ndim() == 3 { Shape::new(&[c, h, w]) } else { Shape::new(&[n, c, h, w]) };
    Ok(vec![Meta { shape, dtype: DType::F32, ctx: ins[0].ctx }])
}

/// HWC (or NHWC) of any dtype to CHW (NCHW) float32 divided by 255.
pub fn to_tensor(x: &NDArray) -> Result<NDArray> {
    let def = &DEFS[0];
    let m = infer_to_tensor(def, &Attrs::default(), &[Meta::of(x)]).map_err(|e| e.in_op(def.name))?;
    let (n, h, w, c) = nhwc(def.name, x.shape(), true)?;
    let out = NDArray::empty(m[0].shape.clone(), DType::F32, x.ctx())?;
    run(def, x, out, vec![n as f64, (h * w) as f64, c as f64])
}

// ------------------------------------------------------------------ normalize

/// `(n, channels, plane)` of a CHW or NCHW tensor.
fn nchw(op: &str, s: &Shape) -> Result<(usize, usize, usize)> {
    match *s.dims() {
        [c, h, w] => Ok((1, c, h * w)),
        [n, c, h, w] => Ok((n, c, h * w)),
        _ => Err(Error::shape(op, &[s], "expected a tensor (C, H, W) or a batch (N, C, H, W)")),
    }
}

/// Per-channel values of a parameter given as one number or one per channel.
fn per_channel(op: &str, name: &str, v: Vec<f64>, c: usize) -> Result<Vec<f64>> {
    match v.len() {
        1 => Ok(vec![v[0]; c]),
        k if k >= c && (k == c || v[c..].iter().all(|&x| x == v[0])) => Ok(v[..c].to_vec()),
        k => Err(Error::value(op, format!("{name} has {k} values for {c} channels (give 1 or {c})"))),
    }
}

/// `(x - mean[c]) / std[c]` per channel of a CHW/NCHW float tensor.
pub fn normalize(x: &NDArray, mean: Vec<f64>, std: Vec<f64>) -> Result<NDArray> {
    let def = &DEFS[1];
    let (n, c, plane) = nchw(def.name, x.shape())?;
    if !x.dtype().is_float() {
        return Err(Error::dtype(def.name, format!("expects a float tensor, got {}", x.dtype())));
    }
    let m = per_channel(def.name, "mean", mean, c)?;
    let s = per_channel(def.name, "std", std, c)?;
    if s.contains(&0.0) {
        return Err(Error::value(def.name, "std must be non-zero"));
    }
    let mut nums = vec![n as f64, c as f64, plane as f64];
    nums.extend(m);
    nums.extend(s);
    run(def, x, x.empty_like()?, nums)
}

fn normalize_forward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let mean = i.floats("mean")?.unwrap_or_else(|| vec![0.0]);
    let std = i.floats("std")?.unwrap_or_else(|| vec![1.0]);
    one(normalize(i.x(0)?, mean, std))
}

fn normalize_grad(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    let c = a.nums[1] as usize;
    let std = &a.nums[3 + c..3 + 2 * c];
    let g = &a.out_grads[0];
    let s = NDArray::from_vec(std.to_vec(), Shape::new(&[c, 1, 1]), g.ctx())?;
    let s = if g.dtype() != DType::F64 { crate::ops::astype(&s, g.dtype())? } else { s };
    Ok(vec![Some(crate::ops::div(g, &s)?)])
}

// ------------------------------------------------------------------ flips

/// `(head, mid, tail)` around the flipped axis (`from_end` 2: width, 3: height).
fn flip_dims(op: &str, s: &Shape, from_end: usize) -> Result<Vec<f64>> {
    nhwc(op, s, true)?;
    let d = s.dims();
    let ax = d.len() - from_end;
    let head: usize = d[..ax].iter().product();
    let tail: usize = d[ax + 1..].iter().product();
    Ok(vec![head as f64, d[ax] as f64, tail as f64])
}

fn flip_with(def: &'static OpDef, x: &NDArray, from_end: usize, seed: Option<f64>) -> Result<NDArray> {
    let mut nums = flip_dims(def.name, x.shape(), from_end)?;
    nums.extend(seed);
    run(def, x, x.empty_like()?, nums)
}

/// Mirrors an HWC/NHWC image along its width.
pub fn flip_left_right(x: &NDArray) -> Result<NDArray> {
    flip_with(&DEFS[2], x, 2, None)
}

/// Mirrors an HWC/NHWC image along its height.
pub fn flip_top_bottom(x: &NDArray) -> Result<NDArray> {
    flip_with(&DEFS[3], x, 3, None)
}

fn flip_grad(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    let g = &a.out_grads[0];
    Ok(vec![Some(if a.def.name.ends_with("left_right") { flip_left_right(g)? } else { flip_top_bottom(g)? })])
}

// ------------------------------------------------------------------ resize and crop

/// MXNet's output `(height, width)` for `size` and `keep_ratio`.
fn resize_hw(op: &str, h: usize, w: usize, size: &[i64], keep_ratio: bool) -> Result<(usize, usize)> {
    match *size {
        [s] if s > 0 => {
            let s = s as usize;
            if !keep_ratio {
                Ok((s, s))
            } else if h > w {
                Ok((h * s / w.max(1), s))
            } else {
                Ok((s, w * s / h.max(1)))
            }
        }
        [sw, sh] if sw > 0 && sh > 0 => Ok((sh as usize, sw as usize)),
        _ => Err(Error::value(op, format!("size must be one positive int or (width, height), got {size:?}"))),
    }
}

fn resize_dtype(op: &str, dt: DType) -> Result<()> {
    match dt {
        DType::U8 | DType::F32 | DType::F64 | DType::I32 => Ok(()),
        other => Err(Error::dtype(op, format!("resizes uint8, int32, float32 and float64 images, got {other}"))),
    }
}

fn resized_shape(x: &Shape, oh: usize, ow: usize) -> Shape {
    let d = x.dims();
    if d.len() == 3 {
        Shape::new(&[oh, ow, d[2]])
    } else {
        Shape::new(&[d[0], oh, ow, d[3]])
    }
}

fn resize_params(i: &Invocation<'_>, s: &Shape) -> Result<(usize, usize, i64)> {
    let (_, h, w, _) = nhwc(i.name(), s, true)?;
    let (oh, ow) = resize_hw(i.name(), h, w, &i.ints("size")?.unwrap_or_default(), i.bool("keep_ratio")?)?;
    Ok((oh, ow, i.i64("interp")?))
}

fn infer_resize(d: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (oh, ow, _) = resize_params(&Invocation::params(d, a), &ins[0].shape)?;
    Ok(vec![Meta { shape: resized_shape(&ins[0].shape, oh, ow), ..ins[0].clone() }])
}

/// Resizes HWC/NHWC images to `oh x ow` with OpenCV's interpolation code `interp`.
pub fn resize(def: &'static OpDef, x: &NDArray, oh: usize, ow: usize, interp: i64) -> Result<NDArray> {
    let (n, h, w, c) = nhwc(def.name, x.shape(), true)?;
    resize_dtype(def.name, x.dtype())?;
    Interp::from_code(def.name, interp)?;
    if oh == 0 || ow == 0 || (h == 0 || w == 0) && n * c > 0 {
        return Err(Error::value(def.name, format!("cannot resize {}x{} to {oh}x{ow}", h, w)));
    }
    let out = NDArray::empty(resized_shape(x.shape(), oh, ow), x.dtype(), x.ctx())?;
    let nums = [n, h, w, c, oh, ow].iter().map(|&v| v as f64).chain([interp as f64]).collect();
    run(def, x, out, nums)
}

fn resize_forward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let x = i.x(0)?;
    let (oh, ow, interp) = resize_params(i, x.shape())?;
    one(resize(i.def, x, oh, ow, interp))
}

fn cvresize_params(i: &Invocation<'_>) -> Result<(usize, usize, i64)> {
    let (w, h) = (i.i64("w")?, i.i64("h")?);
    if w <= 0 || h <= 0 {
        return Err(Error::value(i.name(), format!("w and h must be positive, got w={w}, h={h}")));
    }
    Ok((h as usize, w as usize, i.i64("interp")?))
}

fn infer_cvresize(d: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    nhwc(d.name, &ins[0].shape, false)?;
    let (oh, ow, _) = cvresize_params(&Invocation::params(d, a))?;
    Ok(vec![Meta { shape: resized_shape(&ins[0].shape, oh, ow), ..ins[0].clone() }])
}

fn cvresize_forward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let x = i.x(0)?;
    nhwc(i.name(), x.shape(), false)?;
    let (oh, ow, interp) = cvresize_params(i)?;
    one(resize(i.def, x, oh, ow, interp))
}

/// `(x, y, width, height)` of a crop, checked against the image.
fn crop_box(i: &Invocation<'_>, s: &Shape) -> Result<[usize; 4]> {
    let (_, h, w, _) = nhwc(i.name(), s, true)?;
    let v = [i.i64("x")?, i.i64("y")?, i.i64("width")?, i.i64("height")?];
    if v.iter().any(|&k| k < 0) || v[2] == 0 || v[3] == 0 || (v[0] + v[2]) as usize > w || (v[1] + v[3]) as usize > h {
        return Err(Error::value(
            i.name(),
            format!("crop x={}, y={}, width={}, height={} does not fit an image of {h}x{w}", v[0], v[1], v[2], v[3]),
        ));
    }
    Ok(v.map(|k| k as usize))
}

fn infer_crop(d: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let b = crop_box(&Invocation::params(d, a), &ins[0].shape)?;
    Ok(vec![Meta { shape: resized_shape(&ins[0].shape, b[3], b[2]), ..ins[0].clone() }])
}

/// `x[y:y+height, x:x+width]` of an HWC/NHWC image.
pub fn crop(x: &NDArray, bx: [usize; 4]) -> Result<NDArray> {
    let def = &DEFS[5];
    let (n, h, w, c) = nhwc(def.name, x.shape(), true)?;
    let out = NDArray::empty(resized_shape(x.shape(), bx[3], bx[2]), x.dtype(), x.ctx())?;
    let nums = [n, h, w, c, bx[0], bx[1], bx[2], bx[3]].iter().map(|&v| v as f64).collect();
    run(def, x, out, nums)
}

fn crop_grad(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    let (x, g) = (&a.inputs[0], &a.out_grads[0]);
    let out = x.empty_like()?;
    push_call(OpCall::new(&DEFS[6], &[g], &[&out]).with_nums(a.nums))?;
    Ok(vec![Some(out)])
}

// ------------------------------------------------------------------ colour

/// AlexNet-style PCA lighting noise with the given alphas (3 values).
pub fn adjust_lighting(x: &NDArray, alpha: &[f64]) -> Result<NDArray> {
    let def = &DEFS[7];
    let (_, _, _, c) = rgb_or_gray(def.name, x.shape())?;
    if alpha.len() != 3 {
        return Err(Error::value(def.name, format!("alpha needs 3 values (R, G, B), got {}", alpha.len())));
    }
    let mut nums = vec![c as f64];
    nums.extend_from_slice(alpha);
    run(def, x, x.empty_like()?, nums)
}

/// A seed for a random image operator, exact in an f64.
fn seed(x: &NDArray) -> f64 {
    (crate::ops::random::next_seed(x.ctx()) >> 11) as f64
}

/// Random enhancement `kind` (0 brightness, 1 contrast, 2 saturation, 3 hue)
/// with a factor uniform in `[lo, hi]`.
fn random_enhance(def: &'static OpDef, x: &NDArray, lo: f64, hi: f64) -> Result<NDArray> {
    let (_, h, w, c) = rgb_or_gray(def.name, x.shape())?;
    if lo > hi || lo < 0.0 && !def.name.ends_with("hue") {
        return Err(Error::value(def.name, format!("need 0 <= min_factor <= max_factor, got {lo}, {hi}")));
    }
    run(def, x, x.empty_like()?, vec![(h * w) as f64, c as f64, lo, hi, seed(x)])
}

fn enhance_forward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    one(random_enhance(i.def, i.x(0)?, i.f64("min_factor")?, i.f64("max_factor")?))
}

fn jitter_forward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let x = i.x(0)?;
    let (_, h, w, c) = rgb_or_gray(i.name(), x.shape())?;
    let p = [i.f64("brightness")?, i.f64("contrast")?, i.f64("saturation")?, i.f64("hue")?];
    let nums = vec![(h * w) as f64, c as f64, p[0], p[1], p[2], p[3], seed(x)];
    one(run(i.def, x, x.empty_like()?, nums))
}

fn lighting_forward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let x = i.x(0)?;
    let (_, _, _, c) = rgb_or_gray(i.name(), x.shape())?;
    one(run(i.def, x, x.empty_like()?, vec![c as f64, i.f64("alpha_std")?, seed(x)]))
}

fn random_flip_forward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let x = i.x(0)?;
    let from_end = if i.name().ends_with("left_right") { 2 } else { 3 };
    one(flip_with(i.def, x, from_end, Some(seed(x))))
}

// ------------------------------------------------------------------ the table

const RANDOM: Grad = Grad::None("random image augmentation");
const ENHANCE: &[ParamDef] =
    &[param("min_factor", K::Float, None, "Minimum factor."), param("max_factor", K::Float, None, "Maximum factor.")];
const IMG: Example = Example { shapes: &[&[3, 4, 3]], attrs: "", range: (0.0, 1.0) };

/// A random image operator: one `data` input, output of the same shape, no gradient.
const fn random_def(
    name: &'static str,
    params: &'static [ParamDef],
    doc: &'static str,
    forward: ForwardFn,
    kernel: KernelFn,
) -> OpDef {
    OpDef {
        name,
        inputs: &["data"],
        params,
        doc,
        infer: Some(same_meta),
        forward,
        grad: RANDOM,
        cpu: KernelSlot::Call(kernel),
        ..OpDef::BASE
    }
}

/// The image operators.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "_image_to_tensor",
        inputs: &["data"],
        doc: "Converts an image (H, W, C) or batch (N, H, W, C) of values in [0, 255] to a float32 tensor (C, H, W) or (N, C, H, W) in [0, 1].",
        infer: Some(infer_to_tensor),
        forward: |i| one(to_tensor(i.x(0)?)),
        grad: Grad::None("converts image data"),
        cpu: KernelSlot::Call(cpu::to_tensor_kernel),
        example: Some(IMG),
        ..OpDef::BASE
    },
    OpDef {
        name: "_image_normalize",
        inputs: &["data"],
        params: &[
            param("mean", K::Floats, Some("(0.0, 0.0, 0.0, 0.0)"), "Mean of each channel (one value: all channels)."),
            param("std", K::Floats, Some("(1.0, 1.0, 1.0, 1.0)"), "Standard deviation of each channel."),
        ],
        doc: "Normalizes a tensor (C, H, W) or (N, C, H, W): `(x - mean[c]) / std[c]` per channel.",
        infer: Some(same_meta),
        forward: normalize_forward,
        grad: Grad::Fn(normalize_grad),
        cpu: KernelSlot::Call(cpu::normalize_kernel),
        example: Some(Example { shapes: &[&[3, 2, 2]], attrs: "mean=(0.1, 0.2, 0.3), std=(0.5, 2.0, 4.0)", range: (0.0, 1.0) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "_image_flip_left_right",
        inputs: &["data"],
        doc: "Mirrors an image (H, W, C) or batch (N, H, W, C) along the width.",
        infer: Some(same_meta),
        forward: |i| one(flip_left_right(i.x(0)?)),
        grad: Grad::Fn(flip_grad),
        cpu: KernelSlot::Call(cpu::flip_kernel),
        example: Some(IMG),
        ..OpDef::BASE
    },
    OpDef {
        name: "_image_flip_top_bottom",
        inputs: &["data"],
        doc: "Mirrors an image (H, W, C) or batch (N, H, W, C) along the height.",
        infer: Some(same_meta),
        forward: |i| one(flip_top_bottom(i.x(0)?)),
        grad: Grad::Fn(flip_grad),
        cpu: KernelSlot::Call(cpu::flip_kernel),
        example: Some(IMG),
        ..OpDef::BASE
    },
    OpDef {
        name: "_image_resize",
        inputs: &["data"],
        params: &[
            param("size", K::Ints, Some("()"), "New size: (width, height), or one int (see keep_ratio)."),
            param("keep_ratio", K::Bool, Some("False"), "With one int: resize the short edge to it, keeping the aspect ratio."),
            param("interp", K::Int, Some("1"), "OpenCV interpolation: 0 nearest, 1 bilinear, 2 bicubic, 3 area."),
        ],
        doc: "Resizes an image (H, W, C) or batch (N, H, W, C) as OpenCV's `cv::resize` does.",
        infer: Some(infer_resize),
        forward: resize_forward,
        grad: Grad::None("MXNet defines no gradient for image resizing"),
        cpu: KernelSlot::Call(cpu::resize_kernel),
        example: Some(Example { shapes: &[&[3, 4, 3]], attrs: "size=(5, 2)", range: (0.0, 1.0) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "_image_crop",
        inputs: &["data"],
        params: &[
            param("x", K::Int, None, "Left column of the crop."),
            param("y", K::Int, None, "Top row of the crop."),
            param("width", K::Int, None, "Width of the crop."),
            param("height", K::Int, None, "Height of the crop."),
        ],
        doc: "Crops an image (H, W, C) or batch (N, H, W, C) to `[y:y+height, x:x+width]`.",
        infer: Some(infer_crop),
        forward: |i| {
            let x = i.x(0)?;
            one(crop(x, crop_box(i, x.shape())?))
        },
        grad: Grad::Fn(crop_grad),
        cpu: KernelSlot::Call(cpu::crop_kernel),
        example: Some(Example { shapes: &[&[3, 4, 2]], attrs: "x=1, y=1, width=2, height=2", range: (0.0, 1.0) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "_backward_image_crop",
        inputs: &["ograd"],
        doc: "Gradient of `_image_crop`: the output gradient placed in the crop box, zeros elsewhere.",
        forward: |i| Err(Error::value(i.name(), "is run by autograd only")),
        grad: Grad::None("a backward operator"),
        cpu: KernelSlot::Call(cpu::crop_backward_kernel),
        ..OpDef::BASE
    },
    OpDef {
        name: "_image_adjust_lighting",
        inputs: &["data"],
        params: &[param("alpha", K::Floats, None, "The lighting alphas for the R, G, B channels.")],
        doc: "Adds AlexNet-style PCA lighting noise `eigvec . (alpha * eigval)` to an RGB image (H, W, 3).",
        infer: Some(same_meta),
        forward: |i| {
            let a = i.floats("alpha")?.ok_or_else(|| Error::value(i.name(), "required parameter 'alpha' is missing"))?;
            one(adjust_lighting(i.x(0)?, &a))
        },
        grad: Grad::None("MXNet passes image colour adjustments through unchanged"),
        cpu: KernelSlot::Call(cpu::lighting_kernel),
        ..OpDef::BASE
    },
    random_def(
        "_image_random_brightness",
        ENHANCE,
        "Multiplies an image (H, W, C) by a factor drawn uniformly from [min_factor, max_factor].",
        enhance_forward,
        cpu::enhance_kernel,
    ),
    random_def(
        "_image_random_contrast",
        ENHANCE,
        "Blends an image (H, W, C) with its mean grey level by a factor drawn from [min_factor, max_factor].",
        enhance_forward,
        cpu::enhance_kernel,
    ),
    random_def(
        "_image_random_saturation",
        ENHANCE,
        "Blends an image (H, W, C) with its grey version by a factor drawn from [min_factor, max_factor].",
        enhance_forward,
        cpu::enhance_kernel,
    ),
    random_def(
        "_image_random_hue",
        ENHANCE,
        "Rotates the hue of an RGB image (H, W, 3) by a fraction of a turn drawn from [min_factor, max_factor].",
        enhance_forward,
        cpu::enhance_kernel,
    ),
    random_def(
        "_image_random_color_jitter",
        &[
            param("brightness", K::Float, None, "How much to jitter brightness."),
            param("contrast", K::Float, None, "How much to jitter contrast."),
            param("saturation", K::Float, None, "How much to jitter saturation."),
            param("hue", K::Float, None, "How much to jitter hue."),
        ],
        "Applies brightness, contrast, saturation and hue jitter to an image (H, W, C) in a random order.",
        jitter_forward,
        cpu::jitter_kernel,
    ),
    random_def(
        "_image_random_lighting",
        &[param("alpha_std", K::Float, Some("0.05"), "Standard deviation of the lighting alphas.")],
        "Adds AlexNet-style PCA lighting noise with alphas drawn from N(0, alpha_std) to an RGB image.",
        lighting_forward,
        cpu::random_lighting_kernel,
    ),
    random_def(
        "_image_random_flip_left_right",
        &[],
        "Mirrors an image (H, W, C) along the width with probability 1/2.",
        random_flip_forward,
        cpu::random_flip_kernel,
    ),
    random_def(
        "_image_random_flip_top_bottom",
        &[],
        "Mirrors an image (H, W, C) along the height with probability 1/2.",
        random_flip_forward,
        cpu::random_flip_kernel,
    ),
    OpDef {
        name: "_cvimresize",
        inputs: &["src"],
        params: &[
            param("w", K::Int, None, "Width of the resized image."),
            param("h", K::Int, None, "Height of the resized image."),
            param("interp", K::Int, Some("1"), "OpenCV interpolation: 0 nearest, 1 bilinear, 2 bicubic, 3 area."),
        ],
        doc: "Resizes an image (H, W, C) to (h, w, C) as OpenCV's `cv::resize` does (`mx.image.imresize`).",
        infer: Some(infer_cvresize),
        forward: cvresize_forward,
        grad: Grad::None("MXNet defines no gradient for image resizing"),
        cpu: KernelSlot::Call(cpu::resize_kernel),
        ..OpDef::BASE
    },
];
