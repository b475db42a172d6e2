//! Direct weight gradient for the thin layers of [`super::direct`] (LeNet's
//! 5×5 layers): `dw[o, c, i, j] = Σ_{n, y, x} dy[n, o, y, x] · x[n, c, y + i, x + j]`
//! with `x` zero-padded.
//!
//! Why: through im2col the sum is a gemm `B` rows tall (6 or 16 output
//! channels) and 25 or 150 columns wide over a long inner dimension, whose
//! microkernel runs on one-vector-wide tiles (`x1x6`), after a column matrix
//! 25× the input is written and packed. That made the weight gradient half of
//! LeNet's backward. Here a block of `B` output channels by all `KW` taps of
//! one kernel row accumulates in `B · KW` vector registers: per output vector,
//! `B` loads of `dy` and `KW` loads of the padded input feed `B · KW`
//! multiply-adds. The registers hold lane-wise partial sums across samples
//! (in a small per-core table of vectors); the lanes are added once at the end.
//!
//! Samples are padded [`SUB`] at a time ([`Layout`]: `dy` at the padded input's
//! row stride with zeros past each row's end, and output channels up to a
//! multiple of `B` with zero planes), so each tap is one long run of whole
//! vectors over a plane, and the positions past a row's end contribute zero.

use super::cpu::{sum_of_blocks, ConvElem};
use super::direct::{self, load, LANES};
use super::Geom;
use crate::storage::Scratch;
use pulp::{Simd, WithSimd};

/// Samples padded at a time (their padded input and `dy` stay in L2 while
/// every tap runs over them).
const SUB: usize = 8;

/// `dw` of `g` by the direct kernel when it applies (the forward's conditions,
/// float32, kernel rows of at most 7 taps); `false` (nothing written) otherwise.
pub(crate) fn backward_weight<T: ConvElem>(g: &Geom, dy: &[T], x: &[T], dw: &mut [T]) -> bool {
    if !direct::applies::<T>(g) || g.k[2] > 7 {
        return false;
    }
    let (Some(xf), Some(dyf)) = (T::f32s(x), T::f32s(dy)) else {
        return false;
    };
    if !pulp::Arch::new().dispatch(LanesFit) {
        return false;
    }
    let Some(d) = T::f32s_mut(dw) else {
        return false;
    };
    let threads = rayon::current_num_threads().max(1);
    let blocks = threads.min(g.n).max(1);
    let per = g.n.div_ceil(blocks);
    let sum = sum_of_blocks::<f32>(blocks, &|b| {
        let samples = (b * per).min(g.n)..((b + 1) * per).min(g.n);
        block_sums(g, dyf, xf, samples)
    });
    d.copy_from_slice(&sum);
    true
}

/// Whether this machine's widest vector fits a table entry of [`LANES`].
struct LanesFit;

impl WithSimd for LanesFit {
    type Output = bool;

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) -> bool {
        S::F32_LANES <= LANES
    }
}

/// The weight gradient summed over `samples` (`o · c · kh · kw` values).
fn block_sums(g: &Geom, dy: &[f32], x: &[f32], samples: std::ops::Range<usize>) -> Scratch<f32> {
    let (b, kw) = (regs_block(g.o, g.k[2]), g.k[2]);
    let lay = Layout::of(g, b);
    let taps = g.c * g.k[1] * kw;
    let mut table = Scratch::<f32>::zeroed(lay.opad * taps * LANES);
    let mut xp = Scratch::<f32>::zeroed(SUB * g.c * lay.xplane);
    let mut dyp = Scratch::<f32>::zeroed(SUB * lay.opad * lay.dplane);
    let mut s0 = samples.start;
    while s0 < samples.end {
        let ns = SUB.min(samples.end - s0);
        lay.load(g, x, dy, s0, ns, &mut xp, &mut dyp);
        let run = Accumulate { g, lay: &lay, x: &xp, dy: &dyp, ns, table: &mut table };
        let arch = pulp::Arch::new();
        // The pairs `regs_block` gives (the layout was padded for `b` channels).
        match (b, kw) {
            (8, 1) => arch.dispatch(Kernel::<8, 1>(run)),
            (8, 2) => arch.dispatch(Kernel::<8, 2>(run)),
            (6, 3) => arch.dispatch(Kernel::<6, 3>(run)),
            (6, 4) => arch.dispatch(Kernel::<6, 4>(run)),
            (3, 5) => arch.dispatch(Kernel::<3, 5>(run)),
            (4, 5) => arch.dispatch(Kernel::<4, 5>(run)),
            (4, 6) => arch.dispatch(Kernel::<4, 6>(run)),
            _ => arch.dispatch(Kernel::<3, 7>(run)),
        }
        s0 += ns;
    }
    let mut out = Scratch::<f32>::any(g.o * taps);
    for (d, lanes) in out.iter_mut().zip(table.chunks_exact(LANES)) {
        *d = lanes.iter().sum();
    }
    out
}

/// Output channels per register block for `o` channels and kernel rows of
/// `kw` taps: `B · kw` accumulators plus `B + 1` operands fit in 32 vector
/// registers; for 5 taps, blocks of 3 when they divide `o` and 4 do not
/// (LeNet's 6 channels: 2 blocks of 3 instead of 4 + 4 with 2 idle).
fn regs_block(o: usize, kw: usize) -> usize {
    match kw {
        1 | 2 => 8,
        3 | 4 => 6,
        5 if !o.is_multiple_of(4) && o.is_multiple_of(3) => 3,
        5 | 6 => 4,
        _ => 3,
    }
}

