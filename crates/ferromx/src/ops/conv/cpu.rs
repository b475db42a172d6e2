//! CPU kernels of the convolution family: im2col (or the input itself for
//! 1×1 convolutions) and one large gemm per sample and group. Samples are
//! split into one contiguous block per core ([`fanout`]: the engine worker
//! starts at once), each block running single-threaded gemms on its own
//! column buffer; with fewer samples than cores the gemm itself goes parallel.

use super::epilogue::Epilogue;
use super::{direct, direct_grad, im2row, winograd, Geom};
use crate::engine::OpFailure;
use crate::opdef::OpCall;
use crate::storage::{dispatch, fanout, matmul, matmul_seq, GemmElem, Kernel, Scratch, ScratchElem};
use num_traits::Float;
use parking_lot::Mutex;

/// Element types the convolution kernels run on.
pub(crate) trait ConvElem:
    GemmElem + Float + std::ops::AddAssign + Send + Sync + crate::dtype::Elem + direct::AsF32 + ScratchElem
{
    /// Calls `f` with a convolution workspace of `len` elements (contents
    /// unspecified) borrowed from the storage pool ([`Scratch`]).
    ///
    /// Why the pool: column matrices and Winograd tiles are megabytes per
    /// call. A fresh allocation of that size comes back as new pages, which
    /// the kernel zeroes on first touch (5 % of ResNet-18 inference went to
    /// `clear_page_erms`), and buffers kept per thread held memory outside the
    /// pool beside the freed activations the pool already had.
    fn with_workspace<R>(len: usize, f: impl FnOnce(&mut [Self]) -> R) -> R {
        f(&mut Scratch::any(len))
    }
}

impl ConvElem for f32 {}
impl ConvElem for f64 {}

/// [`with_f32_f64`](crate::with_f32_f64) for the convolution kernels.
macro_rules! with_conv_dtype {
    ($dt:expr, $T:ident, $body:expr) => {
        $crate::with_f32_f64!($dt, $T, "convolution kernels", $body)
    };
}
pub(crate) use with_conv_dtype;

/// A gemm, parallel or on this thread only.
#[allow(clippy::too_many_arguments)]
pub(crate) fn mm<T: GemmElem>(
    par: bool,
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [T],
    a: &[T],
    ta: bool,
    b: &[T],
    tb: bool,
    acc: bool,
) {
    if par {
        matmul(m, n, k, dst, a, ta, b, tb, acc)
    } else {
        matmul_seq(m, n, k, dst, a, ta, b, tb, acc)
    }
}

/// Runs `f(first_sample, block, parallel_gemm)` over blocks of `out` holding
/// `per` elements per sample: one block per core when there are enough
/// samples (single-threaded gemms inside), else one block with parallel gemms.
pub(crate) fn for_blocks<T: Send>(
    out: &mut [T],
    per: usize,
    flops_per_sample: usize,
    f: &(dyn Fn(usize, &mut [T], bool) + Sync),
) {
    let n = out.len().checked_div(per).unwrap_or(0);
    let threads = rayon::current_num_threads().max(1);
    if n == 0 {
        return;
    }
    if threads == 1 || n < threads || flops_per_sample * n < 1 << 20 {
        let par = threads > 1 && flops_per_sample >= 1 << 18;
        dispatch(|| f(0, out, par));
        return;
    }
    let per_block = n.div_ceil(threads);
    let slots: Vec<Mutex<Option<&mut [T]>>> = out.chunks_mut(per_block * per).map(|c| Mutex::new(Some(c))).collect();
    fanout(slots.len(), threads - 1, &|i| {
        if let Some(c) = slots[i].lock().take() {
            dispatch(|| f(i * per_block, c, false));
        }
    });
}

