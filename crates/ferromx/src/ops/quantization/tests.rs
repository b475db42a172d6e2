use crate::opdef::{invoke, Attr, Attrs};
use crate::{Context, NDArray};

fn f(v: &[f32]) -> Option<NDArray> {
    Some(NDArray::from_vec(v.to_vec(), &[v.len()][..], Context::default()).unwrap())
}

fn attrs(kv: &[(&str, Attr)]) -> Attrs {
    Attrs(kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())
}

#[test]
fn quantize_int8_rounds_half_to_even_and_saturates() {
    let a = attrs(&[("out_type", Attr::Str("int8".into()))]);
    let r = invoke("_contrib_quantize", &[f(&[-2.5, 0.5, 1.5, 62.5, -130.0, 200.0]), f(&[-127.0]), f(&[127.0])], &a)
        .unwrap();
    assert_eq!(r[0].to_vec::<i8>().unwrap(), vec![-2, 0, 2, 62, -128, 127]);
    assert_eq!(r[1].to_vec::<f32>().unwrap(), vec![-127.0]);
}

#[test]
fn requantize_with_calibration() {
    let x = NDArray::from_vec(vec![0i32, 1 << 30, -(1 << 30)], &[3usize][..], Context::default()).unwrap();
    let a = attrs(&[("min_calib_range", Attr::Float(-1.0)), ("max_calib_range", Attr::Float(2.0))]);
    let r = invoke("_contrib_requantize", &[Some(x), f(&[-4.0]), f(&[4.0])], &a).unwrap();
    // 2^30 in units of 4 / 2^31 is 2.0, the calibrated magnitude: 127
    assert_eq!(r[0].to_vec::<i8>().unwrap(), vec![0, 127, -127]);
    assert_eq!(r[2].to_vec::<f32>().unwrap(), vec![2.0]);
}

#[test]
fn fully_connected_is_the_exact_integer_product() {
    let x = NDArray::from_vec(vec![1i8, -2, 3, 4, 5, -6], &[2usize, 3][..], Context::default()).unwrap();
    let w = NDArray::from_vec(vec![1i8, 1, 1, -1, 0, 2], &[2usize, 3][..], Context::default()).unwrap();
    let a = attrs(&[("num_hidden", Attr::Int(2)), ("no_bias", Attr::Bool(true))]);
    let r = invoke(
        "_contrib_quantized_fully_connected",
        &[Some(x), Some(w), f(&[-1.0]), f(&[1.0]), f(&[-1.0]), f(&[1.0])],
        &a,
    )
    .unwrap();
    assert_eq!(r[0].to_vec::<i32>().unwrap(), vec![2, 5, 3, -16]);
}

#[test]
fn bad_dtypes_are_errors_naming_the_operator() {
    let e = invoke("_contrib_dequantize", &[f(&[1.0]), f(&[-1.0]), f(&[1.0])], &Attrs::default()).unwrap_err();
    assert!(e.to_string().contains("_contrib_dequantize"), "{e}");
}
