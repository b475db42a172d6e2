//! Winograd F(4×4, 3×3): the forward and the data gradient of the 3×3
//! stride-1 convolutions [`super::winograd`] selects.
//!
//! Same scheme as F(2×2) (`winograd.rs`), with 4×4 output tiles read from
//! 6×6 input patches at a stride of 4: 36 transformed positions per tile,
//! so 36 multiplies per 16 outputs (2.25 per output against F(2×2)'s 4 and
//! the direct sum's 9), and 2.25 transformed values per output and channel
//! instead of 4, which also shrinks the transforms' memory traffic. The
//! interpolation points are 0, ±1, ±2 and ∞ (Lavin & Gray), whose rounding
//! error in float32 is about ten times F(2×2)'s (still ~1e-5 relative).
//!
//! Why the transforms look as they do: each 6-point transform is one
//! function of six input and six output row slices (`bt6`, `at6`, `g6`).
//! Distinct `&`/`&mut` parameters are what tells LLVM the rows do not
//! overlap (the attempt that kept rows in arrays of slices did not
//! vectorise: 36 row pairs exceed the vectoriser's run-time alias checks),
//! and inlined into the [`dispatch`]ed caller they compile to AVX-512.
//! The stride-4 tile columns are read from rows de-interleaved into four
//! phases (`q mod 4`), so tile `t` reads phase `k` at `t` or `t + 1`.

use super::cpu::{for_blocks, for_line_bands, mm, ConvElem, BAND_MIN_ELEMS};
use super::epilogue::Epilogue;
use super::winograd::{
    chunk_bytes, chunk_rows, copy_short, gather_taps, rows4, sample_block_sums, Tiles, WGRAD_SHARED_CHUNK_BYTES,
};
use super::Geom;
use crate::storage::{dispatch, Scratch};
use std::ops::Range;

/// Transformed positions per tile.
const P: usize = 36;
/// Fewest tiles per chunk.
const MIN_TILES: usize = 32;

/// `out = conv(x, w) [+ bias]`, then `epi` per output row (`winograd::applies(g)`).
pub(crate) fn forward<T: ConvElem>(
    g: &Geom,
    x: &[T],
    w: &[T],
    bias: Option<&[T]>,
    epi: &Epilogue<'_, T>,
    out: &mut [T],
) {
    let u = filter(w, g.o, g.c, false);
    run(g, x, &u, bias, epi, out);
}

/// `dx = conv_transpose(dy, w)` (`winograd::applies_data_grad(g)`): the
/// convolution of `dy` with the flipped filter, padded by `2 - p`.
pub(crate) fn backward_data<T: ConvElem>(g: &Geom, dy: &[T], w: &[T], dx: &mut [T]) {
    let t = Geom { c: g.o, o: g.c, ind: g.outd, outd: g.ind, p: [0, 2 - g.p[1], 2 - g.p[2]], ..*g };
    let u = filter(w, g.o, g.c, true);
    run(&t, dy, &u, None, &Epilogue::NONE, dx);
}

fn k<T: ConvElem>(v: f64) -> T {
    T::from(v).unwrap_or_else(T::zero)
}

/// `Bᵀ d` of six rows: `y_i = Σ_k Bᵀ[i][k] x_k`, elementwise.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn bt6<T: ConvElem>(
    x0: &[T],
    x1: &[T],
    x2: &[T],
    x3: &[T],
    x4: &[T],
    x5: &[T],
    y0: &mut [T],
    y1: &mut [T],
    y2: &mut [T],
    y3: &mut [T],
    y4: &mut [T],
    y5: &mut [T],
) {
    let n = y0.len();
    let (x0, x1, x2, x3, x4, x5) = (&x0[..n], &x1[..n], &x2[..n], &x3[..n], &x4[..n], &x5[..n]);
    let (y1, y2, y3, y4, y5) = (&mut y1[..n], &mut y2[..n], &mut y3[..n], &mut y4[..n], &mut y5[..n]);
    let (two, four, five) = (k::<T>(2.0), k::<T>(4.0), k::<T>(5.0));
    for j in 0..n {
        let (a, b, c, d, e, f) = (x0[j], x1[j], x2[j], x3[j], x4[j], x5[j]);
        y0[j] = four * a - five * c + e;
        y1[j] = e + d - four * (b + c);
        y2[j] = e - d + four * (b - c);
        y3[j] = e - c + two * (d - b);
        y4[j] = e - c - two * (d - b);
        y5[j] = four * b - five * d + f;
    }
}