/// Where the padded samples lie: each input plane as rows of `width` (the
/// padded row, no rounding), and each `dy` plane at the same row stride with
/// zeros past `ow`, so output position `v` (flattened at that stride) meets
/// input position `v + i · width + j` for tap `(i, j)`: one long run of whole
/// vectors per plane instead of short rows.
struct Layout {
    /// Output channels rounded up to a multiple of the register block.
    opad: usize,
    /// Elements per padded input row (`iw + 2 · pw`).
    width: usize,
    /// Elements of a padded `dy` plane (`oh · width`, rounded to whole vectors).
    dplane: usize,
    /// Elements of a padded input plane: every tap's run of `dplane` (plus one
    /// vector) stays inside it.
    xplane: usize,
}

impl Layout {
    fn of(g: &Geom, b: usize) -> Layout {
        let (oh, kh, kw) = (g.outd[1], g.k[1], g.k[2]);
        let width = g.ind[2] + 2 * g.p[2];
        let rows = g.ind[1] + 2 * g.p[1];
        let dplane = (oh * width).div_ceil(LANES) * LANES;
        let xplane = ((kh - 1) * width + kw - 1 + dplane + LANES).max(rows * width);
        Layout { opad: g.o.div_ceil(b) * b, width, dplane, xplane }
    }

    /// Copies samples `s0 .. s0 + ns` of `x` and `dy` into their padded
    /// buffers (borders, tails and the extra channels stay zero).
    #[allow(clippy::too_many_arguments)]
    fn load(&self, g: &Geom, x: &[f32], dy: &[f32], s0: usize, ns: usize, xp: &mut [f32], dyp: &mut [f32]) {
        let (ih, iw, oh, ow) = (g.ind[1], g.ind[2], g.outd[1], g.outd[2]);
        let (ip, op) = (ih * iw, oh * ow);
        for s in 0..ns {
            for c in 0..g.c {
                let src = &x[((s0 + s) * g.c + c) * ip..][..ip];
                for (r, row) in src.chunks_exact(iw).enumerate() {
                    let at = (s * g.c + c) * self.xplane + (r + g.p[1]) * self.width + g.p[2];
                    xp[at..at + iw].copy_from_slice(row);
                }
            }
            for o in 0..g.o {
                let src = &dy[((s0 + s) * g.o + o) * op..][..op];
                for (y, row) in src.chunks_exact(ow).enumerate() {
                    let at = (s * self.opad + o) * self.dplane + y * self.width;
                    dyp[at..at + ow].copy_from_slice(row);
                }
            }
        }
    }
}

/// One pass of padded samples into the table of lane-wise sums
/// (`table[((o · c + ci) · kh + i) · kw + j]` is a vector of [`LANES`]).
struct Accumulate<'a> {
    g: &'a Geom,
    lay: &'a Layout,
    x: &'a [f32],
    dy: &'a [f32],
    ns: usize,
    table: &'a mut [f32],
}

/// [`Accumulate`] with `B` output channels by `KW` taps in registers.
struct Kernel<'a, const B: usize, const KW: usize>(Accumulate<'a>);

impl<const B: usize, const KW: usize> WithSimd for Kernel<'_, B, KW> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Accumulate { g, lay, x, dy, ns, table } = self.0;
        // Checked by the caller (`LanesFit`); a wider vector would overrun an entry.
        let lanes = S::F32_LANES.min(LANES);
        let (kh, dplane) = (g.k[1], lay.dplane);
        for ob in (0..lay.opad).step_by(B) {
            for c in 0..g.c {
                for i in 0..kh {
                    let entry = |b: usize, j: usize| ((((ob + b) * g.c + c) * kh + i) * KW + j) * LANES;
                    let mut acc = [[simd.splat_f32s(0.0); KW]; B];
                    for (b, row) in acc.iter_mut().enumerate() {
                        for (j, a) in row.iter_mut().enumerate() {
                            *a = load::<S>(&table[entry(b, j)..]);
                        }
                    }
                    for s in 0..ns {
                        let xs = &x[(s * g.c + c) * lay.xplane + i * lay.width..][..dplane + KW - 1 + lanes];
                        let ds: [&[f32]; B] =
                            std::array::from_fn(|b| &dy[(s * lay.opad + ob + b) * dplane..][..dplane]);
                        for v in (0..dplane).step_by(lanes) {
                            let d: [S::f32s; B] = std::array::from_fn(|b| load::<S>(&ds[b][v..]));
                            for j in 0..KW {
                                let xv = load::<S>(&xs[v + j..]);
                                for b in 0..B {
                                    acc[b][j] = simd.mul_add_e_f32s(d[b], xv, acc[b][j]);
                                }
                            }
                        }
                    }
                    for (b, row) in acc.iter().enumerate() {
                        for (j, a) in row.iter().enumerate() {
                            simd.partial_store_f32s(&mut table[entry(b, j)..][..lanes], *a);
                        }
                    }
                }
            }
        }
    }
}
