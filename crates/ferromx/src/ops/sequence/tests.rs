//! Unit tests of the sequence family's definitions and kernels.

use super::{ATTN, DEFS, LAST, LAST_BWD, MASK, REVERSE};
use crate::opdef::{invoke, Attr, Attrs};
use crate::{Context, NDArray};

fn arr(v: &[f32], shape: &[usize]) -> NDArray {
    NDArray::from_vec(v.to_vec(), shape, Context::default()).expect("array")
}

fn attrs(kv: &[(&str, Attr)]) -> Attrs {
    Attrs(kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())
}

#[test]
fn indices_name_the_right_definitions() {
    assert_eq!(DEFS[MASK].name, "SequenceMask");
    assert_eq!(DEFS[LAST].name, "SequenceLast");
    assert_eq!(DEFS[LAST_BWD].name, "_backward_SequenceLast");
    assert_eq!(DEFS[REVERSE].name, "SequenceReverse");
    assert_eq!(DEFS[super::DIV_SQRT].name, "_contrib_div_sqrt_dim");
    for k in 0..4 {
        let (f, b) = (DEFS[ATTN + k].name, DEFS[ATTN + 4 + k].name);
        assert!(f.starts_with("_contrib_interleaved_matmul_"), "{f}");
        assert_eq!(f.trim_start_matches("_contrib_"), b.trim_start_matches("_backward_"));
    }
}

#[test]
fn mask_last_reverse_on_lengths() {
    // (T=3, B=2, 1): x[t, b] = 10 t + b
    let x = arr(&[0.0, 1.0, 10.0, 11.0, 20.0, 21.0], &[3, 2, 1]);
    let len = arr(&[1.0, 3.0], &[2]);
    let on = attrs(&[("use_sequence_length", Attr::Bool(true)), ("value", Attr::Float(-1.0))]);
    let m = invoke("SequenceMask", &[Some(x.clone()), Some(len.clone())], &on).expect("mask");
    assert_eq!(m[0].to_vec::<f32>().expect("read"), vec![0.0, 1.0, -1.0, 11.0, -1.0, 21.0]);
    let on = attrs(&[("use_sequence_length", Attr::Bool(true))]);
    let l = invoke("SequenceLast", &[Some(x.clone()), Some(len.clone())], &on).expect("last");
    assert_eq!(l[0].to_vec::<f32>().expect("read"), vec![0.0, 21.0]);
    let r = invoke("SequenceReverse", &[Some(x), Some(len)], &on).expect("reverse");
    assert_eq!(r[0].to_vec::<f32>().expect("read"), vec![0.0, 21.0, 10.0, 11.0, 20.0, 1.0]);
}

#[test]
fn bad_lengths_fail_at_read() {
    let x = arr(&[0.0; 6], &[3, 2, 1]);
    let on = attrs(&[("use_sequence_length", Attr::Bool(true))]);
    let l = invoke("SequenceLast", &[Some(x), Some(arr(&[4.0, 1.0], &[2]))], &on).expect("pushed");
    let e = l[0].to_vec::<f32>().expect_err("length 4 > 3 steps");
    assert!(e.to_string().contains("outside 1..=3"), "{e}");
}

#[test]
fn selfatt_qk_scales_by_head_dim() {
    // T=1, B=1, heads=1, dim=4: q = 1s, k = 2s -> q.k / 2 = 4
    let x = arr(&[1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0], &[1, 1, 12]);
    let o =
        invoke("_contrib_interleaved_matmul_selfatt_qk", &[Some(x)], &attrs(&[("heads", Attr::Int(1))])).expect("qk");
    assert_eq!(o[0].dims(), &[1, 1, 1]);
    assert_eq!(o[0].to_vec::<f32>().expect("read"), vec![4.0]);
}
