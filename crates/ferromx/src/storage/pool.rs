//! A size-class pool of freed buffers.
//!
//! First touch of fresh memory costs ~2 µs per 4 KiB page here (a fresh
//! 64 MB buffer costs tens of milliseconds before any arithmetic), so freed
//! buffers are kept and handed out again for the same size class. Classes are
//! powers of two up to 64 KiB and eighths of a power of two above, so a class
//! wastes at most 12.5%. The pool holds at most `FERROMX_POOL_BYTES` (default
//! 2 GiB); beyond that freed buffers go back to the system.
//!
//! Buffers come from the system allocator ([`System`]) whatever the process's
//! global allocator is: the Python extension uses mimalloc for its small objects,
//! and mimalloc reserves address space without the kernel's overcommit check, so
//! an impossible array (`zeros((1 << 40,))`) would "succeed" and be killed for
//! memory at first touch instead of failing with a clear error.

use parking_lot::Mutex;
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

pub(crate) const ALIGN: usize = 64;

struct Pool {
    free: Mutex<HashMap<usize, Vec<usize>>>,
    pooled: AtomicU64,
    cap: u64,
    hits: AtomicU64,
    misses: AtomicU64,
    /// Bytes of buffers handed out and not yet given back.
    live: AtomicU64,
    /// High-water mark of `live`.
    peak_live: AtomicU64,
    /// High-water mark of `live + pooled` (the host memory the pool holds).
    peak_held: AtomicU64,
}

fn pool() -> &'static Pool {
    static P: OnceLock<Pool> = OnceLock::new();
    P.get_or_init(|| Pool {
        free: Mutex::new(HashMap::new()),
        pooled: AtomicU64::new(0),
        cap: std::env::var("FERROMX_POOL_BYTES").ok().and_then(|v| v.parse().ok()).unwrap_or(2 << 30),
        hits: AtomicU64::new(0),
        misses: AtomicU64::new(0),
        live: AtomicU64::new(0),
        peak_live: AtomicU64::new(0),
        peak_held: AtomicU64::new(0),
    })
}

/// The allocation size used for a request of `bytes`.
pub(crate) fn size_class(bytes: usize) -> usize {
    if bytes == 0 {
        return 0;
    }
    if bytes <= 64 {
        return 64;
    }
    let Some(p) = bytes.checked_next_power_of_two() else { return usize::MAX };
    if p <= 65536 {
        return p;
    }
    let step = p / 16;
    bytes.div_ceil(step) * step
}

/// Takes a buffer for a request of class `class` from the pool (see
/// [`take_pooled`]) or the allocator, with the class of the buffer given; `None`
/// when the system cannot provide it (the caller reports an error).
pub(crate) fn take(class: usize) -> Option<(NonNull<u8>, usize)> {
    take_with(class, false, |free| take_pooled(free, class))
}

/// [`take`] for a kernel workspace ([`super::scratch::Scratch`]): a pooled
/// buffer of the class or up to [`SCRATCH_SLACK`] times larger, else a fresh
/// zeroed one (so its bytes are initialised).
///
/// Why the looser fit: a workspace lives for one kernel call, so borrowing a
/// larger idle buffer (typically a freed activation) costs nothing, while a
/// fresh buffer of an odd size would stay in the pool for good.
pub(crate) fn take_scratch(class: usize) -> Option<(NonNull<u8>, usize)> {
    take_with(class, true, |free| {
        take_pooled(free, class).or_else(|| take_larger(free, class, class.saturating_mul(SCRATCH_SLACK)))
    })
}

/// A buffer of class `class`: the pooled one `fit` picks, else a fresh one
/// from the system (zeroed with `zeroed`), counted either way.
fn take_with(
    class: usize,
    zeroed: bool,
    fit: impl FnOnce(&mut HashMap<usize, Vec<usize>>) -> Option<(usize, usize)>,
) -> Option<(NonNull<u8>, usize)> {
    if class == 0 {
        // A dangling, aligned pointer for empty buffers; never dereferenced.
        return NonNull::new(ALIGN as *mut u8).map(|p| (p, 0));
    }
    let p = pool();
    let pooled = fit(&mut p.free.lock());
    if let Some((addr, got)) = pooled {
        p.pooled.fetch_sub(got as u64, Ordering::Relaxed);
        p.hits.fetch_add(1, Ordering::Relaxed);
        p.count_taken(got);
        return NonNull::new(addr as *mut u8).map(|q| (q, got));
    }
    p.misses.fetch_add(1, Ordering::Relaxed);
    let layout = Layout::from_size_align(class, ALIGN).ok()?;
    // SAFETY: class > 0, so the layout has non-zero size.
    let ptr = NonNull::new(unsafe {
        if zeroed {
            System.alloc_zeroed(layout)
        } else {
            System.alloc(layout)
        }
    })?;
    p.count_taken(class);
    Some((ptr, class))
}

/// A workspace may take a pooled buffer up to this many times its class.
const SCRATCH_SLACK: usize = 2;

/// The smallest pooled buffer of a class in `(class, limit]`.
fn take_larger(free: &mut HashMap<usize, Vec<usize>>, class: usize, limit: usize) -> Option<(usize, usize)> {
    let got = free.iter().filter(|(&c, v)| c > class && c <= limit && !v.is_empty()).map(|(&c, _)| c).min()?;
    free.get_mut(&got).and_then(Vec::pop).map(|addr| (addr, got))
}

