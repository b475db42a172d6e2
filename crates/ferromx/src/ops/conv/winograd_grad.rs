//! The weight gradient of Winograd F(2×2, 3×3) (see `winograd.rs` for the
//! transforms): `M[ξ] = Σ_tiles D[ξ] · V[ξ]ᵀ`, then `dw = Gᵀ M G` per kernel.
//!
//! Three ways to spread it over the cores, by plane size:
//! - planes of many tiles: one block of samples per core, each with its own
//!   `16 · o · c` sums, added at the end ([`sample_block_sums`]);
//! - small planes (a CIFAR ResNet's 4×4): those per-core sums would be large
//!   next to their few tiles, so the cores split the *input channels*
//!   instead ([`by_channels`]): each transforms its channels of the input, and
//!   the output gradient in full, and owns the sums and the kernels of its
//!   channels, so nothing is shared and nothing is added up. Before, one shared
//!   block ran its transforms and `Gᵀ M G` on one core (a 512-channel layer's
//!   weight gradient ran at 1.1–1.4 cores);
//! - `Gᵀ M G` itself is split by kernels ([`filter_grad`]).

use super::cpu::{for_line_bands, mm, sum_of_blocks, ConvElem};
use super::winograd::{
    a4, chunk_bytes, chunk_rows, copy_short, f4, rows4, scratch_len, split_row, transform_input, Tiles, MIN_CH,
    MIN_TILES, SMALL_PLANE_TILES, WGRAD_SHARED_CHUNK_BYTES,
};
use super::Geom;
use crate::storage::{dispatch, fanout, Scratch};
use parking_lot::Mutex;
use std::ops::Range;

/// `dw = Σ_n dy_n ⋆ x_n` by Winograd (`applies_weight_grad(g)` must hold),
/// written. Samples are split over the cores, each summing its own `M`; the
/// sums are added and transformed back once.
pub(crate) fn backward_weight<T: ConvElem>(g: &Geom, dy: &[T], x: &[T], dw: &mut [T]) {
    if f4() && g.op() >= F4_WGRAD_PLANE {
        return super::winograd4::backward_weight(g, dy, x, dw);
    }
    backward_weight2(g, dy, x, dw)
}

/// Fewest output positions per plane for the F(4×4) weight gradient: on
/// 8×8 planes (4 tiles per sample) it measured even with F(2×2), on 4×4
/// planes twice as slow (its `36 · o · c` sums over few tiles dominate).
const F4_WGRAD_PLANE: usize = 256;

/// [`backward_weight`] by F(2×2, 3×3).
pub(crate) fn backward_weight2<T: ConvElem>(g: &Geom, dy: &[T], x: &[T], dw: &mut [T]) {
    let tiles = Tiles::of(g);
    let small = tiles.th * tiles.tw < SMALL_PLANE_TILES;
    let threads = rayon::current_num_threads().max(1);
    if small && threads > 1 && g.c >= 2 * MIN_CH {
        return by_channels(g, dy, x, dw);
    }
    let acc = sample_block_sums(g, dy, x, 16, small, &|dy, x, par, acc| weight_sums(g, dy, x, 0..g.c, par, acc));
    filter_grad(&acc, g.o, g.c, dw);
}

/// The small-plane weight gradient in bands of input channels, one per core
/// (module docs): `dw` (`o` rows of `c` kernels of 9) is cut by
/// [`for_line_bands`] into each band's columns of every row, so each core
/// writes only its own kernels.
fn by_channels<T: ConvElem>(g: &Geom, dy: &[T], x: &[T], dw: &mut [T]) {
    for_line_bands(dw, g.o, 9, MIN_CH, true, &|cs, rows| channel_band(g, dy, x, cs, rows));
}

/// One core's share of [`by_channels`]: the sums of input channels `cs` over
/// every tile, then their kernels' `Gᵀ M G` into `rows` (row `o` holds the
/// band's `|cs| · 9` values of output channel `o`).
fn channel_band<T: ConvElem>(g: &Geom, dy: &[T], x: &[T], cs: Range<usize>, rows: &mut [&mut [T]]) {
    let cr = cs.len();
    let mut acc = Scratch::zeroed(16 * g.o * cr);
    weight_sums(g, dy, x, cs, false, &mut acc);
    dispatch(
        #[inline(always)]
        || {
            filter_grad_blocks(&acc, 0..g.o * cr, g.o * cr, |k, v| {
                rows[k / cr][(k % cr) * 9..][..9].copy_from_slice(v);
            })
        },
    );
}

