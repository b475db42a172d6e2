//! `Embedding`: rows of a weight table at integer indices.

use super::DEFS;
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{push_call, OpCall};
use crate::ops::{check_ctx, take_grad, IndexMode};
use crate::shape::Shape;

/// The shape of `Embedding`'s result: `data.shape + (output_dim,)`.
pub(super) fn embedding_dims(data: &Shape, weight: &Shape) -> Result<Vec<usize>> {
    if weight.ndim() != 2 {
        return Err(Error::shape("Embedding", &[data, weight], "weight must be 2-d"));
    }
    let mut d = data.dims().to_vec();
    d.push(weight.dims()[1]);
    Ok(d)
}

/// Embedding lookup: rows of `weight` (input_dim, output_dim) at integer
/// `data` (out-of-range indices clip, as MXNet's `take` does).
pub fn embedding(data: &NDArray, weight: &NDArray) -> Result<NDArray> {
    check_ctx("Embedding", data, weight)?;
    let d = embedding_dims(data.shape(), weight.shape())?;
    if weight.dims()[0] == 0 && data.size() > 0 {
        return Err(Error::index("Embedding", format!("cannot take from an empty weight of shape {}", weight.shape())));
    }
    let out = NDArray::empty(Shape::new(&d), weight.dtype(), weight.ctx())?;
    if out.size() > 0 {
        push_call(OpCall::new(&DEFS[9], &[data, weight], &[&out]))?;
    }
    if needs_record(&[weight]) {
        let (dc, wc) = (data.clone(), weight.clone());
        record(
            "Embedding",
            &[data, weight],
            &[&out],
            Box::new(move |g| Ok(vec![None, Some(take_grad(&g[0], &dc, &wc, 0, IndexMode::Clip)?)])),
        );
    }
    Ok(out)
}
