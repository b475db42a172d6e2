//! Engine overhead and scaling.
//!
//! * `chain_100k`: push 100 000 dependent empty ops (all write one var), then
//!   `wait_all`: the per-op cost of push + dependency tracking + dispatch.
//! * `independent_10k_spin50us`: 10 000 independent ops that each busy-spin
//!   ~50 µs, on 1 and on 2 cpu workers: how well the pool scales.
//!
//! Besides criterion's groups, `cargo bench` prints one plain `summary:` line
//! per benchmark (ns/op, speedup) from a small timing of its own, for docs.

use criterion::{criterion_group, BenchmarkId, Criterion, SamplingMode, Throughput};
use ferromx_engine::{Engine, EngineConfig, Op, Var};
use std::time::{Duration, Instant};

const CHAIN_OPS: u64 = 100_000;
const SPIN_OPS: u64 = 10_000;
const SPIN: Duration = Duration::from_micros(50);

fn engine(workers: usize) -> Engine {
    Engine::new(EngineConfig { cpu_workers: workers, ..EngineConfig::default() })
}

/// Pushes `CHAIN_OPS` empty ops that all write `v`, waits for them; returns the wall time.
fn run_chain(e: &Engine, v: &Var) -> Duration {
    let t = Instant::now();
    for _ in 0..CHAIN_OPS {
        e.push(Op::new("empty", || Ok(())).writes([v]));
    }
    e.wait_all().expect("empty ops do not fail");
    t.elapsed()
}

fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Pushes `SPIN_OPS` independent spinning ops, waits for them; returns the wall time.
fn run_independent(e: &Engine) -> Duration {
    let t = Instant::now();
    for _ in 0..SPIN_OPS {
        e.push(Op::new("spin", || {
            spin(SPIN);
            Ok(())
        }));
    }
    e.wait_all().expect("spinning ops do not fail");
    t.elapsed()
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn bench_chain(c: &mut Criterion) {
    let e = engine(EngineConfig::default().cpu_workers);
    let v = e.new_var();
    let mut g = c.benchmark_group("chain_100k");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .throughput(Throughput::Elements(CHAIN_OPS));
    g.bench_function("push_execute_wait_all", |b| b.iter_custom(|iters| (0..iters).map(|_| run_chain(&e, &v)).sum()));
    g.finish();
}

fn bench_independent(c: &mut Criterion) {
    let mut g = c.benchmark_group("independent_10k_spin50us");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(6))
        .throughput(Throughput::Elements(SPIN_OPS));
    for workers in [1usize, 2] {
        let e = engine(workers);
        g.bench_with_input(BenchmarkId::new("workers", workers), &workers, |b, _| {
            b.iter_custom(|iters| (0..iters).map(|_| run_independent(&e)).sum())
        });
    }
    g.finish();
}

/// Plain numbers for docs, measured independently of criterion.
fn summary() {
    let workers = EngineConfig::default().cpu_workers;
    let e = engine(workers);
    let v = e.new_var();
    run_chain(&e, &v); // warm-up
    let t = median((0..5).map(|_| run_chain(&e, &v)).collect());
    println!(
        "summary: chain_100k ({workers} workers): {:.0} ns/op (push + execute + wait_all, median of 5)",
        t.as_nanos() as f64 / CHAIN_OPS as f64
    );
    drop(e);
    let mut times = Vec::new();
    for w in [1usize, 2] {
        let e = engine(w);
        run_independent(&e); // warm-up
        times.push(median((0..3).map(|_| run_independent(&e)).collect()));
    }
    let ideal = SPIN * SPIN_OPS as u32;
    println!(
        "summary: independent_10k_spin50us: 1 worker {:.1} ms, 2 workers {:.1} ms (serial spin {:.0} ms), speedup {:.2}x (median of 3)",
        times[0].as_secs_f64() * 1e3,
        times[1].as_secs_f64() * 1e3,
        ideal.as_secs_f64() * 1e3,
        times[0].as_secs_f64() / times[1].as_secs_f64()
    );
}

criterion_group!(benches, bench_chain, bench_independent);

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` does not (criterion
    // then runs each benchmark once as a smoke test).
    if std::env::args().any(|a| a == "--bench") {
        summary();
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