/// Runs `f(lines, bands)` on bands of whole lines of `planes` row-major
/// matrices stored one after another in `u` (each `lines × cross`), one band
/// per core: `bands[p]` is the band's rows of plane `p`. The transformed
/// filters are such planes (one per Winograd position), and each of their
/// lines is written from one kernel row alone, so the bands split the
/// transform across cores without sharing a write; serially it was about a
/// tenth of a ResNet-18 training step's convolution time. Bands are
/// multiples of `align` lines; with `split` false there is one band.
pub(crate) fn for_line_bands<T: Send>(
    u: &mut [T],
    planes: usize,
    cross: usize,
    align: usize,
    split: bool,
    f: &BandFn<'_, T>,
) {
    let lines = u.len().checked_div(planes * cross).unwrap_or(0);
    let threads = rayon::current_num_threads().max(1);
    let parts = if split { threads.min(lines.div_ceil(align.max(1))).max(1) } else { 1 };
    let band = lines.div_ceil(parts).next_multiple_of(align.max(1));
    let mut slots: Vec<Band<'_, T>> =
        (0..parts).map(|p| ((p * band).min(lines)..((p + 1) * band).min(lines), Vec::new())).collect();
    for plane in u.chunks_mut((lines * cross).max(1)) {
        let mut rest = plane;
        for (range, bands) in slots.iter_mut() {
            let (head, tail) = rest.split_at_mut(range.len() * cross);
            bands.push(head);
            rest = tail;
        }
    }
    let slots: Vec<Mutex<Option<Band<'_, T>>>> = slots.into_iter().map(|s| Mutex::new(Some(s))).collect();
    fanout(slots.len(), threads - 1, &|p| {
        if let Some((range, mut bands)) = slots[p].lock().take() {
            if !range.is_empty() {
                f(range, &mut bands);
            }
        }
    });
}

/// What [`for_line_bands`] runs per band: the band's lines and its rows of each plane.
pub(crate) type BandFn<'a, T> = dyn Fn(std::ops::Range<usize>, &mut [&mut [T]]) + Sync + 'a;

/// One core's lines and its rows of each plane.
type Band<'a, T> = (std::ops::Range<usize>, Vec<&'a mut [T]>);

/// Transformed filters smaller than this (elements) are written on one core.
pub(crate) const BAND_MIN_ELEMS: usize = 1 << 16;

/// Runs `partial(b)` for blocks `0..blocks`, one per core ([`fanout`]), and returns
/// the elementwise sum of the buffers they return (the weight gradients' per-core sums).
pub(crate) fn sum_of_blocks<T: ConvElem>(blocks: usize, partial: &(dyn Fn(usize) -> Scratch<T> + Sync)) -> Scratch<T> {
    let threads = rayon::current_num_threads().max(1);
    let parts: Vec<Mutex<Option<Scratch<T>>>> = (0..blocks).map(|_| Mutex::new(None)).collect();
    fanout(blocks, threads - 1, &|b| *parts[b].lock() = Some(partial(b)));
    let mut parts = parts.into_iter().filter_map(Mutex::into_inner);
    let mut sum = parts.next().unwrap_or_else(|| Scratch::any(0));
    for p in parts {
        sum.iter_mut().zip(p.iter()).for_each(|(a, &v)| *a += v);
    }
    sum
}

/// A gemm sees at least this many columns: samples with small output planes
/// are batched side by side in one column matrix.
const MIN_COLS: usize = 512;
/// A batched column buffer stays under this many elements.
const MAX_COL_ELEMS: usize = 1 << 22;

/// Samples per gemm for this geometry (1 when one sample's plane is wide enough).
fn batch(g: &Geom) -> usize {
    let op = g.op().max(1);
    let by_mem = (MAX_COL_ELEMS / (g.rows() * op).max(1)).max(1);
    MIN_COLS.div_ceil(op).min(by_mem).min(g.n.max(1))
}

