//! Winograd F(2×2, 3×3) for 3×3 stride-1 convolutions with many channels.
//!
//! The output is cut into 2×2 tiles; each tile needs a 4×4 input patch. With
//! `Bᵀ d B` the transformed patch (16 values per channel), `G g Gᵀ` the
//! transformed filter and `Aᵀ m A` the inverse transform, the 16 positions
//! of a transformed tile are independent: position `ξ` of every output tile
//! is one gemm `M[ξ] (o × tiles) = U[ξ] (o × c) · V[ξ] (c × tiles)`. That is
//! 16 multiplies per 4 outputs instead of 36 (2.25× fewer), at the price of
//! the transforms (additions only) and a rounding error a few times the
//! direct sum's (about 1e-6 relative in float32).
//!
//! Tiles of all samples in a block are laid side by side (so the 4×4 planes
//! of a CIFAR ResNet still give wide gemms) and processed in chunks that
//! keep `V` and `M` near the caches. Blocks of samples are split across
//! cores by the caller ([`super::cpu`]'s `for_blocks`).
//!
//! The weight gradient uses the same tiles: with `A` and `G` the matrices
//! above, `dW = Gᵀ [Σ_tiles (A dy Aᵀ) ⊙ (Bᵀ d B)] G` (the transpose of the
//! forward's bilinear form), so position `ξ` is one gemm
//! `M[ξ] (o × c) += D[ξ] (o × tiles) · V[ξ]ᵀ`, 2.25× fewer multiplies than
//! the im2col product, with the input transform shared with the forward.
//!
//! The forward and the data gradient use F(4×4, 3×3) (`winograd4.rs`, 2.25
//! multiplies per output instead of 4), and so does the weight gradient of
//! planes of at least 16×16; `FERROMX_WINOGRAD=2` keeps this file's F(2×2).
//!
//! Why the transforms are written as they are: they are a third or more of
//! the time unless vectorised. Each runs inside [`dispatch`] (compiled for
//! AVX-512 or AVX2 when the CPU has them). Per channel, the patch values of
//! every tile of a chunk are first gathered into one vector per patch
//! position (rows split into even and odd columns), so each transform is a
//! few contiguous loops over all the chunk's tiles: over tile rows, a 4×4
//! plane's row has two tiles and the loops ran scalar.

use super::cpu::{for_blocks, for_line_bands, mm, ConvElem, BAND_MIN_ELEMS};
use super::epilogue::Epilogue;
use super::Geom;
use crate::storage::{dispatch, Scratch};
use std::ops::Range;

pub(crate) use super::winograd_grad::backward_weight;
pub(super) use super::winograd_grad::{sample_block_sums, GRAD_BLOCK};

/// Whether `g` runs through Winograd: a 2-d (or depth-1) 3×3 convolution
/// with stride and dilation 1, one group, and at least [`MIN_CH`] input and
/// output channels (below that the gemms are too thin to pay for the transforms).
/// `FERROMX_WINOGRAD=0` turns the path off (for side-by-side benchmarks).
pub(crate) fn applies(g: &Geom) -> bool {
    enabled()
        && g.k == [1, 3, 3]
        && g.s == [1, 1, 1]
        && g.d == [1, 1, 1]
        && g.p[0] == 0
        && g.ind[0] == 1
        && g.groups == 1
        && g.c >= MIN_CH
        && g.o >= MIN_CH
}

/// Whether the weight gradient of `g` runs through Winograd: planes of at
/// least 4×4 outputs (on smaller ones the transforms and the `16 · o · c`
/// sums outweigh the multiplies saved).
pub(crate) fn applies_weight_grad(g: &Geom) -> bool {
    applies(g) && g.outd[1] * g.outd[2] >= MIN_WGRAD_PLANE
}

