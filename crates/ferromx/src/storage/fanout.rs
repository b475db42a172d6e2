//! Splitting one kernel across cores without waiting for sleeping threads.
//!
//! Kernels run on engine worker threads, which are not rayon threads. A rayon
//! parallel loop called from such a thread hands the *whole* loop to rayon's
//! pool and blocks the caller until a pool thread has woken up and finished —
//! and waking a parked thread costs ~20 µs in these VMs, more than a 64k-element
//! kernel takes. [`fanout`] instead lets the calling thread start on the chunks
//! at once, while `helpers` rayon jobs join in when they get scheduled. Chunks
//! are claimed from an atomic counter, so whoever is running takes the next
//! chunk; a helper that starts after the work is gone finds nothing to do. The
//! caller waits only for chunks that were actually claimed, never for a helper
//! to wake up.
//!
//! Safety: helpers are `'static` rayon jobs, but the chunk closure borrows the
//! caller's data. The closure's lifetime is erased into a raw pointer that a
//! helper dereferences only after claiming a chunk index below `n`; the caller
//! does not return (or unwind) until every claimed chunk has finished (the
//! `done` counter reaches `n`), and after that every claim fails, so the
//! pointer is never used after the borrow ends. A panic in a chunk is caught
//! where it happens, counted as done, and re-raised on the caller.

use parking_lot::Mutex;
use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::Thread;
use std::time::{Duration, Instant};

type Chunk<'a> = dyn Fn(usize) + Sync + 'a;

struct Job {
    /// The caller's closure with its lifetime erased (see the module docs).
    f: *const Chunk<'static>,
    n: usize,
    next: AtomicUsize,
    done: AtomicUsize,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    owner: Thread,
}

// SAFETY: `f` points to a `Sync` closure and is only called while the caller
// keeps it alive (module docs); everything else is thread-safe already.
unsafe impl Send for Job {}
// SAFETY: as above.
unsafe impl Sync for Job {}

impl Job {
    /// Runs chunks until none are left to claim.
    fn work(&self) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.n {
                return;
            }
            // SAFETY: i < n was claimed, so the caller is still waiting for this
            // chunk and the closure is alive (module docs).
            let f = unsafe { &*self.f };
            if let Err(p) = catch_unwind(AssertUnwindSafe(|| f(i))) {
                self.panic.lock().get_or_insert(p);
            }
            if self.done.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
                self.owner.unpark();
            }
        }
    }
}

/// Calls `f(i)` for every `i < n`, on the calling thread and up to `helpers`
/// rayon threads, returning when all calls have finished. A panic in any call
/// is re-raised here after the others finish.
pub fn fanout(n: usize, helpers: usize, f: &(dyn Fn(usize) + Sync)) {
    if n == 0 {
        return;
    }
    if n == 1 || helpers == 0 {
        (0..n).for_each(f);
        return;
    }
    // SAFETY: only the lifetime is changed; see the module docs for why the
    // pointer is never dereferenced after this function returns.
    let erased: *const Chunk<'static> = unsafe { std::mem::transmute::<*const Chunk<'_>, *const Chunk<'static>>(f) };
    let job = Arc::new(Job {
        f: erased,
        n,
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        panic: Mutex::new(None),
        owner: std::thread::current(),
    });
    for _ in 0..helpers.min(n - 1) {
        let j = job.clone();
        rayon::spawn(move || j.work());
    }
    job.work();
    // Claimed chunks are running on other threads: spin briefly (they are
    // usually about as far along as ours), then park until the last one ends.
    let spin_until = Instant::now() + Duration::from_micros(50);
    while job.done.load(Ordering::Acquire) < n {
        if Instant::now() < spin_until {
            std::hint::spin_loop();
        } else {
            std::thread::park_timeout(Duration::from_millis(1));
        }
    }
    let panic = job.panic.lock().take();
    if let Some(p) = panic {
        resume_unwind(p);
    }
}

#[cfg(test)]
mod tests {
    use super::fanout;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_chunk_runs_once() {
        let hits: Vec<AtomicUsize> = (0..1000).map(|_| AtomicUsize::new(0)).collect();
        for helpers in [0, 1, 3] {
            fanout(hits.len(), helpers, &|i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
        }
        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 3));
    }

    #[test]
    fn a_panicking_chunk_is_reraised_after_the_rest() {
        let ran = AtomicUsize::new(0);
        let r = std::panic::catch_unwind(|| {
            fanout(64, 2, &|i| {
                ran.fetch_add(1, Ordering::Relaxed);
                assert!(i != 7, "chunk 7 fails");
            })
        });
        assert!(r.is_err());
        assert_eq!(ran.load(Ordering::Relaxed), 64);
    }
}
