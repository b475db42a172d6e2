//! Unit tests of the dense products.

use super::DEFS;
use crate::opdef::{Attr, KernelSlot};
use crate::ops::test_support::{arr, run_checked};
use crate::{Context, NDArray};

fn run(name: &str, ins: &[&NDArray], attrs: &[(&str, Attr)]) -> NDArray {
    run_checked(DEFS, name, ins, attrs).remove(0)
}

#[test]
fn products_run_one_call_and_agree_with_inference() {
    assert!(DEFS.iter().all(|d| matches!(d.cpu, KernelSlot::Call(_)) && d.infer.is_some()));
    let a = arr(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let d = run("dot", &[&a, &a], &[("transpose_b", Attr::Bool(true))]);
    assert_eq!(d.to_vec::<f32>().unwrap(), [14.0, 32.0, 32.0, 77.0]);
    let g = run("linalg_gemm2", &[&a, &a], &[("transpose_a", Attr::Bool(true)), ("alpha", Attr::Float(0.5))]);
    assert_eq!(g.dims(), [3, 3]);
    assert_eq!(g.to_vec::<f32>().unwrap()[0], 8.5);
    let b = arr((0..12).map(|v| v as f32).collect(), &[2, 2, 3]);
    let bd = run("batch_dot", &[&b, &b], &[("transpose_b", Attr::Bool(true))]);
    assert_eq!(bd.dims(), [2, 2, 2]);
    let ints = NDArray::from_vec(vec![1i32, 2, 3, 4], [2, 2], Context::default()).unwrap();
    assert_eq!(run("dot", &[&ints, &ints], &[]).to_vec::<i32>().unwrap(), [7, 10, 15, 22]);
    let t = arr((0..24).map(|v| v as f32).collect(), &[2, 3, 4]);
    let r = run("linalg_gemm2", &[&t, &t], &[("axis", Attr::Int(0)), ("transpose_b", Attr::Bool(true))]);
    assert_eq!(r.dims(), [2, 3, 2]);
}
