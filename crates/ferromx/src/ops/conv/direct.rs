//! Direct convolution for thin layers: few output channels, small kernels
//! (LeNet's 5×5 layers), stride 1.
//!
//! Why: im2col turns LeNet's first layer (1 → 6 channels, 5×5, 28×28) into a
//! 25-row column matrix per sample that is written, read back and packed by
//! the gemm — three passes over 25× the input — for a product only 6 rows
//! tall. Here each output row is computed in registers straight from a
//! zero-padded copy of the sample: `LANES` output positions of `B` output
//! channels accumulate `w[o, c, i, j] · x[c, y + i, x + j ..]` over the
//! kernel, one vector load of the input per tap and `B` multiply-adds. Rows
//! are padded up to whole vectors; the positions past the row's end are
//! computed from the padding and never stored.
//!
//! The data gradient is the same kernel: `dx` is the convolution of `dy`,
//! padded by `k − 1 − p`, with the filters flipped and their channel axes
//! swapped.
//!
//! float32 only, written with `pulp`'s explicit vectors (LLVM turned the
//! plain-array form into scalar or gather code); other dtypes keep im2col.

use super::cpu::{for_blocks, ConvElem};
use super::epilogue::Epilogue;
use super::Geom;
use crate::storage::Scratch;
use pulp::{Simd, WithSimd};

/// Widest vector (f32 lanes) the padded rows are laid out for.
pub(super) const LANES: usize = 16;
/// Most output channels per register block.
const MAX_B: usize = 8;
/// Most output channels a layer may have to take this path.
const MAX_OUT: usize = 16;
/// Most column-matrix rows (`c · kh · kw`): past that the gemm's blocking wins.
const MAX_ROWS: usize = 512;

/// Whether the direct kernel is on (`FERROMX_CONV_DIRECT=0` turns it off, to
/// compare with the im2col path).
fn enabled() -> bool {
    use std::sync::OnceLock;
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("FERROMX_CONV_DIRECT").map(|v| v != "0").unwrap_or(true))
}

/// Element types the direct kernel runs on: float32 (others keep im2col).
pub(crate) trait AsF32: Sized {
    /// The slice as `f32`, when the element type is `f32`.
    fn f32s(s: &[Self]) -> Option<&[f32]>;
    /// The slice as mutable `f32`, when the element type is `f32`.
    fn f32s_mut(s: &mut [Self]) -> Option<&mut [f32]>;
}

impl AsF32 for f32 {
    fn f32s(s: &[f32]) -> Option<&[f32]> {
        Some(s)
    }
    fn f32s_mut(s: &mut [f32]) -> Option<&mut [f32]> {
        Some(s)
    }
}

impl AsF32 for f64 {
    fn f32s(_: &[f64]) -> Option<&[f32]> {
        None
    }
    fn f32s_mut(_: &mut [f64]) -> Option<&mut [f32]> {
        None
    }
}

/// Whether the direct kernel computes the forward of `g` in `T`: float32, a
/// 2-D, ungrouped, stride-1, undilated convolution with at most [`MAX_OUT`]
/// output channels and a kernel bigger than 1×1.
pub(crate) fn applies<T: ConvElem>(g: &Geom) -> bool {
    T::f32s(&[]).is_some()
        && enabled()
        && g.groups == 1
        && g.s == [1, 1, 1]
        && g.d == [1, 1, 1]
        && g.k[0] == 1
        && g.ind[0] == 1
        && g.p[0] == 0
        && g.k[1] * g.k[2] > 1
        && g.o <= MAX_OUT
        && g.rows() <= MAX_ROWS
}

/// The forward geometry of `g`'s data gradient (see the module docs), if the
/// direct kernel computes it.
pub(crate) fn data_grad_geom<T: ConvElem>(g: &Geom) -> Option<Geom> {
    if g.p[1] >= g.k[1] || g.p[2] >= g.k[2] {
        return None;
    }
    let t = Geom {
        n: g.n,
        c: g.o,
        o: g.c,
        groups: 1,
        ind: g.outd,
        outd: g.ind,
        k: g.k,
        s: g.s,
        d: g.d,
        p: [0, g.k[1] - 1 - g.p[1], g.k[2] - 1 - g.p[2]],
    };
    (g.groups == 1 && applies::<T>(&t)).then_some(t)
}

