//! Shapes, strides and broadcasting.

use crate::error::{Error, Result};
use smallvec::SmallVec;
use std::fmt;

/// Dimensions of an array (row-major). Rank 0 is a scalar.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Shape(pub SmallVec<[usize; 6]>);

impl Shape {
    /// From a slice of dims.
    pub fn new(dims: &[usize]) -> Self {
        Shape(SmallVec::from_slice(dims))
    }
    /// Rank-0 shape.
    pub fn scalar() -> Self {
        Shape(SmallVec::new())
    }
    /// Dims.
    pub fn dims(&self) -> &[usize] {
        &self.0
    }
    /// Rank.
    pub fn ndim(&self) -> usize {
        self.0.len()
    }
    /// Number of elements. Saturates at `usize::MAX` for shapes too large
    /// to exist, so such a shape never matches a real array's size and is
    /// refused when memory is allocated for it.
    pub fn size(&self) -> usize {
        if self.0.contains(&0) {
            return 0;
        }
        self.0.iter().fold(1usize, |acc, &d| acc.saturating_mul(d))
    }
    /// Row-major strides in elements.
    pub fn strides(&self) -> SmallVec<[usize; 6]> {
        let mut s: SmallVec<[usize; 6]> = SmallVec::from_elem(1, self.0.len());
        for i in (0..self.0.len().saturating_sub(1)).rev() {
            s[i] = s[i + 1] * self.0[i + 1];
        }
        s
    }
    /// `(outer, n, inner)`: the sizes before `ax`, along it, and after it, the layout a
    /// kernel working along one axis of a C-order array walks.
    pub fn around(&self, ax: usize) -> (usize, usize, usize) {
        let d = self.dims();
        (d[..ax].iter().product(), d[ax], d[ax + 1..].iter().product())
    }
    /// Normalises a possibly negative axis.
    pub fn axis(&self, op: &str, axis: i64) -> Result<usize> {
        norm_axis(op, axis, self.ndim())
    }
    /// NumPy broadcasting of two shapes.
    pub fn broadcast(op: &str, a: &Shape, b: &Shape) -> Result<Shape> {
        let n = a.ndim().max(b.ndim());
        let mut out: SmallVec<[usize; 6]> = SmallVec::from_elem(0, n);
        for i in 0..n {
            let da = if i + a.ndim() >= n { a.0[i + a.ndim() - n] } else { 1 };
            let db = if i + b.ndim() >= n { b.0[i + b.ndim() - n] } else { 1 };
            out[i] = if da == db {
                da
            } else if da == 1 {
                db
            } else if db == 1 {
                da
            } else {
                return Err(Error::shape(op, &[a, b], "operands could not be broadcast together"));
            };
        }
        Ok(Shape(out))
    }
    /// Strides for reading an array of this shape as if broadcast to `out`
    /// (0 on broadcast dims), with rank `out.ndim()`.
    pub fn broadcast_strides(&self, out: &Shape) -> SmallVec<[usize; 6]> {
        let n = out.ndim();
        let own = self.strides();
        let mut s: SmallVec<[usize; 6]> = SmallVec::from_elem(0, n);
        for i in 0..self.ndim() {
            let oi = i + n - self.ndim();
            s[oi] = if self.0[i] == 1 && out.0[oi] != 1 { 0 } else { own[i] };
        }
        s
    }
}

/// Normalises a possibly negative axis against a rank.
pub fn norm_axis(op: &str, axis: i64, ndim: usize) -> Result<usize> {
    let n = ndim as i64;
    if axis < -n || axis >= n {
        return Err(Error::Axis { op: op.into(), axis, ndim });
    }
    Ok(if axis < 0 { (axis + n) as usize } else { axis as usize })
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{d}")?;
        }
        if self.0.len() == 1 {
            write!(f, ",")?;
        }
        write!(f, ")")
    }
}

impl fmt::Debug for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl From<&[usize]> for Shape {
    fn from(d: &[usize]) -> Self {
        Shape::new(d)
    }
}
impl<const N: usize> From<[usize; N]> for Shape {
    fn from(d: [usize; N]) -> Self {
        Shape::new(&d)
    }
}
impl From<Vec<usize>> for Shape {
    fn from(d: Vec<usize>) -> Self {
        Shape::new(&d)
    }
}

/// Writes `src` broadcast to `out` into `dst`: `strides` are the source's
/// [`Shape::broadcast_strides`] to `out`; a same-size source is copied, a
/// one-element source fills.
pub fn broadcast_copy<T: Copy>(out: &Shape, strides: &[usize], src: &[T], dst: &mut [T]) {
    if src.len() == dst.len() {
        dst.copy_from_slice(src);
    } else if src.len() == 1 {
        dst.fill(src[0]);
    } else {
        for_each_strided(out, strides, 0, dst.len(), |oi, si| dst[oi] = src[si]);
    }
}

/// Iterates the flat indices into a strided source for every element of `out`
/// in row-major order, calling `f(out_index, src_index)`. The innermost
/// dimension is a tight loop.
pub fn for_each_strided(out: &Shape, strides: &[usize], start: usize, end: usize, mut f: impl FnMut(usize, usize)) {
    let n = out.ndim();
    if n == 0 {
        if start < end {
            f(0, 0);
        }
        return;
    }
    let dims = out.dims();
    let inner = dims[n - 1];
    if inner == 0 {
        return;
    }
    let inner_stride = strides[n - 1];
    // multi-index of `start`
    let mut idx: SmallVec<[usize; 6]> = SmallVec::from_elem(0, n);
    let mut rem = start;
    for d in (0..n).rev() {
        idx[d] = rem % dims[d];
        rem /= dims[d];
    }
    let mut src: usize = idx.iter().zip(strides).map(|(i, s)| i * s).sum();
    let mut o = start;
    while o < end {
        let run = (inner - idx[n - 1]).min(end - o);
        let mut s = src;
        for k in 0..run {
            f(o + k, s);
            s += inner_stride;
        }
        o += run;
        // advance the multi-index by `run`
        src += run * inner_stride;
        idx[n - 1] += run;
        let mut d = n - 1;
        while idx[d] == dims[d] && d > 0 {
            src -= dims[d] * strides[d];
            idx[d] = 0;
            d -= 1;
            idx[d] += 1;
            src += strides[d];
        }
    }
}
