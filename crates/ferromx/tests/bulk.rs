//! Bulk execution: operator calls collected on a thread and pushed as one
//! engine op must give the values, the order and the errors of separate pushes.
mod common;

use common::*;
use ferromx::fusion::bulk::{self, Bulk};
use ferromx::ops::{self, IndexMode};
use std::sync::mpsc;
use std::time::Duration;

/// Runs `f` on a fresh thread and fails the test if it does not finish within 20 s
/// (a bulk whose calls never reach the engine would make a wait hang).
fn bounded(f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    rx.recv_timeout(Duration::from_secs(20)).expect("the bulk thread hung or panicked");
}

#[test]
fn calls_are_collected_until_the_guard_ends_and_compute_what_separate_pushes_do() {
    bounded(|| {
        let x = iota(&[4, 8]);
        let w = iota(&[8, 3]);
        let want = {
            let y = ops::dot(&x, &w, false, false).unwrap();
            vals(&ops::nn::activation(&y, "relu").unwrap())
        };
        let out = {
            let _b = Bulk::begin();
            let y = ops::dot(&x, &w, false, false).unwrap();
            let z = ops::nn::activation(&y, "relu").unwrap();
            assert_eq!(bulk::pending(), 2, "both calls wait in the bulk");
            z
        };
        assert_eq!(bulk::pending(), 0, "the guard's end pushes them");
        assert_eq!(vals(&out), want);
    });
}

#[test]
fn a_wait_inside_the_bulk_hands_the_calls_over_first() {
    bounded(|| {
        let _b = Bulk::begin();
        let x = iota(&[16]);
        let y = ops::scalar_op(ops::BinOp::Mul, &x, 2.0, false).unwrap();
        // A read on the bulk's own thread: must not wait for a push that never comes.
        assert_eq!(vals(&y)[3], 6.0);
        assert_eq!(bulk::pending(), 0);
        let z = ops::scalar_op(ops::BinOp::Add, &y, 1.0, false).unwrap();
        assert_eq!(bulk::pending(), 1);
        assert_eq!(vals(&z)[3], 7.0);
    });
}

#[test]
fn an_in_place_write_after_a_read_keeps_its_order() {
    bounded(|| {
        let x = iota(&[8]);
        let y;
        {
            let _b = Bulk::begin();
            y = ops::scalar_op(ops::BinOp::Add, &x, 10.0, false).unwrap();
            ops::scalar_inplace(ops::BinOp::Mul, &x, 0.0).unwrap();
        }
        assert_eq!(vals(&y), (0..8).map(|v| v as f32 + 10.0).collect::<Vec<_>>());
        assert!(vals(&x).iter().all(|&v| v == 0.0));
    });
}

#[test]
fn a_failing_call_names_its_operator_and_fails_what_the_bulk_writes() {
    bounded(|| {
        let x = iota(&[4, 3]);
        let idx = arr(&[0.0, 7.0], &[2]);
        let (a, t) = {
            let _b = Bulk::begin();
            let a = ops::scalar_op(ops::BinOp::Add, &x, 1.0, false).unwrap();
            let t = ops::take(&a, &idx, 0, IndexMode::Raise).unwrap();
            assert_eq!(bulk::pending(), 2);
            (a, t)
        };
        let err = t.to_vec::<f32>().unwrap_err().to_string();
        assert!(err.contains("take") && err.contains("out of bounds"), "{err}");
        assert!(!err.contains("_bulk"), "the error names the operator, not the bulk: {err}");
        // As in MXNet's bulk segments, the segment fails as a whole.
        assert!(a.to_vec::<f32>().is_err());
        // Arrays outside the bulk are untouched.
        assert_eq!(vals(&x)[5], 5.0);
    });
}

#[test]
fn a_long_run_is_pushed_in_segments() {
    bounded(|| {
        let _b = Bulk::begin();
        let mut y = iota(&[4]);
        for _ in 0..bulk::MAX_CALLS + 5 {
            y = ops::scalar_op(ops::BinOp::Add, &y, 1.0, false).unwrap();
        }
        assert_eq!(bulk::pending(), 5, "a full bulk is pushed at once");
        assert_eq!(vals(&y)[0], (bulk::MAX_CALLS + 5) as f32);
    });
}