/// `Aᵀ m` of six rows into four: `y_r = Σ_i Aᵀ[r][i] x_i`, elementwise.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn at6<T: ConvElem>(
    x0: &[T],
    x1: &[T],
    x2: &[T],
    x3: &[T],
    x4: &[T],
    x5: &[T],
    y0: &mut [T],
    y1: &mut [T],
    y2: &mut [T],
    y3: &mut [T],
) {
    let n = y0.len();
    let (x0, x1, x2, x3, x4, x5) = (&x0[..n], &x1[..n], &x2[..n], &x3[..n], &x4[..n], &x5[..n]);
    let (y1, y2, y3) = (&mut y1[..n], &mut y2[..n], &mut y3[..n]);
    let (two, four, eight) = (k::<T>(2.0), k::<T>(4.0), k::<T>(8.0));
    for j in 0..n {
        let (a, b, c, d, e, f) = (x0[j], x1[j], x2[j], x3[j], x4[j], x5[j]);
        let (s1, d1, s2, d2) = (b + c, b - c, d + e, d - e);
        y0[j] = a + s1 + s2;
        y1[j] = d1 + two * d2;
        y2[j] = s1 + four * s2;
        y3[j] = d1 + eight * d2 + f;
    }
}

/// `G g` of three rows into six: `y_i = Σ_s G[i][s] x_s`, elementwise.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn g6<T: ConvElem>(
    x0: &[T],
    x1: &[T],
    x2: &[T],
    y0: &mut [T],
    y1: &mut [T],
    y2: &mut [T],
    y3: &mut [T],
    y4: &mut [T],
    y5: &mut [T],
) {
    let n = y0.len();
    let (x0, x1, x2) = (&x0[..n], &x1[..n], &x2[..n]);
    let (y1, y2, y3, y4, y5) = (&mut y1[..n], &mut y2[..n], &mut y3[..n], &mut y4[..n], &mut y5[..n]);
    let (q, s, t, w) = (k::<T>(0.25), k::<T>(1.0 / 6.0), k::<T>(1.0 / 12.0), k::<T>(1.0 / 24.0));
    for j in 0..n {
        let (a, b, c) = (x0[j], x1[j], x2[j]);
        y0[j] = q * a;
        y1[j] = -s * (a + b + c);
        y2[j] = -s * (a - b + c);
        y3[j] = w * a + t * b + s * c;
        y4[j] = w * a - t * b + s * c;
        y5[j] = c;
    }
}

/// Six rows of `len` elements at `buf[first..]`, stride `stride`.
#[inline(always)]
fn rows6<T>(buf: &mut [T], first: usize, stride: usize, len: usize) -> [&mut [T]; 6] {
    let (r0, rest) = buf[first..].split_at_mut(stride);
    let (r1, rest) = rest.split_at_mut(stride);
    let (r2, rest) = rest.split_at_mut(stride);
    let (r3, rest) = rest.split_at_mut(stride);
    let (r4, rest) = rest.split_at_mut(stride);
    [&mut r0[..len], &mut r1[..len], &mut r2[..len], &mut r3[..len], &mut r4[..len], &mut rest[..len]]
}

/// `U[ξ]` for the 36 positions (`G g Gᵀ`, each `o × c`, or with `flip` the
/// data gradient's `c × o` of the rotated kernels), by rows of `U`: the nine
/// taps of [`KERNEL_BLOCK`] kernels rows at a time are gathered into vectors
/// over the row's columns and transformed as whole vectors.
pub(super) fn filter<T: ConvElem>(w: &[T], o: usize, c: usize, flip: bool) -> Scratch<T> {
    let mut u = Scratch::any(P * o * c);
    let cross = if flip { o } else { c };
    let split = u.len() >= BAND_MIN_ELEMS;
    for_line_bands(&mut u, P, cross, KERNEL_BLOCK, split, &|rows, u| {
        dispatch(
            #[inline(always)]
            || filter_rows(w, c, cross, flip, rows, u),
        )
    });
    u
}

