//! Unit tests of the random operators.

use super::{sample, seed, Dist, DEFS};
use crate::opdef::KernelSlot;
use crate::{Context, DType, Shape};

#[test]
fn samplers_run_calls_and_reseeding_repeats_them() {
    assert!(DEFS.iter().all(|d| matches!(d.cpu, KernelSlot::Call(_)) && d.infer.is_some()));
    let ctx = Context::cpu(7);
    let draw = || sample(Dist::RandInt(-3, 3), Shape::new(&[64]), DType::I32, ctx).unwrap().to_vec::<i32>().unwrap();
    seed(11, Some(ctx));
    let a = draw();
    seed(11, Some(ctx));
    assert_eq!(a, draw());
    assert!(a.iter().all(|v| (-3..3).contains(v)) && a.iter().any(|&v| v != a[0]));
}
