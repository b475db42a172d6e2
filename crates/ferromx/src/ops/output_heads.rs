//! MXNet's output layers for symbolic training: `SoftmaxOutput` (alias `Softmax`) and
//! `LinearRegressionOutput`, `LogisticRegressionOutput`, `MAERegressionOutput`, plus the
//! small legacy selections `argmax_channel` and `batch_take`.
//!
//! Why table operators: a `mx.mod.Module` script ends its graph in one of these heads,
//! so they must exist as graph nodes (`mx.sym.SoftmaxOutput`, graph JSON). Their backward
//! ignores the head gradient (unless `out_grad`) and gives the loss gradient: for
//! `SoftmaxOutput` `softmax - one_hot(label)` with MXNet's `ignore_label`,
//! `normalization`, `smooth_alpha` and `multi_output` rules (probability labels of the
//! data's shape give `softmax - label`); for the regressions `out - label` (or its sign)
//! over the outputs per example. Forwards are one kernel each; gradients one engine op
//! (`_backward_SoftmaxOutput`) or a few elementwise ones.

use crate::autograd::{needs_record, record};
use crate::dtype::{DType, Elem};
use crate::engine::{ErrorKind, OpFailure};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    one, param, push_call, Attrs, Grad, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamDef, ParamKind as K,
};
use crate::ops::{self, BinOp, IndexMode, UnaryOp};
use crate::storage::Kernel;

const SM_PARAMS: &[ParamDef] = &[
    param("grad_scale", K::Float, Some("1.0"), "Scales the gradient."),
    param("ignore_label", K::Float, Some("-1.0"), "Label whose rows get no gradient (with use_ignore)."),
    param("multi_output", K::Bool, Some("False"), "Softmax over axis 1 of (n, k, ...) with labels (n, ...)."),
    param("use_ignore", K::Bool, Some("False"), "Give rows labelled ignore_label no gradient."),
    param("preserve_shape", K::Bool, Some("False"), "Softmax over the last axis (labels: data.shape[:-1])."),
    param("normalization", K::Str, Some("'null'"), "'null', 'batch' or 'valid' (divide by the non-ignored labels)."),
    param("out_grad", K::Bool, Some("False"), "Multiply the gradient by the head gradient."),
    param("smooth_alpha", K::Float, Some("0.0"), "Label smoothing: the target is 1 - alpha, alpha/(k-1) elsewhere."),
];
const REG_PARAMS: &[ParamDef] = &[param("grad_scale", K::Float, Some("1.0"), "Scales the gradient.")];

/// Softmax rows: `outer` × `inner` rows of `k` classes, strided by `inner`.
fn layout(d: &[usize], multi: bool, preserve: bool) -> (usize, usize, usize) {
    let size: usize = d.iter().product();
    let n = d.first().copied().unwrap_or(1).max(1);
    if multi && d.len() >= 2 {
        (d[0], d[1], size / (d[0] * d[1]).max(1))
    } else if preserve {
        let k = d.last().copied().unwrap_or(1).max(1);
        (size / k, k, 1)
    } else {
        (n, size / n, 1)
    }
}

fn infer_softmax_output(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let x = ins.first().ok_or_else(|| Error::value(def.name, "needs data and label"))?;
    let p = Invocation::params(def, a);
    if !x.dtype.is_float() {
        return Err(Error::dtype(def.name, format!("takes float data, got {}", x.dtype)));
    }
    if x.shape.ndim() == 0 || (p.bool("multi_output")? && x.shape.ndim() < 2) {
        return Err(Error::shape(def.name, &[&x.shape], "data needs a batch axis (and a class axis for multi_output)"));
    }
    norm_code(&p)?;
    if let Some(l) = ins.get(1) {
        let d = x.shape.dims();
        // MXNet's label shapes: (n, ...) without the class axis 1 for multi_output, else
        // data.shape[:-1]; or data's own shape (probabilities)
        let want =
            if p.bool("multi_output")? { x.shape.size() / d[1].max(1) } else { x.shape.size() / d[d.len() - 1].max(1) };
        if l.shape != x.shape && l.shape.size() != want {
            return Err(Error::shape(
                def.name,
                &[&x.shape, &l.shape],
                format!("label must hold {want} class indices (data's shape without the class axis) or probabilities of data's shape"),
            ));
        }
    }
    Ok(vec![x.clone()])
}