/// Kernels gathered at a time.
const KERNEL_BLOCK: usize = 16;

/// Rows `rows` of every `U[ξ]`, into the bands `u[ξ]` (see [`filter`]).
#[inline(always)]
fn filter_rows<T: ConvElem>(w: &[T], c: usize, cross: usize, flip: bool, rows: Range<usize>, u: &mut [&mut [T]]) {
    let mut k9 = Scratch::any(KERNEL_BLOCK * 9 * cross);
    let mut t = Scratch::any(18 * cross);
    for l0 in rows.clone().step_by(KERNEL_BLOCK) {
        let nb = KERNEL_BLOCK.min(rows.end - l0);
        gather_taps(w, c, cross, l0..l0 + nb, flip, &mut k9);
        for b in 0..nb {
            let tap = &k9[b * 9 * cross..][..9 * cross];
            let g = |r: usize, s: usize| &tap[(r * 3 + s) * cross..][..cross];
            // t[i][s] = (G g)[i][s]: six rows per kernel column s
            for s in 0..3 {
                let [y0, y1, y2, y3, y4, y5] = rows6(&mut t, s * 6 * cross, cross, cross);
                g6(g(0, s), g(1, s), g(2, s), y0, y1, y2, y3, y4, y5);
            }
            // U[i][j] = ((G g) Gᵀ)[i][j]: row i of t times Gᵀ
            let at = (l0 + b - rows.start) * cross..(l0 + b - rows.start + 1) * cross;
            for i in 0..6 {
                let ti = |s: usize| &t[(s * 6 + i) * cross..][..cross];
                let Some([y0, y1, y2, y3, y4, y5]) = u.get_mut(i * 6..i * 6 + 6) else {
                    return;
                };
                let r = at.clone();
                g6(
                    ti(0),
                    ti(1),
                    ti(2),
                    &mut y0[r.clone()],
                    &mut y1[r.clone()],
                    &mut y2[r.clone()],
                    &mut y3[r.clone()],
                    &mut y4[r.clone()],
                    &mut y5[r],
                );
            }
        }
    }
}

/// The convolution of `x` with the transformed filter `u`, in chunks of tile rows.
pub(super) fn run<T: ConvElem>(g: &Geom, x: &[T], u: &[T], bias: Option<&[T]>, epi: &Epilogue<'_, T>, out: &mut [T]) {
    let tiles = Tiles::sized(g, 4);
    let per_tile = P * (g.c + g.o) * std::mem::size_of::<T>();
    let rows_per_chunk = chunk_rows(tiles, per_tile, chunk_bytes(), MIN_TILES);
    let flops = 2 * P * g.o * g.c * tiles.th * tiles.tw;
    for_blocks(out, g.o * g.op(), flops, &|first, block, par| {
        let count = block.len() / (g.o * g.op());
        let epi = epi.offset(first * g.o * g.op());
        let total = count * tiles.th;
        let nr = rows_per_chunk.min(total);
        let (vl, ml) = (P * g.c * nr * tiles.tw, P * g.o * nr * tiles.tw);
        let scratch_len = 2 * P * nr * tiles.tw + 4 * (tiles.tw + 1);
        T::with_workspace(vl + ml + scratch_len, |ws| {
            let (v, rest) = ws.split_at_mut(vl);
            let (m, scratch) = rest.split_at_mut(ml);
            let xb = &x[first * g.c * g.ip()..];
            let mut r0 = 0;
            while r0 < total {
                let rows = nr.min(total - r0);
                let ld = rows * tiles.tw;
                dispatch(
                    #[inline(always)]
                    || transform_input(g, tiles, xb, r0, rows, v, scratch),
                );
                for xi in 0..P {
                    let (mo, vo) = (xi * g.o * ld, xi * g.c * ld);
                    let (dst, a, b) = (&mut m[mo..mo + g.o * ld], &u[xi * g.o * g.c..], &v[vo..]);
                    mm(par, g.o, ld, g.c, dst, a, false, b, false, false);
                }
                dispatch(
                    #[inline(always)]
                    || transform_output(g, tiles, m, r0, rows, (bias, &epi), block, scratch),
                );
                r0 += rows;
            }
        });
    });
}

