//! Index kernels over [`OpCall`]s.
//!
//! Layouts in [`OpCall::ints`]:
//! - the affine gathers (`tile`, `repeat`, `flip`, `reverse`, `slice`,
//!   `slice_like`, `diag` of a matrix) and the affine scatter (`diag` of a
//!   vector, `_backward_slice`): `[base, n, iter_dims (n), strides (n)]` (see [`affine_ints`]);
//! - `take`, `pick`, `_backward_take`, `_backward_pick`: `[mode, outer, n, inner]`
//!   (`mode`: [`IndexMode`] code);
//! - `one_hot`: `[depth]`, with `nums` `[on_value, off_value]`;
//! - `where`: none (each input is read broadcast to the output's shape);
//! - `gather_nd`: `[m]`; `scatter_nd`, `_backward_gather_nd`: `[m, accumulate]`.

use super::IndexMode;
use crate::dtype::Elem;
use crate::engine::OpFailure;
use crate::opdef::OpCall;
use crate::ops::par;
use crate::shape::for_each_strided;
use crate::storage::Kernel;
use crate::with_dtype;
use ferromx_engine::ErrorKind;

type KResult = std::result::Result<(), OpFailure>;

impl IndexMode {
    /// The code a call carries.
    pub(super) fn code(self) -> i64 {
        self as i64
    }
    fn from_code(c: i64) -> IndexMode {
        match c {
            1 => IndexMode::Wrap,
            2 => IndexMode::Raise,
            _ => IndexMode::Clip,
        }
    }
}

/// Calls `f(i, base + Σ idx[d]·strides[d])` for the output positions
/// `start..start+len` (row-major over `dims`), `i` counting from 0.
fn walk_affine(
    dims: &[usize],
    strides: &[isize],
    base: isize,
    start: usize,
    len: usize,
    mut f: impl FnMut(usize, usize),
) {
    let n = dims.len();
    if len == 0 {
        return;
    }
    if n == 0 {
        f(0, base as usize);
        return;
    }
    let mut idx = vec![0usize; n];
    let mut rem = start;
    for d in (0..n).rev() {
        idx[d] = rem % dims[d];
        rem /= dims[d];
    }
    let mut pos: isize = base + idx.iter().zip(strides).map(|(&i, &s)| i as isize * s).sum::<isize>();
    let (inner, is) = (dims[n - 1], strides[n - 1]);
    let mut o = 0;
    while o < len {
        let run = (inner - idx[n - 1]).min(len - o);
        let mut p = pos;
        for k in 0..run {
            f(o + k, p as usize);
            p += is;
        }
        o += run;
        pos += run as isize * is;
        idx[n - 1] += run;
        let mut d = n - 1;
        while d > 0 && idx[d] == dims[d] {
            pos -= dims[d] as isize * strides[d];
            idx[d] = 0;
            d -= 1;
            idx[d] += 1;
            pos += strides[d];
        }
    }
}

/// An affine walk as a call's `ints`: `[base, n, dims.., strides..]`.
pub(crate) fn affine_ints(base: isize, dims: &[usize], strides: &[isize]) -> Vec<i64> {
    let mut v = vec![base as i64, dims.len() as i64];
    v.extend(dims.iter().map(|&d| d as i64));
    v.extend(strides.iter().map(|&s| s as i64));
    v
}

fn affine_of(ints: &[i64]) -> (isize, Vec<usize>, Vec<isize>) {
    let n = ints[1] as usize;
    let dims = ints[2..2 + n].iter().map(|&d| d as usize).collect();
    let strides = ints[2 + n..2 + 2 * n].iter().map(|&s| s as isize).collect();
    (ints[0] as isize, dims, strides)
}

/// Output element `i` (row-major over the walk) is input 0 at the walk's address.
pub(crate) fn gather_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (base, dims, strides) = affine_of(&c.ints);
    with_dtype!(k.in_dtype(0), T, {
        let (src, o) = (k.input::<T>(0), k.output::<T>(0));
        par::chunked(o, 1 << 15, |start, c| {
            walk_affine(&dims, &strides, base, start, c.len(), |i, p| c[i] = src[p]);
        });
    });
    Ok(())
}

/// Zeros with input 0's elements written at the walk's addresses (distinct).
pub(super) fn scatter_run(ints: &[i64], k: &Kernel) -> KResult {
    let (base, dims, strides) = affine_of(ints);
    with_dtype!(k.in_dtype(0), T, {
        let (src, o) = (k.input::<T>(0), k.output::<T>(0));
        o.fill(T::default());
        walk_affine(&dims, &strides, base, 0, src.len(), |i, p| o[p] = src[i]);
    });
    Ok(())
}

/// `_backward_slice`: the affine scatter ([`scatter_run`]) as a kernel.
pub(super) fn scatter_kernel(c: &OpCall, k: &Kernel) -> KResult {
    scatter_run(&c.ints, k)
}

