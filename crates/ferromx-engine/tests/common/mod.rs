//! Helpers shared by the engine's integration tests.
//!
//! No test synchronises by sleeping on the test thread: ops are held open by
//! [`Gate`]s (every wait of which is bounded), test bodies run under
//! [`with_deadline`], and "nothing happened yet" is asserted only for things
//! that cannot happen while a gate is closed.
#![allow(dead_code)]

use ferromx_engine::{Engine, EngineConfig, EngineMode, OpFailure};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, Once};
use std::time::{Duration, Instant};

/// Upper bound on any single blocking step of a test; exceeding it means a deadlock.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// How long a gated op waits for its gate before giving up (and failing).
pub const GATE_TIMEOUT: Duration = Duration::from_secs(10);

/// A short window used to assert that something blocked stays blocked.
pub const BLOCKED_FOR: Duration = Duration::from_millis(50);

/// Runs `f` on its own thread and returns its result; panics (failing the
/// test instead of hanging it) when `f` does not finish within `limit`.
pub fn with_deadline<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::Builder::new()
        .name("test-body".into())
        .spawn(move || {
            let r = catch_unwind(AssertUnwindSafe(f));
            let _ = tx.send(r);
        })
        .expect("spawn test body");
    match rx.recv_timeout(limit) {
        Ok(Ok(v)) => {
            let _ = h.join();
            v
        }
        Ok(Err(p)) => {
            let _ = h.join();
            resume_unwind(p)
        }
        Err(_) => panic!("test body did not finish within {limit:?}: deadlock?"),
    }
}

/// Polls `cond` (yielding between polls) until it holds; panics after `limit`.
pub fn eventually(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "timed out after {limit:?} waiting for: {what}");
        std::thread::yield_now();
    }
}

/// A one-shot gate: ops block on it until the test opens it.
#[derive(Default)]
pub struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    /// A closed gate.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Opens the gate, releasing every op blocked on it.
    pub fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }

    /// Blocks until the gate opens; fails (as an op failure) after [`GATE_TIMEOUT`].
    pub fn wait(&self) -> Result<(), OpFailure> {
        let g = self.open.lock().unwrap();
        let (g, res) = self.cv.wait_timeout_while(g, GATE_TIMEOUT, |open| !*open).unwrap();
        if res.timed_out() && !*g {
            return Err(OpFailure::runtime("gate never opened (test bug or deadlock)"));
        }
        Ok(())
    }
}

/// Opens the gate when dropped, so a failing assertion never leaves ops stuck
/// (and the engine's drop, which waits for them, hanging until GATE_TIMEOUT).
pub struct OpenOnDrop(pub Arc<Gate>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

/// A threaded engine with `workers` cpu workers and otherwise default settings.
pub fn threaded(workers: usize) -> Engine {
    Engine::new(EngineConfig { mode: EngineMode::Threaded, cpu_workers: workers, ..EngineConfig::default() })
}

/// A naive engine.
pub fn naive() -> Engine {
    Engine::new(EngineConfig { mode: EngineMode::Naive, ..EngineConfig::default() })
}

/// Marker in the messages of panics the tests raise on purpose.
pub const INTENTIONAL: &str = "ferromx-test-intentional-panic";

/// A non-string panic payload the tests raise on purpose.
pub struct IntentionalPanic;

/// Installs (once) a panic hook that stays silent for the tests' intentional
/// panics and defers to the default hook for every other panic.
pub fn quiet_intentional_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let p = info.payload();
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            if !msg.contains(INTENTIONAL) && !p.is::<IntentionalPanic>() {
                prev(info);
            }
        }));
    });
}

/// xorshift64*: deterministic, seedable randomness for property tests, no dependencies.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }
    /// True with probability `num/den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.next_u64() % den < num
    }
}
