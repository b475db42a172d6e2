//! `Dropout`: inverted dropout in one kernel that also writes its mask.

use super::DEFS;
use crate::autograd::{is_training, needs_record, record};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{push_call, OpCall};
use crate::ops::{self, random};

/// Inverted dropout: active only in training mode (or `mode='always'`).
///
/// `p = 1` drops everything: zeros (MXNet 1.9.1 gives NaN, `0 * 1/(1-p)`).
/// The mask is recorded as the node's second output, so the gradient
/// `g * mask` stays connected to `x` under `create_graph` (its derivative in
/// `x` is zero, as in MXNet).
pub fn dropout(x: &NDArray, p: f64, always: bool) -> Result<NDArray> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::value("Dropout", format!("p must be in [0, 1], got {p}")));
    }
    if (!is_training() && !always) || p == 0.0 {
        return ops::copy(x);
    }
    if !x.dtype().is_float() {
        return Err(Error::dtype("Dropout", format!("dtype {} is not supported (use a float dtype)", x.dtype())));
    }
    let (out, mask) = (x.empty_like()?, x.empty_like()?);
    let seed = random::next_seed(x.ctx());
    if x.size() > 0 {
        push_call(OpCall::new(&DEFS[7], &[x], &[&out, &mask]).with_ints(&[seed as i64]).with_nums(&[p]))?;
    }
    if needs_record(&[x]) {
        let m = mask.clone();
        record("Dropout", &[x], &[&out, &mask], Box::new(move |g| Ok(vec![Some(ops::mul(&g[0], &m)?)])));
    }
    Ok(out)
}
