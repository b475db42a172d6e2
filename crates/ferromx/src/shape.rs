//! Shapes, strides and broadcasting.

use crate::error::{Error, Result};
use smallvec::SmallVec;
use std::fmt;

mod tile16;

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

/// Side of the square tiles [`transpose_rows`] moves: 16 rows of 16 elements touch 16
/// cache lines on each side, which stay in L1 while the tile is copied.
const TILE: usize = 16;

/// Output rows `first..first + dst.len() / rows` of a batched 2-d transpose: `src` holds
/// planes of `rows × cols` elements, the output planes of `cols × rows` (output row `g` is
/// column `g % cols` of plane `g / cols`), and `dst` is that range of output rows.
///
/// Why tiles: an element-by-element gather reads `src` with a stride of `cols` elements,
/// one new cache line (and, for strides of a power of two, one already-crowded cache set)
/// per element; a 512 × 512 float transpose ran at 2 GB/s that way. Square tiles read and
/// write whole lines.
pub fn transpose_rows<T: Copy + 'static>(src: &[T], rows: usize, cols: usize, first: usize, dst: &mut [T]) {
    if rows == 0 || cols == 0 {
        return;
    }
    if let (Some(s), Some(d)) = (crate::storage::as_f32s(src), crate::storage::as_f32s_mut(dst)) {
        if tile16::transpose_rows_f32(s, rows, cols, first, d) {
            return;
        }
    }
    let nrows = dst.len() / rows;
    let mut q = 0;
    while q < nrows {
        let g = first + q;
        let (plane, c0) = (g / cols, g % cols);
        let span = (cols - c0).min(nrows - q);
        let src = &src[plane * rows * cols..(plane + 1) * rows * cols];
        for cb in (c0..c0 + span).step_by(TILE) {
            let ce = (cb + TILE).min(c0 + span);
            for rb in (0..rows).step_by(TILE) {
                let re = (rb + TILE).min(rows);
                for c in cb..ce {
                    let out = &mut dst[(q + c - c0) * rows..(q + c - c0 + 1) * rows];
                    for r in rb..re {
                        out[r] = src[r * cols + c];
                    }
                }
            }
        }
        q += span;
    }
}

/// A permutation that swaps two adjacent groups of trailing axes, as
/// `(batch, rows, cols)` with output `(batch, cols, rows)`: `.T` of a matrix,
/// `swapaxes` of the last two axes, NCHW → NHWC (`(0, 2, 3, 1)`) and back. `None` for
/// any other permutation.
pub fn as_plane_transpose(dims: &[usize], perm: &[usize]) -> Option<(usize, usize, usize)> {
    let n = perm.len();
    let a = perm.iter().enumerate().take_while(|(i, p)| *i == **p).count();
    if a + 1 >= n {
        return None;
    }
    // perm[a..] must be b, b+1, .., n-1, a, a+1, .., b-1 for some a < b < n
    let b = perm[a];
    if b <= a {
        return None;
    }
    let expect = (b..n).chain(a..b);
    if !perm[a..].iter().copied().eq(expect) {
        return None;
    }
    let prod = |r: std::ops::Range<usize>| dims[r].iter().product::<usize>();
    Some((prod(0..a), prod(a..b), prod(b..n)))
}
