//! Helpers shared by the operator families' unit tests.

use crate::opdef::{invoke_def, Attr, Attrs, KernelSlot, Meta, OpDef};
use crate::{Context, NDArray};

/// A float32 array of shape `s` on the default context.
pub(crate) fn arr(v: Vec<f32>, s: &[usize]) -> NDArray {
    NDArray::from_vec(v, s, Context::default()).unwrap()
}

/// Runs the operator `name` of `defs` on `ins` with `attrs` and checks that its
/// shape and dtype inference agrees with the outputs it returns.
pub(crate) fn run_checked(
    defs: &'static [OpDef],
    name: &str,
    ins: &[&NDArray],
    attrs: &[(&str, Attr)],
) -> Vec<NDArray> {
    let def = defs.iter().find(|d| d.name == name).unwrap();
    let attrs = Attrs(attrs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect());
    let metas: Vec<Meta> = ins.iter().map(|x| Meta::of(x)).collect();
    let want = def.infer_meta(&attrs, &metas).unwrap();
    let opt: Vec<Option<NDArray>> = ins.iter().map(|x| Some((*x).clone())).collect();
    let got = invoke_def(def, &opt, &attrs).unwrap();
    assert_eq!(want, got.iter().map(Meta::of).collect::<Vec<_>>(), "{name}");
    got
}

/// Whether every operator of `defs` has a call kernel and shape inference.
pub(crate) fn all_call_kernels_with_inference(defs: &[OpDef]) -> bool {
    defs.iter().all(|d| matches!(d.cpu, KernelSlot::Call(_)) && d.infer.is_some())
}