fn norm_code(p: &Invocation<'_>) -> Result<f64> {
    match p.str("normalization")?.trim_matches('\'') {
        "null" => Ok(0.0),
        "batch" => Ok(1.0),
        "valid" => Ok(2.0),
        o => Err(Error::value(p.name(), format!("normalization must be 'null', 'batch' or 'valid', got '{o}'"))),
    }
}

/// The label's shape from the data's (MXNet's `SoftmaxOutputShape`): without axis 1 for
/// `multi_output`, else without the last axis.
fn softmax_label_shape(
    i: &Invocation<'_>,
    data: Option<&crate::shape::Shape>,
) -> Result<Vec<(&'static str, crate::shape::Shape)>> {
    let Some(x) = data else { return Ok(Vec::new()) };
    let d = x.dims();
    if d.len() < 2 && i.bool("multi_output")? || d.is_empty() {
        return Ok(Vec::new());
    }
    let mut l = d.to_vec();
    l.remove(if i.bool("multi_output")? { 1 } else { d.len() - 1 });
    Ok(vec![("label", crate::shape::Shape::new(&l))])
}

/// The regression label's shape: the data's.
fn regression_label_shape(
    _: &Invocation<'_>,
    data: Option<&crate::shape::Shape>,
) -> Result<Vec<(&'static str, crate::shape::Shape)>> {
    Ok(data.map(|x| vec![("label", x.clone())]).unwrap_or_default())
}

/// `SoftmaxOutput`'s forward and recorded backward.
fn softmax_output(i: &Invocation<'_>) -> Result<NDArray> {
    let (x, label) = (i.x(0)?, i.x(1)?);
    infer_softmax_output(i.def, i.attrs, &[Meta::of(x), Meta::of(label)])?;
    let (multi, preserve) = (i.bool("multi_output")?, i.bool("preserve_shape")?);
    let (outer, k, inner) = layout(x.dims(), multi, preserve);
    let out = x.empty_like()?;
    let dims = [outer as f64, k as f64, inner as f64];
    if out.size() > 0 {
        push_call(OpCall::new(i.def, &[x], &[&out]).with_nums(&dims))?;
    }
    if needs_record(&[x, label]) {
        let mode = if label.shape() == x.shape() {
            0.0
        } else if multi {
            1.0
        } else {
            2.0
        };
        let mut nums = dims.to_vec();
        let b = |v: bool| f64::from(u8::from(v));
        nums.extend([
            i.f64("grad_scale")?,
            i.f64("ignore_label")?,
            b(i.bool("use_ignore")?),
            norm_code(i)?,
            i.f64("smooth_alpha")?,
            mode,
            b(i.bool("out_grad")?),
        ]);
        let (o, l, use_og) = (out.clone(), label.clone(), i.bool("out_grad")?);
        record(
            i.name(),
            &[x, label],
            &[&out],
            Box::new(move |g| {
                let def = crate::opdef::find("_backward_SoftmaxOutput")
                    .ok_or_else(|| Error::value("SoftmaxOutput", "backward operator missing"))?;
                let dx = o.empty_like()?;
                let mut ins = vec![&o, &l];
                if use_og {
                    ins.push(&g[0]);
                }
                if dx.size() > 0 {
                    push_call(OpCall::new(def, &ins, &[&dx]).with_nums(&nums))?;
                }
                Ok(vec![Some(dx), Some(ops::zeros_like(&l)?)])
            }),
        );
    }
    Ok(out)
}

