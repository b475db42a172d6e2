//! The float32 tiles of [`transpose_rows`](super::transpose_rows): 16 × 16 blocks
//! transposed in AVX-512 registers.
//!
//! Why: the portable tiled loop moves one element per load and store, about
//! 1.4 G elements/s per core; strided convolutions transpose every sample to
//! channels-last and back (`conv/im2row.rs`), and that loop was 13 % of their
//! time. Sixteen row loads, 64 shuffles and sixteen row stores move 256.

#[cfg(target_arch = "x86_64")]
use pulp::{cast, x86::V4, Simd, WithSimd};
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::__m512;

/// Side of a tile.
const T: usize = 16;

/// [`transpose_rows`](super::transpose_rows) for `f32` on CPUs with AVX-512:
/// whole 16 × 16 tiles in registers, the edges element by element. `false`
/// (nothing written) on other CPUs.
pub(super) fn transpose_rows_f32(src: &[f32], rows: usize, cols: usize, first: usize, dst: &mut [f32]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if let Some(v) = V4::try_new() {
        Simd::vectorize(v, Rows { v, src, rows, cols, first, dst });
        return true;
    }
    let _ = (src, rows, cols, first, dst);
    false
}

/// One call's operands, run through `Simd::vectorize` so the loop and the
/// inlined tile are compiled with AVX-512 enabled.
#[cfg(target_arch = "x86_64")]
struct Rows<'a> {
    v: V4,
    src: &'a [f32],
    rows: usize,
    cols: usize,
    first: usize,
    dst: &'a mut [f32],
}

#[cfg(target_arch = "x86_64")]
impl WithSimd for Rows<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        let Rows { v, src, rows, cols, first, dst } = self;
        let nrows = dst.len() / rows;
        let mut q = 0;
        while q < nrows {
            let g = first + q;
            let (plane, c0) = (g / cols, g % cols);
            let span = (cols - c0).min(nrows - q);
            let src = &src[plane * rows * cols..(plane + 1) * rows * cols];
            for cb in (c0..c0 + span).step_by(T) {
                let ce = (cb + T).min(c0 + span);
                let out = &mut dst[(q + cb - c0) * rows..(q + ce - c0) * rows];
                for rb in (0..rows).step_by(T) {
                    let re = (rb + T).min(rows);
                    if ce - cb == T && re - rb == T {
                        tile(v, src, cols, rb, cb, out, rows);
                        continue;
                    }
                    for c in cb..ce {
                        let o = &mut out[(c - cb) * rows..(c - cb + 1) * rows];
                        for r in rb..re {
                            o[r] = src[r * cols + c];
                        }
                    }
                }
            }
            q += span;
        }
    }
}

/// Transposes the 16 × 16 block of `src` (row stride `ss`) at row `r0`, column
/// `c0` into columns `r0..r0 + 16` of the first 16 rows of `out` (row stride `ds`).
///
/// Three rounds of interleaves: 32-bit pairs of row pairs, then 64-bit pairs
/// (after which register `4k + m` holds, in 128-bit lane `L`, column `4L + m`
/// of rows `4k..4k + 4`), then two rounds of 128-bit lane shuffles gathering
/// lane `L` of registers `m, 4 + m, 8 + m, 12 + m` into output row `4L + m`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn tile(v: V4, src: &[f32], ss: usize, r0: usize, c0: usize, out: &mut [f32], ds: usize) {
    let f = v.avx512f;
    let load = |i: usize| -> __m512 {
        let row: [f32; T] = src[(r0 + i) * ss + c0..][..T].try_into().unwrap_or([0.0; T]);
        cast(row)
    };
    let r: [__m512; T] = std::array::from_fn(load);
    let a: [__m512; T] = std::array::from_fn(|i| {
        let (x, y) = (r[i & !1], r[i | 1]);
        if i % 2 == 0 {
            f._mm512_unpacklo_ps(x, y)
        } else {
            f._mm512_unpackhi_ps(x, y)
        }
    });
    let b: [__m512; T] = std::array::from_fn(|i| {
        let (k, m) = (i / 4, i % 4);
        let (x, y) = (f._mm512_castps_pd(a[4 * k + m / 2]), f._mm512_castps_pd(a[4 * k + 2 + m / 2]));
        f._mm512_castpd_ps(if m % 2 == 0 { f._mm512_unpacklo_pd(x, y) } else { f._mm512_unpackhi_pd(x, y) })
    });
    let mut store = |row: usize, x: __m512| {
        let vals: [f32; T] = cast(x);
        out[row * ds + r0..][..T].copy_from_slice(&vals);
    };
    for m in 0..4 {
        let c0 = f._mm512_shuffle_f32x4::<0x44>(b[m], b[4 + m]);
        let c1 = f._mm512_shuffle_f32x4::<0xEE>(b[m], b[4 + m]);
        let c2 = f._mm512_shuffle_f32x4::<0x44>(b[8 + m], b[12 + m]);
        let c3 = f._mm512_shuffle_f32x4::<0xEE>(b[8 + m], b[12 + m]);
        store(m, f._mm512_shuffle_f32x4::<0x88>(c0, c2));
        store(4 + m, f._mm512_shuffle_f32x4::<0xDD>(c0, c2));
        store(8 + m, f._mm512_shuffle_f32x4::<0x88>(c1, c3));
        store(12 + m, f._mm512_shuffle_f32x4::<0xDD>(c1, c3));
    }
}

#[cfg(test)]
mod tests {
    use super::super::transpose_rows;

    /// Output rows `first..` of planes of `rows × cols` transposed, by the definition.
    fn want(src: &[f32], rows: usize, cols: usize, first: usize, n: usize) -> Vec<f32> {
        (first..first + n)
            .flat_map(|g| {
                let (p, c) = (g / cols, g % cols);
                (0..rows).map(move |r| src[p * rows * cols + r * cols + c])
            })
            .collect()
    }

    #[test]
    fn float32_tiles_and_edges_match_the_definition() {
        // whole tiles only, ragged edges on either side, several planes, a range of rows
        for (planes, rows, cols, first, n) in [
            (1, 16, 16, 0, 16),
            (1, 64, 48, 0, 48),
            (3, 37, 21, 0, 63),
            (2, 40, 35, 7, 50),
            (2, 17, 33, 33, 16),
            (1, 5, 3, 0, 3),
        ] {
            let src: Vec<f32> = (0..planes * rows * cols).map(|i| i as f32 * 0.5 - 3.0).collect();
            let mut got = vec![f32::NAN; n * rows];
            transpose_rows(&src, rows, cols, first, &mut got);
            assert_eq!(got, want(&src, rows, cols, first, n), "{planes}×{rows}×{cols} from {first}");
        }
    }

    #[test]
    fn the_register_tiles_run_where_the_cpu_has_them() {
        let src: Vec<f32> = (0..32 * 32).map(|i| i as f32).collect();
        let mut got = vec![0.0; 32 * 32];
        let ran = super::transpose_rows_f32(&src, 32, 32, 0, &mut got);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(ran, is_x86_feature_detected!("avx512f"));
        if ran {
            assert_eq!(got, want(&src, 32, 32, 0, 32));
        }
    }
}