/// `diag`: of a vector, the affine scatter into a square matrix; of an N-d
/// array, the affine gather of the diagonals.
pub(super) fn diag_kernel(c: &OpCall, k: &Kernel) -> KResult {
    if k.in_shape(0).ndim() == 1 {
        scatter_run(&c.ints, k)
    } else {
        gather_kernel(c, k)
    }
}

/// Reads index input `i` as i64, truncating floats toward zero.
pub(super) fn read_indices(k: &Kernel, i: usize) -> Vec<i64> {
    with_dtype!(k.in_dtype(i), T, k.input::<T>(i).iter().map(|v| v.to_f64().trunc() as i64).collect())
}

/// `take`: rows of input 0 along the middle axis at input 1's indices.
pub(super) fn take_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (mode, outer, n, inner) = (IndexMode::from_code(c.ints[0]), c.us(1), c.us(2), c.us(3));
    let ni = k.in_shape(1).size();
    let fixed: Vec<usize> =
        read_indices(k, 1).iter().map(|&i| mode.fix("take", i, n)).collect::<std::result::Result<_, _>>()?;
    with_dtype!(k.in_dtype(0), T, {
        let (src, o) = (k.input::<T>(0), k.output::<T>(0));
        let body = |r: usize, orow: &mut [T]| {
            for (j, &f) in fixed.iter().enumerate() {
                let s = (r * n + f) * inner;
                orow[j * inner..(j + 1) * inner].copy_from_slice(&src[s..s + inner]);
            }
        };
        if outer * ni * inner >= 1 << 16 && outer > 1 {
            use rayon::prelude::*;
            o.par_chunks_mut(ni * inner).enumerate().for_each(|(r, c)| body(r, c));
        } else {
            for (r, c) in o.chunks_mut((ni * inner).max(1)).enumerate() {
                body(r, c);
            }
        }
    });
    Ok(())
}

/// `pick`: one element per `(outer, inner)` position at input 1's index.
pub(super) fn pick_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (mode, outer, n, inner) = (IndexMode::from_code(c.ints[0]), c.us(1), c.us(2), c.us(3));
    let ids = read_indices(k, 1);
    with_dtype!(k.in_dtype(0), T, {
        let (src, o) = (k.input::<T>(0), k.output::<T>(0));
        for r in 0..outer {
            for t in 0..inner {
                let f = mode.fix("pick", ids[r * inner + t], n)?;
                o[r * inner + t] = src[(r * n + f) * inner + t];
            }
        }
    });
    Ok(())
}

/// `_backward_take`: zeros with input 0's rows added at input 1's indices along the middle axis.
pub(super) fn take_backward_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (mode, outer, n, inner) = (IndexMode::from_code(c.ints[0]), c.us(1), c.us(2), c.us(3));
    let ni = k.in_shape(1).size();
    let fixed: Vec<usize> =
        read_indices(k, 1).iter().map(|&i| mode.fix("take", i, n)).collect::<std::result::Result<_, _>>()?;
    with_dtype!(k.in_dtype(0), T, {
        let (src, o) = (k.input::<T>(0), k.output::<T>(0));
        o.fill(T::default());
        for r in 0..outer {
            for (j, &f) in fixed.iter().enumerate() {
                let (s, d) = ((r * ni + j) * inner, (r * n + f) * inner);
                for t in 0..inner {
                    o[d + t] = T::from_f64(o[d + t].to_f64() + src[s + t].to_f64());
                }
            }
        }
    });
    Ok(())
}

/// `_backward_pick`: zeros with input 0's elements at the picked positions.
pub(super) fn pick_backward_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (mode, outer, n, inner) = (IndexMode::from_code(c.ints[0]), c.us(1), c.us(2), c.us(3));
    let ids = read_indices(k, 1);
    with_dtype!(k.in_dtype(0), T, {
        let (gs, o) = (k.input::<T>(0), k.output::<T>(0));
        o.fill(T::default());
        for r in 0..outer {
            for t in 0..inner {
                let f = mode.fix("pick", ids[r * inner + t], n)?;
                o[(r * n + f) * inner + t] = gs[r * inner + t];
            }
        }
    });
    Ok(())
}

/// `one_hot`: a new last axis of `ints[0]` entries.
pub(super) fn one_hot_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (depth, on, off) = (c.us(0), c.nums[0], c.nums[1]);
    let ids = read_indices(k, 0);
    with_dtype!(k.out_dtype(0), T, {
        let o = k.output::<T>(0);
        o.fill(T::from_f64(off));
        for (r, &i) in ids.iter().enumerate() {
            if i >= 0 && (i as usize) < depth {
                o[r * depth + i as usize] = T::from_f64(on);
            }
        }
    });
    Ok(())
}

