//! `im2col` and `col2im`: the patch extraction a convolution runs on (MXNet's operators
//! of the same names), on the convolution's own kernels.
//!
//! `im2col` turns `(N, C, *spatial)` into `(N, C·∏kernel, L)`, one column per output
//! position; `col2im` adds such columns back into an `(N, C, *output_size)` image. Each
//! is the other's adjoint, so each one's gradient is the other.

use super::cpu::{col2im, im2col, with_conv_dtype};
use super::{fmt_dims, kernel_of, tuple, Geom};
use crate::autograd::{needs_record, record};
use crate::engine::OpFailure;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    one, param, push_call, Attrs, Example, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamDef, ParamKind as K,
};
use crate::shape::Shape;
use crate::DType;
use num_traits::Zero;

const WINDOW: [ParamDef; 4] = [
    param("kernel", K::Shape, None, "Patch size: (w,), (h, w) or (d, h, w)."),
    param("stride", K::Shape, Some("()"), "Stride per spatial axis (default 1)."),
    param("dilate", K::Shape, Some("()"), "Dilation per spatial axis (default 1)."),
    param("pad", K::Shape, Some("()"), "Zero padding on both sides per spatial axis (default 0)."),
];
const IM2COL_PARAMS: &[ParamDef] = &WINDOW;
const COL2IM_PARAMS: &[ParamDef] = &[
    param("output_size", K::Shape, None, "Spatial size of the image the columns are added into."),
    WINDOW[0],
    WINDOW[1],
    WINDOW[2],
    WINDOW[3],
];

