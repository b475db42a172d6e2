//! The vision kernels on cases with known answers: an identity transform samples every
//! pixel back, MXNet's documented ROIPooling example, and a zero-displacement
//! correlation is the channel mean of the product.

use super::DEFS;
use crate::opdef::Attr;
use crate::ops::test_support::{arr, run_checked};

#[test]
fn an_identity_affine_grid_samples_the_input_back() {
    let x: Vec<f32> = (0..2 * 3 * 4 * 5).map(|v| v as f32 * 0.25 - 3.0).collect();
    let data = arr(x.clone(), &[2, 3, 4, 5]);
    let theta = arr([1.0, 0.0, 0.0, 0.0, 1.0, 0.0].repeat(2), &[2, 6]);
    let attrs = [
        ("target_shape", Attr::Ints(vec![4, 5])),
        ("transform_type", Attr::Str("affine".into())),
        ("sampler_type", Attr::Str("bilinear".into())),
    ];
    let y = run_checked(DEFS, "SpatialTransformer", &[&data, &theta], &attrs);
    let got = y[0].to_vec::<f32>().unwrap();
    for (a, b) in got.iter().zip(&x) {
        assert!((a - b).abs() < 1e-5, "{a} vs {b}");
    }
}

#[test]
fn a_warp_grid_of_zero_flow_is_the_normalised_pixel_grid() {
    let flow = arr(vec![0.0; 2 * 3 * 5], &[1, 2, 3, 5]);
    let g = run_checked(DEFS, "GridGenerator", &[&flow], &[("transform_type", Attr::Str("warp".into()))]);
    let v = g[0].to_vec::<f32>().unwrap();
    assert_eq!(&v[..5], &[-1.0, -0.5, 0.0, 0.5, 1.0]);
    assert_eq!(&v[15..20], &[-1.0; 5]);
    assert_eq!(&v[25..30], &[1.0; 5]);
}

#[test]
fn roi_pooling_matches_mxnets_documented_example() {
    let x = arr((0..48).map(|v| v as f32).collect(), &[1, 1, 8, 6]);
    let rois = arr(vec![0.0, 0.0, 0.0, 4.0, 4.0], &[1, 5]);
    for (scale, want) in [(1.0, [14.0, 16.0, 26.0, 28.0]), (0.7, [7.0, 9.0, 19.0, 21.0])] {
        let attrs = [("pooled_size", Attr::Ints(vec![2, 2])), ("spatial_scale", Attr::Float(scale))];
        let y = run_checked(DEFS, "ROIPooling", &[&x, &rois], &attrs);
        assert_eq!(y[0].to_vec::<f32>().unwrap(), want, "spatial_scale {scale}");
    }
}

#[test]
fn zero_displacement_correlation_is_the_channel_mean_of_the_product() {
    let a: Vec<f32> = (0..2 * 3 * 3).map(|v| (v as f32).sin()).collect();
    let b: Vec<f32> = (0..2 * 3 * 3).map(|v| (v as f32 * 0.7).cos()).collect();
    let (da, db) = (arr(a.clone(), &[1, 2, 3, 3]), arr(b.clone(), &[1, 2, 3, 3]));
    let y = run_checked(DEFS, "Correlation", &[&da, &db], &[("max_displacement", Attr::Int(0))]);
    let got = y[0].to_vec::<f32>().unwrap();
    assert_eq!(y[0].dims(), [1, 1, 3, 3]);
    for p in 0..9 {
        let want = (a[p] * b[p] + a[9 + p] * b[9 + p]) / 2.0;
        assert!((got[p] - want).abs() < 1e-6, "{p}: {} vs {want}", got[p]);
    }
}
