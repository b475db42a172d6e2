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

use super::cpu::{for_blocks, mm, ConvElem};
use super::Geom;

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

/// Whether the data gradient of `g` runs through Winograd: it is a 3×3
/// convolution of the output gradient with the flipped filter, padded by `2 - p`.
pub(crate) fn applies_data_grad(g: &Geom) -> bool {
    applies(g) && g.p[1] <= 2 && g.p[2] <= 2
}

fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("FERROMX_WINOGRAD").map_or(true, |v| v != "0"))
}

/// Fewest input and output channels for the Winograd path.
const MIN_CH: usize = 16;
/// A chunk's transformed input and output stay under this many bytes.
const CHUNK_BYTES: usize = 1 << 21;
/// Fewest tiles per chunk (narrower gemms re-pack the filter too often).
const MIN_TILES: usize = 64;

/// `out = conv(x, w) [+ bias]` by Winograd (`applies(g)` must hold).
pub(crate) fn forward<T: ConvElem>(g: &Geom, x: &[T], w: &[T], bias: Option<&[T]>, out: &mut [T]) {
    let u = filter(w, g.o, g.c, false);
    run(g, x, &u, bias, out);
}

/// `dx = conv_transpose(dy, w)` by Winograd (`applies_data_grad(g)` must hold).
pub(crate) fn backward_data<T: ConvElem>(g: &Geom, dy: &[T], w: &[T], dx: &mut [T]) {
    let t = Geom { c: g.o, o: g.c, ind: g.outd, outd: g.ind, p: [0, 2 - g.p[1], 2 - g.p[2]], ..*g };
    let u = filter(w, g.o, g.c, true);
    run(&t, dy, &u, None, dx);
}

/// `U[ξ]` for the 16 positions, each a row-major matrix of output by input
/// channels: `G g Gᵀ` of the filter `w` (`o × c × 3 × 3`). With `flip`, the
/// filter of the data gradient: rows are `w`'s input channels, columns its
/// output channels, and the 3×3 kernel is rotated by 180°.
fn filter<T: ConvElem>(w: &[T], o: usize, c: usize, flip: bool) -> Vec<T> {
    let half = T::from(0.5).unwrap_or_else(T::zero);
    let (rows, cols) = if flip { (c, o) } else { (o, c) };
    let mut u = vec![T::zero(); 16 * rows * cols];
    for oi in 0..o {
        for ci in 0..c {
            let k = &w[(oi * c + ci) * 9..][..9];
            let gv = |r: usize, s: usize| if flip { k[(2 - r) * 3 + 2 - s] } else { k[r * 3 + s] };
            // Column s of t = G g (4 × 3); then each row of t times Gᵀ.
            let tc: [[T; 4]; 3] = std::array::from_fn(|s| {
                let (a, b, cc) = (gv(0, s), gv(1, s), gv(2, s));
                [a, (a + b + cc) * half, (a - b + cc) * half, cc]
            });
            let t: [[T; 3]; 4] = std::array::from_fn(|i| [tc[0][i], tc[1][i], tc[2][i]]);
            let (r, col) = if flip { (ci, oi) } else { (oi, ci) };
            for (i, ti) in t.iter().enumerate() {
                let (a, b, cc) = (ti[0], ti[1], ti[2]);
                let v = [a, (a + b + cc) * half, (a - b + cc) * half, cc];
                for (j, &vj) in v.iter().enumerate() {
                    u[((i * 4 + j) * rows + r) * cols + col] = vj;
                }
            }
        }
    }
    u
}

/// The tiling of one sample's output plane.
#[derive(Clone, Copy)]
struct Tiles {
    /// Tile rows and columns.
    th: usize,
    tw: usize,
}

impl Tiles {
    fn of(g: &Geom) -> Tiles {
        Tiles { th: g.outd[1].div_ceil(2), tw: g.outd[2].div_ceil(2) }
    }
}

/// The Winograd convolution of `x` with the transformed filter `u`. A block's
/// tile rows (all its samples' in turn) are processed in chunks of whole rows.
fn run<T: ConvElem>(g: &Geom, x: &[T], u: &[T], bias: Option<&[T]>, out: &mut [T]) {
    let tiles = Tiles::of(g);
    let sz = std::mem::size_of::<T>();
    let chunk_tiles = (chunk_bytes() / (16 * (g.c + g.o) * sz)).max(MIN_TILES);
    let rows_per_chunk = chunk_tiles.div_ceil(tiles.tw).max(1);
    let flops = 2 * 16 * g.o * g.c * tiles.th * tiles.tw;
    for_blocks(out, g.o * g.op(), flops, &|first, block, par| {
        let count = block.len() / (g.o * g.op());
        let total = count * tiles.th;
        let nr = rows_per_chunk.min(total);
        let mut v = vec![T::zero(); 16 * g.c * nr * tiles.tw];
        let mut m = vec![T::zero(); 16 * g.o * nr * tiles.tw];
        let mut scratch = vec![T::zero(); 8 * (2 * tiles.tw + 2)];
        let mut r0 = 0;
        while r0 < total {
            let rows = nr.min(total - r0);
            let ld = rows * tiles.tw;
            transform_input(g, tiles, &x[first * g.c * g.ip()..], r0, rows, &mut v, &mut scratch);
            for xi in 0..16 {
                let (mo, vo) = (xi * g.o * ld, xi * g.c * ld);
                mm(par, g.o, ld, g.c, &mut m[mo..mo + g.o * ld], &u[xi * g.o * g.c..], false, &v[vo..], false, false);
            }
            transform_output(g, tiles, &m, r0, rows, bias, block, &mut scratch);
            r0 += rows;
        }
    });
}