/// Fewest output positions per plane for the Winograd weight gradient.
const MIN_WGRAD_PLANE: usize = 16;
/// Below this many tiles per sample, the weight gradient runs all samples as
/// one block with parallel gemms: per-core blocks would each hold (and then
/// add up) `16 · o · c` sums that are large next to their few tiles.
pub(super) const SMALL_PLANE_TILES: usize = 16;
/// Transformed bytes per chunk of that shared block (wide gemms: `k` is the
/// chunk's tile count).
pub(super) const WGRAD_SHARED_CHUNK_BYTES: usize = 8 << 20;

/// Whether the data gradient of `g` runs through Winograd: it is a 3×3
/// convolution of the output gradient with the flipped filter, padded by `2 - p`.
pub(crate) fn applies_data_grad(g: &Geom) -> bool {
    applies(g) && g.p[1] <= 2 && g.p[2] <= 2
}

fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("FERROMX_WINOGRAD").map_or(true, |v| v != "0"))
}

/// Whether the forward and the data gradient use F(4×4, 3×3) (`winograd4.rs`);
/// `FERROMX_WINOGRAD=2` keeps them on F(2×2) (for side-by-side benchmarks).
pub(super) fn f4() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("FERROMX_WINOGRAD").map_or(true, |v| v != "2"))
}

/// Whether F(4×4) takes the forward and data gradient of `g`: its transformed
/// filter (`36 · o · c` values, one per call) stays under [`F4_MAX_FILTER_BYTES`].
pub(crate) fn f4_filter_fits<T>(g: &Geom) -> bool {
    f4() && 36 * g.o * g.c * std::mem::size_of::<T>() <= F4_MAX_FILTER_BYTES
}

/// The largest transformed F(4×4) filter. A 512 × 512 layer's is 36 MB (F(2×2)'s
/// 16 MB): transient, but alive while a training step holds its activations, it
/// put ResNet-18's peak memory past MXNet's (716–752 MB against 716–748). Doing
/// such layers in blocks of output channels repeats the input transform per block
/// and ran slower than F(2×2) (4×4 planes, 512 channels: 21 ms against 18).
const F4_MAX_FILTER_BYTES: usize = 12 << 20;

/// Fewest input and output channels for the Winograd path.
pub(super) const MIN_CH: usize = 16;
/// A chunk's transformed input and output stay under this many bytes.
const CHUNK_BYTES: usize = 1 << 19;
/// Fewest tiles per chunk (narrower gemms re-pack the filter too often).
pub(super) const MIN_TILES: usize = 64;

/// `out = conv(x, w) [+ bias]` by Winograd (`applies(g)` must hold).
/// `epi` runs on each output row as the output transform writes it.
pub(crate) fn forward<T: ConvElem>(
    g: &Geom,
    x: &[T],
    w: &[T],
    bias: Option<&[T]>,
    epi: &Epilogue<'_, T>,
    out: &mut [T],
) {
    if f4_filter_fits::<T>(g) {
        return super::winograd4::forward(g, x, w, bias, epi, out);
    }
    forward2(g, x, w, bias, epi, out)
}

