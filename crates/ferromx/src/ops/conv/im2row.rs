//! Patch matrices of strided convolutions in position-major order ("im2row"),
//! built from a channels-last copy of each sample.
//!
//! Why: [`im2col`](super::cpu::im2col) writes one row per (channel, kernel
//! tap) holding the tap's input element for every output position; with a
//! stride of 2 each of those rows is a gather of every second element, and
//! on ResNet-18's downsampling layers (outputs 16, 8 or 4 wide) the rows are
//! so short that the per-row work dominated: im2col was 30 % of the 64 → 128
//! stride-2 forward. Here the input is first transposed to `positions ×
//! channels` (one tiled pass), and the patch matrix has one row per output
//! position holding, per tap, that position's run of `c` contiguous channels:
//! `ow · kh · kw` copies of `c` elements instead of `c · kh · kw · oh` gathers
//! of `ow`. The gemms read the patch matrix transposed, and the filter is
//! permuted once per call to the same `(tap, channel)` order.
//!
//! The data gradient is the adjoint: the products come out as rows, are added
//! back into a channels-last gradient ([`scatter`]), then transposed back.

use super::cpu::ConvElem;
use super::Geom;
use crate::shape::transpose_rows;

/// Fewest input channels: the runs copied per tap are `c` long.
const MIN_CH: usize = 32;

/// Whether `g` runs on row patch matrices: a strided 2-D convolution with one
/// group, more than one tap and at least [`MIN_CH`] input channels (its caller
/// also requires products that are not computed transposed, see `cpu::thin`).
/// A strided 1×1 layer's im2col rows are single gathers, which stayed faster
/// (64 → 128 channels at 32×32: 1.9 ms forward against 3.0 on rows).
pub(crate) fn applies(g: &Geom) -> bool {
    enabled()
        && g.ind[0] == 1
        && g.k[0] == 1
        && g.groups == 1
        && (g.s[1] > 1 || g.s[2] > 1)
        && taps(g) > 1
        && g.c >= MIN_CH
}

/// `FERROMX_IM2ROW=0` keeps strided layers on im2col (for side-by-side benchmarks).
fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("FERROMX_IM2ROW").map_or(true, |v| v != "0"))
}

/// Kernel taps per channel.
fn taps(g: &Geom) -> usize {
    g.k[1] * g.k[2]
}

/// Elements of one sample's channels-last copy (the workspace [`rows`] and [`scatter`] take).
pub(crate) fn sample_len(g: &Geom) -> usize {
    g.c * g.ip()
}

/// `dst[o][t][c] = w[o][c][t]`: filters `(o, c, taps)` in the patch rows' `(tap, channel)` order.
pub(crate) fn taps_first<T: Copy + 'static>(g: &Geom, w: &[T], dst: &mut [T]) {
    let k = g.rows();
    for (src, out) in w.chunks_exact(k).zip(dst.chunks_exact_mut(k)) {
        transpose_rows(src, g.c, taps(g), 0, out);
    }
}

/// The inverse of [`taps_first`]: `dst[o][c][t] = w[o][t][c]`.
pub(crate) fn channels_first<T: Copy + 'static>(g: &Geom, w: &[T], dst: &mut [T]) {
    let k = g.rows();
    for (src, out) in w.chunks_exact(k).zip(dst.chunks_exact_mut(k)) {
        transpose_rows(src, taps(g), g.c, 0, out);
    }
}

/// The patch rows of samples `s0..s0 + nb` of `x`, one sample after another
/// in `out` (`nb · op` rows of `rows()` elements); `hwc` is a workspace of
/// [`sample_len`] elements.
pub(crate) fn rows<'a, T: ConvElem>(
    g: &Geom,
    x: &[T],
    s0: usize,
    nb: usize,
    hwc: &mut [T],
    out: &'a mut [T],
) -> &'a [T] {
    let (len, per) = (sample_len(g), g.op() * g.rows());
    let c = g.c;
    for j in 0..nb {
        transpose_rows(&x[(s0 + j) * len..][..len], c, g.ip(), 0, &mut hwc[..len]);
        let dst = &mut out[j * per..][..per];
        for_each_tap(g, |r, at| {
            let run = &mut dst[r * c..][..c];
            match at {
                Some(i) => run.copy_from_slice(&hwc[i..i + c]),
                None => run.fill(T::zero()),
            }
        });
    }
    &out[..nb * per]
}

/// Adds the patch-row gradients `d` of `nb` samples back into their input
/// gradients `dx` (`nb` samples, written, not accumulated); `hwc` as in [`rows`].
pub(crate) fn scatter<T: ConvElem>(g: &Geom, d: &[T], nb: usize, hwc: &mut [T], dx: &mut [T]) {
    let (len, per, c) = (sample_len(g), g.op() * g.rows(), g.c);
    for j in 0..nb {
        let acc = &mut hwc[..len];
        acc.fill(T::zero());
        let src = &d[j * per..][..per];
        for_each_tap(g, |r, at| {
            if let Some(i) = at {
                acc[i..i + c].iter_mut().zip(&src[r * c..][..c]).for_each(|(a, &v)| *a += v);
            }
        });
        transpose_rows(acc, g.ip(), g.c, 0, &mut dx[j * len..][..len]);
    }
}

/// Calls `f(run, at)` for the `c`-element runs `0, 1, ..` of one sample's
/// patch matrix (output positions row-major, then taps): `at` is the run's
/// start in the channels-last input, or `None` where the tap falls in the padding.
fn for_each_tap(g: &Geom, mut f: impl FnMut(usize, Option<usize>)) {
    let [_, ih, iw] = g.ind;
    let [_, oh, ow] = g.outd;
    let mut run = 0;
    for y in 0..oh {
        for xo in 0..ow {
            for kh in 0..g.k[1] {
                let yi = (y * g.s[1] + kh * g.d[1]).checked_sub(g.p[1]).filter(|&v| v < ih);
                for kw in 0..g.k[2] {
                    let xi = (xo * g.s[2] + kw * g.d[2]).checked_sub(g.p[2]).filter(|&v| v < iw);
                    f(run, yi.zip(xi).map(|(yi, xi)| (yi * iw + xi) * g.c));
                    run += 1;
                }
            }
        }
    }
}
