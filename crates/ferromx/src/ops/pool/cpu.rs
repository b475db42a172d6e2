//! CPU kernels of the pooling operators: direct loops over windows, one
//! block of (sample, channel) planes per core.

use super::{PoolGeom, PoolKind};
use crate::engine::OpFailure;
use crate::opdef::OpCall;
use crate::ops::conv::cpu::{with_conv_dtype, ConvElem};
use crate::storage::{dispatch, fanout, Kernel};
use parking_lot::Mutex;

/// Runs `f(first_plane, block)` over blocks of whole planes of `out`, split over cores when large.
pub(crate) fn for_planes<T: Send>(out: &mut [T], plane: usize, work: usize, f: &(dyn Fn(usize, &mut [T]) + Sync)) {
    let n = out.len().checked_div(plane).unwrap_or(0);
    let threads = rayon::current_num_threads().max(1);
    if n == 0 {
        return;
    }
    if threads == 1 || n < 2 || work < 1 << 16 {
        dispatch(|| f(0, out));
        return;
    }
    let per = n.div_ceil(threads * 4).max(1);
    let slots: Vec<Mutex<Option<&mut [T]>>> = out.chunks_mut(per * plane).map(|c| Mutex::new(Some(c))).collect();
    fanout(slots.len(), threads - 1, &|i| {
        if let Some(c) = slots[i].lock().take() {
            dispatch(|| f(i * per, c));
        }
    });
}

/// One output position's window: clamped `[start, end)` per axis and the divisor.
#[inline]
fn window(g: &PoolGeom, pos: [usize; 3]) -> ([usize; 3], [usize; 3], usize) {
    let (mut lo, mut hi) = ([0; 3], [0; 3]);
    let (mut full, mut clamped) = (1usize, 1usize);
    for a in 0..3 {
        let start = (pos[a] * g.s[a]) as isize - g.p[a] as isize;
        let end = (start + g.k[a] as isize).min((g.ind[a] + g.p[a]) as isize);
        full *= (end - start).max(0) as usize;
        let (s, e) = (start.max(0) as usize, end.clamp(0, g.ind[a] as isize) as usize);
        lo[a] = s;
        hi[a] = e.max(s);
        clamped *= hi[a] - lo[a];
    }
    let size = match g.kind {
        PoolKind::Avg if !g.include_pad => clamped,
        PoolKind::Avg => full,
        _ => 1,
    };
    (lo, hi, size.max(1))
}

fn pow_p<T: ConvElem>(a: T, p: i32) -> T {
    match p {
        1 => a,
        2 => a * a,
        3 => a * a * a,
        _ => a.powi(p),
    }
}

fn root_p<T: ConvElem>(a: T, p: i32) -> T {
    match p {
        1 => a,
        2 => a.sqrt(),
        3 => a.cbrt(),
        _ => a.powf(T::one() / T::from(p).unwrap_or_else(T::one)),
    }
}

fn positions(g: &PoolGeom) -> impl Iterator<Item = [usize; 3]> + '_ {
    (0..g.outd[0]).flat_map(move |z| (0..g.outd[1]).flat_map(move |y| (0..g.outd[2]).map(move |x| [z, y, x])))
}

/// Whether `g` is a 2-d max/avg/sum pooling whose windows tile the input
/// without overlap or padding (LeNet's and most networks' 2×2 stride-2 pools):
/// such windows are summed row by row, without per-window bookkeeping.
fn tiled(g: &PoolGeom) -> bool {
    matches!(g.kind, PoolKind::Max | PoolKind::Avg | PoolKind::Sum)
        && g.ind[0] == 1
        && g.k[0] == 1
        && g.p == [0, 0, 0]
        && g.k[1] == g.s[1]
        && g.k[2] == g.s[2]
        && g.outd[1] * g.s[1] <= g.ind[1]
        && g.outd[2] * g.s[2] <= g.ind[2]
}

