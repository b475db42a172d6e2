//! NumPy-style indexing through the Rust API (`NDArray::index` / `index_assign`).

use ferromx::ops::Idx;
use ferromx::{Context, NDArray};

fn arange(shape: &[usize]) -> NDArray {
    let n: usize = shape.iter().product();
    NDArray::from_vec((0..n).map(|v| v as f32).collect::<Vec<_>>(), shape.to_vec(), Context::cpu(0)).unwrap()
}

fn ids(v: &[i64]) -> NDArray {
    NDArray::from_vec(v.to_vec(), [v.len()], Context::cpu(0)).unwrap()
}

fn sl(start: Option<i64>, stop: Option<i64>, step: Option<i64>) -> Idx {
    Idx::Slice { start, stop, step }
}

#[test]
fn basic_indexing_matches_numpy() {
    let x = arange(&[3, 4, 5]);
    // x[1] -> (4, 5), values 20..40
    let a = x.index(&[Idx::Int(1)]).unwrap();
    assert_eq!(a.dims(), [4, 5]);
    assert_eq!(a.to_vec::<f32>().unwrap(), (20..40).map(|v| v as f32).collect::<Vec<_>>());
    // x[-1, 1:3, ::2] -> (2, 3)
    let b = x.index(&[Idx::Int(-1), Idx::range(1, 3), sl(None, None, Some(2))]).unwrap();
    assert_eq!(b.dims(), [2, 3]);
    assert_eq!(b.to_vec::<f32>().unwrap(), vec![45., 47., 49., 50., 52., 54.]);
    // x[..., ::-2] -> (3, 4, 3), last axis 4, 2, 0
    let c = x.index(&[Idx::Ellipsis, sl(None, None, Some(-2))]).unwrap();
    assert_eq!(c.dims(), [3, 4, 3]);
    assert_eq!(&c.to_vec::<f32>().unwrap()[..3], &[4., 2., 0.]);
    // x[None, 0, :, 4] -> (1, 4)
    let d = x.index(&[Idx::NewAxis, Idx::Int(0), Idx::full(), Idx::Int(4)]).unwrap();
    assert_eq!(d.dims(), [1, 4]);
    assert_eq!(d.to_vec::<f32>().unwrap(), vec![4., 9., 14., 19.]);
    // reversed slice through index 0: x[0, 0, 3::-1]
    let e = x.index(&[Idx::Int(0), Idx::Int(0), sl(Some(3), None, Some(-1))]).unwrap();
    assert_eq!(e.to_vec::<f32>().unwrap(), vec![3., 2., 1., 0.]);
}

#[test]
fn bad_basic_indices_are_clear_errors() {
    let x = arange(&[2, 3]);
    let e = x.index(&[Idx::Int(5)]).unwrap_err().to_string();
    assert!(e.contains("out of bounds") && e.contains("(2, 3)"), "{e}");
    assert!(x.index(&[Idx::Int(0), Idx::Int(0), Idx::Int(0)]).is_err());
    assert!(x.index(&[sl(None, None, Some(0))]).is_err());
    assert!(x.index(&[Idx::Ellipsis, Idx::Ellipsis]).is_err());
}

#[test]
fn integer_array_and_mask_indexing() {
    let x = arange(&[4, 3]);
    // x[[3, 0, -1]] -> rows 3, 0, 3
    let a = x.index(&[Idx::Array(ids(&[3, 0, -1]))]).unwrap();
    assert_eq!(a.dims(), [3, 3]);
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![9., 10., 11., 0., 1., 2., 9., 10., 11.]);
    // x[:, [2, 0]] -> (4, 2)
    let b = x.index(&[Idx::full(), Idx::Array(ids(&[2, 0]))]).unwrap();
    assert_eq!(b.dims(), [4, 2]);
    assert_eq!(&b.to_vec::<f32>().unwrap()[..4], &[2., 0., 5., 3.]);
    // boolean mask over both axes: x[x > 7]
    let m = ferromx::ops::scalar(ferromx::ops::BinOp::Gt, &x, 7.0).unwrap();
    let c = x.index(&[Idx::Mask(m)]).unwrap();
    assert_eq!(c.dims(), [4]);
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![8., 9., 10., 11.]);
    // out-of-range integer array: fails at the next read, not at the call
    let bad = x.index(&[Idx::Array(ids(&[0, 9]))]).unwrap();
    let err = bad.wait_to_read().unwrap_err().to_string();
    assert!(err.contains("out of bounds"), "{err}");
}

#[test]
fn assignment_forms() {
    let x = arange(&[3, 4]);
    // basic with broadcast: x[1, :] = 100
    let hundred = NDArray::from_vec(vec![100f32], [1], Context::cpu(0)).unwrap();
    x.index_assign(&[Idx::Int(1)], &hundred).unwrap();
    // x[:, ::-2] = [[-1, -2]] (written to columns 3 and 1)
    let v = NDArray::from_vec(vec![-1f32, -2.], [1, 2], Context::cpu(0)).unwrap();
    x.index_assign(&[Idx::full(), sl(None, None, Some(-2))], &v).unwrap();
    // integer array rows: x[[2]] = 7
    let seven = NDArray::from_vec(vec![7f32], [1], Context::cpu(0)).unwrap();
    x.index_assign(&[Idx::Array(ids(&[2]))], &seven).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![0., -2., 2., -1., 100., -2., 100., -1., 7., 7., 7., 7.]);
    // mask assignment: x[x == 100] = 0
    let m = ferromx::ops::scalar(ferromx::ops::BinOp::Eq, &x, 100.0).unwrap();
    let zero = NDArray::from_vec(vec![0f32], [1], Context::cpu(0)).unwrap();
    x.index_assign(&[Idx::Mask(m)], &zero).unwrap();
    assert_eq!(&x.to_vec::<f32>().unwrap()[4..8], &[0., -2., 0., -1.]);
    // a value that does not broadcast is a clear error
    let wrong = arange(&[5]);
    assert!(x.index_assign(&[Idx::Int(0)], &wrong).is_err());
}