/// Copies the padded row `q ↦ row[q + off]` (zero outside `row`, or
/// everywhere when `row` is `None`) for `q` in `0..4 · w`, position `q` to
/// `dst[(q % 4) · w + q / 4]`.
#[inline(always)]
fn split_phases<T: ConvElem>(row: Option<&[T]>, off: isize, w: usize, dst: &mut [T]) {
    let dst = &mut dst[..4 * w];
    let Some(row) = row else {
        dst.fill(T::zero());
        return;
    };
    let len = row.len() as isize;
    let at = |q: isize| usize::try_from(q + off).ok().and_then(|i| row.get(i)).copied().unwrap_or_else(T::zero);
    // groups k whose four elements 4k + off .. 4k + 3 + off all lie inside the row
    let lo = (3 - off).div_euclid(4).clamp(0, w as isize) as usize;
    let hi = (len - off).div_euclid(4).clamp(lo as isize, w as isize) as usize;
    for kk in (0..lo).chain(hi..w) {
        for ph in 0..4 {
            dst[ph * w + kk] = at(4 * kk as isize + ph as isize);
        }
    }
    let first = (4 * lo as isize + off) as usize;
    let (quads, _) = row[first..first + 4 * (hi - lo)].as_chunks::<4>();
    let [p0, p1, p2, p3] = rows4(dst, 0, w, w);
    let (p0, p1, p2, p3) = (&mut p0[lo..hi], &mut p1[lo..hi], &mut p2[lo..hi], &mut p3[lo..hi]);
    for (j, qd) in quads.iter().enumerate() {
        p0[j] = qd[0];
        p1[j] = qd[1];
        p2[j] = qd[2];
        p3[j] = qd[3];
    }
}

/// `V[ξ][c][t] = (Bᵀ d B)[ξ]` for the `nt = rows · tw` tiles of tile rows
/// `r0..r0 + rows` (`V[ξ]` at stride `c · nt`). Per channel, the 36 patch
/// values of every tile are gathered into 36 vectors over the chunk's tiles
/// (each padded input row is split into phases, then each patch column is a
/// run of one phase), so both passes of the transform run on vectors as long
/// as the chunk, whatever the plane size (a row of a 4×4 plane has one tile).
#[inline(always)]
fn transform_input<T: ConvElem>(
    g: &Geom,
    tiles: Tiles,
    x: &[T],
    r0: usize,
    rows: usize,
    v: &mut [T],
    scratch: &mut [T],
) {
    let (th, tw) = (tiles.th, tiles.tw);
    let (ih, iw, ip) = (g.ind[1], g.ind[2], g.ip());
    let nt = rows * tw;
    let plane = g.c * nt;
    let w1 = tw + 1;
    let (d, rest) = scratch.split_at_mut(P * nt);
    let (e, rest) = rest.split_at_mut(P * nt);
    let ph = &mut rest[..4 * w1];
    for c in 0..g.c {
        for rr in 0..rows {
            let (s, ty) = ((r0 + rr) / th, (r0 + rr) % th);
            let xc = &x[(s * g.c + c) * ip..][..ip];
            for i in 0..6 {
                let y = (4 * ty + i) as isize - g.p[1] as isize;
                let row = (0..ih as isize).contains(&y).then(|| &xc[y as usize * iw..][..iw]);
                split_phases(row, -(g.p[2] as isize), w1, ph);
                for j in 0..6 {
                    let src = &ph[(j % 4) * w1 + j / 4..][..tw];
                    copy_short(&mut d[(i * 6 + j) * nt + rr * tw..][..tw], src);
                }
            }
        }
        // Bᵀ d: column j of every patch, over the rows i
        for j in 0..6 {
            let di = |i: usize| &d[(i * 6 + j) * nt..][..nt];
            let [y0, y1, y2, y3, y4, y5] = rows6(e, j * nt, 6 * nt, nt);
            bt6(di(0), di(1), di(2), di(3), di(4), di(5), y0, y1, y2, y3, y4, y5);
        }
        // (Bᵀ d) B: row i of every patch, over the columns j
        for i in 0..6 {
            let ej = |j: usize| &e[(i * 6 + j) * nt..][..nt];
            let [v0, v1, v2, v3, v4, v5] = rows6(v, i * 6 * plane + c * nt, plane, nt);
            bt6(ej(0), ej(1), ej(2), ej(3), ej(4), ej(5), v0, v1, v2, v3, v4, v5);
        }
    }
}

