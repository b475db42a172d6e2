//! The CTC recursions against a brute-force sum over every alignment.

use super::cpu::{sample_loss, Sample};

/// All paths of length `t` over `c` classes whose collapse (merge repeats, drop blanks)
/// is `labels`: `-ln Σ Π y`, and the gradient by central differences of it.
fn brute(lp: &[f64], c: usize, t: usize, labels: &[usize], blank: usize) -> f64 {
    let mut total = 0.0;
    let mut path = vec![0usize; t];
    loop {
        let mut collapsed = Vec::new();
        let mut prev = usize::MAX;
        for &k in &path {
            if k != prev && k != blank {
                collapsed.push(k);
            }
            prev = k;
        }
        if collapsed == labels {
            total += path.iter().enumerate().map(|(i, &k)| lp[i * c + k]).sum::<f64>().exp();
        }
        let mut i = 0;
        while i < t {
            path[i] += 1;
            if path[i] < c {
                break;
            }
            path[i] = 0;
            i += 1;
        }
        if i == t {
            break;
        }
    }
    -total.ln()
}

fn log_softmax(u: &[f64], c: usize) -> Vec<f64> {
    u.chunks(c)
        .flat_map(|r| {
            let m = r.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let z = m + r.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
            r.iter().map(move |v| v - z)
        })
        .collect()
}

#[test]
fn loss_and_gradient_match_brute_force() {
    let (t, c) = (4, 3);
    let u: Vec<f64> = (0..t * c).map(|i| ((i * 7 + 3) % 11) as f64 / 5.0 - 1.0).collect();
    for (labels, blank) in [(vec![1, 2], 0), (vec![1, 1], 0), (vec![], 0), (vec![0, 1], 2), (vec![2], 0)] {
        let lp = log_softmax(&u, c);
        let (loss, grad) = sample_loss(&Sample { lp: &lp, classes: c, steps: t, labels: &labels, blank });
        let want = brute(&lp, c, t, &labels, blank);
        assert!((loss - want).abs() < 1e-12, "{labels:?}: {loss} vs {want}");
        for i in 0..t * c {
            let h = 1e-6;
            let mut up = u.clone();
            up[i] += h;
            let mut dn = u.clone();
            dn[i] -= h;
            let num = (brute(&log_softmax(&up, c), c, t, &labels, blank)
                - brute(&log_softmax(&dn, c), c, t, &labels, blank))
                / (2.0 * h);
            assert!((grad[i] - num).abs() < 1e-6, "{labels:?} grad[{i}]: {} vs {num}", grad[i]);
        }
    }
}

#[test]
fn too_few_steps_is_an_infinite_loss_with_zero_gradient() {
    // "1 1" needs a blank between the repeats: three steps at least
    let lp = log_softmax(&[0.0; 6], 3);
    let (loss, grad) = sample_loss(&Sample { lp: &lp, classes: 3, steps: 2, labels: &[1, 1], blank: 0 });
    assert!(loss.is_infinite() && grad.iter().all(|&g| g == 0.0));
}