/// The `positions · o · c` weight-gradient sums of all samples: `sums(dy, x,
/// parallel_gemms, acc)` runs on one block of samples per core (the blocks'
/// sums then added), or with `small` planes on all samples as one block with
/// parallel gemms (per-core blocks would each hold sums that are large next to
/// their few tiles).
#[allow(clippy::type_complexity)]
pub(super) fn sample_block_sums<T: ConvElem>(
    g: &Geom,
    dy: &[T],
    x: &[T],
    positions: usize,
    small: bool,
    sums: &(dyn Fn(&[T], &[T], bool, &mut [T]) + Sync),
) -> Scratch<T> {
    let threads = rayon::current_num_threads().max(1);
    let blocks = if threads > 1 && g.n >= threads && !small { threads } else { 1 };
    let per_block = g.n.div_ceil(blocks);
    let partial = |b: usize, par: bool| {
        let (lo, hi) = (b * per_block, ((b + 1) * per_block).min(g.n));
        let mut acc = Scratch::zeroed(positions * g.o * g.c);
        if lo < hi {
            sums(&dy[lo * g.o * g.op()..hi * g.o * g.op()], &x[lo * g.c * g.ip()..], par, &mut acc);
        }
        acc
    };
    if blocks == 1 {
        partial(0, threads > 1)
    } else {
        sum_of_blocks(blocks, &|b| partial(b, false))
    }
}

/// `M[ξ] = Σ D[ξ] · V[ξ]ᵀ` over the tiles of the samples of `dy` (and the same
/// samples of `x`), for input channels `cs` (`M[ξ]` is `o × |cs|`), in chunks
/// of tile rows.
fn weight_sums<T: ConvElem>(g: &Geom, dy: &[T], x: &[T], cs: Range<usize>, par: bool, acc: &mut [T]) {
    let tiles = Tiles::of(g);
    let cr = cs.len();
    let total = dy.len() / (g.o * g.op()) * tiles.th;
    let sz = std::mem::size_of::<T>();
    let bytes = if par || cr < g.c { WGRAD_SHARED_CHUNK_BYTES / 2 } else { 4 * chunk_bytes() };
    let nr = chunk_rows(tiles, 16 * (cr + g.o) * sz, bytes, MIN_TILES).min(total);
    let (vl, dl) = (16 * cr * nr * tiles.tw, 16 * g.o * nr * tiles.tw);
    T::with_workspace(vl + dl + scratch_len(nr * tiles.tw, tiles.tw), |ws| {
        let (v, rest) = ws.split_at_mut(vl);
        let (d, scratch) = rest.split_at_mut(dl);
        let mut r0 = 0;
        while r0 < total {
            let rows = nr.min(total - r0);
            let ld = rows * tiles.tw;
            dispatch(
                #[inline(always)]
                || transform_input(g, tiles, x, r0, rows, cs.clone(), v, scratch),
            );
            dispatch(
                #[inline(always)]
                || transform_grad(g, tiles, dy, r0, rows, d, scratch),
            );
            for xi in 0..16 {
                let (mo, dof, vo) = (xi * g.o * cr, xi * g.o * ld, xi * cr * ld);
                mm(par, g.o, cr, ld, &mut acc[mo..mo + g.o * cr], &d[dof..], false, &v[vo..], true, r0 > 0);
            }
            r0 += rows;
        }
    });
}

