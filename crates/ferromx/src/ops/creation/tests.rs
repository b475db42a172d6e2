//! Unit tests of the creation operators.

use super::DEFS;
use crate::opdef::{invoke_def, Attr, Attrs, KernelSlot};

fn run(name: &str, attrs: &[(&str, Attr)]) -> crate::NDArray {
    let def = DEFS.iter().find(|d| d.name == name).unwrap();
    let attrs = Attrs(attrs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect());
    let want = def.infer_meta(&attrs, &[]).unwrap();
    let got = invoke_def(def, &[], &attrs).unwrap().remove(0);
    assert_eq!(want, vec![crate::opdef::Meta::of(&got)], "{name}");
    got
}

#[test]
fn ranges_agree_with_inference() {
    assert!(DEFS.iter().all(|d| matches!(d.cpu, KernelSlot::Call(_)) && d.infer.is_some()));
    let a = run("_arange", &[("start", Attr::Float(1.0)), ("stop", Attr::Float(4.0)), ("repeat", Attr::Int(2))]);
    assert_eq!(a.to_vec::<f32>().unwrap(), [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]);
    let l = run("_linspace", &[("start", Attr::Float(0.0)), ("stop", Attr::Float(1.0)), ("num", Attr::Int(5))]);
    assert_eq!(l.to_vec::<f32>().unwrap(), [0.0, 0.25, 0.5, 0.75, 1.0]);
    let e = run("_eye", &[("N", Attr::Int(2)), ("M", Attr::Int(3)), ("k", Attr::Int(1))]);
    assert_eq!(e.to_vec::<f32>().unwrap(), [0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
}
