//! `_sample_unique_zipfian`: per row, distinct classes from the log-uniform
//! (approximately Zipfian) distribution over `[0, range_max)`, drawn with
//! rejection of repeats, and the number of draws each row took (MXNet's
//! candidate sampler for sampled softmax).

use super::{next_seed, Rng, DEFS};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{push_call, Attrs, Invocation, Meta, OpCall, OpDef};
use crate::shape::Shape;
use crate::storage::Kernel;
use std::collections::HashSet;

const NAME: &str = "_sample_unique_zipfian";

/// `(batch, num_sampled, range_max)` from the attributes, checked.
fn plan(i: &Invocation<'_>) -> Result<(usize, usize, i64)> {
    let range_max = i.i64("range_max")?;
    let s = i.shape("shape")?;
    if s.ndim() != 2 {
        return Err(Error::value(NAME, format!("shape must be (batch_size, num_sampled), got {:?}", s.dims())));
    }
    let (b, n) = (s.dims()[0], s.dims()[1]);
    if range_max <= 0 || n as i64 > range_max {
        return Err(Error::value(
            NAME,
            format!("need 0 < num_sampled <= range_max, got num_sampled={n}, range_max={range_max}"),
        ));
    }
    Ok((b, n, range_max))
}

/// The frontend: samples `(batch, num_sampled)` int64 classes and `(batch,)` tries.
pub(super) fn forward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let (b, n, range_max) = plan(i)?;
    let ctx = i.ctx("ctx")?;
    let out = NDArray::empty(Shape::new(&[b, n]), DType::I64, ctx)?;
    let tries = NDArray::empty(Shape::new(&[b]), DType::I64, ctx)?;
    let seed = next_seed(ctx);
    if out.size() > 0 {
        let def = DEFS.iter().find(|d| d.name == NAME).ok_or_else(|| Error::value(NAME, "not in the table"))?;
        push_call(OpCall::new(def, &[], &[&out, &tries]).with_ints(&[seed as i64, range_max]))?;
    }
    Ok(vec![out, tries])
}

pub(super) fn infer(def: &'static OpDef, a: &Attrs, _ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let (b, n, _) = plan(&i)?;
    let ctx = i.ctx("ctx")?;
    Ok(vec![
        Meta { shape: Shape::new(&[b, n]), dtype: DType::I64, ctx },
        Meta { shape: Shape::new(&[b]), dtype: DType::I64, ctx },
    ])
}

/// The kernel: ints `[seed, range_max]`; output 0 `(batch, n)` classes, output 1
/// `(batch,)` draws per row. A draw is `floor(exp(u · log(range_max + 1))) - 1`
/// with `u ~ U[0, 1)`, so `P(c) = log((c + 2) / (c + 1)) / log(range_max + 1)`.
pub(super) fn kernel(c: &OpCall, k: &Kernel) -> std::result::Result<(), ferromx_engine::OpFailure> {
    let (mut rng, range_max) = (Rng::new(c.ints[0] as u64), c.ints[1]);
    let log_range = ((range_max + 1) as f64).ln();
    let tries = k.output::<i64>(1);
    let n = k.out_shape(0).dims()[1];
    let out = k.output::<i64>(0);
    let mut seen = HashSet::with_capacity(n * 2);
    for (row, t) in out.chunks_mut(n.max(1)).zip(tries.iter_mut()) {
        seen.clear();
        let (mut filled, mut draws) = (0usize, 0i64);
        while filled < n {
            let v = ((rng.uniform() * log_range).exp().floor() as i64 - 1).clamp(0, range_max - 1);
            draws += 1;
            if seen.insert(v) {
                row[filled] = v;
                filled += 1;
            }
        }
        *t = draws;
    }
    Ok(())
}