/// Below this many output channels per group, the im2col products are computed
/// transposed (positions as the gemm's rows): the gemm kernel's register block
/// is 64 rows tall on AVX-512 (24 or 48 on AVX2), so `o × positions` products
/// with `o` of 16 (LeNet's second layer) used a small fraction of it.
const THIN_OUT: usize = 32;
/// Fewest column-matrix rows (`c · kernel`) for the transposed products: with
/// fewer, the gemm's packing of the transposed column matrix costs more than
/// the taller block saves (LeNet's first layer, 25 rows, ran 2.5× slower).
const THIN_MIN_ROWS: usize = 64;

/// Whether the products of `g` run transposed ([`THIN_OUT`]).
fn thin(g: &Geom) -> bool {
    g.og() < THIN_OUT && g.rows() >= THIN_MIN_ROWS
}

/// `dst[c][r] = src[r][c]` for a `rows × cols` matrix `src`.
fn transpose_into<T: Copy + 'static>(src: &[T], rows: usize, cols: usize, dst: &mut [T]) {
    crate::shape::transpose_rows(&src[..rows * cols], rows, cols, 0, &mut dst[..rows * cols]);
}

/// Copies channels `c0..c0 + cn` of samples `s0..s0 + nb` (each `ch × plane`)
/// from `src` into `dst` as a `cn × (nb · plane)` matrix.
#[allow(clippy::too_many_arguments)]
fn gather<T: Copy>(src: &[T], s0: usize, nb: usize, ch: usize, c0: usize, cn: usize, plane: usize, dst: &mut [T]) {
    let ld = nb * plane;
    for j in 0..nb {
        for c in 0..cn {
            dst[c * ld + j * plane..][..plane].copy_from_slice(&src[((s0 + j) * ch + c0 + c) * plane..][..plane]);
        }
    }
}

/// The column matrix (`rows × nb·op`) of group `grp` of samples
/// `s0..s0 + nb` of `x`: the input itself for a direct (1×1) convolution of
/// one sample, else im2col of each sample side by side in `col`.
#[allow(clippy::too_many_arguments)]
fn columns<'a, T: ConvElem>(
    g: &Geom,
    x: &'a [T],
    s0: usize,
    nb: usize,
    grp: usize,
    direct: bool,
    col: &'a mut [T],
) -> &'a [T] {
    let (cg, ip, op) = (g.cg(), g.ip(), g.op());
    let xg = |j: usize| &x[((s0 + j) * g.c + grp * cg) * ip..][..cg * ip];
    if direct {
        return xg(0);
    }
    let ld = nb * op;
    for j in 0..nb {
        im2col(g, xg(j), &mut col[j * op..], ld);
    }
    &col[..g.rows() * ld]
}

/// The output gradient of group `grp` of samples `s0..s0 + nb` as one
/// `og × nb·op` matrix: `dy` itself for one sample, else gathered into `buf`.
fn grad_columns<'a, T: ConvElem>(g: &Geom, dy: &'a [T], s0: usize, nb: usize, grp: usize, buf: &'a mut [T]) -> &'a [T] {
    let (og, op) = (g.og(), g.op());
    if nb == 1 {
        return &dy[(s0 * g.o + grp * og) * op..][..og * op];
    }
    gather(dy, s0, nb, g.o, grp * og, og, op, buf);
    &buf[..og * nb * op]
}

/// The range of output columns `lo..hi` whose input column `xo + off` lies in
/// `0..iw` for a stride-1 row, and the input column of `lo`.
fn span(off: isize, ow: usize, iw: usize) -> (usize, usize, usize) {
    let lo = (-off).clamp(0, ow as isize) as usize;
    let hi = (iw as isize - off).clamp(lo as isize, ow as isize) as usize;
    (lo, hi, (lo as isize + off).max(0) as usize)
}

/// [`span`] for a stride `s > 1`: the outputs `lo..hi` whose input column
/// `xo · s + off` lies in `0..iw`, and the first one's input column. The strided
/// rows of `im2col`/`col2im` then run without a bounds check per element (that
/// check made the 1×1 stride-2 data gradient cost 2.8× its forward).
pub(super) fn span_strided(off: isize, ow: usize, iw: usize, s: usize) -> (usize, usize, usize) {
    let si = s as isize;
    let lo = if off >= 0 { 0 } else { (-off + si - 1) / si }.min(ow as isize) as usize;
    let room = iw as isize - off;
    let hi = if room <= 0 { lo } else { (((room + si - 1) / si) as usize).clamp(lo, ow) };
    (lo, hi, if hi > lo { (lo as isize * si + off) as usize } else { 0 })
}