/// A pooled buffer for a request of class `class`: one of that class, or else
/// one of the next classes up to [`FIT_SLACK`] larger (the buffer keeps its own
/// class, so it returns to its own list).
///
/// Why: a training step's arrays come in many sizes, and with exact classes
/// only, a request whose class was empty allocated anew while buffers a class
/// or two larger sat idle. On ResNet-18 training (batch 64) that held the pool
/// about 100 MB above its live peak, and peak RSS passed MXNet's.
fn take_pooled(free: &mut HashMap<usize, Vec<usize>>, class: usize) -> Option<(usize, usize)> {
    if let Some(addr) = free.get_mut(&class).and_then(Vec::pop) {
        return Some((addr, class));
    }
    if class <= 65536 {
        return None;
    }
    take_larger(free, class, class + class / FIT_SLACK)
}

/// A request may take a pooled buffer up to `1 / FIT_SLACK` larger than its class.
const FIT_SLACK: usize = 4;

impl Pool {
    /// Counts a buffer of `class` bytes handed out and updates the peaks.
    fn count_taken(&self, class: usize) {
        let live = self.live.fetch_add(class as u64, Ordering::Relaxed) + class as u64;
        self.peak_live.fetch_max(live, Ordering::Relaxed);
        self.peak_held.fetch_max(live + self.pooled.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

/// Returns a buffer of class `class` to the pool (or frees it when the pool is full).
pub(crate) fn give(ptr: NonNull<u8>, class: usize) {
    if class == 0 {
        return;
    }
    let p = pool();
    p.live.fetch_sub(class as u64, Ordering::Relaxed);
    if p.pooled.load(Ordering::Relaxed) + class as u64 <= p.cap {
        p.pooled.fetch_add(class as u64, Ordering::Relaxed);
        p.free.lock().entry(class).or_default().push(ptr.as_ptr() as usize);
        return;
    }
    let layout = Layout::from_size_align(class, ALIGN).expect("valid layout");
    // SAFETY: `ptr` was allocated by `take` with exactly this layout and is
    // no longer referenced (its chunk is being dropped).
    unsafe { System.dealloc(ptr.as_ptr(), layout) };
}

/// Pool counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct PoolStats {
    /// Bytes currently held in the pool.
    pub pooled_bytes: u64,
    /// Allocations served from the pool.
    pub hits: u64,
    /// Allocations that went to the system allocator.
    pub misses: u64,
    /// Bytes (allocation classes) of buffers owned by live chunks.
    pub live_bytes: u64,
    /// High-water mark of `live_bytes` since start or [`reset_pool_peaks`].
    pub peak_live_bytes: u64,
    /// High-water mark of live plus pooled bytes (host memory the pool
    /// accounts for) since start or [`reset_pool_peaks`].
    pub peak_held_bytes: u64,
}

/// Current pool counters.
pub fn pool_stats() -> PoolStats {
    let p = pool();
    PoolStats {
        pooled_bytes: p.pooled.load(Ordering::Relaxed),
        hits: p.hits.load(Ordering::Relaxed),
        misses: p.misses.load(Ordering::Relaxed),
        live_bytes: p.live.load(Ordering::Relaxed),
        peak_live_bytes: p.peak_live.load(Ordering::Relaxed),
        peak_held_bytes: p.peak_held.load(Ordering::Relaxed),
    }
}

/// Resets both high-water marks to the current values (to measure one phase).
pub fn reset_pool_peaks() {
    let p = pool();
    let live = p.live.load(Ordering::Relaxed);
    p.peak_live.store(live, Ordering::Relaxed);
    p.peak_held.store(live + p.pooled.load(Ordering::Relaxed), Ordering::Relaxed);
}

/// Frees every pooled buffer back to the system.
pub fn release_pool() {
    let p = pool();
    let all: Vec<(usize, Vec<usize>)> = p.free.lock().drain().collect();
    for (class, v) in all {
        for addr in v {
            p.pooled.fetch_sub(class as u64, Ordering::Relaxed);
            let layout = Layout::from_size_align(class, ALIGN).expect("valid layout");
            // SAFETY: pooled pointers were allocated by `take` with this layout
            // and are owned by the pool alone.
            unsafe { System.dealloc(addr as *mut u8, layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_takes_its_class_or_the_smallest_fitting_larger_one() {
        let c = size_class(1 << 20); // 1 MiB
        let up1 = size_class(c + 1); // one eighth-step up
        let far = size_class(2 * c); // twice as large: past the slack
        let mut free: HashMap<usize, Vec<usize>> = HashMap::new();
        free.insert(far, vec![3]);
        assert_eq!(take_pooled(&mut free, c), None, "a buffer twice as large is not taken");
        free.insert(size_class(up1 + 1), vec![2]);
        free.insert(up1, vec![1]);
        assert_eq!(take_pooled(&mut free, c), Some((1, up1)), "the smallest larger class first");
        assert_eq!(take_pooled(&mut free, c), Some((2, size_class(up1 + 1))));
        assert_eq!(take_pooled(&mut free, c), None);
        free.insert(c, vec![7]);
        assert_eq!(take_pooled(&mut free, c), Some((7, c)), "its own class");
        // Small classes (powers of two) take their own class only.
        free.insert(1024, vec![9]);
        assert_eq!(take_pooled(&mut free, 512), None);
    }
}
