//! Unit tests of the ordering operators.

use super::DEFS;
use crate::opdef::{invoke_def, Attr, Attrs, KernelSlot, Meta};
use crate::{Context, NDArray};

fn run(name: &str, x: &NDArray, attrs: &[(&str, Attr)]) -> Vec<NDArray> {
    let def = DEFS.iter().find(|d| d.name == name).unwrap();
    let attrs = Attrs(attrs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect());
    let want = def.infer_meta(&attrs, &[Meta::of(x)]).unwrap();
    let got = invoke_def(def, &[Some(x.clone())], &attrs).unwrap();
    assert_eq!(want, got.iter().map(Meta::of).collect::<Vec<_>>(), "{name}");
    got
}

#[test]
fn ordering_ops_agree_with_inference() {
    assert!(DEFS.iter().all(|d| matches!(d.cpu, KernelSlot::Call(_)) && d.infer.is_some()));
    let x = NDArray::from_vec(vec![3.0f32, 1.0, 2.0, 0.0, 5.0, 4.0], [2, 3], Context::default()).unwrap();
    assert_eq!(run("sort", &x, &[])[0].to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0, 0.0, 4.0, 5.0]);
    assert_eq!(run("argsort", &x, &[("axis", Attr::None)])[0].dims(), [6]);
    let both = run("topk", &x, &[("k", Attr::Int(2)), ("ret_typ", Attr::Str("both".into()))]);
    assert_eq!(both[0].to_vec::<f32>().unwrap(), [3.0, 2.0, 5.0, 4.0]);
    assert_eq!(both[1].to_vec::<f32>().unwrap(), [0.0, 2.0, 1.0, 2.0]);
    let m = run("topk", &x, &[("k", Attr::Int(1)), ("ret_typ", Attr::Str("mask".into()))]);
    assert_eq!(m[0].to_vec::<f32>().unwrap(), [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
}