/// Writes `Aᵀ m A` (+ bias) of tile rows `r0..r0 + rows` into the block's
/// output, then runs the epilogue on the output rows written. Both passes run
/// on vectors over the chunk's tiles; each output row is then interleaved
/// from four of them.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn transform_output<T: ConvElem>(
    g: &Geom,
    tiles: Tiles,
    m: &[T],
    r0: usize,
    rows: usize,
    (bias, epi): (Option<&[T]>, &Epilogue<'_, T>),
    out: &mut [T],
    scratch: &mut [T],
) {
    let (th, tw) = (tiles.th, tiles.tw);
    let (oh, ow, op) = (g.outd[1], g.outd[2], g.op());
    let nt = rows * tw;
    let plane = g.o * nt;
    // q[i][c] (i < 6, c < 4) = (m A)[i][c]; y[r][c] = (Aᵀ q)[r][c], each over the tiles
    let (q, rest) = scratch.split_at_mut(24 * nt);
    let y = &mut rest[..16 * nt];
    for o in 0..g.o {
        for i in 0..6 {
            let mj = |j: usize| &m[(6 * i + j) * plane + o * nt..][..nt];
            let [q0, q1, q2, q3] = rows4(q, i * 4 * nt, nt, nt);
            at6(mj(0), mj(1), mj(2), mj(3), mj(4), mj(5), q0, q1, q2, q3);
        }
        for cc in 0..4 {
            let qi = |i: usize| &q[(i * 4 + cc) * nt..][..nt];
            let [y0, y1, y2, y3] = rows4(y, cc * nt, 4 * nt, nt);
            at6(qi(0), qi(1), qi(2), qi(3), qi(4), qi(5), y0, y1, y2, y3);
        }
        if let Some(b) = bias {
            let bv = b[o];
            y.iter_mut().for_each(|v| *v += bv);
        }
        for rr in 0..rows {
            let (s, ty) = ((r0 + rr) / th, (r0 + rr) % th);
            let at = (s * g.o + o) * op;
            let dst = &mut out[at..][..op];
            let nrows = oh.saturating_sub(4 * ty).min(4);
            for r in 0..nrows {
                let yc = |cc: usize| &y[(r * 4 + cc) * nt + rr * tw..][..tw];
                interleave4(yc(0), yc(1), yc(2), yc(3), &mut dst[(4 * ty + r) * ow..][..ow]);
            }
            if !epi.is_none() {
                let y0 = 4 * ty * ow;
                epi.apply(o, at + y0, &mut dst[y0..y0 + nrows * ow]);
            }
        }
    }
}

/// `dst[4t + k] = (a, b, c, d)[k][t]` (as far as `dst` reaches).
#[inline(always)]
fn interleave4<T: Copy>(a: &[T], b: &[T], c: &[T], d: &[T], dst: &mut [T]) {
    let (quads, rest) = dst.as_chunks_mut::<4>();
    let t = quads.len();
    for (((qd, &x0), &x1), (&x2, &x3)) in quads.iter_mut().zip(a).zip(b).zip(c.iter().zip(d)) {
        *qd = [x0, x1, x2, x3];
    }
    for (j, v) in rest.iter_mut().enumerate() {
        *v = [a, b, c, d][j][t];
    }
}

