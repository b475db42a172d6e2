//! Unit tests of the nn family.

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
            "FullyConnected",
            "Activation",
            "LeakyReLU",
            "softmax",
            "log_softmax",
            "softmax_ce_loss",
            "softmax_cross_entropy",
            "Dropout",
            "LayerNorm",
            "Embedding",
            "softmin"
        ]
    );
    // softmin (last) is a composite over neg and softmax; the rest run their own kernels
    let (last, kernels) = DEFS.split_last().expect("definitions");
    assert!(all_call_kernels_with_inference(kernels));
    assert!(matches!(last.cpu, crate::opdef::KernelSlot::Composite) && last.infer.is_some());
}

#[test]
fn fused_kernels_compute_what_the_compositions_did() {
    let x = arr(vec![-1.0, 0.5, 2.0, -0.25], &[2, 2]);
    let l = run("LeakyReLU", &[&x], &[("act_type", Attr::Str("leaky".into())), ("slope", Attr::Float(0.1))]);
    assert_eq!(l.to_vec::<f32>().unwrap(), [-0.1, 0.5, 2.0, -0.025]);
    let a = run("Activation", &[&x], &[("act_type", Attr::Str("relu".into()))]);
    assert_eq!(a.to_vec::<f32>().unwrap(), [0.0, 0.5, 2.0, 0.0]);
    let (g, b) = (arr(vec![1.0, 2.0], &[2]), arr(vec![0.0, 1.0], &[2]));
    let n = run("LayerNorm", &[&x, &g, &b], &[]).to_vec::<f32>().unwrap();
    assert!((n[0] + 1.0).abs() < 1e-3 && (n[1] - 3.0).abs() < 1e-3, "{n:?}");
    let s = run("softmax_cross_entropy", &[&x, &arr(vec![1.0, 0.0], &[2])], &[]).to_vec::<f32>().unwrap();
    let want = (1.0f32 + (-1.5f32).exp()).ln() + (1.0f32 + (-2.25f32).exp()).ln();
    assert!((s[0] - want).abs() < 1e-5, "{s:?}");
    let w = arr((0..6).map(|v| v as f32).collect(), &[3, 2]);
    let e = run("Embedding", &[&arr(vec![2.0, 0.0], &[2]), &w], &[]);
    assert_eq!(e.to_vec::<f32>().unwrap(), [4.0, 5.0, 0.0, 1.0]);
}

#[test]
fn dropout_keeps_its_mask_for_the_backward() {
    let x = arr(vec![1.0; 1000], &[1000]);
    let y = run("Dropout", &[&x], &[("p", Attr::Float(0.5)), ("mode", Attr::Str("always".into()))]);
    let v = y.to_vec::<f32>().unwrap();
    assert!(v.iter().all(|&e| e == 0.0 || e == 2.0));
    let kept = v.iter().filter(|&&e| e == 2.0).count();
    assert!((400..600).contains(&kept), "{kept}");
}
