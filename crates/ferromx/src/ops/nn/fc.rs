//! FullyConnected: `out = data · weightᵀ + bias`, one fused kernel (gemm + bias)
//! (frontend: checks, push, gradient; the kernel in `cpu.rs`).

use super::DEFS;
use crate::autograd::{needs_record, record};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{push_call, OpCall};
use crate::ops::{self, check_ctx, ReduceOp};
use crate::shape::Shape;

/// MXNet `FullyConnected`. With `flatten`, data is (N, ...) flattened to (N, in);
/// without, the last axis is the input axis.
pub fn fully_connected(
    data: &NDArray,
    weight: &NDArray,
    bias: Option<&NDArray>,
    num_hidden: usize,
    flatten: bool,
) -> Result<NDArray> {
    let name = "FullyConnected";
    check_ctx(name, data, weight)?;
    if data.ndim() == 0 {
        return Err(Error::shape(name, &[data.shape()], "data must have at least one dimension"));
    }
    let (rows, inp) = if flatten {
        (data.dims()[0], data.dims()[1..].iter().product::<usize>())
    } else {
        (data.dims()[..data.ndim() - 1].iter().product::<usize>(), data.dims()[data.ndim() - 1])
    };
    if weight.dims() != [num_hidden, inp] {
        return Err(Error::shape(
            name,
            &[data.shape(), weight.shape()],
            format!("weight must be ({num_hidden}, {inp})"),
        ));
    }
    if let Some(b) = bias {
        if b.dims() != [num_hidden] {
            return Err(Error::shape(name, &[weight.shape(), b.shape()], format!("bias must be ({num_hidden},)")));
        }
    }
    let dt = data.dtype();
    if weight.dtype() != dt || bias.is_some_and(|b| b.dtype() != dt) {
        return Err(Error::dtype(name, "data, weight and bias must have the same dtype"));
    }
    if !matches!(dt, DType::F32 | DType::F64) {
        return Err(Error::dtype(name, format!("FullyConnected supports float32 and float64, got {dt}")));
    }
    let od: Vec<usize> = if flatten {
        vec![data.dims()[0], num_hidden]
    } else {
        let mut d = data.dims()[..data.ndim() - 1].to_vec();
        d.push(num_hidden);
        d
    };
    let out = NDArray::empty(Shape::new(&od), dt, data.ctx())?;
    let mut inputs = vec![data, weight];
    if let Some(b) = bias {
        inputs.push(b);
    }
    let has_bias = bias.is_some();
    if out.size() > 0 {
        let ints = [rows as i64, num_hidden as i64, inp as i64, has_bias as i64];
        push_call(OpCall::new(&DEFS[0], &inputs, &[&out]).with_ints(&ints))?;
    }
    if needs_record(&inputs) {
        // Only the gradients something will read are computed: the first
        // layer's data gradient is a whole gemm that a training step discards.
        let (need_dx, need_dw) = (data.has_entry(), weight.has_entry());
        let need_db = bias.is_some_and(|b| b.has_entry());
        let (x, w) = (data.clone(), weight.clone());
        record(
            name,
            &inputs,
            &[&out],
            Box::new(move |g| {
                // Recorded reshapes (views when nothing records): with
                // `create_graph` the gradient is itself differentiable in the
                // head gradient, the data and the weight.
                let g2 = ops::reshape_to(&g[0], Shape::new(&[rows, num_hidden]))?;
                // Weight and bias gradients are pushed before the data gradient:
                // a data-parallel trainer can start reducing them while the data
                // gradient (and the layers below) still run.
                let dw = if need_dw {
                    Some(ops::dot(&g2, &ops::reshape_to(&x, Shape::new(&[rows, inp]))?, true, false)?)
                } else {
                    None
                };
                let db = if has_bias && need_db {
                    Some(ops::reduce(ReduceOp::Sum, &g2, Some(&[0]), false, false)?)
                } else {
                    None
                };
                let dx = if need_dx {
                    Some(ops::reshape_to(&ops::dot(&g2, &w, false, false)?, x.shape().clone())?)
                } else {
                    None
                };
                let mut r = vec![dx, dw];
                if has_bias {
                    r.push(db);
                }
                Ok(r)
            }),
        );
    }
    Ok(out)
}