/// `A y` of four rows into six (`A` the transpose of `Aᵀ`): the output-gradient
/// tile's transform, elementwise.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn a6<T: ConvElem>(
    x0: &[T],
    x1: &[T],
    x2: &[T],
    x3: &[T],
    y0: &mut [T],
    y1: &mut [T],
    y2: &mut [T],
    y3: &mut [T],
    y4: &mut [T],
    y5: &mut [T],
) {
    let n = y0.len();
    let (x0, x1, x2, x3) = (&x0[..n], &x1[..n], &x2[..n], &x3[..n]);
    let (y1, y2, y3, y4, y5) = (&mut y1[..n], &mut y2[..n], &mut y3[..n], &mut y4[..n], &mut y5[..n]);
    let (two, four, eight) = (k::<T>(2.0), k::<T>(4.0), k::<T>(8.0));
    for j in 0..n {
        let (a, b, c, d) = (x0[j], x1[j], x2[j], x3[j]);
        let (ev, od) = (a + c, b + d);
        let (ev4, od2) = (a + four * c, two * b + eight * d);
        y0[j] = a;
        y1[j] = ev + od;
        y2[j] = ev - od;
        y3[j] = ev4 + od2;
        y4[j] = ev4 - od2;
        y5[j] = d;
    }
}

/// Below this many tiles per sample, the weight gradient runs all samples as
/// one block with parallel gemms (per-core blocks would each hold `36 · o · c` sums).
const SMALL_PLANE_TILES: usize = 4;

/// `dw = Σ_n dy_n ⋆ x_n` by F(4×4): `dW = Gᵀ [Σ_tiles (A dy Aᵀ) ⊙ (Bᵀ x B)] G`,
/// written. Samples are split over the cores, each summing its own `M`.
pub(crate) fn backward_weight<T: ConvElem>(g: &Geom, dy: &[T], x: &[T], dw: &mut [T]) {
    let tiles = Tiles::sized(g, 4);
    let small = tiles.th * tiles.tw < SMALL_PLANE_TILES;
    let acc = sample_block_sums(g, dy, x, P, small, &|dy, x, par, acc| weight_sums(g, tiles, dy, x, par, acc));
    filter_grad(&acc, g.o, g.c, dw);
}

/// `M[ξ] = Σ D[ξ] · V[ξ]ᵀ` over the tiles of the samples of `dy` (and of `x`), in chunks.
fn weight_sums<T: ConvElem>(g: &Geom, tiles: Tiles, dy: &[T], x: &[T], par: bool, acc: &mut [T]) {
    let total = dy.len() / (g.o * g.op()) * tiles.th;
    let per_tile = P * (g.c + g.o) * std::mem::size_of::<T>();
    let bytes = if par { WGRAD_SHARED_CHUNK_BYTES } else { 4 * chunk_bytes() };
    let nr = chunk_rows(tiles, per_tile, bytes, MIN_TILES).min(total);
    let (vl, dl) = (P * g.c * nr * tiles.tw, P * g.o * nr * tiles.tw);
    T::with_workspace(vl + dl + 2 * P * nr * tiles.tw + 4 * (tiles.tw + 1), |ws| {
        let (v, rest) = ws.split_at_mut(vl);
        let (d, scratch) = rest.split_at_mut(dl);
        let mut r0 = 0;
        while r0 < total {
            let rows = nr.min(total - r0);
            let nt = rows * tiles.tw;
            dispatch(
                #[inline(always)]
                || transform_input(g, tiles, x, r0, rows, v, scratch),
            );
            dispatch(
                #[inline(always)]
                || transform_grad(g, tiles, dy, r0, rows, d, scratch),
            );
            for xi in 0..P {
                let (mo, dof, vo) = (xi * g.o * g.c, xi * g.o * nt, xi * g.c * nt);
                mm(par, g.o, g.c, nt, &mut acc[mo..mo + g.o * g.c], &d[dof..], false, &v[vo..], true, r0 > 0);
            }
            r0 += rows;
        }
    });
}

