use crate::opdef::{invoke, Attr, Attrs};
use crate::{Context, DType, NDArray};

fn arr(v: &[f32], shape: &[usize]) -> NDArray {
    NDArray::from_vec(v.to_vec(), shape, Context::default()).unwrap()
}

fn attrs(kv: &[(&str, Attr)]) -> Attrs {
    Attrs(kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())
}

#[test]
fn indices_name_the_right_definitions() {
    assert_eq!(super::DEFS[super::BACKWARD_QUADRATIC].name, "_contrib_backward_quadratic");
    assert_eq!(super::DEFS[super::BACKWARD_INDEX_COPY].name, "_contrib_backward_index_copy");
    assert_eq!(super::DEFS[super::BACKWARD_GRADMULT].name, "_contrib_backward_gradientmultiplier");
}

#[test]
fn quadratic_values() {
    let x = arr(&[-1.0, 0.0, 2.0], &[3]);
    let a = attrs(&[("a", Attr::Float(2.0)), ("b", Attr::Float(-1.0)), ("c", Attr::Float(0.5))]);
    let y = invoke("_contrib_quadratic", &[Some(x)], &a).unwrap().remove(0);
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![3.5, 0.5, 6.5]);
}

#[test]
fn index_copy_replaces_rows_and_checks_the_range() {
    let old = arr(&[0.0; 6], &[3, 2]);
    let idx = NDArray::from_vec(vec![2i64, 0], &[2usize][..], Context::default()).unwrap();
    let new = arr(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let y = invoke("_contrib_index_copy", &[Some(old.clone()), Some(idx), Some(new.clone())], &Attrs::default())
        .unwrap()
        .remove(0);
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![3.0, 4.0, 0.0, 0.0, 1.0, 2.0]);
    let bad = NDArray::from_vec(vec![3i64, 0], &[2usize][..], Context::default()).unwrap();
    let y = invoke("_contrib_index_copy", &[Some(old), Some(bad), Some(new)], &Attrs::default()).unwrap().remove(0);
    let err = y.to_vec::<f32>().unwrap_err().to_string();
    assert!(err.contains("_contrib_index_copy") && err.contains("out of range"), "{err}");
}

#[test]
fn index_array_gives_coordinates() {
    let x = arr(&[0.0; 6], &[2, 3]);
    let y = invoke("_contrib_index_array", &[Some(x)], &attrs(&[("axes", Attr::Ints(vec![1]))])).unwrap().remove(0);
    assert_eq!(y.dtype(), DType::I64);
    assert_eq!(y.dims(), &[2, 3, 1]);
    assert_eq!(y.to_vec::<i64>().unwrap(), vec![0, 1, 2, 0, 1, 2]);
}