/// [`forward`] for [`tiled`] geometries.
fn forward_tiled<T: ConvElem>(g: &PoolGeom, x: &[T], out: &mut [T]) {
    let (ip, op, (kh, kw), (iw, ow)) = (g.ip(), g.op(), (g.k[1], g.k[2]), (g.ind[2], g.outd[2]));
    let div = T::from(kh * kw).unwrap_or_else(T::one);
    // (the `for_planes` closure is a dynamic call: `dispatch` inside it compiles the
    // loops for the CPU's vector width)
    for_planes(out, op, g.planes * op * kh * kw, &|first, block| {
        dispatch(
            #[inline(always)]
            || {
                for (j, o) in block.chunks_mut(op).enumerate() {
                    let xp = &x[(first + j) * ip..][..ip];
                    for (y, orow) in o.chunks_mut(ow).enumerate() {
                        let init = if g.kind == PoolKind::Max { T::neg_infinity() } else { T::zero() };
                        orow.fill(init);
                        let max = g.kind == PoolKind::Max;
                        for r in 0..kh {
                            let row = &xp[(y * kh + r) * iw..][..ow * kw];
                            match kw {
                                // a constant window width lets LLVM vectorise the row (deinterleaving)
                                2 => fold_row::<T, 2>(orow, row, max),
                                3 => fold_row::<T, 3>(orow, row, max),
                                _ => fold_row_any(orow, row, kw, max),
                            }
                        }
                        if g.kind == PoolKind::Avg {
                            orow.iter_mut().for_each(|v| *v = *v / div);
                        }
                    }
                }
            },
        )
    });
}

/// Folds one window into its output: the max (`max`; NaN wins, as in
/// [`forward`]) or the sum.
#[inline(always)]
fn fold_window<T: ConvElem>(d: &mut T, win: &[T], max: bool) {
    for &v in win {
        if max {
            if v > *d || v.is_nan() {
                *d = v
            }
        } else {
            *d += v;
        }
    }
}

/// Folds one input row into the output row, each output over its `K` adjacent
/// inputs (a constant width, so the row vectorises).
#[inline(always)]
fn fold_row<T: ConvElem, const K: usize>(orow: &mut [T], row: &[T], max: bool) {
    let (wins, _) = row.as_chunks::<K>();
    for (d, win) in orow.iter_mut().zip(wins) {
        fold_window(d, win, max);
    }
}

/// [`fold_row`] for any window width.
fn fold_row_any<T: ConvElem>(orow: &mut [T], row: &[T], k: usize, max: bool) {
    for (d, win) in orow.iter_mut().zip(row.chunks_exact(k)) {
        fold_window(d, win, max);
    }
}

/// Writes `g / scale` over each output's `K` inputs of one gradient row.
#[inline(always)]
fn spread_row<T: ConvElem, const K: usize>(drow: &mut [T], grow: &[T], scale: T) {
    let (wins, _) = drow.as_chunks_mut::<K>();
    for (win, &gv) in wins.iter_mut().zip(grow) {
        *win = [gv / scale; K];
    }
}

/// [`backward`] for [`tiled`] geometries: each output's gradient goes to its
/// window (avg, sum) or to the window's first maximum (max, as [`backward`]).
fn backward_tiled<T: ConvElem>(g: &PoolGeom, dy: &[T], x: &[T], y: &[T], dx: &mut [T]) {
    let (ip, op, (kh, kw), (iw, ow)) = (g.ip(), g.op(), (g.k[1], g.k[2]), (g.ind[2], g.outd[2]));
    let div = T::from(kh * kw).unwrap_or_else(T::one);
    for_planes(dx, ip, g.planes * op * kh * kw, &|first, block| {
        dispatch(
            #[inline(always)]
            || {
                for (j, d) in block.chunks_mut(ip).enumerate() {
                    let pl = first + j;
                    let (xp, yp, gp) = (&x[pl * ip..][..ip], &y[pl * op..][..op], &dy[pl * op..][..op]);
                    d.fill(T::zero());
                    for yo in 0..g.outd[1] {
                        let (grow, yrow) = (&gp[yo * ow..][..ow], &yp[yo * ow..][..ow]);
                        if g.kind != PoolKind::Max {
                            let scale = if g.kind == PoolKind::Avg { div } else { T::one() };
                            for r in 0..kh {
                                let drow = &mut d[(yo * kh + r) * iw..][..ow * kw];
                                match kw {
                                    2 => spread_row::<T, 2>(drow, grow, scale),
                                    3 => spread_row::<T, 3>(drow, grow, scale),
                                    _ => {
                                        for (win, &gv) in drow.chunks_exact_mut(kw).zip(grow) {
                                            win.fill(gv / scale);
                                        }
                                    }
                                }
                            }
                            continue;
                        }
                        for (xo, (&gv, &yv)) in grow.iter().zip(yrow).enumerate() {
                            'win: for r in 0..kh {
                                let base = (yo * kh + r) * iw + xo * kw;
                                for xi in base..base + kw {
                                    let v = xp[xi];
                                    if v == yv || (v.is_nan() && yv.is_nan()) {
                                        d[xi] += gv;
                                        break 'win;
                                    }
                                }
                            }
                        }
                    }
                }
            },
        )
    });
}