/// `dx` of `g` by the direct kernel over the flipped, channel-swapped filters
/// (`t` from [`data_grad_geom`]).
pub(crate) fn backward_data<T: ConvElem>(g: &Geom, t: &Geom, dy: &[T], w: &[T], dx: &mut [T]) -> bool {
    let kk = g.k[1] * g.k[2];
    let mut wt = Scratch::any(w.len());
    for o in 0..g.o {
        for c in 0..g.c {
            let src = &w[(o * g.c + c) * kk..][..kk];
            let dst = &mut wt[(c * g.o + o) * kk..][..kk];
            for (d, s) in dst.iter_mut().zip(src.iter().rev()) {
                *d = *s;
            }
        }
    }
    forward(t, dy, &wt, None, &Epilogue::NONE, dx)
}

/// Filters repacked per block of `b` output channels as `[block][c][i][j][b]`,
/// so a tap's `b` weights are adjacent (a missing channel of the last block is 0).
fn pack(g: &Geom, w: &[f32], b: usize) -> Scratch<f32> {
    let taps = g.rows();
    let blocks = g.o.div_ceil(b);
    let mut p = Scratch::zeroed(blocks * taps * b);
    for o in 0..g.o {
        let (blk, lane) = (o / b, o % b);
        for (t, &v) in w[o * taps..(o + 1) * taps].iter().enumerate() {
            p[(blk * taps + t) * b + lane] = v;
        }
    }
    p
}

/// `out = conv(x, w) + bias`, then `epi` on each output row. Returns `false`
/// (and writes nothing) when `T` is not float32.
pub(crate) fn forward<T: ConvElem>(
    g: &Geom,
    x: &[T],
    w: &[T],
    bias: Option<&[T]>,
    epi: &Epilogue<'_, T>,
    out: &mut [T],
) -> bool {
    let (Some(xf), Some(wf)) = (T::f32s(x), T::f32s(w)) else {
        return false;
    };
    let bias_f = bias.and_then(T::f32s);
    // Register blocks of up to MAX_B channels, as even as possible (6 → 6, 16 → 8 + 8).
    let b = g.o.div_ceil(g.o.div_ceil(MAX_B));
    let packed = pack(g, wf, b);
    let (ip, op) = (g.ip(), g.op());
    let flops = 2 * g.o * op * g.rows();
    for_blocks(out, g.o * op, flops, &|first, block, _par| {
        let epi = epi.offset(first * g.o * op);
        let mut pad = Padded::new(g);
        for (j, y) in block.chunks_mut(g.o * op).enumerate() {
            let s = first + j;
            pad.load(&xf[s * g.c * ip..(s + 1) * g.c * ip]);
            if let Some(yf) = T::f32s_mut(y) {
                let arch = pulp::Arch::new();
                match b {
                    1 => arch.dispatch(Sample::<1> { g, x: &pad, packed: &packed, bias: bias_f, out: yf }),
                    2 => arch.dispatch(Sample::<2> { g, x: &pad, packed: &packed, bias: bias_f, out: yf }),
                    3 => arch.dispatch(Sample::<3> { g, x: &pad, packed: &packed, bias: bias_f, out: yf }),
                    4 => arch.dispatch(Sample::<4> { g, x: &pad, packed: &packed, bias: bias_f, out: yf }),
                    5 => arch.dispatch(Sample::<5> { g, x: &pad, packed: &packed, bias: bias_f, out: yf }),
                    6 => arch.dispatch(Sample::<6> { g, x: &pad, packed: &packed, bias: bias_f, out: yf }),
                    7 => arch.dispatch(Sample::<7> { g, x: &pad, packed: &packed, bias: bias_f, out: yf }),
                    _ => arch.dispatch(Sample::<MAX_B> { g, x: &pad, packed: &packed, bias: bias_f, out: yf }),
                }
            }
            if !epi.is_none() {
                for (o, row) in y.chunks_mut(op).enumerate() {
                    epi.apply(o, (j * g.o + o) * op, row);
                }
            }
        }
    });
    true
}

