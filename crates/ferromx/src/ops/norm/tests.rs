//! BatchNorm kernels against the definition and finite differences.

use super::cpu::{bn_backward, bn_forward, bn_update};
use super::BnDims;

fn dims(use_batch: bool, fix_gamma: bool) -> BnDims {
    BnDims { outer: 3, c: 2, inner: 4, eps: 1e-3, fix_gamma, use_batch, momentum: 0.9, update: use_batch }
}

fn data(n: usize) -> Vec<f64> {
    (0..n).map(|i| ((i * 29 % 31) as f64) / 10.0 - 1.2).collect()
}

fn fwd(d: &BnDims, x: &[f64], gamma: &[f64], beta: &[f64], mm: &[f64], mv: &[f64]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mut o, mut m, mut s) = (vec![0.0; x.len()], vec![0.0; d.c], vec![0.0; d.c]);
    bn_forward(d, x, gamma, beta, mm, mv, &mut o, &mut m, &mut s);
    (o, m, s)
}

#[test]
fn forward_normalises_each_channel() {
    let d = dims(true, false);
    let x = data(24);
    let (g, b) = (vec![2.0, 0.5], vec![0.1, -0.3]);
    let (o, m, s) = fwd(&d, &x, &g, &b, &[0.0; 2], &[1.0; 2]);
    for c in 0..2 {
        let vals: Vec<f64> = (0..3).flat_map(|n| (0..4).map(move |i| (n * 2 + c) * 4 + i)).map(|i| x[i]).collect();
        let mu = vals.iter().sum::<f64>() / 12.0;
        let var = vals.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / 12.0;
        assert!((m[c] - mu).abs() < 1e-12);
        assert!((s[c] - 1.0 / (var + 1e-3).sqrt()).abs() < 1e-12);
        let i = (2 + c) * 4 + 1;
        assert!((o[i] - ((x[i] - mu) * s[c] * g[c] + b[c])).abs() < 1e-12);
    }
    let dg = dims(false, true);
    let (o, _, _) = fwd(&dg, &x, &g, &b, &[0.5, 1.0], &[4.0, 1.0]);
    assert!((o[0] - ((x[0] - 0.5) / (4.0f64 + 1e-3).sqrt() + 0.1)).abs() < 1e-12);
}

#[test]
fn backward_matches_finite_differences() {
    for (use_batch, fix_gamma) in [(true, false), (false, false), (true, true)] {
        let d = dims(use_batch, fix_gamma);
        let x = data(24);
        let (g, b, mm, mv) = (vec![1.5, 0.7], vec![0.1, -0.3], vec![0.2, -0.1], vec![1.3, 0.6]);
        let dy: Vec<f64> = (0..24).map(|i| ((i * 7 % 11) as f64) / 5.0 - 1.0).collect();
        let (_, m, s) = fwd(&d, &x, &g, &b, &mm, &mv);
        let (mut dx, mut dgam, mut dbet) = (vec![0.0; 24], vec![0.0; 2], vec![0.0; 2]);
        bn_backward(&d, &dy, &x, &g, &m, &s, &mut dx, &mut dgam, &mut dbet);
        let loss = |x: &[f64], g: &[f64], b: &[f64]| {
            fwd(&d, x, g, b, &mm, &mv).0.iter().zip(&dy).map(|(a, b)| a * b).sum::<f64>()
        };
        let eps = 1e-6;
        for i in 0..24 {
            let (mut hi, mut lo) = (x.clone(), x.clone());
            hi[i] += eps;
            lo[i] -= eps;
            let num = (loss(&hi, &g, &b) - loss(&lo, &g, &b)) / (2.0 * eps);
            assert!((num - dx[i]).abs() < 1e-6, "{use_batch} {fix_gamma} dx[{i}] {} vs {num}", dx[i]);
        }
        for c in 0..2 {
            let (mut hi, mut lo) = (g.clone(), g.clone());
            hi[c] += eps;
            lo[c] -= eps;
            let num = if fix_gamma { 0.0 } else { (loss(&x, &hi, &b) - loss(&x, &lo, &b)) / (2.0 * eps) };
            assert!((num - dgam[c]).abs() < 1e-6);
            let (mut hi, mut lo) = (b.clone(), b.clone());
            hi[c] += eps;
            lo[c] -= eps;
            assert!(((loss(&x, &g, &hi) - loss(&x, &g, &lo)) / (2.0 * eps) - dbet[c]).abs() < 1e-6);
        }
        if use_batch {
            let (mut um, mut uv) = (mm.clone(), mv.clone());
            bn_update(&d, &m, &s, &mut um, &mut uv);
            let var = 1.0 / (s[0] * s[0]) - 1e-3;
            assert!((um[0] - (0.9 * mm[0] + 0.1 * m[0])).abs() < 1e-12);
            assert!((uv[0] - (0.9 * mv[0] + 0.1 * var)).abs() < 1e-12);
        }
    }
}

#[test]
fn dims_round_trip_through_the_call_numbers() {
    let d = dims(true, true);
    assert_eq!(BnDims::from_nums(&d.to_nums()), d);
}