/// `D[ξ][o][t]` = `(A dy Aᵀ)[ξ]` for the 2×2 output-gradient tiles of tile rows
/// `r0..r0 + rows` (zero past the plane's edge), `D[ξ]` at stride `o · nt`;
/// gathered per output channel into vectors over the chunk's tiles as
/// [`transform_input`] does.
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
    let (t4, rest) = scratch.split_at_mut(4 * nt);
    let (h, rest) = rest.split_at_mut(8 * nt);
    let (ev, od) = rest[..2 * tw].split_at_mut(tw);
    for o in 0..g.o {
        for rr in 0..rows {
            let (s, ty) = ((r0 + rr) / th, (r0 + rr) % th);
            let plane_dy = &dy[(s * g.o + o) * op..][..op];
            for r in 0..2 {
                let y = 2 * ty + r;
                split_row((y < oh).then(|| &plane_dy[y * ow..][..ow]), 0, ev, od);
                copy_short(&mut t4[(r * 2) * nt + rr * tw..][..tw], ev);
                copy_short(&mut t4[(r * 2 + 1) * nt + rr * tw..][..tw], od);
            }
        }
        // h[i][c] = (A t)[i][c], over the rows r
        for cc in 0..2 {
            let tr = |r: usize| &t4[(r * 2 + cc) * nt..][..nt];
            let [y0, y1, y2, y3] = rows4(h, cc * nt, 2 * nt, nt);
            a4(tr(0), tr(1), y0, y1, y2, y3);
        }
        // D[i][j] = (h Aᵀ)[i][j], over the columns c
        for i in 0..4 {
            let hc = |cc: usize| &h[(i * 2 + cc) * nt..][..nt];
            let [d0, d1, d2, d3] = rows4(d, i * 4 * plane + o * nt, plane, nt);
            a4(hc(0), hc(1), d0, d1, d2, d3);
        }
    }
}

/// `dw[o][c] = Gᵀ M[·][o][c] G` (each 4×4 sum back to a 3×3 kernel gradient),
/// in one run of whole [`GRAD_BLOCK`]s of kernels per core.
fn filter_grad<T: ConvElem>(m: &[T], o: usize, c: usize, dw: &mut [T]) {
    let oc = o * c;
    let threads = rayon::current_num_threads().max(1);
    let parts = if oc < 4 * GRAD_BLOCK { 1 } else { threads };
    let per = oc.div_ceil(parts).next_multiple_of(GRAD_BLOCK);
    let slots: Vec<Mutex<Option<&mut [T]>>> = dw.chunks_mut((per * 9).max(9)).map(|c| Mutex::new(Some(c))).collect();
    fanout(slots.len(), threads - 1, &|p| {
        if let Some(out) = slots[p].lock().take() {
            let ks = p * per..(p * per + out.len() / 9);
            dispatch(
                #[inline(always)]
                || filter_grad_blocks(m, ks.clone(), oc, |k, v| out[(k - ks.start) * 9..][..9].copy_from_slice(v)),
            );
        }
    });
}

/// Kernels [`filter_grad`] transforms at a time (vectors over them).
pub(crate) const GRAD_BLOCK: usize = 64;

/// `Gᵀ M G` of kernels `ks` (of `oc`), on blocks of [`GRAD_BLOCK`] kernels:
/// `M[ξ]`'s entries of consecutive kernels are contiguous, so both halves run
/// on vectors over the block; `put(k, taps)` then takes kernel `k`'s nine results.
#[inline(always)]
fn filter_grad_blocks<T: ConvElem>(m: &[T], ks: Range<usize>, oc: usize, mut put: impl FnMut(usize, &[T])) {
    let half = T::from(0.5).unwrap_or_else(T::zero);
    let mut cols = [[T::zero(); GRAD_BLOCK]; 12];
    let mut res = [[T::zero(); GRAD_BLOCK]; 9];
    for k0 in ks.clone().step_by(GRAD_BLOCK) {
        let n = GRAD_BLOCK.min(ks.end - k0);
        // Gᵀ v of a column of 4: (v0 + (v1 + v2)/2, (v1 - v2)/2, (v1 + v2)/2 + v3)
        for j in 0..4 {
            let at = |i: usize| &m[(i * 4 + j) * oc + k0..][..n];
            let (v0, v1, v2, v3) = (at(0), at(1), at(2), at(3));
            for kk in 0..n {
                let (sh, t) = ((v1[kk] + v2[kk]) * half, (v1[kk] - v2[kk]) * half);
                cols[j * 3][kk] = v0[kk] + sh;
                cols[j * 3 + 1][kk] = t;
                cols[j * 3 + 2][kk] = sh + v3[kk];
            }
        }
        for r in 0..3 {
            for kk in 0..n {
                let (v0, v1, v2, v3) = (cols[r][kk], cols[3 + r][kk], cols[6 + r][kk], cols[9 + r][kk]);
                let (sh, t) = ((v1 + v2) * half, (v1 - v2) * half);
                res[r * 3][kk] = v0 + sh;
                res[r * 3 + 1][kk] = t;
                res[r * 3 + 2][kk] = sh + v3;
            }
        }
        (0..n).for_each(|kk| put(k0 + kk, &std::array::from_fn::<T, 9, _>(|q| res[q][kk])));
    }
}