/// One sample's input, zero-padded: rows of `width` elements (the padded
/// input row, rounded so every output vector's taps are in bounds).
struct Padded {
    buf: Scratch<f32>,
    rows: usize,
    width: usize,
    g: Geom,
}

impl Padded {
    fn new(g: &Geom) -> Padded {
        let (oh, ow) = (g.outd[1], g.outd[2]);
        let rows = (g.ind[1] + 2 * g.p[1]).max(oh + g.k[1] - 1);
        let width = ow.div_ceil(LANES) * LANES + g.k[2] - 1;
        Padded { buf: Scratch::zeroed(g.c * rows * width), rows, width, g: *g }
    }

    /// Copies one sample `(c, h, w)` in; the borders stay zero.
    fn load(&mut self, x: &[f32]) {
        let (ih, iw) = (self.g.ind[1], self.g.ind[2]);
        let (ph, pw) = (self.g.p[1], self.g.p[2]);
        for (c, plane) in x.chunks_exact(ih * iw).enumerate() {
            for (r, src) in plane.chunks_exact(iw).enumerate() {
                let at = (c * self.rows + r + ph) * self.width + pw;
                self.buf[at..at + iw].copy_from_slice(src);
            }
        }
    }

    /// Row `r` of channel `c`.
    #[inline(always)]
    fn row(&self, c: usize, r: usize) -> &[f32] {
        &self.buf[(c * self.rows + r) * self.width..][..self.width]
    }
}

/// One sample's output `(o, oh, ow)` in register blocks of `B` channels by one
/// vector of positions.
struct Sample<'a, const B: usize> {
    g: &'a Geom,
    x: &'a Padded,
    packed: &'a [f32],
    bias: Option<&'a [f32]>,
    out: &'a mut [f32],
}

impl<const B: usize> WithSimd for Sample<'_, B> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let g = self.g;
        let lanes = S::F32_LANES.min(LANES);
        let (oh, ow) = (g.outd[1], g.outd[2]);
        let (kh, kw) = (g.k[1], g.k[2]);
        let taps = g.rows();
        for blk in 0..g.o.div_ceil(B) {
            let wb = &self.packed[blk * taps * B..(blk + 1) * taps * B];
            let nb = B.min(g.o - blk * B);
            for y in 0..oh {
                for x0 in (0..ow).step_by(lanes) {
                    let mut acc = [simd.splat_f32s(0.0); B];
                    if let Some(bias) = self.bias {
                        for (lane, a) in acc.iter_mut().enumerate().take(nb) {
                            *a = simd.splat_f32s(bias[blk * B + lane]);
                        }
                    }
                    let mut wt = wb.chunks_exact(B);
                    for c in 0..g.c {
                        for i in 0..kh {
                            let row = &self.x.row(c, y + i)[x0..];
                            for j in 0..kw {
                                let xv = load::<S>(&row[j..]);
                                let Some(wv) = wt.next() else { return };
                                for (a, &wgt) in acc.iter_mut().zip(wv) {
                                    *a = simd.mul_add_e_f32s(simd.splat_f32s(wgt), xv, *a);
                                }
                            }
                        }
                    }
                    let n = lanes.min(ow - x0);
                    for (lane, a) in acc.iter().enumerate().take(nb) {
                        let at = ((blk * B + lane) * oh + y) * ow + x0;
                        simd.partial_store_f32s(&mut self.out[at..at + n], *a);
                    }
                }
            }
        }
    }
}

/// One whole vector of `S` read from the front of `s` (any alignment).
#[inline(always)]
pub(super) fn load<S: Simd>(s: &[f32]) -> S::f32s {
    bytemuck::pod_read_unaligned(bytemuck::cast_slice(&s[..S::F32_LANES]))
}
