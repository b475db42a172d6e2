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
    chunked_with(out, [], grain, |s, c, []| f(s, c));
}

/// One chunk of [`chunked_with`]'s slices, taken by whichever thread claims it.
type Slot<'a, R, const N: usize> = Mutex<Option<(&'a mut [R], [&'a mut [R]; N])>>;

/// [`chunked`] over `out` and `N` more slices of the same length, split at the
/// same places: `f(start, out_chunk, [state_chunks])`. Optimizer updates write
/// the weight and its states together, so all of them must be cut alike.
pub fn chunked_with<R: Send, const N: usize>(
    out: &mut [R],
    more: [&mut [R]; N],
    grain: usize,
    f: impl Fn(usize, &mut [R], [&mut [R]; N]) + Sync + Send,
) {
    let n = out.len();
    // Small first: fused tiles call this per step, and the pool's thread count
    // is a thread-local lookup through the dynamic linker in a shared library.
    let threads = if n < grain.max(2) { 1 } else { rayon::current_num_threads().max(1) };
    if threads == 1 {
        dispatch(|| f(0, out, more));
        return;
    }
    let pieces = (n / grain).clamp(1, threads * 4);
    let chunk = n.div_ceil(pieces);
    let mut rest = more.map(|m| m.chunks_mut(chunk));
    let slots: Vec<Slot<'_, R, N>> = out
        .chunks_mut(chunk)
        .map(|c| {
            // every slice has `out`'s length, so each iterator yields as many chunks
            let m: [&mut [R]; N] = std::array::from_fn(|j| rest[j].next().unwrap_or_default());
            Mutex::new(Some((c, m)))
        })
        .collect();
    fanout(slots.len(), threads - 1, &|i| {
        if let Some((c, m)) = slots[i].lock().take() {
            dispatch(|| f(i * chunk, c, m));
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

/// Calls `f(k, plane)` for each consecutive `plane`-long piece of `out` (the last may be
/// shorter), in parallel when `out` holds at least `grain` elements. For kernels whose
/// work splits by channel plane but scatters within one (a pooling backward), where
/// [`chunked`]'s arbitrary cut points would split a plane between threads.
pub fn planes<R: Send>(out: &mut [R], plane: usize, grain: usize, f: impl Fn(usize, &mut [R]) + Sync + Send) {
    let plane = plane.max(1);
    let n = out.len();
    let threads = if n < grain.max(2) || n <= plane { 1 } else { rayon::current_num_threads().max(1) };
    if threads == 1 {
        dispatch(|| out.chunks_mut(plane).enumerate().for_each(|(k, p)| f(k, p)));
        return;
    }
    let slots: Vec<Mutex<Option<&mut [R]>>> = out.chunks_mut(plane).map(|p| Mutex::new(Some(p))).collect();
    fanout(slots.len(), threads - 1, &|k| {
        if let Some(p) = slots[k].lock().take() {
            dispatch(|| f(k, p));
        }
    });
}
