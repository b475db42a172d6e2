//! Eager fusion with several frontend threads. They share the one pending
//! chain, so any of them may flush another's calls; each must still read its
//! own values, and in-place writes must land after the reads they follow.
mod common;

use common::*;
use ferromx::ops;

const THREADS: usize = 4;
const ROUNDS: usize = 300;

/// Runs `f(thread, round)` on `THREADS` threads at once, with fusion on.
fn on_threads(f: fn(usize, usize)) {
    ferromx::fusion::set_enabled(true);
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..ROUNDS {
                    f(t, i);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("a frontend thread failed");
    }
}

#[test]
fn threads_sharing_the_chain_read_their_own_values() {
    on_threads(|t, i| {
        let k = (t * 1000 + i) as f32;
        let x = arr(&vec![k; 4096], &[4096]);
        let y = ops::add(&x, &x).unwrap();
        let z = ops::mul(&y, &x).unwrap();
        let w = ops::sub(&z, &y).unwrap();
        let want = 2.0 * k * k - 2.0 * k;
        let got = vals(&w);
        assert!(got.iter().all(|&v| v == want), "thread {t} round {i}: got {} want {want}", got[0]);
    });
}

#[test]
fn threads_sharing_the_chain_order_in_place_writes() {
    on_threads(|t, i| {
        let k = (t * 1000 + i) as f32;
        let x = arr(&vec![k; 2048], &[2048]);
        let y = ops::add(&x, &x).unwrap();
        // Overwrite x after y read it: y must still be 2k.
        ops::assign(&x, &arr(&vec![-1.0; 2048], &[2048])).unwrap();
        let got = vals(&y);
        assert!(got.iter().all(|&v| v == 2.0 * k), "thread {t} round {i}: got {}", got[0]);
        assert!(vals(&x).iter().all(|&v| v == -1.0));
    });
}
