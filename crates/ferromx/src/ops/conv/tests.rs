//! Convolution kernels against naive loops.

use super::cpu::{backward_data, backward_weight, channel_sum, forward};
use super::Geom;

fn rand(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 33) as f64 / (1u64 << 31) as f64) - 0.5
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn geom(
    n: usize,
    c: usize,
    o: usize,
    groups: usize,
    ind: [usize; 3],
    k: [usize; 3],
    s: [usize; 3],
    d: [usize; 3],
    p: [usize; 3],
) -> Geom {
    let outd = [0, 1, 2].map(|a| (ind[a] + 2 * p[a] - (d[a] * (k[a] - 1) + 1)) / s[a] + 1);
    Geom { n, c, o, groups, ind, outd, k, s, d, p }
}

/// The convolution by its definition.
fn naive(g: &Geom, x: &[f64], w: &[f64], b: Option<&[f64]>) -> Vec<f64> {
    let (cg, og) = (g.cg(), g.og());
    let mut out = vec![0.0; g.n * g.o * g.op()];
    for n in 0..g.n {
        for o in 0..g.o {
            let grp = o / og;
            for z in 0..g.outd[0] {
                for y in 0..g.outd[1] {
                    for xo in 0..g.outd[2] {
                        let mut acc = b.map_or(0.0, |b| b[o]);
                        for ci in 0..cg {
                            let c = grp * cg + ci;
                            for kd in 0..g.k[0] {
                                for kh in 0..g.k[1] {
                                    for kw in 0..g.k[2] {
                                        let zi = (z * g.s[0] + kd * g.d[0]) as isize - g.p[0] as isize;
                                        let yi = (y * g.s[1] + kh * g.d[1]) as isize - g.p[1] as isize;
                                        let xi = (xo * g.s[2] + kw * g.d[2]) as isize - g.p[2] as isize;
                                        if zi < 0 || yi < 0 || xi < 0 {
                                            continue;
                                        }
                                        let (zi, yi, xi) = (zi as usize, yi as usize, xi as usize);
                                        if zi >= g.ind[0] || yi >= g.ind[1] || xi >= g.ind[2] {
                                            continue;
                                        }
                                        let xv = x[(((n * g.c + c) * g.ind[0] + zi) * g.ind[1] + yi) * g.ind[2] + xi];
                                        let wv = w[(((o * cg + ci) * g.k[0] + kd) * g.k[1] + kh) * g.k[2] + kw];
                                        acc += xv * wv;
                                    }
                                }
                            }
                        }
                        out[(((n * g.o + o) * g.outd[0] + z) * g.outd[1] + y) * g.outd[2] + xo] = acc;
                    }
                }
            }
        }
    }
    out
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn cases() -> Vec<Geom> {
    vec![
        geom(2, 3, 4, 1, [1, 5, 6], [1, 3, 3], [1, 1, 1], [1, 1, 1], [0, 1, 1]),
        geom(3, 4, 6, 2, [1, 7, 5], [1, 3, 2], [1, 2, 1], [1, 1, 2], [0, 1, 0]),
        geom(1, 3, 3, 3, [1, 6, 6], [1, 3, 3], [1, 2, 2], [1, 1, 1], [0, 1, 1]),
        geom(2, 2, 3, 1, [1, 1, 9], [1, 1, 3], [1, 1, 2], [1, 1, 2], [0, 0, 2]),
        geom(2, 2, 2, 1, [4, 4, 3], [2, 3, 2], [2, 1, 1], [1, 1, 1], [1, 0, 1]),
        geom(5, 4, 3, 1, [1, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1], [0, 0, 0]),
        // Planes of >= 512 positions: one sample per gemm (the unbatched paths).
        geom(2, 2, 3, 1, [1, 24, 24], [1, 3, 3], [1, 1, 1], [1, 1, 1], [0, 1, 1]),
        geom(3, 2, 2, 1, [1, 1, 600], [1, 1, 1], [1, 1, 1], [1, 1, 1], [0, 0, 0]),
        // 144 positions: batches of 4 samples, the last batch of 1 (5 samples), grouped.
        geom(5, 4, 4, 2, [1, 12, 12], [1, 3, 3], [1, 1, 1], [1, 1, 1], [0, 1, 1]),
    ]
    .into_iter()
    .chain(row_patch_cases())
    .collect()
}

/// Strided layers with enough channels for the row patch matrices (`im2row.rs`).
fn row_patch_cases() -> Vec<Geom> {
    vec![
        // odd sides, batched samples, split over cores
        geom(8, 32, 32, 1, [1, 9, 8], [1, 3, 3], [1, 2, 2], [1, 1, 1], [0, 1, 1]),
        // 2×2 downsampling, unpadded
        geom(2, 32, 40, 1, [1, 8, 8], [1, 2, 2], [1, 2, 2], [1, 1, 1], [0, 0, 0]),
        // stride on one axis, dilation on the other, uneven kernel
        geom(2, 33, 32, 1, [1, 7, 9], [1, 3, 2], [1, 2, 1], [1, 1, 2], [0, 1, 0]),
        // 529 positions: one sample per gemm
        geom(2, 32, 32, 1, [1, 46, 46], [1, 3, 3], [1, 2, 2], [1, 1, 1], [0, 1, 1]),
    ]
}

#[test]
fn strided_layers_with_many_channels_take_row_patches() {
    for g in row_patch_cases() {
        assert!(super::im2row::applies(&g), "{g:?}");
    }
    let few = geom(2, 8, 32, 1, [1, 9, 8], [1, 3, 3], [1, 2, 2], [1, 1, 1], [0, 1, 1]);
    let unstrided = geom(2, 32, 32, 1, [1, 9, 8], [1, 3, 3], [1, 1, 1], [1, 1, 1], [0, 1, 1]);
    let pointwise = geom(2, 32, 32, 1, [1, 8, 8], [1, 1, 1], [1, 2, 2], [1, 1, 1], [0, 0, 0]);
    assert!(![few, unstrided, pointwise].iter().any(super::im2row::applies));
}

#[test]
fn forward_matches_the_definition() {
    for g in cases() {
        let x = rand(g.n * g.c * g.ip(), 1);
        let w = rand(g.o * g.rows(), 2);
        let b = rand(g.o, 3);
        let mut out = vec![0.0; g.n * g.o * g.op()];
        forward(&g, &x, &w, Some(&b), &mut out);
        let want = naive(&g, &x, &w, Some(&b));
        for (a, e) in out.iter().zip(&want) {
            assert!((a - e).abs() < 1e-12, "{g:?}: {a} vs {e}");
        }
    }
}

#[test]
fn backward_is_the_adjoint_of_forward() {
    for g in cases() {
        let x = rand(g.n * g.c * g.ip(), 4);
        let w = rand(g.o * g.rows(), 5);
        let dy = rand(g.n * g.o * g.op(), 6);
        let y = naive(&g, &x, &w, None);
        // <conv(x, w), dy> = <x, dx> = <w, dw>
        let mut dx = vec![7.0; x.len()];
        backward_data(&g, &dy, &w, &mut dx);
        let mut dw = vec![7.0; w.len()];
        backward_weight(&g, &dy, &x, &mut dw);
        let lhs = dot(&y, &dy);
        assert!((lhs - dot(&x, &dx)).abs() < 1e-10, "{g:?} data");
        assert!((lhs - dot(&w, &dw)).abs() < 1e-10, "{g:?} weight");
        // and elementwise: each dw entry is the derivative along a unit weight.
        for i in [0, w.len() / 2, w.len() - 1] {
            let mut e = vec![0.0; w.len()];
            e[i] = 1.0;
            assert!((dot(&naive(&g, &x, &e, None), &dy) - dw[i]).abs() < 1e-10);
        }
        for i in [0, x.len() / 3, x.len() - 1] {
            let mut e = vec![0.0; x.len()];
            e[i] = 1.0;
            assert!((dot(&naive(&g, &e, &w, None), &dy) - dx[i]).abs() < 1e-10);
        }
        let mut db = vec![0.0; g.o];
        channel_sum(&dy, g.n, g.o, g.op(), &mut db);
        let ones = vec![1.0; g.o];
        let yb = naive(&g, &vec![0.0; x.len()], &w, Some(&ones));
        assert!((dot(&yb, &dy) - db.iter().sum::<f64>()).abs() < 1e-10);
    }
}

#[test]
fn f32_and_blocked_paths_agree() {
    // Enough samples and work to split over cores.
    let g = geom(8, 8, 8, 1, [1, 12, 12], [1, 3, 3], [1, 1, 1], [1, 1, 1], [0, 1, 1]);
    let x = rand(g.n * g.c * g.ip(), 7);
    let w = rand(g.o * g.rows(), 8);
    let want = naive(&g, &x, &w, None);
    let (xf, wf): (Vec<f32>, Vec<f32>) = (x.iter().map(|&v| v as f32).collect(), w.iter().map(|&v| v as f32).collect());
    let mut out = vec![0f32; want.len()];
    forward(&g, &xf, &wf, None, &mut out);
    for (a, e) in out.iter().zip(&want) {
        assert!((*a as f64 - e).abs() < 1e-4);
    }
}

#[test]
fn thin_and_wide_products_agree_on_blocked_weight_gradients() {
    // Enough work to split the samples over cores; 8 output channels run the products
    // transposed (75 column rows), 40 do not (and 5×5 keeps both off the Winograd path).
    for o in [8, 40] {
        let g = geom(8, 3, o, 1, [1, 24, 24], [1, 5, 5], [1, 1, 1], [1, 1, 1], [0, 2, 2]);
        let x = rand(g.n * g.c * g.ip(), 31);
        let w = rand(g.o * g.rows(), 32);
        let dy = rand(g.n * g.o * g.op(), 33);
        let mut dw = vec![7.0; w.len()];
        backward_weight(&g, &dy, &x, &mut dw);
        for i in [0, 1, w.len() / 3, w.len() - 1] {
            let mut e = vec![0.0; w.len()];
            e[i] = 1.0;
            assert!((dot(&naive(&g, &x, &e, None), &dy) - dw[i]).abs() < 1e-9, "o={o} dw[{i}]");
        }
        let mut out = vec![0.0; dy.len()];
        let b = rand(g.o, 34);
        forward(&g, &x, &w, Some(&b), &mut out);
        for (a, e) in out.iter().zip(&naive(&g, &x, &w, Some(&b))) {
            assert!((a - e).abs() < 1e-10, "o={o}: {a} vs {e}");
        }
    }
}

#[test]
fn geometry_round_trips_through_the_call_numbers() {
    for g in cases() {
        assert_eq!(Geom::from_nums(&g.to_nums(true)), (g, true));
    }
}

/// 3×3 stride-1 geometries that take the Winograd path: padding 0, 1 and 2,
/// odd and even planes, batch 1, channel counts that are not multiples of anything.
fn winograd_cases() -> Vec<Geom> {
    let one = [1, 1, 1];
    vec![
        geom(2, 16, 17, 1, [1, 5, 7], [1, 3, 3], one, one, [0, 1, 1]),
        geom(1, 19, 16, 1, [1, 6, 6], [1, 3, 3], one, one, [0, 0, 0]),
        geom(3, 16, 21, 1, [1, 4, 4], [1, 3, 3], one, one, [0, 1, 1]),
        geom(2, 17, 16, 1, [1, 3, 5], [1, 3, 3], one, one, [0, 2, 1]),
        geom(1, 16, 16, 1, [1, 9, 3], [1, 3, 3], one, one, [0, 0, 2]),
        // Many tiles: several chunks per block and blocks split over cores.
        geom(8, 16, 16, 1, [1, 23, 17], [1, 3, 3], one, one, [0, 1, 1]),
        // Transformed filters large enough to be written in bands across cores, with
        // line counts (90 and 48) that are not multiples of the bands' alignment.
        geom(1, 48, 90, 1, [1, 5, 6], [1, 3, 3], one, one, [0, 1, 1]),
    ]
}

/// The Winograd forward and data gradient of F(2×2) and F(4×4), whichever
/// `FERROMX_WINOGRAD` selects for `forward`/`backward_data`.
type WinogradPair = (
    &'static str,
    fn(&Geom, &[f64], &[f64], Option<&[f64]>, &mut [f64]),
    fn(&Geom, &[f64], &[f64], &mut [f64]),
    fn(&Geom, &[f64], &[f64], &mut [f64]),
);

const WINOGRAD_VARIANTS: [WinogradPair; 2] = [
    (
        "F(2x2)",
        |g, x, w, b, out| super::winograd::forward2(g, x, w, b, &super::epilogue::Epilogue::NONE, out),
        |g, dy, w, dx| super::winograd::backward_data2(g, dy, w, dx),
        |g, dy, x, dw| super::winograd_grad::backward_weight2(g, dy, x, dw),
    ),
    (
        "F(4x4)",
        |g, x, w, b, out| super::winograd4::forward(g, x, w, b, &super::epilogue::Epilogue::NONE, out),
        |g, dy, w, dx| super::winograd4::backward_data(g, dy, w, dx),
        |g, dy, x, dw| super::winograd4::backward_weight(g, dy, x, dw),
    ),
];

#[test]
fn winograd_variants_match_the_definition() {
    for (name, fwd, bwd, wgrad) in WINOGRAD_VARIANTS {
        for g in winograd_cases() {
            let x = rand(g.n * g.c * g.ip(), 11);
            let w = rand(g.o * g.rows(), 12);
            let b = rand(g.o, 13);
            let mut out = vec![7.0; g.n * g.o * g.op()];
            fwd(&g, &x, &w, Some(&b), &mut out);
            let want = naive(&g, &x, &w, Some(&b));
            for (a, e) in out.iter().zip(&want) {
                assert!((a - e).abs() < 1e-12, "{name} {g:?}: {a} vs {e}");
            }
            let dy = rand(out.len(), 14);
            let mut dx = vec![7.0; x.len()];
            bwd(&g, &dy, &w, &mut dx);
            let y = naive(&g, &x, &w, None);
            assert!((dot(&y, &dy) - dot(&x, &dx)).abs() < 1e-9, "{name} {g:?} data");
            for i in [0, 1, x.len() / 2, x.len() - 2, x.len() - 1] {
                let mut e = vec![0.0; x.len()];
                e[i] = 1.0;
                assert!((dot(&naive(&g, &e, &w, None), &dy) - dx[i]).abs() < 1e-10, "{name} {g:?} dx[{i}]");
            }
            let mut dw = vec![7.0; w.len()];
            wgrad(&g, &dy, &x, &mut dw);
            assert!((dot(&y, &dy) - dot(&w, &dw)).abs() < 1e-9, "{name} {g:?} weight");
            for i in [0, 1, w.len() / 2, w.len() - 2, w.len() - 1] {
                let mut e = vec![0.0; w.len()];
                e[i] = 1.0;
                assert!((dot(&naive(&g, &x, &e, None), &dy) - dw[i]).abs() < 1e-10, "{name} {g:?} dw[{i}]");
            }
        }
    }
}

#[test]
fn winograd_paths_are_taken_and_match_the_definition() {
    for g in winograd_cases() {
        assert!(super::winograd::applies(&g) && super::winograd::applies_data_grad(&g), "{g:?}");
        let x = rand(g.n * g.c * g.ip(), 11);
        let w = rand(g.o * g.rows(), 12);
        let b = rand(g.o, 13);
        let mut out = vec![7.0; g.n * g.o * g.op()];
        forward(&g, &x, &w, Some(&b), &mut out);
        let want = naive(&g, &x, &w, Some(&b));
        for (a, e) in out.iter().zip(&want) {
            assert!((a - e).abs() < 1e-12, "{g:?}: {a} vs {e}");
        }
        // The data gradient: dx[i] = <conv(e_i, w), dy>, checked on all entries via the adjoint
        // identity and on a few entries one by one.
        let dy = rand(out.len(), 14);
        let mut dx = vec![7.0; x.len()];
        backward_data(&g, &dy, &w, &mut dx);
        let y = naive(&g, &x, &w, None);
        assert!((dot(&y, &dy) - dot(&x, &dx)).abs() < 1e-9, "{g:?} data");
        for i in [0, 1, x.len() / 2, x.len() - 2, x.len() - 1] {
            let mut e = vec![0.0; x.len()];
            e[i] = 1.0;
            assert!((dot(&naive(&g, &e, &w, None), &dy) - dx[i]).abs() < 1e-10, "{g:?} dx[{i}]");
        }
        // The weight gradient by Winograd (called directly: small planes take im2col in
        // `backward_weight`), by the same two checks.
        let mut dw = vec![7.0; w.len()];
        super::winograd::backward_weight(&g, &dy, &x, &mut dw);
        assert!((dot(&y, &dy) - dot(&w, &dw)).abs() < 1e-9, "{g:?} weight");
        for i in [0, 1, w.len() / 2, w.len() - 2, w.len() - 1] {
            let mut e = vec![0.0; w.len()];
            e[i] = 1.0;
            assert!((dot(&naive(&g, &x, &e, None), &dy) - dw[i]).abs() < 1e-10, "{g:?} dw[{i}]");
        }
    }
}

#[test]
fn winograd_weight_gradient_is_taken_on_large_planes_only() {
    let one = [1, 1, 1];
    let big = geom(2, 16, 16, 1, [1, 4, 4], [1, 3, 3], one, one, [0, 1, 1]);
    let small = geom(2, 16, 16, 1, [1, 3, 3], [1, 3, 3], one, one, [0, 1, 1]);
    assert!(super::winograd::applies_weight_grad(&big));
    assert!(!super::winograd::applies_weight_grad(&small) && super::winograd::applies(&small));
}

#[test]
fn winograd_f32_error_is_near_the_direct_sums() {
    // Relative error against the float64 definition, for Winograd and for the im2col
    // path (the same geometry with two groups, which does not take Winograd).
    let g = geom(2, 64, 64, 1, [1, 14, 14], [1, 3, 3], [1, 1, 1], [1, 1, 1], [0, 1, 1]);
    let x = rand(g.n * g.c * g.ip(), 21);
    let w = rand(g.o * g.rows(), 22);
    let want = naive(&g, &x, &w, None);
    let f = |v: &[f64]| v.iter().map(|&a| a as f32).collect::<Vec<f32>>();
    let dy = rand(want.len(), 23);
    let mut dx64 = vec![0.0; x.len()];
    backward_data(&g, &dy, &w, &mut dx64);
    // F(4×4)'s interpolation points (0, ±1, ±2) round about 4× more than F(2×2)'s.
    for (name, bound) in [("F(2x2)", 2e-6), ("F(4x4)", 1.5e-5)] {
        let mut out = vec![0f32; want.len()];
        let fwd = |g: &Geom, x: &[f32], w: &[f32], out: &mut [f32]| match name {
            "F(2x2)" => super::winograd::forward2(g, x, w, None, &super::epilogue::Epilogue::NONE, out),
            _ => super::winograd4::forward(g, x, w, None, &super::epilogue::Epilogue::NONE, out),
        };
        fwd(&g, &f(&x), &f(&w), &mut out);
        let scale = want.iter().map(|v| v.abs()).fold(0.0, f64::max);
        let err = out.iter().zip(&want).map(|(a, e)| (*a as f64 - e).abs()).fold(0.0, f64::max) / scale;
        assert!(err < bound, "winograd {name} f32 relative error {err}");
        let mut dx = vec![0f32; x.len()];
        match name {
            "F(2x2)" => super::winograd::backward_data2(&g, &f(&dy), &f(&w), &mut dx),
            _ => super::winograd4::backward_data(&g, &f(&dy), &f(&w), &mut dx),
        }
        let scale = dx64.iter().map(|v| v.abs()).fold(0.0, f64::max);
        let err = dx.iter().zip(&dx64).map(|(a, e)| (*a as f64 - e).abs()).fold(0.0, f64::max) / scale;
        assert!(err < bound, "winograd {name} f32 data-gradient relative error {err}");
    }
    assert!(super::winograd::applies_weight_grad(&g));
    let mut dw64 = vec![0.0; w.len()];
    backward_weight(&g, &dy, &x, &mut dw64);
    let scale = dw64.iter().map(|v| v.abs()).fold(0.0, f64::max);
    for (name, bound) in [("F(2x2)", 2e-6), ("F(4x4)", 1.5e-5)] {
        let mut dw = vec![0f32; w.len()];
        match name {
            "F(2x2)" => super::winograd_grad::backward_weight2(&g, &f(&dy), &f(&x), &mut dw),
            _ => super::winograd4::backward_weight(&g, &f(&dy), &f(&x), &mut dw),
        }
        let err = dw.iter().zip(&dw64).map(|(a, e)| (*a as f64 - e).abs()).fold(0.0, f64::max) / scale;
        assert!(err < bound, "winograd {name} f32 weight-gradient relative error {err}");
    }
}

mod fused {
    //! `_fused_convolution` against the unfused operators it replaces, bitwise.

    use crate::opdef::{find, invoke_def, Attr, Attrs};
    use crate::{Context, NDArray};

    fn arr(n: &[usize], seed: u64, lo: f32) -> NDArray {
        let v: Vec<f32> = super::rand(n.iter().product(), seed).iter().map(|&x| x as f32 + lo).collect();
        NDArray::from_vec(v, n, Context::default()).unwrap()
    }

    fn call(name: &str, ins: &[&NDArray], kv: &[(&str, Attr)]) -> crate::Result<NDArray> {
        let attrs = Attrs(kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect());
        let opt: Vec<Option<NDArray>> = ins.iter().map(|x| Some((*x).clone())).collect();
        Ok(invoke_def(find(name).unwrap(), &opt, &attrs)?.remove(0))
    }

    fn ints(v: &[i64]) -> Attr {
        Attr::Ints(v.to_vec())
    }

    /// Runs one geometry with every combination of the steps.
    fn check(x: &[usize], o: usize, k: i64, stride: i64, pad: i64, groups: i64) {
        let nk = x.len() - 2;
        let w = arr(&[&[o, x[1] / groups as usize][..], &vec![k as usize; nk]].concat(), 2, 0.0);
        let xa = arr(x, 1, 0.0);
        let b = arr(&[o], 3, 0.0);
        let (gamma, beta, mean, var) = (arr(&[o], 4, 1.0), arr(&[o], 5, 0.0), arr(&[o], 6, 0.0), arr(&[o], 7, 0.6));
        let conv_attrs = |no_bias: bool| {
            vec![
                ("kernel", ints(&vec![k; nk])),
                ("stride", ints(&vec![stride; nk])),
                ("pad", ints(&vec![pad; nk])),
                ("num_filter", Attr::Int(o as i64)),
                ("num_group", Attr::Int(groups)),
                ("no_bias", Attr::Bool(no_bias)),
            ]
        };
        let y0 = call("Convolution", &[&xa, &w, &b], &conv_attrs(false)).unwrap();
        let res = arr(y0.dims(), 8, 0.0);
        for mask in 0..16 {
            let (no_bias, bn, sum, relu) = (mask & 1 != 0, mask & 2 != 0, mask & 4 != 0, mask & 8 != 0);
            let mut ins = vec![&xa, &w];
            if !no_bias {
                ins.push(&b);
            }
            let mut y = call("Convolution", &ins, &conv_attrs(no_bias)).unwrap();
            let mut fattrs = conv_attrs(no_bias);
            let fix_gamma = mask % 3 == 0;
            if bn {
                y = call(
                    "BatchNorm",
                    &[&y, &gamma, &beta, &mean, &var],
                    &[("eps", Attr::Float(1e-3)), ("fix_gamma", Attr::Bool(fix_gamma))],
                )
                .unwrap();
                ins.extend([&gamma, &beta, &mean, &var]);
                fattrs.extend([("with_bn", Attr::Bool(true)), ("fix_gamma", Attr::Bool(fix_gamma))]);
            }
            if sum {
                y = call("broadcast_add", &[&res, &y], &[]).unwrap();
                ins.push(&res);
                fattrs.push(("with_sum", Attr::Bool(true)));
            }
            if relu {
                y = call("Activation", &[&y], &[("act_type", Attr::Str("relu".into()))]).unwrap();
                fattrs.push(("with_relu", Attr::Bool(true)));
            }
            let f = call("_fused_convolution", &ins, &fattrs).unwrap();
            let (want, got) = (y.to_vec::<f32>().unwrap(), f.to_vec::<f32>().unwrap());
            let same = want.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same && want.len() == got.len(), "{x:?} o={o} k={k} s={stride} g={groups} mask={mask}");
        }
    }

    #[test]
    fn fused_convolution_is_bitwise_the_unfused_chain() {
        check(&[2, 16, 8, 8], 16, 3, 1, 1, 1); // Winograd
        check(&[3, 16, 9, 7], 32, 3, 1, 0, 1); // Winograd, odd planes
        check(&[2, 8, 9, 9], 8, 3, 2, 1, 1); // im2col, stride 2
        check(&[4, 16, 4, 4], 16, 1, 2, 0, 1); // 1×1 stride 2, batched samples
        check(&[2, 8, 10, 10], 8, 3, 1, 1, 2); // grouped
        check(&[2, 16, 12, 12], 8, 3, 1, 1, 1); // thin (transposed) product
        check(&[2, 4, 11], 6, 3, 1, 1, 1); // 1-d
        check(&[20, 8, 6, 6], 64, 3, 1, 1, 1); // split over the cores
    }

    /// `relu(conv(x, w))` (3×3, pad 1, no bias), fused or as the two operators, pushed only.
    fn push_relu_conv(x: &NDArray, w: &NDArray, fused: bool) -> NDArray {
        let o = w.dims()[0] as i64;
        let a = vec![
            ("kernel", ints(&[3, 3])),
            ("pad", ints(&[1, 1])),
            ("num_filter", Attr::Int(o)),
            ("no_bias", Attr::Bool(true)),
        ];
        if fused {
            let mut fa = a.clone();
            fa.push(("with_relu", Attr::Bool(true)));
            call("_fused_convolution", &[x, w], &fa).unwrap()
        } else {
            let y = call("Convolution", &[x, w], &a).unwrap();
            call("Activation", &[&y], &[("act_type", Attr::Str("relu".into()))]).unwrap()
        }
    }

    fn relu_conv(x: &NDArray, w: &NDArray, fused: bool) -> Vec<f32> {
        push_relu_conv(x, w, fused).to_vec::<f32>().unwrap()
    }

    #[test]
    fn cached_filter_follows_writes_to_the_weight() {
        let (x, w) = (arr(&[2, 16, 8, 8], 11, 0.0), arr(&[16, 16, 3, 3], 12, 0.0));
        let first = relu_conv(&x, &w, true);
        assert_eq!(first, relu_conv(&x, &w, false)); // the same F(4×4) transform as eager
        assert!(super::super::prepared::cached_bytes() >= 36 * 16 * 16 * 4);
        assert_eq!(first, relu_conv(&x, &w, true)); // from the cache
                                                    // an engine write to the weight: the next call transforms the new values
        crate::ops::assign(&w, &arr(&[16, 16, 3, 3], 13, 0.0)).unwrap();
        let second = relu_conv(&x, &w, true);
        assert_ne!(first, second);
        assert_eq!(second, relu_conv(&x, &w, false));
        // a view of another part of a chunk is another identity
        let both = arr(&[2, 16, 16, 3, 3], 14, 0.0);
        let half = |i: i64| {
            let v = crate::ops::slice_axis(&both, 0, i, Some(i + 1)).unwrap();
            crate::ops::reshape_to(&v, crate::Shape::new(&[16, 16, 3, 3])).unwrap()
        };
        let (w0, w1) = (half(0), half(1));
        assert!(std::sync::Arc::ptr_eq(&w0.0.chunk, &w1.0.chunk), "views of one chunk");
        assert_eq!(relu_conv(&x, &w0, true), relu_conv(&x, &w0, false));
        assert_eq!(relu_conv(&x, &w1, true), relu_conv(&x, &w1, false));
    }

    #[test]
    fn cached_filter_sees_writes_inside_one_bulk() {
        let (x, w, g) = (arr(&[2, 16, 8, 8], 31, 0.0), arr(&[16, 16, 3, 3], 32, 0.0), arr(&[16, 16, 3, 3], 33, 0.0));
        let sgd = |w: &NDArray| {
            let a = [("lr", Attr::Float(1.0)), ("wd", Attr::Float(0.0))];
            call("sgd_update", &[w, &g], &a).unwrap();
        };
        let eager = |w: &NDArray| relu_conv(&x, w, false);
        let before = relu_conv(&x, &w, true); // cached
        assert_eq!(before, eager(&w));
        // one bulk op: the update writes `w`, then the convolution reads it
        let prev = crate::fusion::bulk::set_size(8);
        sgd(&w);
        let y = push_relu_conv(&x, &w, true);
        crate::fusion::bulk::set_size(prev);
        let got = y.to_vec::<f32>().unwrap();
        assert_ne!(got, before);
        assert_eq!(got, eager(&w));
        // one bulk op: the convolution reads `w`, then the update writes it
        let prev = crate::fusion::bulk::set_size(8);
        let y = push_relu_conv(&x, &w, true);
        sgd(&w);
        crate::fusion::bulk::set_size(prev);
        assert_eq!(y.to_vec::<f32>().unwrap(), got);
        assert_eq!(relu_conv(&x, &w, true), eager(&w));
        assert_ne!(relu_conv(&x, &w, true), got);
    }

    #[test]
    fn cached_large_filters_take_f4_within_float_error() {
        // 36 · 320² · 4 bytes = 14.7 MB: too large for eager's F(4×4), cached as F(4×4)
        let (x, w) = (arr(&[1, 320, 4, 4], 21, 0.0), arr(&[320, 320, 3, 3], 22, 0.0));
        let (got, want) = (relu_conv(&x, &w, true), relu_conv(&x, &w, false));
        let top = want.iter().fold(0f32, |m, v| m.max(v.abs()));
        let err = got.iter().zip(&want).fold(0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(top > 1.0 && err <= 2e-5 * top, "err {err} of {top}");
    }

    #[test]
    fn fused_convolution_checks_its_inputs() {
        let (x, w) = (arr(&[1, 2, 5, 5], 1, 0.0), arr(&[3, 2, 3, 3], 2, 0.0));
        let base = vec![("kernel", ints(&[3, 3])), ("num_filter", Attr::Int(3)), ("no_bias", Attr::Bool(true))];
        let mut a = base.clone();
        a.push(("with_sum", Attr::Bool(true)));
        let wrong = arr(&[1, 3, 4, 4], 3, 0.0);
        let e = call("_fused_convolution", &[&x, &w, &wrong], &a).unwrap_err().to_string();
        assert!(e.contains("_fused_convolution") && e.contains("(1, 3, 3, 3)"), "{e}");
        let mut a = base.clone();
        a.push(("with_bn", Attr::Bool(true)));
        let p = arr(&[3], 4, 1.0);
        let e = call("_fused_convolution", &[&x, &w, &p, &p, &p], &a).unwrap_err().to_string();
        assert!(e.contains("_fused_convolution"), "{e}");
        let mut a = base;
        a.push(("layout", Attr::Str("NHWC".into())));
        let xl = arr(&[1, 5, 5, 2], 1, 0.0);
        let wl = arr(&[3, 3, 3, 2], 2, 0.0);
        let e = call("_fused_convolution", &[&xl, &wl], &a).unwrap_err().to_string();
        assert!(e.contains("channel-first"), "{e}");
    }
}

#[test]
fn f4_takes_layers_whose_transformed_filter_is_small() {
    let one = [1, 1, 1];
    let mid = geom(1, 256, 256, 1, [1, 8, 8], [1, 3, 3], one, one, [0, 1, 1]);
    let big = geom(1, 512, 512, 1, [1, 4, 4], [1, 3, 3], one, one, [0, 1, 1]);
    assert!(super::winograd::f4_filter_fits::<f32>(&mid)); // 9.4 MB
    assert!(!super::winograd::f4_filter_fits::<f32>(&big)); // 36 MB: F(2×2)
}

/// The direct kernel of thin layers (`direct.rs`, float32).
mod direct_kernel {
    use super::super::cpu::forward_with;
    use super::super::direct;
    use super::super::epilogue::Epilogue;
    use super::*;

    fn direct_cases() -> Vec<Geom> {
        vec![
            // LeNet's two layers (a few samples)
            geom(3, 1, 6, 1, [1, 28, 28], [1, 5, 5], [1, 1, 1], [1, 1, 1], [0, 2, 2]),
            geom(3, 6, 16, 1, [1, 14, 14], [1, 5, 5], [1, 1, 1], [1, 1, 1], [0, 0, 0]),
            // 11 channels: blocks of 6 and 5; a row of 21 = a vector and a 5-wide tail
            geom(2, 3, 11, 1, [1, 9, 21], [1, 3, 3], [1, 1, 1], [1, 1, 1], [0, 1, 1]),
            // rectangular kernel, unequal pads, one output channel
            geom(2, 2, 1, 1, [1, 7, 12], [1, 3, 5], [1, 1, 1], [1, 1, 1], [0, 1, 2]),
            // a 1×3 kernel with pad 2 (> k/2, < k), 16 channels
            geom(4, 2, 16, 1, [1, 4, 18], [1, 1, 3], [1, 1, 1], [1, 1, 1], [0, 0, 2]),
        ]
    }

    fn f32s(v: &[f64]) -> Vec<f32> {
        v.iter().map(|&x| x as f32).collect()
    }

    fn close(got: &[f32], want: &[f64], what: &str) {
        for (i, (a, e)) in got.iter().zip(want).enumerate() {
            assert!((*a as f64 - e).abs() < 1e-5 * (1.0 + e.abs()), "{what}[{i}]: {a} vs {e}");
        }
    }

    #[test]
    fn thin_float32_layers_take_the_direct_kernel_both_ways() {
        for g in direct_cases() {
            assert!(direct::applies::<f32>(&g), "{g:?}");
            assert!(direct::data_grad_geom::<f32>(&g).is_some(), "{g:?}");
            assert!(!direct::applies::<f64>(&g), "float64 keeps im2col");
        }
        // not: strided, grouped, too many channels, 1×1
        let no = [
            geom(2, 3, 4, 1, [1, 9, 9], [1, 3, 3], [1, 2, 2], [1, 1, 1], [0, 1, 1]),
            geom(2, 4, 4, 2, [1, 9, 9], [1, 3, 3], [1, 1, 1], [1, 1, 1], [0, 1, 1]),
            geom(2, 3, 17, 1, [1, 9, 9], [1, 3, 3], [1, 1, 1], [1, 1, 1], [0, 1, 1]),
            geom(2, 3, 4, 1, [1, 9, 9], [1, 1, 1], [1, 1, 1], [1, 1, 1], [0, 0, 0]),
        ];
        assert!(no.iter().all(|g| !direct::applies::<f32>(g)));
    }

    #[test]
    fn direct_forward_and_data_gradient_match_the_definition() {
        for g in direct_cases() {
            let x = rand(g.n * g.c * g.ip(), 11);
            let w = rand(g.o * g.rows(), 12);
            let b = rand(g.o, 13);
            let dy = rand(g.n * g.o * g.op(), 14);
            let mut out = vec![7f32; g.n * g.o * g.op()];
            forward(&g, &f32s(&x), &f32s(&w), Some(&f32s(&b)), &mut out);
            close(&out, &naive(&g, &x, &w, Some(&b)), &format!("{g:?} y"));
            let mut dx = vec![7f32; x.len()];
            backward_data(&g, &f32s(&dy), &f32s(&w), &mut dx);
            // dx by the definition: an entry is the derivative of <conv(x, w), dy>
            // along a unit input (every 7th entry, borders included)
            for i in (0..x.len()).step_by(7).chain([x.len() - 1]) {
                let mut e = vec![0.0; x.len()];
                e[i] = 1.0;
                let want = dot(&naive(&g, &e, &w, None), &dy);
                close(&dx[i..=i], &[want], &format!("{g:?} dx[{i}]"));
            }
        }
    }

    /// `dw` by the definition: `dw[o, c, i, j] = Σ dy[n, o, y, x] · x[n, c, y + i − p, x + j − p]`.
    fn naive_dw(g: &Geom, x: &[f64], dy: &[f64]) -> Vec<f64> {
        let mut dw = vec![0.0; g.o * g.rows()];
        for (k, d) in dw.iter_mut().enumerate() {
            let mut w = vec![0.0; g.o * g.rows()];
            w[k] = 1.0;
            *d = dot(&naive(g, x, &w, None), dy);
        }
        dw
    }

    #[test]
    fn direct_weight_gradient_matches_the_definition() {
        // The forward's cases plus kernel rows of every width the kernel has a
        // register block for (1 to 7 taps), partial channel blocks, and sample
        // counts that leave a short last chunk of padded samples and uneven
        // per-core blocks.
        let mut cases = direct_cases();
        cases.extend([
            geom(11, 2, 5, 1, [1, 6, 20], [1, 2, 1], [1, 1, 1], [1, 1, 1], [0, 1, 0]),
            geom(3, 3, 7, 1, [1, 5, 9], [1, 2, 2], [1, 1, 1], [1, 1, 1], [0, 0, 1]),
            geom(2, 2, 9, 1, [1, 6, 17], [1, 3, 4], [1, 1, 1], [1, 1, 1], [0, 1, 2]),
            geom(9, 1, 6, 1, [1, 8, 33], [1, 2, 6], [1, 1, 1], [1, 1, 1], [0, 1, 3]),
            geom(2, 2, 4, 1, [1, 7, 16], [1, 3, 7], [1, 1, 1], [1, 1, 1], [0, 1, 3]),
        ]);
        for g in cases {
            assert!(direct::applies::<f32>(&g), "{g:?}");
            let x = rand(g.n * g.c * g.ip(), 21);
            let dy = rand(g.n * g.o * g.op(), 22);
            let mut dw = vec![7f32; g.o * g.rows()];
            assert!(super::super::direct_grad::backward_weight(&g, &f32s(&dy), &f32s(&x), &mut dw), "{g:?}");
            close(&dw, &naive_dw(&g, &x, &dy), &format!("{g:?} dw"));
            // and through the public entry (which picks this kernel)
            let mut dw2 = vec![7f32; dw.len()];
            backward_weight(&g, &f32s(&dy), &f32s(&x), &mut dw2);
            assert_eq!(dw, dw2);
        }
        // float64 and kernel rows over 7 taps keep im2col
        let g = geom(2, 1, 2, 1, [1, 4, 12], [1, 1, 8], [1, 1, 1], [1, 1, 1], [0, 0, 0]);
        assert!(!super::super::direct_grad::backward_weight(
            &g,
            &[0f32; 2 * 2 * 4 * 5],
            &[0f32; 48 * 2],
            &mut [0f32; 16]
        ));
        let g = direct_cases()[0];
        let mut d64 = vec![0f64; g.o * g.rows()];
        let (x, dy) = (rand(g.n * g.c * g.ip(), 1), rand(g.n * g.o * g.op(), 2));
        assert!(!super::super::direct_grad::backward_weight(&g, &dy, &x, &mut d64));
    }

    #[test]
    fn direct_epilogue_is_applied_per_row() {
        let g = direct_cases()[1];
        let (x, w) = (f32s(&rand(g.n * g.c * g.ip(), 15)), f32s(&rand(g.o * g.rows(), 16)));
        let mut plain = vec![0f32; g.n * g.o * g.op()];
        forward(&g, &x, &w, None, &mut plain);
        let relu = Epilogue { relu: true, ..Epilogue::NONE };
        let mut out = vec![0f32; plain.len()];
        forward_with(&g, &x, &w, None, &relu, &mut out);
        assert!(plain.iter().any(|&v| v < 0.0));
        for (a, p) in out.iter().zip(&plain) {
            assert_eq!(*a, p.max(0.0));
        }
    }
}

#[test]
fn strided_spans_are_exactly_the_in_bounds_outputs() {
    for s in 2..5usize {
        for iw in 1..12usize {
            for ow in 0..8usize {
                for off in -5isize..6 {
                    let inside: Vec<usize> =
                        (0..ow).filter(|&xo| (0..iw as isize).contains(&(xo as isize * s as isize + off))).collect();
                    let (lo, hi, s0) = super::cpu::span_strided(off, ow, iw, s);
                    assert_eq!((lo..hi).collect::<Vec<_>>(), inside, "s {s} iw {iw} ow {ow} off {off}");
                    if hi > lo {
                        assert_eq!(s0 as isize, lo as isize * s as isize + off);
                    }
                }
            }
        }
    }
}

#[test]
fn line_bands_write_every_line_of_every_plane_once() {
    // 3 planes of 37 lines × 600 columns: above the banding threshold, split over
    // a 3-thread pool into bands of whole, 4-aligned lines (16, 16 and 5).
    let (planes, lines, cross) = (3, 37, 600);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().expect("pool");
    let mut u = vec![-1.0f64; planes * lines * cross];
    let seen = parking_lot::Mutex::new(Vec::new());
    pool.install(|| {
        super::cpu::for_line_bands(&mut u, planes, cross, 4, true, &|rows, bands| {
            seen.lock().push(rows.clone());
            assert_eq!(bands.len(), planes);
            for (p, band) in bands.iter_mut().enumerate() {
                assert_eq!(band.len(), rows.len() * cross);
                for (i, v) in band.iter_mut().enumerate() {
                    assert_eq!(*v, -1.0, "written twice");
                    *v = (p * lines * cross + rows.start * cross + i) as f64;
                }
            }
        })
    });
    assert!(u.iter().enumerate().all(|(i, &v)| v == i as f64));
    let mut seen = seen.into_inner();
    seen.sort_by_key(|r| r.start);
    assert_eq!(seen, vec![0..16, 16..32, 32..37]);
}

#[test]
fn short_copies_copy_every_length() {
    for len in 0..20 {
        let src: Vec<u32> = (0..len as u32).map(|v| v + 1).collect();
        let mut dst = vec![0u32; len + 3];
        super::winograd::copy_short(&mut dst[..len], &src);
        assert_eq!(&dst[..len], &src[..], "{len}");
        assert!(dst[len..].iter().all(|&v| v == 0), "{len}");
    }
}