fn with_real<R>(
    dt: DType,
    name: &str,
    f32f: impl FnOnce() -> R,
    f64f: impl FnOnce() -> R,
) -> std::result::Result<R, OpFailure> {
    match dt {
        DType::F32 => Ok(f32f()),
        DType::F64 => Ok(f64f()),
        d => Err(OpFailure::new(ErrorKind::Runtime, format!("{name} kernels take float32/float64, got {d}"))),
    }
}

/// nums: outer, k, inner. Softmax over `k` with the row maximum subtracted.
fn softmax_output_kernel(c: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let (outer, kk, inner) = (c.nums[0] as usize, c.nums[1] as usize, c.nums[2] as usize);
    fn run<T: Elem + num_traits::Float>(x: &[T], o: &mut [T], outer: usize, k: usize, inner: usize) {
        for a in 0..outer {
            for j in 0..inner {
                let at = |c: usize| (a * k + c) * inner + j;
                let m = (0..k).map(|c| x[at(c)]).fold(T::neg_infinity(), T::max);
                let mut s = T::zero();
                for c in 0..k {
                    let e = (x[at(c)] - m).exp();
                    o[at(c)] = e;
                    s = s + e;
                }
                for c in 0..k {
                    o[at(c)] = o[at(c)] / s;
                }
            }
        }
    }
    with_real(
        k.in_dtype(0),
        "SoftmaxOutput",
        || run::<f32>(k.input(0), k.output(0), outer, kk, inner),
        || run::<f64>(k.input(0), k.output(0), outer, kk, inner),
    )
}

/// nums: outer, k, inner, grad_scale, ignore_label, use_ignore, normalization (0 null,
/// 1 batch, 2 valid), smooth_alpha, mode (0 probability labels, 1 multi_output, 2 rows),
/// out_grad. Inputs: the softmax output, the label, the head gradient (with out_grad).
fn softmax_output_backward(c: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let n = &c.nums;
    let (outer, kk, inner) = (n[0] as usize, n[1] as usize, n[2] as usize);
    let (scale, ignore, use_ignore, norm, alpha, mode, og) =
        (n[3], n[4] as i64, n[5] != 0.0, n[6] as u8, n[7], n[8] as u8, n[9] != 0.0);
    let label: Vec<f64> = crate::with_dtype!(k.in_dtype(1), L, k.input::<L>(1).iter().map(|v| v.to_f64()).collect());
    fn run<T: Elem + num_traits::Float>(
        k: &Kernel,
        label: &[f64],
        dims: (usize, usize, usize),
        (scale, ignore, use_ignore, norm, alpha, mode, og): (f64, i64, bool, u8, f64, u8, bool),
    ) {
        let (outer, kk, inner) = dims;
        let (p, g) = (k.input::<T>(0), k.output::<T>(0));
        if mode == 0 {
            for (i, v) in g.iter_mut().enumerate() {
                *v = T::from_f64((p[i].to_f64() - label[i]) * scale);
            }
        } else {
            // MXNet counts the labels (flattened to one axis unless multi_output) for 'batch'
            let valid = match norm {
                1 if mode == 1 => outer as f64,
                1 => label.len() as f64,
                2 => (label.iter().filter(|&&l| l as i64 != ignore).count().max(1)) as f64,
                _ => 1.0,
            };
            let per = if mode == 1 && norm != 2 { inner as f64 } else { 1.0 };
            let s = scale / per / valid;
            let smooth = if mode == 2 { alpha } else { 0.0 };
            let off = if kk > 1 { smooth / (kk - 1) as f64 } else { 0.0 };
            for a in 0..outer {
                for j in 0..inner {
                    let lab = label[a * inner + j] as i64;
                    for cc in 0..kk {
                        let at = (a * kk + cc) * inner + j;
                        let v = if use_ignore && lab == ignore {
                            0.0
                        } else if cc as i64 == lab {
                            p[at].to_f64() - 1.0 + smooth
                        } else {
                            p[at].to_f64() - off
                        };
                        g[at] = T::from_f64(v * s);
                    }
                }
            }
        }
        if og {
            let h = k.input::<T>(2);
            for (v, &hv) in g.iter_mut().zip(h) {
                *v = *v * hv;
            }
        }
    }
    let args = (scale, ignore, use_ignore, norm, alpha, mode, og);
    with_real(
        k.in_dtype(0),
        "SoftmaxOutput",
        || run::<f32>(k, &label, (outer, kk, inner), args),
        || run::<f64>(k, &label, (outer, kk, inner), args),
    )
}

