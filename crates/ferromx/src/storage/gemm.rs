//! Safe wrapper over the `gemm` crate's raw-pointer matrix multiply.
//!
//! Lives in the storage module because it is `unsafe` glue: it checks every
//! slice length against the matrix dimensions before handing pointers over,
//! so callers stay in safe code.

use gemm::Parallelism;

use std::cell::RefCell;

/// Element types `gemm` multiplies natively.
pub trait GemmElem: Copy + Send + Sync + 'static {
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// Calls `f` with this thread's scratch buffer of at least `len` elements (contents
    /// unspecified): a repacked operand reuses it instead of allocating per product.
    fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [Self]) -> R) -> R;
}

macro_rules! gemm_elem {
    ($t:ty, $zero:expr, $one:expr) => {
        impl GemmElem for $t {
            const ZERO: Self = $zero;
            const ONE: Self = $one;
            fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [Self]) -> R) -> R {
                thread_local!(static SCRATCH: RefCell<Vec<$t>> = const { RefCell::new(Vec::new()) });
                SCRATCH.with(|s| {
                    let mut s = s.borrow_mut();
                    if s.len() < len {
                        s.resize(len, $zero);
                    }
                    f(&mut s[..len])
                })
            }
        }
    };
}
gemm_elem!(f32, 0.0, 1.0);
gemm_elem!(f64, 0.0, 1.0);
gemm_elem!(half::f16, half::f16::ZERO, half::f16::ONE);

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
        repack_rhs: tb && badly_strided::<T>(k) && n >= 32,
    };
    // The crate's own rayon split scales poorly on two cores (about 1.5× one
    // core where OpenBLAS gets 2×), so a large product is cut into one
    // single-threaded gemm per thread, along the longer of m and n.
    if threads > 1 && m.max(n) >= 2 * SPLIT_MIN {
        let along_m = m >= n;
        let len = if along_m { m } else { n };
        let parts = threads.min(len / SPLIT_MIN).max(1);
        let chunk = len.div_ceil(parts);
        let c = &call;
        super::fanout::fanout(parts, threads - 1, &|p| {
            let (start, end) = (p * chunk, ((p + 1) * chunk).min(len));
            if start < end {
                // SAFETY: the pieces cover disjoint rows (or columns) of `dst`,
                // all inside the m×n matrix checked above; `lhs`/`rhs` are only read.
                unsafe { c.run(along_m, start, end, m) }
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
    /// Copy this piece's transposed `rhs` into a contiguous k × cols buffer first (see
    /// [`badly_strided`]).
    repack_rhs: bool,
}

/// Whether a transposed operand whose rows are `k` elements apart is better copied
/// untransposed before the product. The crate packs a transposed rhs by reading each
/// panel column across rows; when the row stride is a multiple of 2 KiB, every second
/// (or fourth) row of a panel falls into the same L1 cache set and the packing thrashes:
/// `(256 × 512) · (512 × 512)ᵀ` ran at 150 GFLOP/s against 200 for the untransposed
/// product. A tiled transpose of the piece costs a few percent of the product.
fn badly_strided<T>(k: usize) -> bool {
    repack_enabled() && k >= 64 && (k * std::mem::size_of::<T>()).is_multiple_of(2048)
}

/// `FERROMX_GEMM_REPACK=0` turns the repacking off (for measuring it).
fn repack_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("FERROMX_GEMM_REPACK").map_or(true, |v| v != "0"))
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
        if self.repack_rhs {
            // rhs is stored n × k (row j: column j of op(rhs)); this piece reads `cols`
            // of its rows from `roff`.
            // SAFETY: those rows of the n × k rhs lie inside the checked matrix
            // (function contract); the slice is only read.
            let src = unsafe { std::slice::from_raw_parts(self.rhs.0.offset(roff) as *const T, cols * self.k) };
            return T::with_scratch(self.k * cols, |packed| {
                crate::shape::transpose_rows(src, cols, self.k, 0, packed);
                // SAFETY: as below, with the rhs now the contiguous k × cols `packed`.
                unsafe { self.product(rows, cols, doff, loff, packed.as_ptr(), 1, cols as isize) }
            });
        }
        // SAFETY: the offsets move to the first row/column of this piece,
        // which lies inside the checked matrices (function contract).
        unsafe { self.product(rows, cols, doff, loff, self.rhs.0.offset(roff), self.rcs, self.rrs) }
    }

    /// One single-threaded product of `rows × cols` at `dst + doff`, `lhs + loff` and
    /// the rhs at `rhs` with strides `rcs`, `rrs`.
    ///
    /// # Safety
    /// As [`GemmCall::run`]: every pointer and stride describes a matrix inside
    /// memory the caller may read (or, for `dst`, write).
    #[allow(clippy::too_many_arguments)]
    unsafe fn product(
        &self,
        rows: usize,
        cols: usize,
        doff: isize,
        loff: isize,
        rhs: *const T,
        rcs: isize,
        rrs: isize,
    ) {
        // SAFETY: the function contract.
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
                rhs,
                rcs,
                rrs,
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