/// Fills `col` (rows `c, kd, kh, kw` at stride `ld`; columns the output
/// positions) from one group of one sample `x` (`cg × D × H × W`).
pub(super) fn im2col<T: ConvElem>(g: &Geom, x: &[T], col: &mut [T], ld: usize) {
    let [id, ih, iw] = g.ind;
    let [od, oh, ow] = g.outd;
    let p = od * oh * ow;
    let zero = T::zero();
    let mut r = 0;
    for c in 0..g.cg() {
        let xc = &x[c * id * ih * iw..(c + 1) * id * ih * iw];
        for kd in 0..g.k[0] {
            for kh in 0..g.k[1] {
                for kw in 0..g.k[2] {
                    let row = &mut col[r * ld..r * ld + p];
                    r += 1;
                    let off_w = (kw * g.d[2]) as isize - g.p[2] as isize;
                    let mut idx = 0;
                    for z in 0..od {
                        let zi = (z * g.s[0] + kd * g.d[0]) as isize - g.p[0] as isize;
                        if !(0..id as isize).contains(&zi) {
                            row[idx..idx + oh * ow].fill(zero);
                            idx += oh * ow;
                            continue;
                        }
                        for y in 0..oh {
                            let yi = (y * g.s[1] + kh * g.d[1]) as isize - g.p[1] as isize;
                            let dst = &mut row[idx..idx + ow];
                            idx += ow;
                            if !(0..ih as isize).contains(&yi) {
                                dst.fill(zero);
                                continue;
                            }
                            let xrow = &xc[(zi as usize * ih + yi as usize) * iw..][..iw];
                            if g.s[2] == 1 {
                                let (lo, hi, s0) = span(off_w, ow, iw);
                                dst[..lo].fill(zero);
                                dst[lo..hi].copy_from_slice(&xrow[s0..s0 + hi - lo]);
                                dst[hi..].fill(zero);
                            } else {
                                let (lo, hi, s0) = span_strided(off_w, ow, iw, g.s[2]);
                                dst[..lo].fill(zero);
                                for (d, &v) in dst[lo..hi].iter_mut().zip(xrow[s0..].iter().step_by(g.s[2])) {
                                    *d = v;
                                }
                                dst[hi..].fill(zero);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Adds `col` (rows at stride `ld`) back into one group of one sample's input
/// gradient `dx` (the adjoint of [`im2col`]).
pub(super) fn col2im<T: ConvElem>(g: &Geom, col: &[T], dx: &mut [T], ld: usize) {
    let [id, ih, iw] = g.ind;
    let [od, oh, ow] = g.outd;
    let p = od * oh * ow;
    let mut r = 0;
    for c in 0..g.cg() {
        let xc = &mut dx[c * id * ih * iw..(c + 1) * id * ih * iw];
        for kd in 0..g.k[0] {
            for kh in 0..g.k[1] {
                for kw in 0..g.k[2] {
                    let row = &col[r * ld..r * ld + p];
                    r += 1;
                    let off_w = (kw * g.d[2]) as isize - g.p[2] as isize;
                    for z in 0..od {
                        let zi = (z * g.s[0] + kd * g.d[0]) as isize - g.p[0] as isize;
                        if !(0..id as isize).contains(&zi) {
                            continue;
                        }
                        for y in 0..oh {
                            let yi = (y * g.s[1] + kh * g.d[1]) as isize - g.p[1] as isize;
                            if !(0..ih as isize).contains(&yi) {
                                continue;
                            }
                            let src = &row[(z * oh + y) * ow..][..ow];
                            let xrow = &mut xc[(zi as usize * ih + yi as usize) * iw..][..iw];
                            if g.s[2] == 1 {
                                let (lo, hi, s0) = span(off_w, ow, iw);
                                for (d, &v) in xrow[s0..s0 + hi - lo].iter_mut().zip(&src[lo..hi]) {
                                    *d += v;
                                }
                            } else {
                                let (lo, hi, s0) = span_strided(off_w, ow, iw, g.s[2]);
                                for (d, &v) in xrow[s0..].iter_mut().step_by(g.s[2]).zip(&src[lo..hi]) {
                                    *d += v;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `out = conv(x, w) [+ bias]` for all samples. Samples whose output planes
/// are small share one column matrix and one gemm ([`batch`]).
pub(crate) fn forward<T: ConvElem>(g: &Geom, x: &[T], w: &[T], bias: Option<&[T]>, out: &mut [T]) {
    forward_with(g, x, w, bias, &Epilogue::NONE, out)
}

/// [`forward`], then `epi` on each output row while the block is in cache.
pub(crate) fn forward_with<T: ConvElem>(
    g: &Geom,
    x: &[T],
    w: &[T],
    bias: Option<&[T]>,
    epi: &Epilogue<'_, T>,
    out: &mut [T],
) {
    if winograd::applies(g) {
        return winograd::forward(g, x, w, bias, epi, out);
    }
    if direct::applies::<T>(g) && direct::forward(g, x, w, bias, epi, out) {
        return;
    }
    let (og, rows, op) = (g.og(), g.rows(), g.op());
    let nbmax = batch(g);
    let direct = nbmax == 1 && g.pointwise();
    let flops = 2 * g.o * op * rows;
    let thin = thin(g);
    let rowwise = !thin && im2row::applies(g);
    let mut taps_first = Scratch::any(if rowwise { w.len() } else { 0 });
    let w: &[T] = if rowwise {
        im2row::taps_first(g, w, &mut taps_first);
        &taps_first
    } else {
        w
    };
    for_blocks(out, g.o * op, flops, &|first, block, par| {
        let count = block.len() / (g.o * op);
        let epi = epi.offset(first * g.o * op);
        let col_len = if direct { 0 } else { rows * op * nbmax };
        let tmp_len = if nbmax > 1 || thin { og * op * nbmax } else { 0 };
        let tmp_t_len = if thin { og * op * nbmax } else { 0 };
        let hwc_len = if rowwise { im2row::sample_len(g) } else { 0 };
        T::with_workspace(col_len + tmp_len + tmp_t_len + hwc_len, |ws| {
            let (col, rest) = ws.split_at_mut(col_len);
            let (tmp, rest) = rest.split_at_mut(tmp_len);
            let (tmp_t, hwc) = rest.split_at_mut(tmp_t_len);
            let mut j0 = 0;
            while j0 < count {
                let (nb, s0) = (nbmax.min(count - j0), first + j0);
                let ld = nb * op;
                for grp in 0..g.groups {
                    let wg = &w[grp * og * rows..(grp + 1) * og * rows];
                    let colm = if rowwise {
                        im2row::rows(g, x, s0, nb, hwc, col)
                    } else {
                        columns(g, x, s0, nb, grp, direct, col)
                    };
                    let bias_of = |o: usize| bias.map(|b| b[grp * og + o]);
                    if thin {
                        // (positions × og) = colsᵀ · wᵀ, then back to og × positions.
                        mm(par, ld, og, rows, &mut tmp_t[..ld * og], colm, true, wg, true, false);
                        transpose_into(tmp_t, ld, og, tmp);
                    } else if nb == 1 {
                        let out_g = &mut block[(j0 * g.o + grp * og) * op..(j0 * g.o + (grp + 1) * og) * op];
                        for (o, orow) in out_g.chunks_mut(op).enumerate() {
                            if let Some(b) = bias_of(o) {
                                orow.fill(b);
                            }
                        }
                        mm(par, og, op, rows, out_g, wg, false, colm, rowwise, bias.is_some());
                        if !epi.is_none() {
                            let at = (j0 * g.o + grp * og) * op;
                            dispatch(
                                #[inline(always)]
                                || {
                                    for (o, orow) in out_g.chunks_mut(op).enumerate() {
                                        epi.apply(grp * og + o, at + o * op, orow);
                                    }
                                },
                            );
                        }
                        continue;
                    } else {
                        mm(par, og, ld, rows, &mut tmp[..og * ld], wg, false, colm, rowwise, false);
                    }
                    dispatch(
                        #[inline(always)]
                        || {
                            for j in 0..nb {
                                for o in 0..og {
                                    let at = ((j0 + j) * g.o + grp * og + o) * op;
                                    let dst = &mut block[at..][..op];
                                    let src = &tmp[o * ld + j * op..][..op];
                                    match bias_of(o) {
                                        Some(b) => dst.iter_mut().zip(src).for_each(|(d, &s)| *d = s + b),
                                        None => dst.copy_from_slice(src),
                                    }
                                    epi.apply(grp * og + o, at, dst);
                                }
                            }
                        },
                    );
                }
                j0 += nb;
            }
        });
    });
}

/// `dx = conv_transpose(dy, w)`: the data gradient (written, not accumulated).
pub(crate) fn backward_data<T: ConvElem>(g: &Geom, dy: &[T], w: &[T], dx: &mut [T]) {
    if winograd::applies_data_grad(g) {
        return winograd::backward_data(g, dy, w, dx);
    }
    if let Some(t) = direct::data_grad_geom::<T>(g) {
        if direct::backward_data(g, &t, dy, w, dx) {
            return;
        }
    }
    let (cg, og, rows, ip, op) = (g.cg(), g.og(), g.rows(), g.ip(), g.op());
    let nbmax = batch(g);
    let direct = nbmax == 1 && g.pointwise();
    let flops = 2 * g.o * op * rows;
    let rowwise = im2row::applies(g);
    let mut taps_first = Scratch::any(if rowwise { w.len() } else { 0 });
    let w: &[T] = if rowwise {
        im2row::taps_first(g, w, &mut taps_first);
        &taps_first
    } else {
        w
    };
    for_blocks(dx, g.c * ip, flops, &|first, block, par| {
        let count = block.len() / (g.c * ip);
        let col_len = if direct { 0 } else { rows * op * nbmax };
        let dyb_len = if nbmax > 1 { og * op * nbmax } else { 0 };
        let hwc_len = if rowwise { im2row::sample_len(g) } else { 0 };
        T::with_workspace(col_len + dyb_len + hwc_len, |ws| {
            let (col, rest) = ws.split_at_mut(col_len);
            let (dyb, hwc) = rest.split_at_mut(dyb_len);
            let mut j0 = 0;
            while j0 < count {
                let (nb, s0) = (nbmax.min(count - j0), first + j0);
                let ld = nb * op;
                for grp in 0..g.groups {
                    let wg = &w[grp * og * rows..(grp + 1) * og * rows];
                    let dyg = grad_columns(g, dy, s0, nb, grp, dyb);
                    let at = |j: usize| ((j0 + j) * g.c + grp * cg) * ip;
                    if direct {
                        mm(par, rows, op, og, &mut block[at(0)..at(0) + cg * ip], wg, true, dyg, false, false);
                        continue;
                    }
                    if rowwise {
                        // patch-row gradients (positions × rows) = dyᵀ · filter, one group
                        mm(par, ld, rows, og, &mut col[..rows * ld], dyg, true, wg, false, false);
                        im2row::scatter(g, col, nb, hwc, &mut block[at(0)..at(nb)]);
                        continue;
                    }
                    mm(par, rows, ld, og, &mut col[..rows * ld], wg, true, dyg, false, false);
                    for j in 0..nb {
                        let d = &mut block[at(j)..at(j) + cg * ip];
                        d.fill(T::zero());
                        col2im(g, &col[j * op..], d, ld);
                    }
                }
                j0 += nb;
            }
        });
    });
}

/// `dw = Σ_n dy_n · col(x_n)ᵀ`: the weight gradient (written).
pub(crate) fn backward_weight<T: ConvElem>(g: &Geom, dy: &[T], x: &[T], dw: &mut [T]) {
    if winograd::applies_weight_grad(g) {
        return winograd::backward_weight(g, dy, x, dw);
    }
    if direct_grad::backward_weight(g, dy, x, dw) {
        return;
    }
    let (og, rows, op) = (g.og(), g.rows(), g.op());
    let nbmax = batch(g);
    let direct = nbmax == 1 && g.pointwise();
    let threads = rayon::current_num_threads().max(1);
    let blocks = if threads > 1 && g.n >= threads && 2 * g.o * op * rows * g.n >= 1 << 20 { threads } else { 1 };
    let per_block = g.n.div_ceil(blocks);
    let thin = thin(g);
    let rowwise = !thin && im2row::applies(g);
    // Each group's sum is og × rows, or rows × og when `thin`, or in the patch
    // rows' (tap, channel) order when `rowwise` (put back at the end).
    let partial = |b: usize, acc: &mut [T], par: bool| {
        let col_len = if direct { 0 } else { rows * op * nbmax };
        let dyb_len = if nbmax > 1 { og * op * nbmax } else { 0 };
        let hwc_len = if rowwise { im2row::sample_len(g) } else { 0 };
        T::with_workspace(col_len + dyb_len + hwc_len, |ws| {
            let (col, rest) = ws.split_at_mut(col_len);
            let (dyb, hwc) = rest.split_at_mut(dyb_len);
            let mut first = true;
            let (lo, hi) = (b * per_block, ((b + 1) * per_block).min(g.n));
            let mut s0 = lo;
            while s0 < hi {
                let nb = nbmax.min(hi - s0);
                let ld = nb * op;
                for grp in 0..g.groups {
                    let colm = if rowwise {
                        im2row::rows(g, x, s0, nb, hwc, col)
                    } else {
                        columns(g, x, s0, nb, grp, direct, col)
                    };
                    let dyg = grad_columns(g, dy, s0, nb, grp, dyb);
                    let accg = &mut acc[grp * og * rows..(grp + 1) * og * rows];
                    if thin {
                        mm(par, rows, og, ld, accg, colm, false, dyg, true, !first);
                    } else {
                        mm(par, og, rows, ld, accg, dyg, false, colm, !rowwise, !first);
                    }
                }
                first = false;
                s0 += nb;
            }
            if first {
                acc.fill(T::zero());
            }
        });
    };
    let untranspose = |acc: &[T], dw: &mut [T]| {
        if rowwise {
            im2row::channels_first(g, acc, dw);
            return;
        }
        for (a, d) in acc.chunks_exact(og * rows).zip(dw.chunks_exact_mut(og * rows)) {
            transpose_into(a, rows, og, d);
        }
    };
    if blocks == 1 {
        if thin || rowwise {
            let mut acc = Scratch::zeroed(dw.len());
            dispatch(|| partial(0, &mut acc, threads > 1));
            untranspose(&acc, dw);
        } else {
            dispatch(|| partial(0, dw, threads > 1));
        }
        return;
    }
    let len = dw.len();
    let sum = sum_of_blocks(blocks, &|b| {
        let mut acc = Scratch::zeroed(len);
        dispatch(|| partial(b, &mut acc, false));
        acc
    });
    if thin || rowwise {
        untranspose(&sum, dw);
    } else {
        dw.copy_from_slice(&sum);
    }
}

/// `db[c] = Σ_{n, p} dy[n, c, p]` for `dy` of shape `(n, ch, plane)`.
///
/// Each plane is summed in 16 interleaved lanes (then the lanes and the tail):
/// one running sum is a chain of dependent adds, latency-bound at a quarter of
/// a scalar add per cycle (it was a fifth of LeNet's first-layer backward).
pub(crate) fn channel_sum<T: ConvElem>(dy: &[T], n: usize, ch: usize, plane: usize, db: &mut [T]) {
    dispatch(
        #[inline(always)]
        || {
            db.fill(T::zero());
            for s in 0..n {
                for (c, d) in db.iter_mut().enumerate() {
                    *d += lane_sum(&dy[(s * ch + c) * plane..(s * ch + c + 1) * plane]);
                }
            }
        },
    );
}

/// The sum of `v` in 16 interleaved partial sums.
#[inline(always)]
fn lane_sum<T: ConvElem>(v: &[T]) -> T {
    let mut lanes = [T::zero(); 16];
    let (chunks, tail) = v.as_chunks::<16>();
    for ch in chunks {
        for (l, &x) in lanes.iter_mut().zip(ch) {
            *l += x;
        }
    }
    let mut acc = tail.iter().fold(T::zero(), |a, &x| a + x);
    for l in lanes {
        acc += l;
    }
    acc
}

/// `Convolution`: inputs data, weight[, bias]; output 0.
pub(crate) fn conv_fwd(call: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let (g, bias) = Geom::from_nums(&call.nums);
    with_conv_dtype!(k.in_dtype(0), T, {
        let b = if bias { Some(k.input::<T>(2)) } else { None };
        forward::<T>(&g, k.input::<T>(0), k.input::<T>(1), b, k.output::<T>(0));
    });
    Ok(())
}

/// Whether a backward call's numbers say its data gradient is never read
/// (autograd's call for an input that is not differentiated: the output is left unwritten).
fn skips_data_grad(nums: &[f64]) -> bool {
    nums.get(super::SKIP_DATA_GRAD).is_some_and(|&v| v != 0.0)
}

/// `_backward_Convolution`: inputs out_grad, data, weight; outputs data, weight[, bias] gradients.
pub(crate) fn conv_bwd(call: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let (g, bias) = Geom::from_nums(&call.nums);
    with_conv_dtype!(k.in_dtype(0), T, {
        let (dy, x, w) = (k.input::<T>(0), k.input::<T>(1), k.input::<T>(2));
        if !skips_data_grad(&call.nums) {
            backward_data::<T>(&g, dy, w, k.output::<T>(0));
        }
        backward_weight::<T>(&g, dy, x, k.output::<T>(1));
        if bias {
            channel_sum::<T>(dy, g.n, g.o, g.op(), k.output::<T>(2));
        }
    });
    Ok(())
}

/// `Deconvolution`: inputs data, weight[, bias]; output 0 (the transpose of a
/// convolution whose input is this output).
pub(crate) fn deconv_fwd(call: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let (g, bias) = Geom::from_nums(&call.nums);
    with_conv_dtype!(k.in_dtype(0), T, {
        let out = k.output::<T>(0);
        backward_data::<T>(&g, k.input::<T>(0), k.input::<T>(1), out);
        if bias {
            let b = k.input::<T>(2);
            let plane = g.ip();
            for (i, row) in out.chunks_mut(plane).enumerate() {
                let bv = b[i % g.c];
                for v in row {
                    *v += bv;
                }
            }
        }
    });
    Ok(())
}

/// `_backward_Deconvolution`: inputs out_grad, data, weight; outputs data, weight[, bias] gradients.
pub(crate) fn deconv_bwd(call: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let (g, bias) = Geom::from_nums(&call.nums);
    with_conv_dtype!(k.in_dtype(0), T, {
        let (dy, x, w) = (k.input::<T>(0), k.input::<T>(1), k.input::<T>(2));
        if !skips_data_grad(&call.nums) {
            forward::<T>(&g, dy, w, None, k.output::<T>(0));
        }
        backward_weight::<T>(&g, x, dy, k.output::<T>(1));
        if bias {
            channel_sum::<T>(dy, g.n, g.c, g.ip(), k.output::<T>(2));
        }
    });
    Ok(())
}
