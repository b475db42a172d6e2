//! Pooling kernels against naive loops.

use super::cpu::{backward, forward};
use super::{PoolGeom, PoolKind};

fn geom(
    kind: PoolKind,
    ind: [usize; 3],
    k: [usize; 3],
    s: [usize; 3],
    p: [usize; 3],
    full: bool,
    include_pad: bool,
) -> PoolGeom {
    let outd = [0, 1, 2].map(|a| {
        let span = ind[a] + 2 * p[a] - k[a];
        if full {
            span.div_ceil(s[a]) + 1
        } else {
            span / s[a] + 1
        }
    });
    PoolGeom { planes: 3, ind, outd, k, s, p, kind, p_value: 2, include_pad }
}

fn data(n: usize) -> Vec<f64> {
    (0..n).map(|i| ((i * 37 % 101) as f64) / 50.0 - 0.7).collect()
}

/// One output by its definition (MXNet's window and divisor rules).
fn naive(g: &PoolGeom, x: &[f64]) -> Vec<f64> {
    let mut out = vec![];
    for pl in 0..g.planes {
        for z in 0..g.outd[0] {
            for y in 0..g.outd[1] {
                for xo in 0..g.outd[2] {
                    let pos = [z, y, xo];
                    let mut vals = vec![];
                    let mut full = 1;
                    let mut ranges = vec![];
                    for (a, &pa) in pos.iter().enumerate() {
                        let st = (pa * g.s[a]) as isize - g.p[a] as isize;
                        let en = (st + g.k[a] as isize).min((g.ind[a] + g.p[a]) as isize);
                        full *= (en - st) as usize;
                        ranges.push((st.max(0) as usize, en.min(g.ind[a] as isize) as usize));
                    }
                    for zi in ranges[0].0..ranges[0].1 {
                        for yi in ranges[1].0..ranges[1].1 {
                            for xi in ranges[2].0..ranges[2].1 {
                                vals.push(x[((pl * g.ind[0] + zi) * g.ind[1] + yi) * g.ind[2] + xi]);
                            }
                        }
                    }
                    let n = if g.include_pad { full } else { vals.len() } as f64;
                    out.push(match g.kind {
                        PoolKind::Max => vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
                        PoolKind::Avg => vals.iter().sum::<f64>() / n,
                        PoolKind::Sum => vals.iter().sum::<f64>(),
                        PoolKind::Lp => vals.iter().map(|v| v * v).sum::<f64>().sqrt(),
                    });
                }
            }
        }
    }
    out
}

fn cases() -> Vec<PoolGeom> {
    let mut v = vec![];
    for kind in [PoolKind::Max, PoolKind::Avg, PoolKind::Sum, PoolKind::Lp] {
        v.push(geom(kind, [1, 5, 6], [1, 3, 2], [1, 2, 2], [0, 1, 0], false, true));
        v.push(geom(kind, [1, 5, 5], [1, 2, 2], [1, 2, 2], [0, 0, 0], true, true));
        v.push(geom(kind, [3, 4, 4], [2, 3, 3], [1, 1, 2], [1, 1, 1], false, false));
        v.push(geom(kind, [1, 1, 7], [1, 1, 3], [1, 1, 2], [0, 0, 1], true, false));
        // Windows tiling the input (the row-by-row path), with a leftover column and row.
        v.push(geom(kind, [1, 6, 7], [1, 2, 2], [1, 2, 2], [0, 0, 0], false, true));
        v.push(geom(kind, [1, 7, 6], [1, 3, 2], [1, 3, 2], [0, 0, 0], false, false));
        // window widths 3 (a constant-width row kernel) and 4 (the any-width one)
        v.push(geom(kind, [1, 7, 10], [1, 3, 3], [1, 3, 3], [0, 0, 0], false, true));
        v.push(geom(kind, [1, 5, 9], [1, 2, 4], [1, 2, 4], [0, 0, 0], false, true));
    }
    v
}

#[test]
fn forward_matches_the_definition() {
    for g in cases() {
        let x = data(g.planes * g.ip());
        let mut out = vec![0.0; g.planes * g.op()];
        forward(&g, &x, &mut out);
        for (a, e) in out.iter().zip(naive(&g, &x)) {
            assert!((a - e).abs() < 1e-12, "{g:?}: {a} vs {e}");
        }
    }
}

#[test]
fn backward_matches_finite_differences() {
    for g in cases() {
        let x = data(g.planes * g.ip());
        let dy: Vec<f64> = (0..g.planes * g.op()).map(|i| 0.5 + (i % 7) as f64 * 0.1).collect();
        let mut y = vec![0.0; dy.len()];
        forward(&g, &x, &mut y);
        let mut dx = vec![9.0; x.len()];
        backward(&g, &dy, &x, &y, &mut dx);
        let f = |x: &[f64]| naive(&g, x).iter().zip(&dy).map(|(a, b)| a * b).sum::<f64>();
        let eps = 1e-6;
        for i in 0..x.len() {
            let (mut hi, mut lo) = (x.clone(), x.clone());
            hi[i] += eps;
            lo[i] -= eps;
            let num = (f(&hi) - f(&lo)) / (2.0 * eps);
            assert!((num - dx[i]).abs() < 1e-5, "{g:?} at {i}: {} vs {num}", dx[i]);
        }
    }
}

#[test]
fn geometry_round_trips_through_the_call_numbers() {
    for g in cases() {
        assert_eq!(PoolGeom::from_nums(&g.to_nums()), g);
    }
}
