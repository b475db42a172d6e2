//! Safe wrapper over the `gemm` crate's raw-pointer matrix multiply.
//!
//! Lives in the storage module because it is `unsafe` glue: it checks every
//! slice length against the matrix dimensions before handing pointers over,
//! so callers stay in safe code.

use gemm::Parallelism;

/// Element types `gemm` multiplies natively.
pub trait GemmElem: Copy + Send + Sync + 'static {
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
}
impl GemmElem for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
}
impl GemmElem for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
}
impl GemmElem for half::f16 {
    const ZERO: Self = half::f16::ZERO;
    const ONE: Self = half::f16::ONE;
}

/// `dst (m×n, row-major) = [dst +] op(lhs) · op(rhs)` where `op(lhs)` is m×k
/// (`lhs` stored k×m when `ta`) and `op(rhs)` is k×n (`rhs` stored n×k when `tb`).
#[allow(clippy::too_many_arguments)]
pub fn matmul<T: GemmElem>(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [T],
    lhs: &[T],
    ta: bool,
    rhs: &[T],
    tb: bool,
    accumulate: bool,
) {
    let par = m * n * k >= 1 << 18;
    matmul_with(m, n, k, dst, lhs, ta, rhs, tb, accumulate, par)
}

/// [`matmul`] on the calling thread only (for kernels that already split
/// their work across cores, one gemm per piece).
#[allow(clippy::too_many_arguments)]
pub fn matmul_seq<T: GemmElem>(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [T],
    lhs: &[T],
    ta: bool,
    rhs: &[T],
    tb: bool,
    accumulate: bool,
) {
    matmul_with(m, n, k, dst, lhs, ta, rhs, tb, accumulate, false)
}

#[allow(clippy::too_many_arguments)]
fn matmul_with<T: GemmElem>(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [T],
    lhs: &[T],
    ta: bool,
    rhs: &[T],
    tb: bool,
    accumulate: bool,
    parallel: bool,
) {
    assert!(dst.len() >= m * n && lhs.len() >= m * k && rhs.len() >= k * n, "matmul: slice too small");
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            dst[..m * n].fill(T::ZERO);
        }
        return;
    }
    let (lcs, lrs) = if ta { (m as isize, 1) } else { (1, k as isize) };
    let (rcs, rrs) = if tb { (k as isize, 1) } else { (1, n as isize) };
    let threads = if parallel { rayon::current_num_threads().max(1) } else { 1 };
    let call = GemmCall {
        n,
        k,
        dst: SendPtr(dst.as_mut_ptr()),
        lhs: SendPtr(lhs.as_ptr() as *mut T),
        rhs: SendPtr(rhs.as_ptr() as *mut T),
        lcs,
        lrs,
        rcs,
        rrs,
        accumulate,
    };
    // The crate's own rayon split scales poorly on two cores (about 1.5× one
    // core where OpenBLAS gets 2×), so a large product is cut into one
    // single-threaded gemm per thread, along the longer of m and n.
    if threads > 1 && m.max(n) >= 2 * SPLIT_MIN {
        let along_m = m >= n;
        let len = if along_m { m } else { n };
        let parts = threads.min(len / SPLIT_MIN).max(1);
        let chunk = len.div_ceil(parts);
        rayon::scope(|sc| {
            for p in 0..parts {
                let (start, end) = (p * chunk, ((p + 1) * chunk).min(len));
                if start >= end {
                    continue;
                }
                let c = &call;
                // SAFETY: the pieces cover disjoint rows (or columns) of `dst`,
                // all inside the m×n matrix checked above; `lhs`/`rhs` are only read.
                sc.spawn(move |_| unsafe { c.run(along_m, start, end, m) });
            }
        });
    } else {
        // SAFETY: the whole product, on this thread; slices were checked above.
        unsafe { call.run(true, 0, m, m) }
    }
}

/// Rows (or columns) below which a product is not split across threads.
const SPLIT_MIN: usize = 64;

/// A raw pointer that may cross into the rayon scope: each piece of a split
/// product writes a disjoint part of `dst` and only reads the operands.
#[derive(Clone, Copy)]
struct SendPtr<T>(*mut T);
// SAFETY: see the type's doc; the scope joins every piece before the borrow ends.
unsafe impl<T> Send for SendPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SendPtr<T> {}

/// One checked product, runnable piece by piece.
struct GemmCall<T> {
    n: usize,
    k: usize,
    dst: SendPtr<T>,
    lhs: SendPtr<T>,
    rhs: SendPtr<T>,
    lcs: isize,
    lrs: isize,
    rcs: isize,
    rrs: isize,
    accumulate: bool,
}

impl<T: GemmElem> GemmCall<T> {
    /// Computes rows `start..end` of `dst` (`along_m`) or columns `start..end`,
    /// single-threaded.
    ///
    /// # Safety
    /// The pointers and strides describe the m×k, k×n and m×n matrices that
    /// `matmul_with` checked, and no other thread writes this part of `dst`.
    unsafe fn run(&self, along_m: bool, start: usize, end: usize, m: usize) {
        let (rows, cols) = if along_m { (end - start, self.n) } else { (m, end - start) };
        let (doff, loff, roff) = if along_m {
            (start as isize * self.n as isize, start as isize * self.lrs, 0)
        } else {
            (start as isize, 0, start as isize * self.rcs)
        };
        // SAFETY: the offsets move to the first row/column of this piece,
        // which lies inside the checked matrices (function contract).
        unsafe {
            gemm::gemm(
                rows,
                cols,
                self.k,
                self.dst.0.offset(doff),
                1,
                self.n as isize,
                self.accumulate,
                self.lhs.0.offset(loff),
                self.lcs,
                self.lrs,
                self.rhs.0.offset(roff),
                self.rcs,
                self.rrs,
                T::ONE,
                T::ONE,
                false,
                false,
                false,
                Parallelism::None,
            )
        }
    }
}
