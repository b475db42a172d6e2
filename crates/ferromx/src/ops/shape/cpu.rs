//! Shape kernels over [`OpCall`]s.
//!
//! The view operators (`reshape`, `reshape_like`, `flatten`, `expand_dims`,
//! `squeeze`) run `ops::copy_kernel`, a contiguous copy into the inferred
//! shape: what a graph executor runs (MXNet's identity `FCompute`); the
//! imperative frontend returns a view sharing storage instead.
//!
//! Layouts in [`OpCall::ints`]:
//! - `broadcast_*`: none (input and output shapes are the views' shapes);
//! - `transpose`, `swapaxes`: the permutation;
//! - `concat`, `stack`: `[axis]` of the output;
//! - `split`: `[axis]` of the input (outputs are equal parts, in order);
//! - `slice_axis`: the index family's affine gather (`index::affine_ints`);
//! - `clip`: none; `nums` is `[a_min, a_max]`.

use crate::engine::OpFailure;
use crate::opdef::OpCall;
use crate::ops::binary::arith::Arith;
use crate::ops::par::{map1, planes, PAR_MIN};
use crate::shape::{as_plane_transpose, broadcast_copy, for_each_strided, transpose_rows, Shape};
use crate::storage::Kernel;
use crate::with_dtype;

type KResult = std::result::Result<(), OpFailure>;

/// Input 0 broadcast to output 0's shape.
pub(super) fn broadcast_kernel(_c: &OpCall, k: &Kernel) -> KResult {
    let (ishape, oshape) = (k.in_shape(0).clone(), k.out_shape(0).clone());
    let sb = ishape.broadcast_strides(&oshape);
    with_dtype!(k.in_dtype(0), T, {
        broadcast_copy(&oshape, &sb, k.input::<T>(0), k.output::<T>(0));
    });
    Ok(())
}

/// Output axis `i` is input axis `ints[i]`.
pub(crate) fn transpose_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let perm: Vec<usize> = c.ints.iter().map(|&p| p as usize).collect();
    if let Some((_, rows, cols)) = as_plane_transpose(k.in_shape(0).dims(), &perm) {
        with_dtype!(k.in_dtype(0), T, {
            let (i, o) = (k.input::<T>(0), k.output::<T>(0));
            // pieces of 16 output rows, spread over the cores when large
            planes(o, 16 * rows, PAR_MIN, |p, piece| transpose_rows(i, rows, cols, 16 * p, piece));
        });
        return Ok(());
    }
    let xs = k.in_shape(0).strides();
    let pstrides: Vec<usize> = c.ints.iter().map(|&p| xs[p as usize]).collect();
    let oshape = k.out_shape(0).clone();
    with_dtype!(k.in_dtype(0), T, {
        let (i, o) = (k.input::<T>(0), k.output::<T>(0));
        for_each_strided(&oshape, &pstrides, 0, o.len(), |oi, si| o[oi] = i[si]);
    });
    Ok(())
}

/// `(outer, inner)` of `shape` around `axis`.
fn around(shape: &Shape, axis: usize) -> (usize, usize) {
    let d = shape.dims();
    (d[..axis].iter().product(), d[axis + 1..].iter().product())
}

/// The inputs joined along output axis `ints[0]`.
pub(super) fn concat_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let ax = c.us(0);
    let (outer, inner) = around(k.out_shape(0), ax);
    let total = k.out_shape(0).dims()[ax] * inner;
    with_dtype!(k.out_dtype(0), T, {
        let o = k.output::<T>(0);
        let mut col = 0;
        for i in 0..k.n_inputs() {
            let w = k.in_shape(i).dims()[ax] * inner;
            let src = k.input::<T>(i);
            for r in 0..outer {
                o[r * total + col..r * total + col + w].copy_from_slice(&src[r * w..(r + 1) * w]);
            }
            col += w;
        }
    });
    Ok(())
}

/// Input 0 cut into `n_outputs` equal parts along input axis `ints[0]`.
pub(super) fn split_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let ax = c.us(0);
    let (outer, inner) = around(k.in_shape(0), ax);
    let total = k.in_shape(0).dims()[ax] * inner;
    let w = total / k.n_outputs().max(1);
    with_dtype!(k.in_dtype(0), T, {
        let src = k.input::<T>(0);
        for j in 0..k.n_outputs() {
            let o = k.output::<T>(j);
            for r in 0..outer {
                o[r * w..(r + 1) * w].copy_from_slice(&src[r * total + j * w..r * total + (j + 1) * w]);
            }
        }
    });
    Ok(())
}

/// The region a slicing spec selects: its shape, the element offset of its
/// first element, and the signed element stride of each axis.
pub(super) fn strided_region(shape: &Shape, spec: &[(usize, usize, usize, i64)]) -> (Shape, isize, Vec<isize>) {
    let xs = shape.strides();
    let mut od = shape.dims().to_vec();
    let mut base: isize = 0;
    let mut signed: Vec<isize> = xs.iter().map(|&s| s as isize).collect();
    for &(ax, b, e, step) in spec {
        let len = if step > 0 {
            if e > b {
                (e - b).div_ceil(step as usize)
            } else {
                0
            }
        } else if b > e {
            (b - e).div_ceil((-step) as usize)
        } else {
            0
        };
        od[ax] = len;
        base += b as isize * xs[ax] as isize;
        signed[ax] = xs[ax] as isize * step as isize;
    }
    (Shape::new(&od), base, signed)
}

/// Visits the flat offsets of a strided region in row-major order.
pub(super) fn for_each_region(dims: &[usize], base: isize, signed: &[isize], mut f: impl FnMut(usize, usize)) {
    let nd = dims.len();
    let total: usize = dims.iter().product();
    let mut idx = vec![0usize; nd];
    for n in 0..total {
        let mut p = base;
        for d in 0..nd {
            p += idx[d] as isize * signed[d];
        }
        f(n, p as usize);
        let mut d = nd;
        while d > 0 {
            d -= 1;
            idx[d] += 1;
            if idx[d] < dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// `min(max(x, a_min), a_max)` with the bounds in the input's dtype.
pub(super) fn clip_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (lo, hi) = (c.nums[0], c.nums[1]);
    with_dtype!(k.in_dtype(0), T, clip_into::<T>(lo, hi, k.input::<T>(0), k.output::<T>(0)));
    Ok(())
}

/// `clip`'s per-element code (the kernel's and a fused chain's).
#[inline]
fn clip_into<T: Arith>(lo: f64, hi: f64, x: &[T], o: &mut [T]) {
    let (l, h) = (T::from_f64(lo), T::from_f64(hi));
    map1(x, o, move |v: T| v.max_(l).min_(h));
}

/// [`clip_kernel`] on the front `m` elements of fused tiles.
pub(crate) fn clip_tile(
    lo: f64,
    hi: f64,
    x: &crate::fusion::tile::InRef,
    o: &mut crate::fusion::tile::OutRef,
    m: usize,
) {
    use crate::fusion::tile::TileElem;
    with_dtype!(x.dtype(), T, clip_into::<T>(lo, hi, T::of(x), &mut T::get_mut(o)[..m]));
}

/// `shape_array` (the dims in `ints`) or `size_array` (their product).
pub(super) fn meta_kernel(c: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let o = k.output::<i64>(0);
    if c.def.name == "shape_array" {
        o.copy_from_slice(&c.ints);
    } else {
        o[0] = c.ints.iter().product();
    }
    Ok(())
}
