//! Unit tests of the image family.

use super::cpu::{resize_image, resize_image_u8, Interp};
use super::DEFS;
use crate::opdef::{invoke, Attr, Attrs};
use crate::{Context, NDArray, Shape};

fn img(h: usize, w: usize, c: usize) -> NDArray {
    let v: Vec<u8> = (0..h * w * c).map(|i| (i * 37 % 256) as u8).collect();
    NDArray::from_vec(v, Shape::new(&[h, w, c]), Context::default()).expect("array")
}

fn call(name: &str, x: &NDArray, attrs: Vec<(&str, Attr)>) -> crate::Result<NDArray> {
    let a = Attrs(attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
    invoke(name, &[Some(x.clone())], &a).map(|mut v| v.remove(0))
}

#[test]
fn every_definition_is_documented() {
    for d in DEFS {
        assert!(!d.doc.is_empty(), "{}", d.name);
        assert!(d.name.starts_with("_image_") || d.name.starts_with("_cvim") || d.name.starts_with("_backward"));
    }
}

#[test]
fn to_tensor_transposes_and_scales() {
    let x = img(2, 3, 3);
    let xs: Vec<u8> = x.to_vec().expect("read");
    let t = call("_image_to_tensor", &x, vec![]).expect("to_tensor");
    assert_eq!(t.shape().dims(), &[3, 2, 3]);
    let v: Vec<f32> = t.to_vec().expect("read");
    assert_eq!(v[6 + 4], xs[4 * 3 + 1] as f32 / 255.0);
}

#[test]
fn flips_and_crops_move_pixels() {
    let x = img(2, 3, 1);
    let xs: Vec<u8> = x.to_vec().expect("read");
    let f: Vec<u8> = call("_image_flip_left_right", &x, vec![]).and_then(|y| y.to_vec()).expect("flip");
    assert_eq!(f, vec![xs[2], xs[1], xs[0], xs[5], xs[4], xs[3]]);
    let t: Vec<u8> = call("_image_flip_top_bottom", &x, vec![]).and_then(|y| y.to_vec()).expect("flip");
    assert_eq!(t, [&xs[3..], &xs[..3]].concat());
    let attrs = vec![("x", Attr::Int(1)), ("y", Attr::Int(1)), ("width", Attr::Int(2)), ("height", Attr::Int(1))];
    let c: Vec<u8> = call("_image_crop", &x, attrs).and_then(|y| y.to_vec()).expect("crop");
    assert_eq!(c, vec![xs[4], xs[5]]);
    let bad = vec![("x", Attr::Int(2)), ("y", Attr::Int(0)), ("width", Attr::Int(2)), ("height", Attr::Int(1))];
    let e = call("_image_crop", &x, bad).expect_err("out of bounds");
    assert!(e.to_string().contains("_image_crop"), "{e}");
}

#[test]
fn resize_matches_hand_computed_values() {
    // 1x2 -> 1x4 bilinear: OpenCV samples at (d + 0.5) / 2 - 0.5.
    let x = [0.0f32, 100.0];
    let mut o = [0.0f32; 4];
    resize_image(&x, [1, 2, 1], &mut o, [1, 4], Interp::Linear);
    assert_eq!(o, [0.0, 25.0, 75.0, 100.0]);
    let mut n = [0.0f32; 4];
    resize_image(&x, [1, 2, 1], &mut n, [1, 4], Interp::Nearest);
    assert_eq!(n, [0.0, 0.0, 100.0, 100.0]);
    // 2x2 -> 1x1 (linear at exactly half size is OpenCV's area: the mean, rounded).
    let u = [1u8, 2, 3, 5];
    let mut m = [0u8; 1];
    resize_image(&u, [2, 2, 1], &mut m, [1, 1], Interp::Linear);
    assert_eq!(m, [3]);
    let mut same = [0u8; 4];
    resize_image(&u, [2, 2, 1], &mut same, [2, 2], Interp::Cubic);
    assert_eq!(same, u);
}

#[test]
fn resize_operator_checks_its_arguments() {
    let x = img(4, 6, 3);
    let y = call("_image_resize", &x, vec![("size", Attr::Int(2)), ("keep_ratio", Attr::Bool(true))]).expect("resize");
    assert_eq!(y.shape().dims(), &[2, 3, 3]);
    let e = call("_image_resize", &x, vec![("size", Attr::Int(2)), ("interp", Attr::Int(7))]);
    assert!(e.expect_err("bad interp").to_string().contains("interpolation"));
}

#[test]
fn random_ops_are_reproducible_after_seeding() {
    let x = img(4, 4, 3);
    let attrs = || vec![("min_factor", Attr::Float(0.2)), ("max_factor", Attr::Float(1.8))];
    crate::ops::random::seed(7, None);
    let a: Vec<u8> = call("_image_random_brightness", &x, attrs()).and_then(|y| y.to_vec()).expect("b");
    crate::ops::random::seed(7, None);
    let b: Vec<u8> = call("_image_random_brightness", &x, attrs()).and_then(|y| y.to_vec()).expect("b");
    assert_eq!(a, b);
}

#[test]
fn resize_u8_integer_path_matches_the_generic_one() {
    // The uint8 integer path must give the generic fixed-point result bit for bit.
    let mut seed = 7u64;
    for &(h, w, oh, ow, ch) in &[(375, 500, 224, 224, 3), (37, 50, 80, 61, 3), (9, 7, 4, 4, 1), (20, 20, 10, 10, 3)] {
        let x: Vec<u8> = (0..h * w * ch)
            .map(|_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (seed >> 56) as u8
            })
            .collect();
        for mode in [Interp::Linear, Interp::Cubic, Interp::Nearest, Interp::Area] {
            let mut a = vec![0u8; oh * ow * ch];
            let mut b = vec![0u8; oh * ow * ch];
            resize_image(&x, [h, w, ch], &mut a, [oh, ow], mode);
            resize_image_u8(&x, [h, w, ch], &mut b, [oh, ow], mode);
            assert_eq!(a, b, "{h}x{w} -> {oh}x{ow} ({mode:?})");
        }
    }
}
