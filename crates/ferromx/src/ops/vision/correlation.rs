//! `Correlation` (FlowNet, Dosovitskiy et al. 2015): the correlation of two feature maps
//! over a neighbourhood of displacements.
//!
//! For output position (i, j) and displacement channel t, the patch of `data1` at
//! `(i·stride1 + max_displacement, j·stride1 + max_displacement)` (in zero-padded
//! coordinates) is compared with the patch of `data2` shifted by
//! `((t / grid - radius)·stride2, (t % grid - radius)·stride2)`: the mean over the
//! patch and the channels of their product (or of `|a - b|` when `is_multiply` is
//! false). The patch starts at that corner, as in MXNet's CPU kernel.

use super::{cast, check_float, float_kernel, CORR_BACKWARD_I, CORR_I};
use crate::autograd::{needs_record, record};
use crate::engine::OpFailure;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    one, param, push_call, Attrs, Example, Grad, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamDef, ParamKind as K,
};
use crate::ops::par::chunked;
use crate::shape::Shape;
use crate::storage::Kernel;
use num_traits::{One, Zero};

const PARAMS: &[ParamDef] = &[
    param("kernel_size", K::Int, Some("1"), "Patch size (odd)."),
    param("max_displacement", K::Int, Some("1"), "Largest displacement compared."),
    param("stride1", K::Int, Some("1"), "Stride over data1's positions."),
    param("stride2", K::Int, Some("1"), "Stride between compared displacements."),
    param("pad_size", K::Int, Some("0"), "Zero padding of both inputs on every side."),
    param("is_multiply", K::Bool, Some("True"), "Multiply the patches (else compare by absolute difference)."),
];

/// `Correlation`.
pub(super) const CORR: OpDef = OpDef {
    name: "Correlation",
    inputs: &["data1", "data2"],
    params: PARAMS,
    doc: "The correlation of two (N, C, H, W) feature maps over a grid of displacements (FlowNet): \
          output (N, (2·⌊max_displacement/stride2⌋+1)², H', W'); differentiable in both inputs.",
    infer: Some(infer),
    forward: |i| {
        let (a, b) = (i.x(0)?, i.x(1)?);
        let g = Geom::read(i, a.shape(), b.shape())?;
        check_float(i.name(), a.dtype())?;
        if a.dtype() != b.dtype() {
            return Err(Error::dtype(
                i.name(),
                format!("data1 and data2 differ in dtype: {} and {}", a.dtype(), b.dtype()),
            ));
        }
        crate::ops::check_ctx(i.name(), a, b)?;
        one(correlation(a, b, g))
    },
    cpu: KernelSlot::Call(corr_kernel),
    example: Some(Example { shapes: &[&[1, 2, 4, 5], &[1, 2, 4, 5]], attrs: "pad_size=1", range: (-1.0, 1.0) }),
    // MXNet's node has 2 hidden outputs (its kernel's intermediates)
    graph: crate::opdef::GraphForm {
        total: crate::opdef::OutputCount::Fixed(3),
        named_outputs: true,
        ..crate::opdef::GraphForm::PLAIN
    },
    ..OpDef::BASE
};

/// `_backward_Correlation`.
pub(super) const CORR_BACKWARD: OpDef = OpDef {
    name: "_backward_Correlation",
    inputs: &["out_grad", "data1", "data2"],
    outputs: &["data1_grad", "data2_grad"],
    params: PARAMS,
    doc: "Gradients of `Correlation` with respect to both inputs (pushed by its backward).",
    infer: Some(|def, _, ins| {
        if ins.len() != 3 {
            return Err(Error::value(def.name, "needs out_grad, data1 and data2"));
        }
        Ok(vec![ins[1].clone(), ins[2].clone()])
    }),
    forward: |i| {
        let (dy, a, b) = (i.x(0)?, i.x(1)?, i.x(2)?);
        let g = Geom::read(i, a.shape(), b.shape())?;
        if dy.shape() != &g.out_shape() {
            return Err(Error::shape(i.name(), &[dy.shape(), a.shape()], "out_grad must have the output's shape"));
        }
        let (da, db) = corr_backward(dy, a, b, g)?;
        Ok(vec![da, db])
    },
    grad: Grad::None("second-order gradients of Correlation are not implemented"),
    cpu: KernelSlot::Call(corr_backward_kernel),
    ..OpDef::BASE
};

