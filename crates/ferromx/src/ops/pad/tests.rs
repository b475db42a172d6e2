use super::DEFS;
use crate::opdef::{invoke_def, Attr, Attrs};
use crate::ops::test_support::{all_call_kernels_with_inference, arr, run_checked};
use crate::NDArray;

fn pad_attrs(mode: &str, w: &[i64]) -> Vec<(&'static str, Attr)> {
    vec![("mode", Attr::Str(mode.into())), ("pad_width", Attr::Ints(w.to_vec())), ("constant_value", Attr::Float(7.0))]
}

fn padded(x: &NDArray, mode: &str, w: &[i64]) -> Vec<f32> {
    run_checked(DEFS, "Pad", &[x], &pad_attrs(mode, w))[0].to_vec::<f32>().expect("read")
}

#[test]
fn the_three_modes_on_one_axis() {
    let x = arr(vec![0.0, 1.0, 2.0], &[3]);
    assert_eq!(padded(&x, "constant", &[2, 2]), [7.0, 7.0, 0.0, 1.0, 2.0, 7.0, 7.0]);
    assert_eq!(padded(&x, "edge", &[2, 2]), [0.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0]);
    assert_eq!(padded(&x, "reflect", &[2, 2]), [2.0, 1.0, 0.0, 1.0, 2.0, 1.0, 0.0]);
}

#[test]
fn two_axes_pad_the_corners_from_both() {
    let x = arr(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    assert_eq!(padded(&x, "edge", &[1, 0, 0, 1]), [1.0, 2.0, 2.0, 1.0, 2.0, 2.0, 3.0, 4.0, 4.0]);
}

#[test]
fn bad_widths_and_modes_are_errors_naming_the_op() {
    let x = arr(vec![0.0, 1.0, 2.0], &[3]);
    let run = |mode: &str, w: &[i64]| {
        let a = Attrs(pad_attrs(mode, w).into_iter().map(|(k, v)| (k.to_string(), v)).collect());
        invoke_def(&DEFS[0], &[Some(x.clone())], &a).expect_err("bad").to_string()
    };
    assert!(run("reflect", &[3, 0]).contains("Pad"));
    assert!(run("edge", &[1]).contains("pad_width"));
    assert!(run("wrap", &[1, 1]).contains("unknown mode"));
    assert!(run("constant", &[-1, 1]).contains("non-negative"));
}

#[test]
fn every_definition_has_a_kernel_and_inference() {
    assert!(all_call_kernels_with_inference(DEFS));
}
