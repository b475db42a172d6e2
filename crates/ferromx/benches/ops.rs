//! Operator benchmarks (criterion). Side-by-side ratios against NumPy, MXNet and
//! JAX are printed by `benchmarks/bench.py`; this measures the Rust API alone.

use criterion::{criterion_group, criterion_main, Criterion};
use ferromx::ops::{self, random, BinOp, ReduceOp, UnaryOp};
use ferromx::{Context, DType, NDArray, Shape};

fn uniform(shape: &[usize]) -> NDArray {
    let a = random::uniform(0.0, 1.0, Shape::new(shape), DType::F32, Context::cpu(0)).expect("uniform");
    a.wait_to_read().expect("ready");
    a
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("ops");
    g.sample_size(10);
    let a = uniform(&[1000, 1000]);
    g.bench_function("sgemm_1000", |b| b.iter(|| ops::dot(&a, &a, false, false).and_then(|r| r.wait_to_read())));
    let x = uniform(&[16 << 20]);
    let y = uniform(&[16 << 20]);
    g.bench_function("add_16m", |b| b.iter(|| ops::add(&x, &y).and_then(|r| r.wait_to_read())));
    g.bench_function("exp_16m", |b| b.iter(|| ops::unary(UnaryOp::Exp, &x).and_then(|r| r.wait_to_read())));
    let m = uniform(&[1 << 20]);
    g.bench_function("sum_1m", |b| {
        b.iter(|| ops::reduce(ReduceOp::Sum, &m, None, false, false).and_then(|r| r.wait_to_read()))
    });
    let small = uniform(&[1, 2]);
    g.bench_function("dispatch_chain_10k", |b| {
        b.iter(|| {
            let mut v = small.clone();
            for _ in 0..10_000 {
                v = ops::scalar(BinOp::Add, &v, 1.0).expect("add");
            }
            v.wait_to_read()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