/// Pools every plane of `x` into `out`.
pub(crate) fn forward<T: ConvElem>(g: &PoolGeom, x: &[T], out: &mut [T]) {
    if tiled(g) {
        return forward_tiled(g, x, out);
    }
    let (ip, op) = (g.ip(), g.op());
    for_planes(out, op, g.planes * op * g.k.iter().product::<usize>(), &|first, block| {
        for (j, o) in block.chunks_mut(op).enumerate() {
            let xp = &x[(first + j) * ip..(first + j + 1) * ip];
            for (oi, pos) in positions(g).enumerate() {
                let (lo, hi, size) = window(g, pos);
                let mut acc = if g.kind == PoolKind::Max { T::neg_infinity() } else { T::zero() };
                let div = T::from(size).unwrap_or_else(T::one);
                for z in lo[0]..hi[0] {
                    for y in lo[1]..hi[1] {
                        let row = &xp[(z * g.ind[1] + y) * g.ind[2]..][..g.ind[2]];
                        for &v in &row[lo[2]..hi[2]] {
                            match g.kind {
                                PoolKind::Max => {
                                    if v > acc || v.is_nan() {
                                        acc = v
                                    }
                                }
                                PoolKind::Avg => acc += v / div,
                                PoolKind::Sum => acc += v,
                                PoolKind::Lp => acc += pow_p(v, g.p_value),
                            }
                        }
                    }
                }
                o[oi] = if g.kind == PoolKind::Lp { root_p(acc, g.p_value) } else { acc };
            }
        }
    });
}

/// The input gradient of [`forward`] (written).
pub(crate) fn backward<T: ConvElem>(g: &PoolGeom, dy: &[T], x: &[T], y: &[T], dx: &mut [T]) {
    if tiled(g) {
        return backward_tiled(g, dy, x, y, dx);
    }
    let (ip, op) = (g.ip(), g.op());
    for_planes(dx, ip, g.planes * op * g.k.iter().product::<usize>(), &|first, block| {
        for (j, d) in block.chunks_mut(ip).enumerate() {
            let pl = first + j;
            let (xp, yp, gp) = (&x[pl * ip..(pl + 1) * ip], &y[pl * op..(pl + 1) * op], &dy[pl * op..(pl + 1) * op]);
            d.fill(T::zero());
            for (oi, pos) in positions(g).enumerate() {
                let (lo, hi, size) = window(g, pos);
                let (gv, yv) = (gp[oi], yp[oi]);
                let div = T::from(size).unwrap_or_else(T::one);
                'win: for z in lo[0]..hi[0] {
                    for yy in lo[1]..hi[1] {
                        let base = (z * g.ind[1] + yy) * g.ind[2];
                        for xi in lo[2]..hi[2] {
                            let v = xp[base + xi];
                            match g.kind {
                                PoolKind::Max => {
                                    if v == yv || (v.is_nan() && yv.is_nan()) {
                                        d[base + xi] += gv;
                                        break 'win;
                                    }
                                }
                                PoolKind::Avg => d[base + xi] += gv / div,
                                PoolKind::Sum => d[base + xi] += gv,
                                PoolKind::Lp => {
                                    d[base + xi] += match g.p_value {
                                        1 => gv,
                                        _ if yv == T::zero() => T::zero(),
                                        p => gv * pow_p(v / yv, p - 1),
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    });
}

/// `Pooling`: input data; output 0.
pub(crate) fn pool_fwd(call: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let g = PoolGeom::from_nums(&call.nums);
    with_conv_dtype!(k.in_dtype(0), T, forward::<T>(&g, k.input::<T>(0), k.output::<T>(0)));
    Ok(())
}

/// `_backward_Pooling`: inputs out_grad, data, output; output the data gradient.
pub(crate) fn pool_bwd(call: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let g = PoolGeom::from_nums(&call.nums);
    with_conv_dtype!(
        k.in_dtype(0),
        T,
        backward::<T>(&g, k.input::<T>(0), k.input::<T>(1), k.input::<T>(2), k.output::<T>(0))
    );
    Ok(())
}