/// The regression heads: forward (a copy, or the sigmoid) and the recorded gradient
/// `grad_scale / outputs per example · (out - label)` (its sign for MAE).
fn regression(i: &Invocation<'_>) -> Result<NDArray> {
    let (x, label) = (i.x(0)?, i.x(1)?);
    if label.size() != x.size() {
        return Err(Error::shape(i.name(), &[x.shape(), label.shape()], "data and label must have the same size"));
    }
    let out = x.empty_like()?;
    let logistic = i.def.name == "LogisticRegressionOutput";
    if out.size() > 0 {
        let call = OpCall::new(i.def, &[x], &[&out]);
        push_call(if logistic { call.with_ints(&[UnaryOp::Sigmoid as i64]) } else { call })?;
    }
    if needs_record(&[x, label]) {
        let per = label.size() / label.dims().first().copied().unwrap_or(1).max(1);
        let s = i.f64("grad_scale")? / per.max(1) as f64;
        let (o, l, mae) = (out.clone(), label.clone(), i.def.name == "MAERegressionOutput");
        record(
            i.name(),
            &[x, label],
            &[&out],
            Box::new(move |_g| {
                let lr = ops::reshape_to(&l, o.shape().clone())?;
                let d = ops::sub(&o, &ops::astype(&lr, o.dtype())?)?;
                let d = if mae { ops::unary(UnaryOp::Sign, &d)? } else { d };
                Ok(vec![Some(ops::scalar_op(BinOp::Mul, &d, s, false)?), Some(ops::zeros_like(&l)?)])
            }),
        );
    }
    Ok(out)
}

fn regression_kernel(c: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    if c.def.name == "LogisticRegressionOutput" {
        crate::ops::unary::unary_kernel(c, k)
    } else {
        crate::ops::copy_kernel(c, k)
    }
}

fn infer_regression(def: &'static OpDef, _: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let x = ins.first().ok_or_else(|| Error::value(def.name, "needs data and label"))?;
    if let Some(l) = ins.get(1) {
        if l.shape.size() != x.shape.size() {
            return Err(Error::shape(def.name, &[&x.shape, &l.shape], "data and label must have the same size"));
        }
    }
    if !x.dtype.is_float() {
        return Err(Error::dtype(def.name, format!("takes float data, got {}", x.dtype)));
    }
    Ok(vec![x.clone()])
}

macro_rules! regression_def {
    ($name:literal, $doc:literal) => {
        OpDef {
            name: $name,
            inputs: &["data", "label"],
            params: REG_PARAMS,
            doc: $doc,
            infer: Some(infer_regression),
            forward: |i| one(regression(i)),
            grad: Grad::Recorded,
            cpu: KernelSlot::Call(regression_kernel),
            graph: crate::opdef::GraphForm {
                param_shapes: Some(regression_label_shape),
                ..crate::opdef::GraphForm::PLAIN
            },
            ..OpDef::BASE
        }
    };
}

