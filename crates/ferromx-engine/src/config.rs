//! Engine configuration, read from the environment by default.

use std::time::Duration;

/// How operations are executed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineMode {
    /// Worker pools per device; `push` returns at once.
    Threaded,
    /// Every op runs on the pushing thread inside `push` (debugging: an error
    /// surfaces at the line that caused it).
    Naive,
}

/// Engine settings.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Threaded or naive.
    pub mode: EngineMode,
    /// Worker threads per `cpu(i)` device.
    pub cpu_workers: usize,
    /// Bound on operations pushed but not completed; past it `push` blocks.
    pub max_inflight_ops: u64,
    /// Bound on bytes declared by operations in flight; past it `push` blocks.
    pub max_inflight_bytes: u64,
    /// How long idle workers and waiters spin before they sleep.
    pub spin: Duration,
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

impl EngineConfig {
    /// Defaults, overridden by `FERROMX_ENGINE_TYPE` (`NaiveEngine` or
    /// `ThreadedEngine`), `FERROMX_CPU_WORKER_NTHREADS`,
    /// `FERROMX_ENGINE_MAX_INFLIGHT_OPS`, `FERROMX_ENGINE_MAX_INFLIGHT_BYTES`
    /// and `FERROMX_ENGINE_SPIN_US`. `MXNET_ENGINE_TYPE` is honoured too.
    pub fn from_env() -> Self {
        let mut c = Self::default();
        let ty =
            std::env::var("FERROMX_ENGINE_TYPE").or_else(|_| std::env::var("MXNET_ENGINE_TYPE")).unwrap_or_default();
        if ty.eq_ignore_ascii_case("NaiveEngine") || ty.eq_ignore_ascii_case("naive") {
            c.mode = EngineMode::Naive;
        }
        if let Some(n) = env_u64("FERROMX_CPU_WORKER_NTHREADS") {
            c.cpu_workers = (n as usize).max(1);
        }
        if let Some(n) = env_u64("FERROMX_ENGINE_MAX_INFLIGHT_OPS") {
            c.max_inflight_ops = n.max(1);
        }
        if let Some(n) = env_u64("FERROMX_ENGINE_MAX_INFLIGHT_BYTES") {
            c.max_inflight_bytes = n.max(1);
        }
        if let Some(n) = env_u64("FERROMX_ENGINE_SPIN_US") {
            c.spin = Duration::from_micros(n);
        }
        c
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            mode: EngineMode::Threaded,
            cpu_workers: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            max_inflight_ops: 16_384,
            max_inflight_bytes: 512 << 20,
            spin: Duration::from_micros(50),
        }
    }
}
