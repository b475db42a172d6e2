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
    let par = if parallel { Parallelism::Rayon(rayon::current_num_threads().max(1)) } else { Parallelism::None };
    // SAFETY: all three slices were checked to hold the m×k, k×n and m×n
    // matrices addressed by these strides; `dst` is uniquely borrowed.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            accumulate,
            lhs.as_ptr(),
            lcs,
            lrs,
            rhs.as_ptr(),
            rcs,
            rrs,
            T::ONE,
            T::ONE,
            false,
            false,
            false,
            par,
        )
    }
}