/// The output heads.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "SoftmaxOutput",
        aliases: crate::opdef::Aliases { nd: &["Softmax"], np: &[], npx: &[], fluent: false },
        inputs: &["data", "label"],
        params: SM_PARAMS,
        doc: "Softmax of `data` (over the flattened trailing axes, the last with preserve_shape, \
              axis 1 with multi_output); backward gives the cross-entropy gradient \
              `softmax - one_hot(label)` (ignoring the head gradient unless out_grad).",
        infer: Some(infer_softmax_output),
        forward: |i| one(softmax_output(i)),
        grad: Grad::Recorded,
        cpu: KernelSlot::Call(softmax_output_kernel),
        graph: crate::opdef::GraphForm { param_shapes: Some(softmax_label_shape), ..crate::opdef::GraphForm::PLAIN },
        ..OpDef::BASE
    },
    OpDef {
        name: "_backward_SoftmaxOutput",
        inputs: &["out", "label", "out_grad"],
        doc: "Gradient of `SoftmaxOutput` (pushed by its backward with its settings).",
        infer: Some(|def, _, ins| {
            ins.first().cloned().map(|m| vec![m]).ok_or_else(|| Error::value(def.name, "needs out and label"))
        }),
        forward: |i| Err(Error::value(i.name(), "is pushed by SoftmaxOutput's backward only")),
        grad: Grad::None("a gradient operator"),
        cpu: KernelSlot::Call(softmax_output_backward),
        ..OpDef::BASE
    },
    regression_def!(
        "LinearRegressionOutput",
        "Identity forward; backward `(out - label) · grad_scale / outputs per example`."
    ),
    regression_def!(
        "LogisticRegressionOutput",
        "Sigmoid forward; backward `(out - label) · grad_scale / outputs per example`."
    ),
    regression_def!(
        "MAERegressionOutput",
        "Identity forward; backward `sign(out - label) · grad_scale / outputs per example`."
    ),
    OpDef {
        name: "argmax_channel",
        aliases: crate::opdef::Aliases { nd: &[], np: &[], npx: &[], fluent: true },
        inputs: &["data"],
        doc: "Index of the maximum over axis 1 (the channels), in data's dtype (MXNet's legacy operator).",
        infer: Some(|def, _, ins| {
            let x = ins.first().ok_or_else(|| Error::value(def.name, "needs data"))?;
            let d = x.shape.dims();
            if d.len() < 2 {
                return Err(Error::shape(def.name, &[&x.shape], "data needs a channel axis (axis 1)"));
            }
            let mut o = d.to_vec();
            o.remove(1);
            Ok(vec![Meta { shape: crate::shape::Shape::new(&o), ..x.clone() }])
        }),
        forward: |i| {
            let x = i.x(0)?;
            if x.shape().ndim() < 2 {
                return Err(Error::shape(i.name(), &[x.shape()], "data needs a channel axis (axis 1)"));
            }
            one(ops::argmax(x, Some(1), false, false, x.dtype()))
        },
        grad: Grad::None("an index"),
        cpu: KernelSlot::Composite,
        ..OpDef::BASE
    },
    OpDef {
        name: "batch_take",
        inputs: &["a", "indices"],
        doc: "`a[i, indices[i]]` for each row `i` of a 2-d `a` (indices clipped).",
        infer: Some(|def, _, ins| {
            let [a, idx] = ins else { return Err(Error::value(def.name, "needs a and indices")) };
            if a.shape.ndim() != 2 || idx.shape.size() != a.shape.dims()[0] {
                return Err(Error::shape(
                    def.name,
                    &[&a.shape, &idx.shape],
                    "a must be 2-d and indices hold one index per row",
                ));
            }
            Ok(vec![Meta { shape: idx.shape.clone(), ..a.clone() }])
        }),
        forward: |i| {
            let (a, idx) = (i.x(0)?, i.x(1)?);
            let flat = ops::reshape_to(idx, crate::shape::Shape::new(&[idx.size()]))?;
            let r = ops::pick(a, &flat, -1, false, IndexMode::Clip)?;
            one(ops::reshape_to(&r, idx.shape().clone()))
        },
        cpu: KernelSlot::Composite,
        ..OpDef::BASE
    },
];