/// Sizes: inputs (n, c, h, w); output (n, tc, th, tw).
#[derive(Clone, Copy)]
struct Geom {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    k: usize,
    md: usize,
    s1: usize,
    s2: usize,
    pad: usize,
    mul: bool,
    radius: usize,
    grid: usize,
    th: usize,
    tw: usize,
}

impl Geom {
    fn read(i: &Invocation<'_>, a: &Shape, b: &Shape) -> Result<Geom> {
        let &[n, c, h, w] = a.dims() else {
            return Err(Error::shape(i.name(), &[a, b], "data1 and data2 must be (N, C, H, W)"));
        };
        if a != b {
            return Err(Error::shape(i.name(), &[a, b], "data1 and data2 must have the same shape"));
        }
        let int = |k: &str, lo: i64| -> Result<usize> {
            let v = i.i64(k)?;
            if v < lo {
                return Err(Error::value(i.name(), format!("{k} must be at least {lo}, got {v}")));
            }
            Ok(v as usize)
        };
        let (k, md, s1, s2, pad) = (
            int("kernel_size", 1)?,
            int("max_displacement", 0)?,
            int("stride1", 1)?,
            int("stride2", 1)?,
            int("pad_size", 0)?,
        );
        if k % 2 == 0 {
            return Err(Error::value(i.name(), format!("kernel_size must be odd, got {k}")));
        }
        let border = md + (k - 1) / 2;
        let (hp, wp) = (h + 2 * pad, w + 2 * pad);
        if hp <= 2 * border || wp <= 2 * border {
            return Err(Error::shape(
                i.name(),
                &[a],
                format!(
                    "the neighbourhood and kernel do not fit: padded size ({hp}, {wp}) needs more than twice \
                     max_displacement + kernel_size/2 = {border}"
                ),
            ));
        }
        let radius = md / s2;
        Ok(Geom {
            n,
            c,
            h,
            w,
            k,
            md,
            s1,
            s2,
            pad,
            mul: i.bool("is_multiply")?,
            radius,
            grid: 2 * radius + 1,
            th: (hp - 2 * border).div_ceil(s1),
            tw: (wp - 2 * border).div_ceil(s1),
        })
    }
    fn out_shape(&self) -> Shape {
        Shape::new(&[self.n, self.grid * self.grid, self.th, self.tw])
    }
    fn ints(&self) -> [i64; 14] {
        let g = self;
        [g.n, g.c, g.h, g.w, g.k, g.md, g.s1, g.s2, g.pad, usize::from(g.mul), g.radius, g.grid, g.th, g.tw]
            .map(|v| v as i64)
    }
    fn from_call(call: &OpCall) -> Geom {
        let u = |k| call.us(k);
        Geom {
            n: u(0),
            c: u(1),
            h: u(2),
            w: u(3),
            k: u(4),
            md: u(5),
            s1: u(6),
            s2: u(7),
            pad: u(8),
            mul: u(9) != 0,
            radius: u(10),
            grid: u(11),
            th: u(12),
            tw: u(13),
        }
    }
    /// Padded-coordinate corners of data1's and data2's patches for output (t, i, j).
    fn corners(&self, t: usize, i: usize, j: usize) -> ((i64, i64), (i64, i64)) {
        let (x1, y1) = ((j * self.s1 + self.md) as i64, (i * self.s1 + self.md) as i64);
        let s2o = ((t % self.grid) as i64 - self.radius as i64) * self.s2 as i64;
        let s2p = ((t / self.grid) as i64 - self.radius as i64) * self.s2 as i64;
        ((y1, x1), (y1 + s2p, x1 + s2o))
    }
    /// The unpadded index within a channel plane of padded (y, x), or `None` in the padding.
    fn at(&self, y: i64, x: i64) -> Option<usize> {
        let (y, x) = (y - self.pad as i64, x - self.pad as i64);
        (y >= 0 && x >= 0 && (y as usize) < self.h && (x as usize) < self.w).then(|| y as usize * self.w + x as usize)
    }
}

fn infer(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let [x, y] = ins else { return Err(Error::value(def.name, "needs data1 and data2")) };
    let g = Geom::read(&Invocation::params(def, a), &x.shape, &y.shape)?;
    check_float(def.name, x.dtype)?;
    Ok(vec![Meta { shape: g.out_shape(), ..x.clone() }])
}

