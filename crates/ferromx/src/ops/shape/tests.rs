//! Unit tests of the shape family.

use super::DEFS;
use crate::opdef::Attr;
use crate::ops::test_support::{all_call_kernels_with_inference, arr, run_checked};
use crate::NDArray;

#[test]
fn defs_are_where_their_frontends_expect_them() {
    let names: Vec<&str> = DEFS.iter().map(|d| d.name).collect();
    assert_eq!(
        names[5..=14],
        [
            "broadcast_to",
            "broadcast_like",
            "broadcast_axis",
            "transpose",
            "swapaxes",
            "concat",
            "stack",
            "split",
            "slice_axis",
            "clip"
        ]
    );
    assert!(all_call_kernels_with_inference(DEFS));
}

/// Runs `name` with `attrs` and checks inference against the result.
fn run(name: &str, ins: &[&NDArray], attrs: &[(&str, Attr)]) -> Vec<NDArray> {
    run_checked(DEFS, name, ins, attrs)
}

#[test]
fn split_writes_every_part_in_one_call() {
    let x = arr((0..12).map(|v| v as f32).collect(), &[2, 6]);
    let parts = run("split", &[&x], &[("num_outputs", Attr::Int(3)), ("axis", Attr::Int(1))]);
    assert_eq!(parts[1].to_vec::<f32>().unwrap(), [2.0, 3.0, 8.0, 9.0]);
    let rows = run(
        "split",
        &[&x],
        &[("num_outputs", Attr::Int(2)), ("axis", Attr::Int(0)), ("squeeze_axis", Attr::Bool(true))],
    );
    assert_eq!(rows[1].to_vec::<f32>().unwrap(), [6.0, 7.0, 8.0, 9.0, 10.0, 11.0]);
}

#[test]
fn joins_transposes_and_clips_agree_with_inference() {
    let a = arr(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let s = run("stack", &[&a, &a], &[("axis", Attr::Int(2))]);
    assert_eq!(s[0].dims(), [2, 3, 2]);
    let t = run("swapaxes", &[&a], &[("dim1", Attr::Int(0)), ("dim2", Attr::Int(1))]);
    assert_eq!(t[0].to_vec::<f32>().unwrap(), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    let c = run("clip", &[&a], &[("a_min", Attr::Float(2.5)), ("a_max", Attr::Float(4.5))]);
    assert_eq!(c[0].to_vec::<f32>().unwrap(), [2.5, 2.5, 3.0, 4.0, 4.5, 4.5]);
    let b = run(
        "broadcast_axis",
        &[&arr(vec![1.0, 2.0], &[2, 1])],
        &[("axis", Attr::Ints(vec![1])), ("size", Attr::Ints(vec![3]))],
    );
    assert_eq!(b[0].to_vec::<f32>().unwrap(), [1.0, 1.0, 1.0, 2.0, 2.0, 2.0]);
    let r = run("slice_axis", &[&a], &[("axis", Attr::Int(1)), ("begin", Attr::Int(1)), ("end", Attr::None)]);
    assert_eq!(r[0].to_vec::<f32>().unwrap(), [2.0, 3.0, 5.0, 6.0]);
}