/// `D[ξ][o][t] = (A dy Aᵀ)[ξ]` for the 4×4 output-gradient tiles of tile rows
/// `r0..r0 + rows` (zero past the plane's edge), `D[ξ]` at stride `o · nt`.
#[inline(always)]
fn transform_grad<T: ConvElem>(
    g: &Geom,
    tiles: Tiles,
    dy: &[T],
    r0: usize,
    rows: usize,
    d: &mut [T],
    scratch: &mut [T],
) {
    let (th, tw) = (tiles.th, tiles.tw);
    let (oh, ow, op) = (g.outd[1], g.outd[2], g.op());
    let nt = rows * tw;
    let plane = g.o * nt;
    let (t4, rest) = scratch.split_at_mut(16 * nt);
    let (h, rest) = rest.split_at_mut(24 * nt);
    let ph = &mut rest[..4 * tw];
    for o in 0..g.o {
        // t4[r][c][t]: the tiles' 16 values
        for rr in 0..rows {
            let (s, ty) = ((r0 + rr) / th, (r0 + rr) % th);
            let plane_dy = &dy[(s * g.o + o) * op..][..op];
            for r in 0..4 {
                let y = 4 * ty + r;
                split_phases((y < oh).then(|| &plane_dy[y * ow..][..ow]), 0, tw, ph);
                for cc in 0..4 {
                    copy_short(&mut t4[(r * 4 + cc) * nt + rr * tw..][..tw], &ph[cc * tw..][..tw]);
                }
            }
        }
        // h[i][c] = (A t)[i][c], over the rows r
        for cc in 0..4 {
            let tr = |r: usize| &t4[(r * 4 + cc) * nt..][..nt];
            let [y0, y1, y2, y3, y4, y5] = rows6(h, cc * nt, 4 * nt, nt);
            a6(tr(0), tr(1), tr(2), tr(3), y0, y1, y2, y3, y4, y5);
        }
        // D[i][j] = (h Aᵀ)[i][j], over the columns c
        for i in 0..6 {
            let hc = |cc: usize| &h[(i * 4 + cc) * nt..][..nt];
            let [d0, d1, d2, d3, d4, d5] = rows6(d, i * 6 * plane + o * nt, plane, nt);
            a6(hc(0), hc(1), hc(2), hc(3), d0, d1, d2, d3, d4, d5);
        }
    }
}

/// `dw[o][c] = Gᵀ M[·][o][c] G` (each 6×6 sum back to a 3×3 kernel gradient),
/// on blocks of kernels as `winograd::filter_grad` does.
fn filter_grad<T: ConvElem>(m: &[T], o: usize, c: usize, dw: &mut [T]) {
    dispatch(
        #[inline(always)]
        || filter_grad_blocks(m, o * c, dw),
    );
}

#[inline(always)]
fn filter_grad_blocks<T: ConvElem>(m: &[T], oc: usize, dw: &mut [T]) {
    const B: usize = super::winograd::GRAD_BLOCK;
    let (q, s, t, w) = (k::<T>(0.25), k::<T>(1.0 / 6.0), k::<T>(1.0 / 12.0), k::<T>(1.0 / 24.0));
    // Gᵀ v for a 6-vector v
    let gt = |v: [T; 6]| {
        let (s12, d12, s34, d34) = (v[1] + v[2], v[1] - v[2], v[3] + v[4], v[3] - v[4]);
        [q * v[0] - s * s12 + w * s34, t * d34 - s * d12, s * (s34 - s12) + v[5]]
    };
    let mut cols = [[T::zero(); B]; 18];
    let mut res = [[T::zero(); B]; 9];
    for k0 in (0..oc).step_by(B) {
        let n = B.min(oc - k0);
        for j in 0..6 {
            let at = |i: usize| &m[(i * 6 + j) * oc + k0..][..n];
            let (v0, v1, v2, v3, v4, v5) = (at(0), at(1), at(2), at(3), at(4), at(5));
            for kk in 0..n {
                let g = gt([v0[kk], v1[kk], v2[kk], v3[kk], v4[kk], v5[kk]]);
                cols[j * 3][kk] = g[0];
                cols[j * 3 + 1][kk] = g[1];
                cols[j * 3 + 2][kk] = g[2];
            }
        }
        for r in 0..3 {
            for kk in 0..n {
                let col = |j: usize| cols[j * 3 + r][kk];
                let g = gt([col(0), col(1), col(2), col(3), col(4), col(5)]);
                res[r * 3][kk] = g[0];
                res[r * 3 + 1][kk] = g[1];
                res[r * 3 + 2][kk] = g[2];
            }
        }
        for (kk, out) in dw[k0 * 9..(k0 + n) * 9].chunks_exact_mut(9).enumerate() {
            for (qi, v) in out.iter_mut().enumerate() {
                *v = res[qi][kk];
            }
        }
    }
}
