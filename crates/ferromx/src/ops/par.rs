//! Size-gated parallel loops: small inputs stay on the engine worker's thread,
//! large ones split into chunks that the worker and rayon helpers share
//! ([`fanout`]: the worker starts at once instead of waiting for a pool thread
//! to wake). Every chunk runs through [`dispatch`], so the loops are compiled
//! for the CPU's widest vector unit.

use crate::storage::{dispatch, fanout};
use parking_lot::Mutex;

/// Elements below which a cheap elementwise loop stays on one thread.
pub const PAR_MIN: usize = 1 << 16;

/// Fills `out` by calling `f(start, chunk)` on contiguous chunks, in parallel when large.
pub fn chunked<R: Send>(out: &mut [R], grain: usize, f: impl Fn(usize, &mut [R]) + Sync + Send) {
    let n = out.len();
    // Small first: fused tiles call this per step, and the pool's thread count
    // is a thread-local lookup through the dynamic linker in a shared library.
    if n < grain.max(2) {
        dispatch(|| f(0, out));
        return;
    }
    let threads = rayon::current_num_threads().max(1);
    if threads == 1 {
        dispatch(|| f(0, out));
        return;
    }
    let pieces = (n / grain).clamp(1, threads * 4);
    let chunk = n.div_ceil(pieces);
    let slots: Vec<Mutex<Option<&mut [R]>>> = out.chunks_mut(chunk).map(|c| Mutex::new(Some(c))).collect();
    fanout(slots.len(), threads - 1, &|i| {
        if let Some(c) = slots[i].lock().take() {
            dispatch(|| f(i * chunk, c));
        }
    });
}

/// `out[i] = f(a[i])`.
#[inline]
pub fn map1<A: Copy + Sync, R: Send>(a: &[A], out: &mut [R], f: impl Fn(A) -> R + Sync + Send) {
    chunked(out, PAR_MIN, |s, o| {
        let n = o.len();
        for (o, &x) in o.iter_mut().zip(&a[s..s + n]) {
            *o = f(x);
        }
    });
}

/// `out[i] = f(a[i], b[i])`.
#[inline]
pub fn map2<A: Copy + Sync, B: Copy + Sync, R: Send>(
    a: &[A],
    b: &[B],
    out: &mut [R],
    f: impl Fn(A, B) -> R + Sync + Send,
) {
    chunked(out, PAR_MIN, |s, o| {
        let n = o.len();
        for ((o, &x), &y) in o.iter_mut().zip(&a[s..s + n]).zip(&b[s..s + n]) {
            *o = f(x, y);
        }
    });
}
