//! Unit tests of the shape family.

use super::DEFS;
use crate::opdef::{invoke_def, Attr, Attrs, KernelSlot, Meta};
use crate::{Context, NDArray};

fn arr(v: Vec<f32>, s: &[usize]) -> NDArray {
    NDArray::from_vec(v, s, Context::default()).unwrap()
}

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
    assert!(DEFS.iter().all(|d| matches!(d.cpu, KernelSlot::Call(_)) && d.infer.is_some()));
}

/// Runs `name` with `attrs` and checks inference against the result.
fn run(name: &str, ins: &[&NDArray], attrs: &[(&str, Attr)]) -> Vec<NDArray> {
    let def = DEFS.iter().find(|d| d.name == name).unwrap();
    let attrs = Attrs(attrs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect());
    let metas: Vec<Meta> = ins.iter().map(|x| Meta::of(x)).collect();
    let want = def.infer_meta(&attrs, &metas).unwrap();
    let opt: Vec<Option<NDArray>> = ins.iter().map(|x| Some((*x).clone())).collect();
    let got = invoke_def(def, &opt, &attrs).unwrap();
    assert_eq!(want, got.iter().map(Meta::of).collect::<Vec<_>>(), "{name}");
    got
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