/// The two operators.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "im2col",
        inputs: &["data"],
        params: IM2COL_PARAMS,
        doc: "Sliding patches of `data` (N, C, *spatial) as columns: (N, C·∏kernel, number of positions).",
        forward: |i| one(unfold(i.x(0)?, &window(i.def, i.attrs, i.x(0)?.dims(), false)?, true)),
        infer: Some(infer),
        cpu: KernelSlot::Call(kernel),
        example: Some(Example { shapes: &[&[1, 2, 3, 3]], attrs: "kernel=(2, 2)", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "col2im",
        inputs: &["data"],
        params: COL2IM_PARAMS,
        doc: "Adds columns (N, C·∏kernel, positions) back into an image (N, C, *output_size): overlapping \
              patches sum (the adjoint of `im2col`).",
        forward: |i| one(unfold(i.x(0)?, &window(i.def, i.attrs, i.x(0)?.dims(), true)?, false)),
        infer: Some(infer),
        cpu: KernelSlot::Call(kernel),
        example: Some(Example { shapes: &[&[1, 8, 4]], attrs: "output_size=(3, 3), kernel=(2, 2)", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
];

/// The window of a call and the shapes on both sides: image (N, C, *spatial) and
/// columns (N, C·∏kernel, positions).
#[derive(Clone)]
struct Window {
    geom: Geom,
    image: Shape,
    cols: Shape,
}

fn window(def: &'static OpDef, a: &Attrs, dims: &[usize], from_cols: bool) -> Result<Window> {
    let (name, i) = (def.name, Invocation::params(def, a));
    let kernel = kernel_of(&i)?;
    let nk = kernel.len();
    let (stride, dilate, pad) =
        (tuple(&i, "stride", &kernel, 1, 1)?, tuple(&i, "dilate", &kernel, 1, 1)?, tuple(&i, "pad", &kernel, 0, 0)?);
    let ksize: usize = kernel.iter().product();
    let (n, c, spatial) = if from_cols {
        let out = tuple(&i, "output_size", &kernel, 0, 1)?;
        if dims.len() != 3 || !dims[1].is_multiple_of(ksize) {
            return Err(Error::shape(
                name,
                &[&Shape::from(dims.to_vec())],
                format!("data must be (N, C·{ksize}, positions) for kernel {}", fmt_dims(&kernel)),
            ));
        }
        (dims[0], dims[1] / ksize, out)
    } else {
        if dims.len() != nk + 2 {
            return Err(Error::shape(
                name,
                &[&Shape::from(dims.to_vec())],
                format!("data must have {} axes (N, C and {nk} spatial) for kernel {}", nk + 2, fmt_dims(&kernel)),
            ));
        }
        (dims[0], dims[1], dims[2..].to_vec())
    };
    let mut outd = Vec::with_capacity(nk);
    for j in 0..nk {
        let span = dilate[j] * (kernel[j] - 1) + 1;
        if spatial[j] + 2 * pad[j] < span {
            return Err(Error::value(
                name,
                format!(
                    "kernel {} (dilated) does not fit spatial size {} with pad {:?}",
                    fmt_dims(&kernel),
                    fmt_dims(&spatial),
                    pad
                ),
            ));
        }
        outd.push((spatial[j] + 2 * pad[j] - span) / stride[j] + 1);
    }
    let positions: usize = outd.iter().product();
    if from_cols && dims[2] != positions {
        return Err(Error::shape(
            name,
            &[&Shape::from(dims.to_vec())],
            format!("{} columns needed for output_size {} and this window", positions, fmt_dims(&spatial)),
        ));
    }
    // front-padded to three spatial axes, as the convolution kernels take them
    let three = |v: &[usize], fill: usize| {
        let mut t = [fill; 3];
        t[3 - nk..].copy_from_slice(v);
        t
    };
    let geom = Geom {
        n,
        c,
        o: c,
        groups: 1,
        ind: three(&spatial, 1),
        outd: three(&outd, 1),
        k: three(&kernel, 1),
        s: three(&stride, 1),
        d: three(&dilate, 1),
        p: three(&pad, 0),
    };
    let mut image = vec![n, c];
    image.extend(&spatial);
    Ok(Window { geom, image: Shape::from(image), cols: Shape::from(vec![n, c * ksize, positions]) })
}

/// The kernels' dtypes (the convolution's).
fn check_dtype(name: &str, dt: DType) -> Result<()> {
    if matches!(dt, DType::F32 | DType::F64) {
        Ok(())
    } else {
        Err(Error::dtype(name, format!("takes float32 or float64, got {dt:?}")))
    }
}

fn infer(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let to_cols = def.name == "im2col";
    let w = window(def, a, ins[0].shape.dims(), !to_cols)?;
    check_dtype(def.name, ins[0].dtype)?;
    Ok(vec![Meta { shape: if to_cols { w.cols } else { w.image }, ..ins[0].clone() }])
}

/// `im2col` (`to_cols`) or `col2im` of `x` over window `w`; each records the other as its gradient.
fn unfold(x: &NDArray, w: &Window, to_cols: bool) -> Result<NDArray> {
    let def = &DEFS[usize::from(!to_cols)];
    check_dtype(def.name, x.dtype())?;
    let shape = if to_cols { w.cols.clone() } else { w.image.clone() };
    let out = NDArray::empty(shape, x.dtype(), x.ctx())?;
    if out.size() > 0 {
        push_call(OpCall::new(def, &[x], &[&out]).with_nums(&w.geom.to_nums(false)).with_ints(&[i64::from(to_cols)]))?;
    }
    if needs_record(&[x]) {
        let back = w.clone();
        record(def.name, &[x], &[&out], Box::new(move |g| Ok(vec![Some(unfold(&g[0], &back, !to_cols)?)])));
    }
    Ok(out)
}

/// nums: the window's [`Geom`]; ints\[0\]: 1 for `im2col`, 0 for `col2im`.
fn kernel(call: &OpCall, k: &crate::storage::Kernel) -> std::result::Result<(), OpFailure> {
    let (g, _) = Geom::from_nums(&call.nums);
    let (ip, op, rows) = (g.c * g.ip(), g.op(), g.rows());
    with_conv_dtype!(k.in_dtype(0), T, {
        let (x, o) = (k.input::<T>(0), k.output::<T>(0));
        if call.ints[0] != 0 {
            for s in 0..g.n {
                im2col(&g, &x[s * ip..(s + 1) * ip], &mut o[s * rows * op..(s + 1) * rows * op], op);
            }
        } else {
            o.fill(T::zero());
            for s in 0..g.n {
                col2im(&g, &x[s * rows * op..(s + 1) * rows * op], &mut o[s * ip..(s + 1) * ip], op);
            }
        }
    });
    Ok(())
}
