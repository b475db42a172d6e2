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

/// Takes a buffer of class `class` from the pool or the allocator; `None`
/// when the system cannot provide it (the caller reports an error).
pub(crate) fn take(class: usize) -> Option<NonNull<u8>> {
    if class == 0 {
        // A dangling, aligned pointer for empty arrays; never dereferenced.
        return NonNull::new(ALIGN as *mut u8);
    }
    let p = pool();
    if let Some(addr) = p.free.lock().get_mut(&class).and_then(|v| v.pop()) {
        p.pooled.fetch_sub(class as u64, Ordering::Relaxed);
        p.hits.fetch_add(1, Ordering::Relaxed);
        p.count_taken(class);
        return NonNull::new(addr as *mut u8);
    }
    p.misses.fetch_add(1, Ordering::Relaxed);
    let layout = Layout::from_size_align(class, ALIGN).ok()?;
    // SAFETY: class > 0, so the layout has non-zero size.
    let ptr = NonNull::new(unsafe { System.alloc(layout) })?;
    p.count_taken(class);
    Some(ptr)
}

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
