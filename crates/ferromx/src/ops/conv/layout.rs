//! Data layouts of the spatial operators (convolution, pooling): which axis
//! holds the channels, and the permutations to and from channel-first.

use crate::error::{Error, Result};

const FIRST: [&str; 3] = ["NCW", "NCHW", "NCDHW"];
const LAST: [&str; 3] = ["NWC", "NHWC", "NDHWC"];

/// Whether `layout` (default: channel-first) puts the channels last for
/// `ndim`-d data; an unknown layout, one `op` does not take (`allowed`), or
/// one of another rank is an error naming the operator.
pub(crate) fn channel_last(op: &str, layout: Option<&str>, ndim: usize, allowed: &[&str]) -> Result<bool> {
    let Some(l) = layout else { return Ok(false) };
    if !allowed.contains(&l) {
        return Err(Error::value(op, format!("unknown layout '{l}' (expected one of {})", allowed.join(", "))));
    }
    if !(3..=5).contains(&ndim) || (FIRST[ndim - 3] != l && LAST[ndim - 3] != l) {
        return Err(Error::value(op, format!("layout '{l}' is for {}-d data, got {ndim}-d data", l.len())));
    }
    Ok(LAST.contains(&l))
}

/// Axes taking channel-last data to channel-first: `(0, nd-1, 1, .., nd-2)`.
pub(crate) fn to_cf_perm(nd: usize) -> Vec<usize> {
    let mut p = vec![0, nd - 1];
    p.extend(1..nd - 1);
    p
}

/// Axes taking channel-first data to channel-last: `(0, 2, .., nd-1, 1)`.
pub(crate) fn to_cl_perm(nd: usize) -> Vec<usize> {
    let mut p = vec![0];
    p.extend(2..nd);
    p.push(1);
    p
}