/// `where`: input 1 where input 0 is non-zero, else input 2, all broadcast to the output.
pub(super) fn where_kernel(_c: &OpCall, k: &Kernel) -> KResult {
    let oshape = k.out_shape(0).clone();
    let n = oshape.size();
    let mut cond = vec![false; n];
    let cs = k.in_shape(0).broadcast_strides(&oshape);
    with_dtype!(k.in_dtype(0), C, {
        let c = k.input::<C>(0);
        for_each_strided(&oshape, &cs, 0, n, |oi, si| cond[oi] = c[si].to_f64() != 0.0);
    });
    let (xs, ys) = (k.in_shape(1).broadcast_strides(&oshape), k.in_shape(2).broadcast_strides(&oshape));
    with_dtype!(k.out_dtype(0), T, {
        let (a, b, o) = (k.input::<T>(1), k.input::<T>(2), k.output::<T>(0));
        for_each_strided(&oshape, &xs, 0, n, |oi, si| {
            if cond[oi] {
                o[oi] = a[si];
            }
        });
        for_each_strided(&oshape, &ys, 0, n, |oi, si| {
            if !cond[oi] {
                o[oi] = b[si];
            }
        });
    });
    Ok(())
}

/// [`where_kernel`] on the front `m` elements of fused tiles (operands of the
/// output's shape): the same test of the condition and the same selection.
pub(crate) fn where_tile(
    c: &crate::fusion::tile::InRef,
    a: &crate::fusion::tile::InRef,
    b: &crate::fusion::tile::InRef,
    o: &mut crate::fusion::tile::OutRef,
    m: usize,
) {
    use crate::fusion::tile::TileElem;
    with_dtype!(c.dtype(), C, {
        let c = C::of(c);
        with_dtype!(a.dtype(), T, {
            let (a, b, o) = (T::of(a), T::of(b), &mut T::get_mut(o)[..m]);
            for i in 0..m {
                o[i] = if c[i].to_f64() != 0.0 { a[i] } else { b[i] };
            }
        });
    });
}

/// Offsets (in elements) of the columns of an `(m, y)` index matrix into the
/// leading `m` dims of a shape (`dims`, row-major strides `st`).
fn nd_offsets(ids: &[i64], dims: &[usize], st: &[usize], y: usize) -> std::result::Result<Vec<usize>, OpFailure> {
    let mut offs = vec![0usize; y];
    for (j, (&n, &s)) in dims.iter().zip(st).enumerate() {
        let n = n as i64;
        for (c, off) in offs.iter_mut().enumerate() {
            let i = ids[j * y + c];
            if i < -n || i >= n {
                return Err(OpFailure::new(
                    ErrorKind::Index,
                    format!("index {i} is out of bounds for axis {j} with size {n}"),
                ));
            }
            let i = if i < 0 { i + n } else { i };
            *off += i as usize * s;
        }
    }
    Ok(offs)
}

/// Index input `i` as i64 (floats truncated toward zero, like MXNet's cast).
fn read_index_input(k: &Kernel, i: usize) -> Vec<i64> {
    with_dtype!(k.in_dtype(i), T, k.input::<T>(i).iter().map(|v| v.to_i64()).collect())
}

/// `gather_nd`: blocks of input 0 at the coordinates in input 1.
pub(super) fn gather_nd_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let m = c.us(0);
    let dshape = k.in_shape(0);
    let (lead, st) = (dshape.dims()[..m].to_vec(), dshape.strides()[..m].to_vec());
    let inner: usize = dshape.dims()[m..].iter().product();
    let y: usize = k.in_shape(1).dims()[1..].iter().product();
    let offs = nd_offsets(&read_index_input(k, 1), &lead, &st, y)?;
    with_dtype!(k.in_dtype(0), T, {
        let (src, o) = (k.input::<T>(0), k.output::<T>(0));
        for (c, &off) in offs.iter().enumerate() {
            o[c * inner..(c + 1) * inner].copy_from_slice(&src[off..off + inner]);
        }
    });
    Ok(())
}

/// `scatter_nd` (and its accumulating adjoint): zeros with input 0's blocks at
/// input 1's coordinates; `ints` `[m, accumulate]`.
pub(super) fn scatter_nd_run(ints: &[i64], k: &Kernel) -> KResult {
    let (m, accumulate) = (ints[0] as usize, ints[1] != 0);
    let oshape = k.out_shape(0);
    let (lead, st) = (oshape.dims()[..m].to_vec(), oshape.strides()[..m].to_vec());
    let inner: usize = oshape.dims()[m..].iter().product();
    let y: usize = k.in_shape(1).dims()[1..].iter().product();
    let offs = if y > 0 { nd_offsets(&read_index_input(k, 1), &lead, &st, y)? } else { vec![] };
    with_dtype!(k.in_dtype(0), T, {
        let (src, o) = (k.input::<T>(0), k.output::<T>(0));
        o.fill(T::default());
        for (c, &off) in offs.iter().enumerate() {
            let (dst, s) = (&mut o[off..off + inner], &src[c * inner..(c + 1) * inner]);
            if accumulate {
                for (d, v) in dst.iter_mut().zip(s) {
                    *d = T::from_f64(d.to_f64() + v.to_f64());
                }
            } else {
                dst.copy_from_slice(s);
            }
        }
    });
    Ok(())
}

/// [`scatter_nd_run`] as a kernel.
pub(super) fn scatter_nd_kernel(c: &OpCall, k: &Kernel) -> KResult {
    scatter_nd_run(&c.ints, k)
}