/// Bytes of transformed input and output per chunk (`FERROMX_WINOGRAD_CHUNK_KB`
/// overrides, for tuning).
fn chunk_bytes() -> usize {
    static B: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *B.get_or_init(|| {
        std::env::var("FERROMX_WINOGRAD_CHUNK_KB")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .map_or(CHUNK_BYTES, |k| k << 10)
    })
}

/// `V[ξ][c][t]` = `(Bᵀ d B)[ξ]` for the tiles of tile rows `r0..r0 + rows`
/// of the block (`x` starts at the block's first sample), `V[ξ]` at stride
/// `rows · tw`. Per channel and tile row the vertical transform runs on whole
/// (zero-padded) input rows, the horizontal one over consecutive tiles.
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
    let ld = rows * tw;
    let plane = g.c * ld;
    let wp = 2 * tw + 2;
    let (d, b) = scratch[..8 * wp].split_at_mut(4 * wp);
    // The input columns a padded row covers: x0 = -p .. -p + wp.
    let (lo, hi, src0) = super::cpu::span(-(g.p[2] as isize), wp, iw);
    for c in 0..g.c {
        for r in r0..r0 + rows {
            let (s, ty) = (r / th, r % th);
            let xc = &x[(s * g.c + c) * ip..][..ip];
            for (i, row) in d.chunks_mut(wp).enumerate() {
                let y = (2 * ty + i) as isize - g.p[1] as isize;
                if (0..ih as isize).contains(&y) {
                    row[..lo].fill(T::zero());
                    row[lo..hi].copy_from_slice(&xc[y as usize * iw + src0..][..hi - lo]);
                    row[hi..].fill(T::zero());
                } else {
                    row.fill(T::zero());
                }
            }
            let (d0, d1, d2, d3) = (&d[..wp], &d[wp..2 * wp], &d[2 * wp..3 * wp], &d[3 * wp..4 * wp]);
            let (b01, b23) = b.split_at_mut(2 * wp);
            let (b0, b1) = b01.split_at_mut(wp);
            let (b2, b3) = b23.split_at_mut(wp);
            for j in 0..wp {
                b0[j] = d0[j] - d2[j];
                b1[j] = d1[j] + d2[j];
                b2[j] = d2[j] - d1[j];
                b3[j] = d1[j] - d3[j];
            }
            let col = c * ld + (r - r0) * tw;
            for (i, bi) in [&*b0, &*b1, &*b2, &*b3].into_iter().enumerate() {
                let base = i * 4 * plane + col;
                let (v0, rest) = v[base..].split_at_mut(plane);
                let (v1, rest) = rest.split_at_mut(plane);
                let (v2, v3) = rest.split_at_mut(plane);
                let (v0, v1, v2, v3) = (&mut v0[..tw], &mut v1[..tw], &mut v2[..tw], &mut v3[..tw]);
                for tx in 0..tw {
                    let q = &bi[2 * tx..2 * tx + 4];
                    v0[tx] = q[0] - q[2];
                    v1[tx] = q[1] + q[2];
                    v2[tx] = q[2] - q[1];
                    v3[tx] = q[1] - q[3];
                }
            }
        }
    }
}

/// Writes `Aᵀ m A` (+ bias) of tile rows `r0..r0 + rows` into the block's output.
#[allow(clippy::too_many_arguments)]
fn transform_output<T: ConvElem>(
    g: &Geom,
    tiles: Tiles,
    m: &[T],
    r0: usize,
    rows: usize,
    bias: Option<&[T]>,
    out: &mut [T],
    scratch: &mut [T],
) {
    let (th, tw) = (tiles.th, tiles.tw);
    let (oh, ow, op) = (g.outd[1], g.outd[2], g.op());
    let ld = rows * tw;
    let plane = g.o * ld;
    let (y0r, rest) = scratch.split_at_mut(2 * tw);
    let y1r = &mut rest[..2 * tw];
    for o in 0..g.o {
        let b = bias.map_or(T::zero(), |b| b[o]);
        for r in r0..r0 + rows {
            let (s, ty) = (r / th, r % th);
            let col = o * ld + (r - r0) * tw;
            let e = |xi: usize| &m[xi * plane + col..][..tw];
            let mr: [&[T]; 16] = std::array::from_fn(e);
            for tx in 0..tw {
                // q[c][i] = (m A)[i][c]; the tile is y[r][c] = (Aᵀ q[c])[r].
                let q = |i: usize| {
                    let (m0, m1, m2, m3) = (mr[4 * i][tx], mr[4 * i + 1][tx], mr[4 * i + 2][tx], mr[4 * i + 3][tx]);
                    (m0 + m1 + m2, m1 - m2 - m3)
                };
                let (q0, q1, q2, q3) = (q(0), q(1), q(2), q(3));
                y0r[2 * tx] = q0.0 + q1.0 + q2.0 + b;
                y0r[2 * tx + 1] = q0.1 + q1.1 + q2.1 + b;
                y1r[2 * tx] = q1.0 - q2.0 - q3.0 + b;
                y1r[2 * tx + 1] = q1.1 - q2.1 - q3.1 + b;
            }
            let dst = &mut out[(s * g.o + o) * op..][..op];
            dst[2 * ty * ow..][..ow].copy_from_slice(&y0r[..ow]);
            if 2 * ty + 1 < oh {
                dst[(2 * ty + 1) * ow..][..ow].copy_from_slice(&y1r[..ow]);
            }
        }
    }
}