fn correlation(a: &NDArray, b: &NDArray, g: Geom) -> Result<NDArray> {
    let def = &super::DEFS[CORR_I];
    let out = NDArray::empty(g.out_shape(), a.dtype(), a.ctx())?;
    if out.size() > 0 {
        push_call(OpCall::new(def, &[a, b], &[&out]).with_ints(&g.ints()))?;
    }
    if needs_record(&[a, b]) {
        let (ac, bc) = (a.clone(), b.clone());
        record(
            def.name,
            &[a, b],
            &[&out],
            Box::new(move |dy| {
                let (da, db) = corr_backward(&dy[0], &ac, &bc, g)?;
                Ok(vec![Some(da), Some(db)])
            }),
        );
    }
    Ok(out)
}

fn corr_backward(dy: &NDArray, a: &NDArray, b: &NDArray, g: Geom) -> Result<(NDArray, NDArray)> {
    let (da, db) = (a.empty_like()?, b.empty_like()?);
    if da.size() > 0 {
        push_call(OpCall::new(&super::DEFS[CORR_BACKWARD_I], &[dy, a, b], &[&da, &db]).with_ints(&g.ints()))?;
    }
    Ok((da, db))
}

/// ints: see [`Geom::ints`].
fn corr_kernel(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let g = Geom::from_call(call);
    float_kernel!(k.in_dtype(0), T, {
        let (a, b, out) = (k.input::<T>(0), k.input::<T>(1), k.output::<T>(0));
        let (tc, tp, plane) = (g.grid * g.grid, g.th * g.tw, g.h * g.w);
        let sumelems = cast::<T>((g.k * g.k * g.c) as f64);
        chunked(out, 64, |start, o| {
            for (j, v) in o.iter_mut().enumerate() {
                let idx = start + j;
                let (n, t, p) = (idx / (tc * tp), (idx / tp) % tc, idx % tp);
                let ((y1, x1), (y2, x2)) = g.corners(t, p / g.tw, p % g.tw);
                let mut acc = T::zero();
                for dh in 0..g.k as i64 {
                    for dw in 0..g.k as i64 {
                        let (ia, ib) = (g.at(y1 + dh, x1 + dw), g.at(y2 + dh, x2 + dw));
                        for c in 0..g.c {
                            let base = (n * g.c + c) * plane;
                            let va = ia.map_or(T::zero(), |q| a[base + q]);
                            let vb = ib.map_or(T::zero(), |q| b[base + q]);
                            acc += if g.mul { va * vb } else { (va - vb).abs() };
                        }
                    }
                }
                *v = acc / sumelems;
            }
        });
    });
    Ok(())
}

/// Adds each output gradient into both inputs' patch cells (those not in the padding).
fn corr_backward_kernel(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let g = Geom::from_call(call);
    float_kernel!(k.in_dtype(1), T, {
        let (dy, a, b) = (k.input::<T>(0), k.input::<T>(1), k.input::<T>(2));
        let (da, db) = (k.output::<T>(0), k.output::<T>(1));
        da.fill(T::zero());
        db.fill(T::zero());
        let (tc, tp, plane) = (g.grid * g.grid, g.th * g.tw, g.h * g.w);
        let sumelems = cast::<T>((g.k * g.k * g.c) as f64);
        for n in 0..g.n {
            for t in 0..tc {
                for p in 0..tp {
                    let go = dy[(n * tc + t) * tp + p];
                    let ((y1, x1), (y2, x2)) = g.corners(t, p / g.tw, p % g.tw);
                    for dh in 0..g.k as i64 {
                        for dw in 0..g.k as i64 {
                            let (ia, ib) = (g.at(y1 + dh, x1 + dw), g.at(y2 + dh, x2 + dw));
                            for c in 0..g.c {
                                let base = (n * g.c + c) * plane;
                                let va = ia.map_or(T::zero(), |q| a[base + q]);
                                let vb = ib.map_or(T::zero(), |q| b[base + q]);
                                let (ga, gb) = if g.mul {
                                    (vb, va)
                                } else if va >= vb {
                                    (T::one(), -T::one())
                                } else {
                                    (-T::one(), T::one())
                                };
                                if let Some(q) = ia {
                                    da[base + q] += go * ga / sumelems;
                                }
                                if let Some(q) = ib {
                                    db[base + q] += go * gb / sumelems;
                                }
                            }
                        }
                    }
                }
            }
        }
    });
    Ok(())
}
