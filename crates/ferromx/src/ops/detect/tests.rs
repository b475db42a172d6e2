//! The box kernels on hand-checked cases: anchor layout, a perfect match, suppression.

use super::DEFS;
use crate::opdef::Attr;
use crate::ops::test_support::{arr, run_checked};

#[test]
fn anchors_are_sizes_at_the_first_ratio_then_ratios_at_the_first_size() {
    let x = arr(vec![0.0; 4], &[1, 1, 2, 2]);
    let attrs = [("sizes", Attr::Floats(vec![0.5, 0.25])), ("ratios", Attr::Floats(vec![1.0, 4.0]))];
    let y = run_checked(DEFS, "_contrib_MultiBoxPrior", &[&x], &attrs);
    assert_eq!(y[0].dims(), [1, 12, 4]);
    let v = y[0].to_vec::<f32>().unwrap();
    // cell (0, 0): centre (0.25, 0.25); size 0.5 ratio 1, size 0.25 ratio 1, size 0.5 ratio 4
    assert_eq!(&v[..4], &[0.0, 0.0, 0.5, 0.5]);
    assert_eq!(&v[4..8], &[0.125, 0.125, 0.375, 0.375]);
    assert_eq!(&v[8..12], &[-0.25, 0.125, 0.75, 0.375]);
}

#[test]
fn a_box_equal_to_an_anchor_is_its_positive_with_zero_offsets() {
    let anchors = arr(vec![0.0, 0.0, 0.5, 0.5, 0.5, 0.5, 1.0, 1.0], &[1, 2, 4]);
    let label = arr(vec![2.0, 0.5, 0.5, 1.0, 1.0, -1.0, -1.0, -1.0, -1.0, -1.0], &[1, 2, 5]);
    let preds = arr(vec![0.0; 3 * 2], &[1, 3, 2]);
    let y = run_checked(DEFS, "_contrib_MultiBoxTarget", &[&anchors, &label, &preds], &[]);
    assert_eq!(y[2].to_vec::<f32>().unwrap(), [0.0, 3.0]);
    assert_eq!(y[1].to_vec::<f32>().unwrap(), [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]);
    assert!(y[0].to_vec::<f32>().unwrap().iter().all(|v| v.abs() < 1e-6));
}

#[test]
fn detection_suppresses_the_weaker_of_two_overlapping_boxes() {
    let anchors = arr(vec![0.1, 0.1, 0.5, 0.5, 0.12, 0.1, 0.52, 0.5, 0.6, 0.6, 0.9, 0.9], &[1, 3, 4]);
    // classes (background, a): scores 0.9, 0.8, 0.7 for class a
    let probs = arr(vec![0.1, 0.2, 0.3, 0.9, 0.8, 0.7], &[1, 2, 3]);
    let locs = arr(vec![0.0; 12], &[1, 12]);
    let y = run_checked(DEFS, "_contrib_MultiBoxDetection", &[&probs, &locs, &anchors], &[]);
    let v = y[0].to_vec::<f32>().unwrap();
    assert_eq!(&v[..2], &[0.0, 0.9]);
    assert_eq!(v[6], -1.0, "the second box overlaps the first: suppressed");
    assert_eq!(&v[12..14], &[0.0, 0.7]);
}
