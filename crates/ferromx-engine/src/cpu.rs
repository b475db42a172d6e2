//! Which CPU the calling thread runs on, and which CPU is running an op.
//!
//! On a 2-core machine with other load, the frontend thread waiting for an op
//! and the worker running it can end up on the same core; a waiter that spins
//! then only delays the op it waits for. Workers publish the CPU they run or
//! poll for ops on ([`set_busy`]); a spinning waiter that finds itself on that
//! CPU yields at once instead of spinning, and an idle worker that finds a
//! spinning waiter on its CPU does the same.
//!
//! Safety: the only `unsafe` in this crate is the call to `sched_getcpu(3)`,
//! which takes no arguments, touches no memory of ours and only returns an
//! integer (or -1 on error), so calling it is sound on any thread at any time.

use std::sync::atomic::{AtomicI32, Ordering};

static BUSY: AtomicI32 = AtomicI32::new(-1);
static WAITER: AtomicI32 = AtomicI32::new(-1);

/// The CPU the calling thread is on, or -1 when unknown.
#[inline]
pub(crate) fn current() -> i32 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: see the module docs; sched_getcpu has no preconditions.
        unsafe { libc::sched_getcpu() }
    }
    #[cfg(not(target_os = "linux"))]
    {
        -1
    }
}

/// Records that the calling worker is running an op (on its current CPU), or
/// with `false` that it stopped.
#[inline]
pub(crate) fn set_busy(busy: bool) {
    BUSY.store(if busy { current() } else { -1 }, Ordering::Relaxed);
}

/// Whether an op is running on CPU `cpu` (always false for an unknown CPU).
#[inline]
pub(crate) fn busy_on(cpu: i32) -> bool {
    cpu >= 0 && BUSY.load(Ordering::Relaxed) == cpu
}

/// Records the CPU of a thread that starts spinning in a wait (`Some`), or that
/// the spin ended (`None`).
#[inline]
pub(crate) fn set_waiter(cpu: Option<i32>) {
    WAITER.store(cpu.unwrap_or(-1), Ordering::Relaxed);
}

/// Whether a waiter spins on CPU `cpu`.
#[inline]
pub(crate) fn waiter_on(cpu: i32) -> bool {
    cpu >= 0 && WAITER.load(Ordering::Relaxed) == cpu
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_current_cpu_is_known_on_linux_and_unknown_never_matches() {
        if cfg!(target_os = "linux") {
            assert!(super::current() >= 0);
        }
        assert!(!super::busy_on(-1));
        assert!(!super::waiter_on(-1));
    }
}
