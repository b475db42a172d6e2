//! Kernel workspaces borrowed from the size-class pool.
//!
//! A convolution's column matrix, its Winograd tiles and transformed filters,
//! and a weight gradient's per-core sums are megabytes each, alive for one
//! kernel call. They used to be `Vec`s (plus one kept per thread), so they
//! came from the global allocator beside the pool: during a ResNet-18
//! training step's backward those allocations held 100–120 MB of resident
//! memory outside the pool, while the pool held about as much in freed
//! activation buffers that nothing used until the next forward. A
//! [`Scratch`] takes one of those pooled buffers (or a fresh one, which joins
//! the pool when given back), so workspaces and arrays share one stock of
//! memory, already touched, and the pool's counters include them.

use super::pool;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Element types a [`Scratch`] may hold: plain numbers, for which every bit
/// pattern is a valid value (a recycled buffer holds whatever was last
/// written to it).
pub trait ScratchElem: Copy + Send + Sync + 'static {
    /// The value [`Scratch::zeroed`] fills with.
    const ZERO: Self;
}

macro_rules! scratch_elem {
    ($($t:ty = $z:expr),*) => {$(impl ScratchElem for $t { const ZERO: Self = $z; })*};
}
scratch_elem!(f32 = 0.0, f64 = 0.0, i32 = 0, i64 = 0, u32 = 0, u64 = 0, usize = 0);

/// A workspace of `len` elements taken from the storage pool and given back
/// to it when dropped (module docs for why).
pub struct Scratch<T: ScratchElem> {
    ptr: NonNull<T>,
    len: usize,
    class: usize,
}

// SAFETY: a `Scratch` owns its buffer exclusively, as a `Vec<T>` does; `T` is
// `Send + Sync`.
unsafe impl<T: ScratchElem> Send for Scratch<T> {}
// SAFETY: shared access only reads through `&[T]`, as for a `Vec<T>`.
unsafe impl<T: ScratchElem> Sync for Scratch<T> {}

impl<T: ScratchElem> Scratch<T> {
    /// A workspace of `len` elements whose contents are unspecified (whatever
    /// the buffer last held; zeros when it is fresh).
    ///
    /// # Panics
    /// When the system cannot provide the memory; inside a kernel that panic
    /// becomes an error on the arrays the kernel writes.
    pub fn any(len: usize) -> Scratch<T> {
        let bytes = len.saturating_mul(std::mem::size_of::<T>());
        let class = pool::size_class(bytes);
        let Some((ptr, class)) = pool::take_scratch(class) else {
            panic!("a kernel workspace of {bytes} bytes could not be allocated");
        };
        Scratch { ptr: ptr.cast(), len, class }
    }

    /// A workspace of `len` zeros.
    pub fn zeroed(len: usize) -> Scratch<T> {
        let mut s = Scratch::any(len);
        s.fill(T::ZERO);
        s
    }
}

impl<T: ScratchElem> Deref for Scratch<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: the buffer holds at least `len · size_of::<T>()` bytes
        // (its class is at least that), is aligned to 64, is owned by this
        // `Scratch` alone, and holds initialised bytes (zeroed when fresh,
        // else written by its previous owner); every bit pattern is a `T`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: ScratchElem> DerefMut for Scratch<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: as in `deref`; `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: ScratchElem> Drop for Scratch<T> {
    fn drop(&mut self) {
        pool::give(self.ptr.cast(), self.class);
    }
}

impl<T: ScratchElem + std::fmt::Debug> std::fmt::Debug for Scratch<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scratch").field("len", &self.len).field("class", &self.class).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_is_zeroed_writable_and_goes_back_to_the_pool() {
        let n = 300_000; // 1.2 MB of f32: a class above the small powers of two
        let addr;
        {
            let mut s = Scratch::<f32>::zeroed(n);
            assert_eq!(s.len(), n);
            assert!(s.iter().all(|&v| v == 0.0));
            s[n - 1] = 3.0;
            addr = s.as_ptr() as usize;
            assert_eq!(addr % 64, 0);
        }
        // The same class again: the pool hands back a buffer (it may be this
        // one, or another of the class freed by a concurrent test), and
        // `zeroed` clears what the last owner wrote.
        let s = Scratch::<f32>::zeroed(n);
        assert!(s.iter().all(|&v| v == 0.0));
        let empty = Scratch::<f64>::any(0);
        assert!(empty.is_empty());
    }
}
