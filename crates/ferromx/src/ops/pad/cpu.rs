//! `Pad`'s kernels. Layout in [`OpCall::ints`]: the mode (0 constant, 1 edge, 2 reflect),
//! then `(before, after)` per axis; [`OpCall::nums`]: `[constant_value]` (forward only).

use crate::dtype::Elem;
use crate::engine::OpFailure;
use crate::opdef::OpCall;
use crate::ops::par::{planes, PAR_MIN};
use crate::storage::Kernel;
use crate::with_dtype;

type KResult = std::result::Result<(), OpFailure>;

/// For each axis, the input position each output position reads (`None`: the constant).
fn index_maps(c: &OpCall, in_dims: &[usize]) -> Vec<Vec<Option<usize>>> {
    let mode = c.ints[0];
    in_dims
        .iter()
        .enumerate()
        .map(|(ax, &n)| {
            let (b, a) = (c.ints[1 + 2 * ax] as usize, c.ints[2 + 2 * ax] as usize);
            (0..n + b + a)
                .map(|o| {
                    let p = o as i64 - b as i64; // position relative to the data
                    if (0..n as i64).contains(&p) {
                        return Some(p as usize);
                    }
                    match mode {
                        1 => Some(p.clamp(0, n as i64 - 1) as usize),
                        // mirrored about the border element (widths < n, checked)
                        2 => Some(if p < 0 { (-p) as usize } else { 2 * (n - 1) - p as usize }),
                        _ => None,
                    }
                })
                .collect()
        })
        .collect()
}

/// Calls `f(out_index, in_index)` for output elements `start..start + len` (row-major),
/// `in_index` `None` where the output is the constant.
fn walk(
    maps: &[Vec<Option<usize>>],
    in_dims: &[usize],
    start: usize,
    len: usize,
    mut f: impl FnMut(usize, Option<usize>),
) {
    let nd = maps.len();
    if nd == 0 {
        if len > 0 {
            f(0, Some(0));
        }
        return;
    }
    let out_dims: Vec<usize> = maps.iter().map(Vec::len).collect();
    let mut in_strides = vec![1usize; nd];
    for ax in (0..nd - 1).rev() {
        in_strides[ax] = in_strides[ax + 1] * in_dims[ax + 1];
    }
    let inner = out_dims[nd - 1];
    let (mut o, end) = (start, start + len);
    while o < end {
        // the row of `o` and where in it
        let (mut row, col0) = (o / inner, o % inner);
        let mut base = Some(0usize);
        for ax in (0..nd - 1).rev() {
            let idx = row % out_dims[ax];
            row /= out_dims[ax];
            base = base.zip(maps[ax][idx]).map(|(s, i)| s + i * in_strides[ax]);
        }
        let run = (inner - col0).min(end - o);
        let last = &maps[nd - 1];
        for k in 0..run {
            f(o + k, base.zip(last[col0 + k]).map(|(s, i)| s + i));
        }
        o += run;
    }
}

/// `Pad`'s forward, whole output rows at a time: a row whose outer position reads the
/// data copies the data's row into its middle and maps only the border columns; a row in
/// the constant region is filled. Pieces of whole rows are spread over the cores.
pub(super) fn pad_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let in_dims = k.in_shape(0).dims().to_vec();
    let maps = index_maps(c, &in_dims);
    let value = c.nums.first().copied().unwrap_or(0.0);
    let nd = in_dims.len();
    if nd == 0 {
        with_dtype!(k.out_dtype(0), T, k.output::<T>(0).copy_from_slice(k.input::<T>(0)));
        return Ok(());
    }
    let out_dims: Vec<usize> = maps.iter().map(Vec::len).collect();
    let (inner, n_in) = (out_dims[nd - 1], in_dims[nd - 1]);
    let before = c.ints[2 * nd - 1] as usize;
    let mut in_strides = vec![1usize; nd];
    for ax in (0..nd - 1).rev() {
        in_strides[ax] = in_strides[ax + 1] * in_dims[ax + 1];
    }
    // the data row an output row reads, if any
    let source = |mut row: usize| -> Option<usize> {
        let mut base = Some(0usize);
        for ax in (0..nd - 1).rev() {
            let idx = row % out_dims[ax];
            row /= out_dims[ax];
            base = base.zip(maps[ax][idx]).map(|(s, i)| s + i * in_strides[ax]);
        }
        base
    };
    let rows_per_piece = (PAR_MIN / inner.max(1)).max(1);
    let last = &maps[nd - 1];
    with_dtype!(k.out_dtype(0), T, {
        let (x, o) = (k.input::<T>(0), k.output::<T>(0));
        let fill = T::from_f64(value);
        planes(o, rows_per_piece * inner, PAR_MIN, |p, piece| {
            for (r, orow) in piece.chunks_mut(inner).enumerate() {
                match source(p * rows_per_piece + r) {
                    None => orow.fill(fill),
                    Some(b) => {
                        let xrow = &x[b..b + n_in];
                        orow[before..before + n_in].copy_from_slice(xrow);
                        for col in (0..before).chain(before + n_in..inner) {
                            orow[col] = last[col].map_or(fill, |i| xrow[i]);
                        }
                    }
                }
            }
        });
    });
    Ok(())
}

/// `_backward_Pad`: the input gradient, summed over the output positions that read each
/// input element (one thread: reflected and edge positions scatter across the array).
pub(super) fn pad_backward_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let in_dims = k.out_shape(0).dims().to_vec();
    let maps = index_maps(c, &in_dims);
    with_dtype!(k.out_dtype(0), T, {
        let (g, dx) = (k.input::<T>(0), k.output::<T>(0));
        if T::DTYPE.is_float() {
            let mut acc = vec![0.0f64; dx.len()];
            walk(&maps, &in_dims, 0, g.len(), |oi, src| {
                if let Some(s) = src {
                    acc[s] += g[oi].to_f64();
                }
            });
            for (d, a) in dx.iter_mut().zip(&acc) {
                *d = T::from_f64(*a);
            }
        } else {
            let mut acc = vec![0i64; dx.len()];
            walk(&maps, &in_dims, 0, g.len(), |oi, src| {
                if let Some(s) = src {
                    acc[s] = acc[s].wrapping_add(g[oi].to_i64());
                }
            });
            for (d, a) in dx.iter_mut().zip(&acc) {
                *d = T::from_i64(*a);
            }
        }
    });
    Ok(())
}
