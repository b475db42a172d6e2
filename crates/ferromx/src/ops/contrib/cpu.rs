//! CPU kernels of the small contrib operators.
//!
//! Layouts: `quadratic` and its backward read `nums` `[a, b, c]`; `gradientmultiplier`'s
//! backward (`scale`) reads `nums` `[scalar]`; `index_array` reads its axes from `ints`.

use crate::dtype::Elem;
use crate::engine::{ErrorKind, OpFailure};
use crate::opdef::OpCall;
use crate::storage::Kernel;
use crate::with_dtype;

type KResult = Result<(), OpFailure>;

fn nums<const N: usize>(c: &OpCall) -> Result<[f64; N], OpFailure> {
    c.nums
        .get(..N)
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| OpFailure::new(ErrorKind::Runtime, format!("{}: missing numeric parameters", c.def.name)))
}

/// `a·x² + b·x + c`, computed in f64 and rounded once to the dtype.
pub(super) fn quadratic(c: &OpCall, k: &Kernel) -> KResult {
    let [a, b, cc] = nums::<3>(c)?;
    with_dtype!(k.in_dtype(0), T, {
        let (x, o) = (k.input::<T>(0), k.output::<T>(0));
        for (o, &x) in o.iter_mut().zip(x) {
            let v = x.to_f64();
            *o = T::from_f64(a * v * v + b * v + cc);
        }
    });
    Ok(())
}

/// `out_grad · (2·a·x + b)`.
pub(super) fn backward_quadratic(c: &OpCall, k: &Kernel) -> KResult {
    let [a, b, _] = nums::<3>(c)?;
    with_dtype!(k.in_dtype(0), T, {
        let (g, x, o) = (k.input::<T>(0), k.input::<T>(1), k.output::<T>(0));
        for ((o, &g), &x) in o.iter_mut().zip(g).zip(x) {
            *o = T::from_f64(g.to_f64() * (2.0 * a * x.to_f64() + b));
        }
    });
    Ok(())
}

/// `x · scalar`.
pub(super) fn scale(c: &OpCall, k: &Kernel) -> KResult {
    let [s] = nums::<1>(c)?;
    with_dtype!(k.in_dtype(0), T, {
        let (x, o) = (k.input::<T>(0), k.output::<T>(0));
        for (o, &x) in o.iter_mut().zip(x) {
            *o = T::from_f64(x.to_f64() * s);
        }
    });
    Ok(())
}

/// Input `i`'s indices as rows of a tensor with `rows` rows (truncated like MXNet's
/// cast; out of range is an error naming the operator).
fn row_indices(c: &OpCall, k: &Kernel, i: usize, rows: usize) -> Result<Vec<usize>, OpFailure> {
    let raw: Vec<f64> = with_dtype!(k.in_dtype(i), T, k.input::<T>(i).iter().map(|v| v.to_f64()).collect());
    raw.iter()
        .map(|&v| {
            let r = v.trunc();
            if r >= 0.0 && r < rows as f64 {
                Ok(r as usize)
            } else {
                Err(OpFailure::new(
                    ErrorKind::Index,
                    format!("{}: index {v} is out of range for {rows} rows", c.def.name),
                ))
            }
        })
        .collect()
}

/// `old` with rows `index[j]` replaced by `new[j]`, in order.
pub(super) fn index_copy(c: &OpCall, k: &Kernel) -> KResult {
    let rows = k.in_shape(0).dims()[0];
    let idx = row_indices(c, k, 1, rows)?;
    let width = k.in_shape(0).size() / rows.max(1);
    with_dtype!(k.in_dtype(0), T, {
        let (old, new, o) = (k.input::<T>(0), k.input::<T>(2), k.output::<T>(0));
        o.copy_from_slice(old);
        for (j, &r) in idx.iter().enumerate() {
            o[r * width..(r + 1) * width].copy_from_slice(&new[j * width..(j + 1) * width]);
        }
    });
    Ok(())
}

/// Outputs: `out_grad` with the copied rows zeroed, and `out_grad`'s rows at `index`.
pub(super) fn backward_index_copy(c: &OpCall, k: &Kernel) -> KResult {
    let rows = k.in_shape(0).dims()[0];
    let idx = row_indices(c, k, 1, rows)?;
    let width = k.in_shape(0).size() / rows.max(1);
    with_dtype!(k.in_dtype(0), T, {
        let g = k.input::<T>(0);
        let (og, ng) = (k.output::<T>(0), k.output::<T>(1));
        og.copy_from_slice(g);
        for (j, &r) in idx.iter().enumerate() {
            ng[j * width..(j + 1) * width].copy_from_slice(&g[r * width..(r + 1) * width]);
            og[r * width..(r + 1) * width].fill(T::default());
        }
    });
    Ok(())
}

/// Per element of the input, its coordinate on each axis of `ints`.
pub(super) fn index_array(c: &OpCall, k: &Kernel) -> KResult {
    let dims = k.in_shape(0).dims().to_vec();
    let axes: Vec<usize> = c.ints.iter().map(|&a| a as usize).collect();
    let o = k.output::<i64>(0);
    let mut coord = vec![0usize; dims.len()];
    for row in o.chunks_mut(axes.len().max(1)) {
        for (v, &a) in row.iter_mut().zip(&axes) {
            *v = coord[a] as i64;
        }
        for d in (0..dims.len()).rev() {
            coord[d] += 1;
            if coord[d] < dims[d] {
                break;
            }
            coord[d] = 0;
        }
    }
    Ok(())
}
