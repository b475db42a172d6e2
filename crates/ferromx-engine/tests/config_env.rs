//! `EngineConfig::from_env`. Environment variables are process-wide, so this
//! file holds a single test (its own process): nothing else reads them concurrently.

use ferromx_engine::{EngineConfig, EngineMode};
use std::time::Duration;

const VARS: [&str; 7] = [
    "FERROMX_ENGINE_TYPE",
    "MXNET_ENGINE_TYPE",
    "FERROMX_CPU_WORKER_NTHREADS",
    "FERROMX_ENGINE_MAX_INFLIGHT_OPS",
    "FERROMX_ENGINE_MAX_INFLIGHT_BYTES",
    "FERROMX_ENGINE_SPIN_US",
    "FERROMX_UNUSED",
];

fn clear() {
    for v in VARS {
        std::env::remove_var(v);
    }
}

#[test]
fn config_from_env() {
    clear();
    let d = EngineConfig::from_env();
    let def = EngineConfig::default();
    assert_eq!(d.mode, EngineMode::Threaded);
    assert_eq!(d.cpu_workers, def.cpu_workers);
    assert!(d.cpu_workers >= 1);
    assert_eq!(
        (d.max_inflight_ops, d.max_inflight_bytes, d.spin),
        (def.max_inflight_ops, def.max_inflight_bytes, def.spin)
    );

    std::env::set_var("FERROMX_ENGINE_TYPE", "NaiveEngine");
    std::env::set_var("FERROMX_CPU_WORKER_NTHREADS", "3");
    std::env::set_var("FERROMX_ENGINE_MAX_INFLIGHT_OPS", " 77 ");
    std::env::set_var("FERROMX_ENGINE_MAX_INFLIGHT_BYTES", "1024");
    std::env::set_var("FERROMX_ENGINE_SPIN_US", "5");
    let c = EngineConfig::from_env();
    assert_eq!(c.mode, EngineMode::Naive);
    assert_eq!((c.cpu_workers, c.max_inflight_ops, c.max_inflight_bytes), (3, 77, 1024));
    assert_eq!(c.spin, Duration::from_micros(5));

    // Zero bounds are clamped to one; junk is ignored.
    clear();
    std::env::set_var("MXNET_ENGINE_TYPE", "naive");
    std::env::set_var("FERROMX_CPU_WORKER_NTHREADS", "0");
    std::env::set_var("FERROMX_ENGINE_MAX_INFLIGHT_OPS", "0");
    std::env::set_var("FERROMX_ENGINE_MAX_INFLIGHT_BYTES", "lots");
    let c = EngineConfig::from_env();
    assert_eq!(c.mode, EngineMode::Naive, "MXNET_ENGINE_TYPE is honoured");
    assert_eq!((c.cpu_workers, c.max_inflight_ops), (1, 1));
    assert_eq!(c.max_inflight_bytes, def.max_inflight_bytes);

    clear();
    std::env::set_var("FERROMX_ENGINE_TYPE", "ThreadedEngine");
    std::env::set_var("MXNET_ENGINE_TYPE", "NaiveEngine");
    assert_eq!(EngineConfig::from_env().mode, EngineMode::Threaded, "FERROMX_ENGINE_TYPE wins");
    clear();
}
