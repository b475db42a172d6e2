//! Profiler collector: subscribes to engine events and keeps them, with
//! timestamps in microseconds since one origin so every thread lines up.
//! The Python `ferromx.profiler` module turns them into a Chrome trace and
//! aggregate tables.

use ferromx::engine::{Engine, EngineEvent, WaitTarget};
use parking_lot::Mutex;
use pyo3::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// One trace record: (phase, name, category, thread, ts µs, dur µs, args).
type Rec = (&'static str, String, &'static str, String, f64, f64, String);

/// A started op: name, detail, thread label, start time.
type OpenOp = (Arc<str>, Option<Arc<str>>, String, Instant);

struct Collector {
    origin: Instant,
    recs: Mutex<Vec<Rec>>,
    open: Mutex<HashMap<u64, OpenOp>>,
    sub: Mutex<Option<u64>>,
    last_counter: Mutex<Option<Instant>>,
}

fn collector() -> &'static Collector {
    static C: OnceLock<Collector> = OnceLock::new();
    C.get_or_init(|| Collector {
        origin: Instant::now(),
        recs: Mutex::new(Vec::new()),
        open: Mutex::new(HashMap::new()),
        sub: Mutex::new(None),
        last_counter: Mutex::new(None),
    })
}

fn us(c: &Collector, t: Instant) -> f64 {
    t.saturating_duration_since(c.origin).as_secs_f64() * 1e6
}

fn frontend_thread() -> String {
    let t = std::thread::current();
    match t.name() {
        Some(n) => format!("frontend {n}"),
        None => format!("frontend {:?}", t.id()),
    }
}

fn on_event(ev: &EngineEvent) {
    let c = collector();
    match ev {
        EngineEvent::OpStart { op_id, name, detail, device, thread, at } => {
            c.open.lock().insert(*op_id, (name.clone(), detail.clone(), format!("{thread} [{device}]"), *at));
        }
        EngineEvent::OpEnd { op_id, at, failed, .. } => {
            if let Some((name, detail, thread, start)) = c.open.lock().remove(op_id) {
                let args = format!(
                    "{{\"failed\": {failed}{}}}",
                    detail.map(|d| format!(", \"detail\": {:?}", d.to_string())).unwrap_or_default()
                );
                let rec: Rec =
                    ("X", name.to_string(), "operator", thread, us(c, start), us(c, *at) - us(c, start), args);
                c.recs.lock().push(rec);
            }
        }
        EngineEvent::WaitEnd { target, label, started, at } => {
            let what = match target {
                WaitTarget::Read(v) => format!("array var {v}"),
                WaitTarget::Write(v) => format!("array var {v} (write)"),
                WaitTarget::All => "waitall".to_string(),
            };
            let label = label.as_deref().unwrap_or("<unknown>").to_string();
            let args = format!("{{\"waited_for\": {what:?}, \"site\": {label:?}}}");
            let rec: Rec = (
                "X",
                format!("wait {label}"),
                "wait",
                frontend_thread(),
                us(c, *started),
                us(c, *at) - us(c, *started),
                args,
            );
            c.recs.lock().push(rec);
        }
        EngineEvent::Counters { in_flight, bytes_in_flight, at, .. } => {
            let mut last = c.last_counter.lock();
            if last.is_none_or(|l| at.saturating_duration_since(l).as_micros() >= 200) {
                *last = Some(*at);
                let args = format!("{{\"ops_in_flight\": {in_flight}, \"bytes_in_flight\": {bytes_in_flight}}}");
                c.recs.lock().push(("C", "engine".into(), "counter", "engine".into(), us(c, *at), 0.0, args));
            }
        }
        _ => {}
    }
}

/// Starts collecting engine events.
#[pyfunction]
fn profiler_start() {
    let c = collector();
    let mut sub = c.sub.lock();
    if sub.is_none() {
        *sub = Some(Engine::global().subscribe(Arc::new(on_event)));
    }
}

/// Stops collecting.
#[pyfunction]
fn profiler_stop() {
    let c = collector();
    if let Some(id) = c.sub.lock().take() {
        Engine::global().unsubscribe(id);
    }
}

/// Whether collecting.
#[pyfunction]
fn profiler_running() -> bool {
    collector().sub.lock().is_some()
}

/// Returns the collected records (and clears them when `reset`).
#[pyfunction]
#[pyo3(signature = (reset=false))]
fn profiler_events(reset: bool) -> Vec<Rec> {
    let c = collector();
    let mut r = c.recs.lock();
    if reset {
        std::mem::take(&mut *r)
    } else {
        r.clone()
    }
}

/// Microseconds since the profiler's origin (for frontend-side events).
#[pyfunction]
fn profiler_now_us() -> f64 {
    let c = collector();
    us(c, Instant::now())
}

/// Registers profiler functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(profiler_start, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_stop, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_running, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_events, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_now_us, m)?)?;
    Ok(())
}
