//! Unit tests of the index family.

use super::DEFS;
use crate::opdef::Attr;
use crate::ops::test_support::{all_call_kernels_with_inference, arr, run_checked};
use crate::NDArray;

/// Runs `name` with `attrs` and checks inference against the result; its first output.
fn run(name: &str, ins: &[&NDArray], attrs: &[(&str, Attr)]) -> NDArray {
    run_checked(DEFS, name, ins, attrs).remove(0)
}

#[test]
fn defs_are_where_their_frontends_expect_them() {
    let names: Vec<&str> = DEFS.iter().map(|d| d.name).collect();
    assert_eq!(
        names,
        [
            "take",
            "pick",
            "one_hot",
            "where",
            "tile",
            "repeat",
            "flip",
            "reverse",
            "moveaxis",
            "gather_nd",
            "scatter_nd",
            "slice",
            "slice_like",
            "diag",
            "_backward_slice",
            "_backward_take",
            "_backward_pick",
            "_backward_gather_nd"
        ]
    );
    assert!(all_call_kernels_with_inference(DEFS));
}

#[test]
fn where_broadcasts_in_its_kernel() {
    let c = arr(vec![1.0, 0.0], &[2, 1]);
    let x = arr(vec![1.0, 2.0, 3.0], &[3]);
    let y = arr(vec![-1.0], &[1]);
    let w = run("where", &[&c, &x, &y], &[]);
    assert_eq!(w.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0, -1.0, -1.0, -1.0]);
    let rows =
        run("where", &[&arr(vec![0.0, 1.0], &[2]), &arr(vec![1.0; 4], &[2, 2]), &arr(vec![0.0; 4], &[2, 2])], &[]);
    assert_eq!(rows.to_vec::<f32>().unwrap(), [0.0, 0.0, 1.0, 1.0]);
}

#[test]
fn diag_gathers_and_scatters() {
    let v = arr(vec![1.0, 2.0], &[2]);
    let m = run("diag", &[&v], &[("k", Attr::Int(1))]);
    assert_eq!(m.to_vec::<f32>().unwrap(), [0.0, 1.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0]);
    let d = run("diag", &[&m], &[("k", Attr::Int(1))]);
    assert_eq!(d.to_vec::<f32>().unwrap(), [1.0, 2.0]);
}

#[test]
fn take_pick_one_hot_and_nd_agree_with_inference() {
    let a = arr((0..6).map(|v| v as f32).collect(), &[2, 3]);
    let i = arr(vec![2.0, 0.0], &[2]);
    assert_eq!(run("take", &[&a, &i], &[("axis", Attr::Int(1))]).to_vec::<f32>().unwrap(), [2.0, 0.0, 5.0, 3.0]);
    assert_eq!(run("pick", &[&a, &i], &[]).to_vec::<f32>().unwrap(), [2.0, 3.0]);
    assert_eq!(run("one_hot", &[&i], &[("depth", Attr::Int(3))]).dims(), [2, 3]);
    let nd = arr(vec![1.0, 0.0, 2.0, 1.0], &[2, 2]);
    assert_eq!(run("gather_nd", &[&a, &nd], &[]).to_vec::<f32>().unwrap(), [5.0, 1.0]);
    let sc = run("scatter_nd", &[&arr(vec![7.0, 8.0], &[2]), &nd], &[("shape", Attr::Ints(vec![2, 3]))]);
    assert_eq!(sc.to_vec::<f32>().unwrap(), [0.0, 8.0, 0.0, 0.0, 0.0, 7.0]);
    let t = run("moveaxis", &[&a], &[("source", Attr::Ints(vec![0])), ("destination", Attr::Ints(vec![1]))]);
    assert_eq!(t.to_vec::<f32>().unwrap(), [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
}
