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
//! Helpers linger. A helper that woke for one kernel polls for the next one
//! for [`LINGER`] before it goes back to rayon's pool. Waking a parked thread
//! usually takes tens of microseconds, but on a loaded 2-core VM the scheduler
//! sometimes queues the woken thread behind the caller on the caller's own
//! core for milliseconds: in a ResNet-18 training step the median helper
//! started 38 µs late, one in ten 213 µs late and one in a hundred 2.5 ms
//! late, while the caller did the whole kernel alone. Consecutive kernels of
//! a step follow each other within microseconds, so a lingering helper picks
//! up the next one at once, the way OpenMP's spinning threads do. The current
//! job is published in [`CURRENT`]; a caller wakes a rayon helper only when
//! fewer than `helpers` are lingering. While it lingers, a helper runs any
//! other rayon job that is queued and yields its core every few polls.
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
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::Thread;
use std::time::{Duration, Instant};

type Chunk<'a> = dyn Fn(usize) + Sync + 'a;

/// How long a helper polls for the next job after finishing one, by default.
const LINGER: Duration = Duration::from_micros(500);

/// [`LINGER`], or `FERROMX_FANOUT_LINGER_US` (0 turns lingering off; for
/// side-by-side benchmarks).
fn linger_for() -> Duration {
    static D: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *D.get_or_init(|| {
        std::env::var("FERROMX_FANOUT_LINGER_US")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(LINGER, Duration::from_micros)
    })
}

/// The job most recently published by a caller, for lingering helpers.
static CURRENT: Mutex<Option<Arc<Job>>> = Mutex::new(None);
/// Bumped on every publication, so lingering helpers notice a new job
/// without taking the lock.
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// Helpers lingering now.
static LINGERING: AtomicUsize = AtomicUsize::new(0);

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
    *CURRENT.lock() = Some(job.clone());
    GENERATION.fetch_add(1, Ordering::SeqCst);
    let wanted = helpers.min(n - 1);
    for _ in LINGERING.load(Ordering::SeqCst).min(wanted)..wanted {
        let j = job.clone();
        rayon::spawn(move || {
            j.work();
            drop(j);
            if !linger_for().is_zero() {
                linger();
            }
        });
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
    {
        let mut current = CURRENT.lock();
        if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, &job)) {
            *current = None;
        }
    }
    let panic = job.panic.lock().take();
    if let Some(p) = panic {
        resume_unwind(p);
    }
}

/// Polls for newly published jobs for [`linger_for`] after the last one (see the
/// module docs), running other queued rayon work meanwhile.
fn linger() {
    let mut seen = GENERATION.load(Ordering::SeqCst);
    let mut until = Instant::now() + linger_for();
    LINGERING.fetch_add(1, Ordering::SeqCst);
    let mut polls = 0u32;
    loop {
        let now_gen = GENERATION.load(Ordering::SeqCst);
        if now_gen != seen {
            seen = now_gen;
            let job = CURRENT.lock().clone();
            if let Some(job) = job {
                job.work();
            }
            until = Instant::now() + linger_for();
            continue;
        }
        if Instant::now() >= until {
            LINGERING.fetch_sub(1, Ordering::SeqCst);
            // A caller that published after our last look but counted us as
            // lingering spawned no helper for that job: take it after all.
            if GENERATION.load(Ordering::SeqCst) == seen {
                return;
            }
            LINGERING.fetch_add(1, Ordering::SeqCst);
            continue;
        }
        polls = polls.wrapping_add(1);
        if rayon::yield_now() == Some(rayon::Yield::Executed) {
            continue;
        }
        if polls.is_multiple_of(16) {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
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
    fn back_to_back_and_nested_jobs_run_every_chunk_once() {
        // Consecutive jobs are picked up by lingering helpers, and a chunk that
        // fans out itself replaces the published job while the outer one is
        // still running: the outer caller must still see all its chunks done.
        let outer: Vec<AtomicUsize> = (0..64).map(|_| AtomicUsize::new(0)).collect();
        let inner = AtomicUsize::new(0);
        for _ in 0..200 {
            fanout(outer.len(), 1, &|i| {
                outer[i].fetch_add(1, Ordering::Relaxed);
                if i % 16 == 0 {
                    fanout(8, 1, &|_| {
                        inner.fetch_add(1, Ordering::Relaxed);
                    });
                }
            });
        }
        assert!(outer.iter().all(|h| h.load(Ordering::Relaxed) == 200));
        assert_eq!(inner.load(Ordering::Relaxed), 200 * 4 * 8);
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