/// [`forward`] by F(2×2, 3×3).
pub(crate) fn forward2<T: ConvElem>(
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

/// `dx = conv_transpose(dy, w)` by Winograd (`applies_data_grad(g)` must hold).
pub(crate) fn backward_data<T: ConvElem>(g: &Geom, dy: &[T], w: &[T], dx: &mut [T]) {
    if f4_filter_fits::<T>(g) {
        return super::winograd4::backward_data(g, dy, w, dx);
    }
    backward_data2(g, dy, w, dx)
}

/// [`backward_data`] by F(2×2, 3×3).
pub(crate) fn backward_data2<T: ConvElem>(g: &Geom, dy: &[T], w: &[T], dx: &mut [T]) {
    let t = Geom { c: g.o, o: g.c, ind: g.outd, outd: g.ind, p: [0, 2 - g.p[1], 2 - g.p[2]], ..*g };
    let u = filter(w, g.o, g.c, true);
    run(&t, dy, &u, None, &Epilogue::NONE, dx);
}

/// `U[ξ]` for the 16 positions, each a row-major matrix of output by input
/// channels: `G g Gᵀ` of the filter `w` (`o × c × 3 × 3`). With `flip`, the
/// filter of the data gradient: rows are `w`'s input channels, columns its
/// output channels, and the 3×3 kernel is rotated by 180°.
pub(super) fn filter<T: ConvElem>(w: &[T], o: usize, c: usize, flip: bool) -> Scratch<T> {
    let mut u = Scratch::any(16 * o * c);
    let cross = if flip { o } else { c };
    let split = u.len() >= BAND_MIN_ELEMS;
    for_line_bands(&mut u, 16, cross, KERNEL_BLOCK, split, &|rows, u| {
        dispatch(
            #[inline(always)]
            || filter_rows(w, c, cross, flip, rows, u),
        )
    });
    u
}

/// Output channels per block of the flipped gather in [`gather_taps`].
const FLIP_BLOCK: usize = 16;

/// Kernels [`filter_rows`] gathers at a time.
const KERNEL_BLOCK: usize = 16;

/// [`filter`] by rows of `U`: the kernels of [`KERNEL_BLOCK`] rows at a time
/// are gathered into nine vectors each (one per kernel tap, over the row's
/// columns; read in contiguous runs in both orientations), and the transform
/// runs on whole vectors.
#[inline(always)]
fn filter_rows<T: ConvElem>(w: &[T], c: usize, cross: usize, flip: bool, rows: Range<usize>, u: &mut [&mut [T]]) {
    let mut k9 = Scratch::any(KERNEL_BLOCK * 9 * cross);
    let mut t = Scratch::any(3 * cross);
    for l0 in rows.clone().step_by(KERNEL_BLOCK) {
        let nb = KERNEL_BLOCK.min(rows.end - l0);
        gather_taps(w, c, cross, l0..l0 + nb, flip, &mut k9);
        for b in 0..nb {
            transform_kernels(&k9[b * 9 * cross..][..9 * cross], cross, l0 + b - rows.start, u, &mut t);
        }
    }
}

/// The nine taps of the kernels of rows `rows` of `U` (`w`'s output channels,
/// or with `flip` its input channels with the kernel rotated by 180°), as
/// `k9[(b · 9 + tap) · cross + x]` for row `rows.start + b` and column `x`;
/// read in contiguous runs of `w` in both orientations.
#[inline(always)]
pub(super) fn gather_taps<T: ConvElem>(w: &[T], c: usize, cross: usize, rows: Range<usize>, flip: bool, k9: &mut [T]) {
    let (l0, nb) = (rows.start, rows.len());
    if flip {
        // Row l is input channel l; its kernels lie at w[x][l] for every output channel x.
        // Blocks of FLIP_BLOCK output channels: the block's kernels (FLIP_BLOCK runs of
        // `nb · 9` values) stay in L1 while each of the `nb · 9` destination rows gets one
        // contiguous run. Looping over x outermost wrote `nb · 9` rows `cross` apart per
        // x, a cache miss each: on a 512 × 512 layer that scatter cost 12 % of the data
        // gradient.
        for x0 in (0..cross).step_by(FLIP_BLOCK) {
            let xs = FLIP_BLOCK.min(cross - x0);
            for b in 0..nb {
                for j in 0..9 {
                    let dst = &mut k9[(b * 9 + j) * cross + x0..][..xs];
                    for (i, d) in dst.iter_mut().enumerate() {
                        *d = w[((x0 + i) * c + l0 + b) * 9 + 8 - j];
                    }
                }
            }
        }
    } else {
        for b in 0..nb {
            let (kernels, _) = w[(l0 + b) * c * 9..][..c * 9].as_chunks::<9>();
            for (x, k) in kernels.iter().enumerate() {
                for j in 0..9 {
                    k9[(b * 9 + j) * cross + x] = k[j];
                }
            }
        }
    }
}

/// Row `line` of every `U[ξ]` band (`u[ξ]`, rows of `cross` values) from the
/// nine tap vectors `k9`.
#[inline(always)]
fn transform_kernels<T: ConvElem>(k9: &[T], cross: usize, line: usize, u: &mut [&mut [T]], t: &mut [T]) {
    let half = T::from(0.5).unwrap_or_else(T::zero);
    let g = |r: usize, s: usize| &k9[(r * 3 + s) * cross..][..cross];
    for i in 0..4 {
        // Row i of G g: three vectors, one per kernel column s.
        for (s, ts) in t.chunks_exact_mut(cross).enumerate() {
            let (a, b, cc) = (g(0, s), g(1, s), g(2, s));
            for x in 0..cross {
                ts[x] = match i {
                    0 => a[x],
                    1 => (a[x] + b[x] + cc[x]) * half,
                    2 => (a[x] - b[x] + cc[x]) * half,
                    _ => cc[x],
                };
            }
        }
        // Times Gᵀ: U[i][j] for j = 0..4.
        let (t0, t1, t2) = (&t[..cross], &t[cross..2 * cross], &t[2 * cross..3 * cross]);
        for j in 0..4 {
            let dst = &mut u[i * 4 + j][line * cross..][..cross];
            for x in 0..cross {
                dst[x] = match j {
                    0 => t0[x],
                    1 => (t0[x] + t1[x] + t2[x]) * half,
                    2 => (t0[x] - t1[x] + t2[x]) * half,
                    _ => t2[x],
                };
            }
        }
    }
}

/// The tiling of one sample's output plane.
#[derive(Clone, Copy)]
pub(super) struct Tiles {
    /// Tile rows and columns.
    pub th: usize,
    pub tw: usize,
}

impl Tiles {
    /// 2×2 tiles (F(2×2)).
    pub fn of(g: &Geom) -> Tiles {
        Tiles::sized(g, 2)
    }

    /// Tiles of `m × m` outputs.
    pub fn sized(g: &Geom, m: usize) -> Tiles {
        Tiles { th: g.outd[1].div_ceil(m), tw: g.outd[2].div_ceil(m) }
    }
}

/// The Winograd convolution of `x` with the transformed filter `u`. A block's
/// tile rows (all its samples' in turn) are processed in chunks of whole rows.
pub(super) fn run<T: ConvElem>(g: &Geom, x: &[T], u: &[T], bias: Option<&[T]>, epi: &Epilogue<'_, T>, out: &mut [T]) {
    let tiles = Tiles::of(g);
    let rows_per_chunk = chunk_rows(tiles, 16 * (g.c + g.o) * std::mem::size_of::<T>(), chunk_bytes(), MIN_TILES);
    let flops = 2 * 16 * g.o * g.c * tiles.th * tiles.tw;
    for_blocks(out, g.o * g.op(), flops, &|first, block, par| {
        let count = block.len() / (g.o * g.op());
        let epi = epi.offset(first * g.o * g.op());
        let total = count * tiles.th;
        let nr = rows_per_chunk.min(total);
        let (vl, ml) = (16 * g.c * nr * tiles.tw, 16 * g.o * nr * tiles.tw);
        T::with_workspace(vl + ml + scratch_len(nr * tiles.tw, tiles.tw), |ws| {
            let (v, rest) = ws.split_at_mut(vl);
            let (m, scratch) = rest.split_at_mut(ml);
            let xb = &x[first * g.c * g.ip()..];
            let mut r0 = 0;
            while r0 < total {
                let rows = nr.min(total - r0);
                let ld = rows * tiles.tw;
                dispatch(
                    #[inline(always)]
                    || transform_input(g, tiles, xb, r0, rows, 0..g.c, v, scratch),
                );
                for xi in 0..16 {
                    let (mo, vo) = (xi * g.o * ld, xi * g.c * ld);
                    mm(
                        par,
                        g.o,
                        ld,
                        g.c,
                        &mut m[mo..mo + g.o * ld],
                        &u[xi * g.o * g.c..],
                        false,
                        &v[vo..],
                        false,
                        false,
                    );
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

/// Tile rows per chunk: `bytes` of transformed data at `per_tile` bytes per
/// tile, at least [`MIN_TILES`] tiles.
pub(super) fn chunk_rows(tiles: Tiles, per_tile: usize, bytes: usize, min_tiles: usize) -> usize {
    (bytes / per_tile.max(1)).max(min_tiles).div_ceil(tiles.tw).max(1)
}

/// Bytes of transformed input and output per chunk (`FERROMX_WINOGRAD_CHUNK_KB`
/// overrides, for tuning).
pub(super) fn chunk_bytes() -> usize {
    static B: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *B.get_or_init(|| {
        std::env::var("FERROMX_WINOGRAD_CHUNK_KB")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .map_or(CHUNK_BYTES, |k| k << 10)
    })
}

/// Scratch the transforms need for a chunk of `nt` tiles, `tw` per tile row.
pub(super) fn scratch_len(nt: usize, tw: usize) -> usize {
    32 * nt + 2 * (tw + 1)
}

/// Copies the padded row `q ↦ row[q + off]` (zero outside `row`, or
/// everywhere when `row` is `None`) for `q` in `0..2 · e.len()`, its even
/// positions into `e` and its odd ones into `od`.
#[inline(always)]
pub(super) fn split_row<T: ConvElem>(row: Option<&[T]>, off: isize, e: &mut [T], od: &mut [T]) {
    let n = e.len().min(od.len());
    let (e, od) = (&mut e[..n], &mut od[..n]);
    let Some(row) = row else {
        e.fill(T::zero());
        od.fill(T::zero());
        return;
    };
    let len = row.len() as isize;
    let at = |q: isize| usize::try_from(q + off).ok().and_then(|i| row.get(i)).copied().unwrap_or_else(T::zero);
    // Pairs k whose both elements 2k + off and 2k + 1 + off lie inside the row.
    let lo = (1 - off).div_euclid(2).clamp(0, n as isize) as usize;
    let hi = (len - off).div_euclid(2).clamp(lo as isize, n as isize) as usize;
    for k in (0..lo).chain(hi..n) {
        e[k] = at(2 * k as isize);
        od[k] = at(2 * k as isize + 1);
    }
    let first = (2 * lo as isize + off) as usize;
    let (pairs, _) = row[first..first + 2 * (hi - lo)].as_chunks::<2>();
    for ((ev, ov), p) in e[lo..hi].iter_mut().zip(&mut od[lo..hi]).zip(pairs) {
        *ev = p[0];
        *ov = p[1];
    }
}

/// `dst.copy_from_slice(src)` for the short runs the transforms gather (one
/// tile row: 1 to 16 tiles). Why: a slice copy of run-time length is a call
/// to `memmove`, and on 4×4 and 8×8 planes (one or two tiles per row) those
/// calls were most of the input transform (6 % of a hybridized ResNet-18
/// forward); copies of a constant length compile to plain moves.
#[inline(always)]
pub(super) fn copy_short<T: Copy>(dst: &mut [T], src: &[T]) {
    #[inline(always)]
    fn n<T: Copy, const N: usize>(dst: &mut [T], src: &[T]) {
        if let (Some(d), Some(s)) = (dst.first_chunk_mut::<N>(), src.first_chunk::<N>()) {
            *d = *s;
        }
    }
    match src.len() {
        1 => n::<T, 1>(dst, src),
        2 => n::<T, 2>(dst, src),
        3 => n::<T, 3>(dst, src),
        4 => n::<T, 4>(dst, src),
        5 => n::<T, 5>(dst, src),
        6 => n::<T, 6>(dst, src),
        7 => n::<T, 7>(dst, src),
        8 => n::<T, 8>(dst, src),
        16 => n::<T, 16>(dst, src),
        _ => dst.copy_from_slice(src),
    }
}

/// Four rows of `len` elements at `buf[first..]`, stride `stride`.
#[inline(always)]
pub(super) fn rows4<T>(buf: &mut [T], first: usize, stride: usize, len: usize) -> [&mut [T]; 4] {
    let (r0, rest) = buf[first..].split_at_mut(stride);
    let (r1, rest) = rest.split_at_mut(stride);
    let (r2, rest) = rest.split_at_mut(stride);
    [&mut r0[..len], &mut r1[..len], &mut r2[..len], &mut rest[..len]]
}

/// `Bᵀ d` of four rows (`x0 - x2, x1 + x2, x2 - x1, x1 - x3`), elementwise.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn bt4<T: ConvElem>(x0: &[T], x1: &[T], x2: &[T], x3: &[T], y0: &mut [T], y1: &mut [T], y2: &mut [T], y3: &mut [T]) {
    let n = y0.len();
    let (x0, x1, x2, x3) = (&x0[..n], &x1[..n], &x2[..n], &x3[..n]);
    let (y1, y2, y3) = (&mut y1[..n], &mut y2[..n], &mut y3[..n]);
    for j in 0..n {
        y0[j] = x0[j] - x2[j];
        y1[j] = x1[j] + x2[j];
        y2[j] = x2[j] - x1[j];
        y3[j] = x1[j] - x3[j];
    }
}

/// `Aᵀ m` of four rows into two (`x0 + x1 + x2, x1 - x2 - x3`), elementwise.
#[inline(always)]
fn at4<T: ConvElem>(x0: &[T], x1: &[T], x2: &[T], x3: &[T], y0: &mut [T], y1: &mut [T]) {
    let n = y0.len();
    let (x0, x1, x2, x3, y1) = (&x0[..n], &x1[..n], &x2[..n], &x3[..n], &mut y1[..n]);
    for j in 0..n {
        y0[j] = x0[j] + x1[j] + x2[j];
        y1[j] = x1[j] - x2[j] - x3[j];
    }
}

/// `A y` of two rows into four (`x0, x0 + x1, x0 - x1, -x1`), elementwise.
#[inline(always)]
pub(super) fn a4<T: ConvElem>(x0: &[T], x1: &[T], y0: &mut [T], y1: &mut [T], y2: &mut [T], y3: &mut [T]) {
    let n = y0.len();
    let (x0, x1) = (&x0[..n], &x1[..n]);
    let (y1, y2, y3) = (&mut y1[..n], &mut y2[..n], &mut y3[..n]);
    for j in 0..n {
        y0[j] = x0[j];
        y1[j] = x0[j] + x1[j];
        y2[j] = x0[j] - x1[j];
        y3[j] = -x1[j];
    }
}

/// `V[ξ][c][t]` = `(Bᵀ d B)[ξ]` for the `nt = rows · tw` tiles of tile rows
/// `r0..r0 + rows` of the block (`x` starts at the block's first sample),
/// `V[ξ]` at stride `c · nt`. Per channel, the 16 patch values of every tile
/// are gathered into 16 vectors over the chunk's tiles (rows split into even
/// and odd columns; patch column `j` is one of them at `t` or `t + 1`), so
/// both halves of the transform run on vectors as long as the chunk, however
/// few tiles a plane's row has.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn transform_input<T: ConvElem>(
    g: &Geom,
    tiles: Tiles,
    x: &[T],
    r0: usize,
    rows: usize,
    cs: Range<usize>,
    v: &mut [T],
    scratch: &mut [T],
) {
    let (th, tw) = (tiles.th, tiles.tw);
    let (ih, iw, ip) = (g.ind[1], g.ind[2], g.ip());
    let nt = rows * tw;
    let plane = cs.len() * nt;
    let w1 = tw + 1;
    let (d, rest) = scratch.split_at_mut(16 * nt);
    let (e, rest) = rest.split_at_mut(16 * nt);
    let (ev, od) = rest[..2 * w1].split_at_mut(w1);
    for (ci, c) in cs.enumerate() {
        for rr in 0..rows {
            let (s, ty) = ((r0 + rr) / th, (r0 + rr) % th);
            let xc = &x[(s * g.c + c) * ip..][..ip];
            for i in 0..4 {
                let y = (2 * ty + i) as isize - g.p[1] as isize;
                let row = (0..ih as isize).contains(&y).then(|| &xc[y as usize * iw..][..iw]);
                split_row(row, -(g.p[2] as isize), ev, od);
                for j in 0..4 {
                    let src = if j % 2 == 0 { &ev[j / 2..][..tw] } else { &od[j / 2..][..tw] };
                    copy_short(&mut d[(i * 4 + j) * nt + rr * tw..][..tw], src);
                }
            }
        }
        // Bᵀ d: column j of every patch, over the rows i
        for j in 0..4 {
            let di = |i: usize| &d[(i * 4 + j) * nt..][..nt];
            let [y0, y1, y2, y3] = rows4(e, j * nt, 4 * nt, nt);
            bt4(di(0), di(1), di(2), di(3), y0, y1, y2, y3);
        }
        // (Bᵀ d) B: row i of every patch, over the columns j
        for i in 0..4 {
            let ej = |j: usize| &e[(i * 4 + j) * nt..][..nt];
            let [v0, v1, v2, v3] = rows4(v, i * 4 * plane + ci * nt, plane, nt);
            bt4(ej(0), ej(1), ej(2), ej(3), v0, v1, v2, v3);
        }
    }
}

/// Writes `Aᵀ m A` (+ bias) of tile rows `r0..r0 + rows` into the block's output,
/// then runs the epilogue on each output row written. Both halves run on vectors
/// over the chunk's tiles; each output row is then interleaved from two of them.
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
    // q[i][c] (i < 4, c < 2) = (m A)[i][c]; y[r][c] = (Aᵀ q)[r][c], each over the tiles
    let (q, rest) = scratch.split_at_mut(8 * nt);
    let y = &mut rest[..4 * nt];
    for o in 0..g.o {
        for i in 0..4 {
            let mj = |j: usize| &m[(4 * i + j) * plane + o * nt..][..nt];
            let (q0, q1) = q[i * 2 * nt..][..2 * nt].split_at_mut(nt);
            at4(mj(0), mj(1), mj(2), mj(3), q0, q1);
        }
        for cc in 0..2 {
            let qi = |i: usize| &q[(i * 2 + cc) * nt..][..nt];
            let (ya, yb) = y.split_at_mut(2 * nt);
            at4(qi(0), qi(1), qi(2), qi(3), &mut ya[cc * nt..][..nt], &mut yb[cc * nt..][..nt]);
        }
        if let Some(b) = bias {
            let bv = b[o];
            y.iter_mut().for_each(|v| *v += bv);
        }
        for rr in 0..rows {
            let (s, ty) = ((r0 + rr) / th, (r0 + rr) % th);
            let at = (s * g.o + o) * op;
            let dst = &mut out[at..][..op];
            let nrows = oh.saturating_sub(2 * ty).min(2);
            for r in 0..nrows {
                let yc = |cc: usize| &y[(r * 2 + cc) * nt + rr * tw..][..tw];
                interleave(yc(0), yc(1), &mut dst[(2 * ty + r) * ow..][..ow]);
            }
            if !epi.is_none() {
                let y0 = 2 * ty * ow;
                epi.apply(o, at + y0, &mut dst[y0..y0 + nrows * ow]);
            }
        }
    }
}

/// `dst[2k] = a[k]`, `dst[2k + 1] = b[k]` (as far as `dst` reaches).
#[inline(always)]
fn interleave<T: Copy>(a: &[T], b: &[T], dst: &mut [T]) {
    let half = dst.len() / 2;
    let (pairs, rest) = dst.as_chunks_mut::<2>();
    for ((p, &x), &y) in pairs.iter_mut().zip(a).zip(b) {
        *p = [x, y];
    }
    if let (Some(last), Some(&x)) = (rest.first_mut(), a.get(half)) {
        *last = x;
    }
}
