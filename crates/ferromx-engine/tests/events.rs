//! Profiler events and devices: what listeners receive, on which thread ops
//! run, and that ordering holds across device pools.
mod common;

use common::*;
use ferromx_engine::{Device, EngineEvent, ErrorKind, Op, OpFailure, WaitTarget};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};

type Log = Arc<Mutex<Vec<EngineEvent>>>;

fn recorder() -> (Log, ferromx_engine::Listener) {
    let log: Log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    (log, Arc::new(move |e: &EngineEvent| l.lock().unwrap().push(e.clone())))
}

fn has(log: &Log, f: impl Fn(&EngineEvent) -> bool) -> bool {
    log.lock().unwrap().iter().any(f)
}

#[test]
fn listeners_see_ops_waits_vars_and_counters() {
    with_deadline(DEADLINE, || {
        let engine = threaded(1);
        let (log, listener) = recorder();
        let id = engine.subscribe(listener);
        let v = engine.new_var();
        let vid = v.id();
        let (tx, rx) = mpsc::channel();
        engine.push(
            Op::new("evt_op", move || {
                tx.send(std::thread::current().name().unwrap_or("").to_string()).unwrap();
                Ok(())
            })
            .writes([&v])
            .detail(Some("shape=(2,3)".into()))
            .label(Some("evt.py:1".into())),
        );
        engine.read_ticket(&v, Some("evt.py:2 asnumpy".into())).unwrap().finish().unwrap();
        let worker = rx.recv_timeout(DEADLINE).expect("op ran");
        assert!(worker.starts_with("ferromx-cpu(0)-w"), "worker thread named {worker:?}");
        let w = engine.new_var();
        engine.push(Op::new("evt_fail", || Err(OpFailure::runtime("no"))).writes([&w]));
        assert_eq!(engine.wait_all().unwrap_err().op, "evt_fail");
        drop(v);
        eventually(DEADLINE, "VarDelete of the dropped var", || {
            has(&log, |e| matches!(e, EngineEvent::VarDelete { var } if *var == vid))
        });
        eventually(DEADLINE, "final counters", || {
            has(&log, |e| {
                matches!(e, EngineEvent::Counters { pushed, completed, in_flight: 0, bytes_in_flight: 0, .. }
                    if pushed == completed && *pushed >= 3)
            })
        });
        engine.unsubscribe(id);
        let events = log.lock().unwrap().clone();

        assert!(events.iter().any(|e| matches!(e, EngineEvent::VarNew { var } if *var == vid)));
        assert!(events.iter().any(|e| matches!(e, EngineEvent::VarNew { var } if *var == w.id())));
        let (start_id, start_at) = events
            .iter()
            .find_map(|e| match e {
                EngineEvent::OpStart { op_id, name, detail, device, thread, at } if &**name == "evt_op" => {
                    assert_eq!(detail.as_deref(), Some("shape=(2,3)"));
                    assert_eq!(*device, Device::cpu(0));
                    assert_eq!(&**thread, worker);
                    Some((*op_id, *at))
                }
                _ => None,
            })
            .expect("OpStart of evt_op");
        let end = events
            .iter()
            .find_map(|e| match e {
                EngineEvent::OpEnd { op_id, name, thread, at, failed, device } if *op_id == start_id => {
                    assert_eq!(&**name, "evt_op");
                    assert_eq!(&**thread, worker);
                    assert_eq!(*device, Device::cpu(0));
                    assert!(!failed);
                    Some(*at)
                }
                _ => None,
            })
            .expect("OpEnd of evt_op");
        assert!(end >= start_at);
        assert!(events
            .iter()
            .any(|e| matches!(e, EngineEvent::OpEnd { name, failed: true, .. } if &**name == "evt_fail")));
        let label = Some(Arc::<str>::from("evt.py:2 asnumpy"));
        let ws = events
            .iter()
            .position(|e| matches!(e, EngineEvent::WaitStart { target: WaitTarget::Read(x), label: l, .. } if *x == vid && *l == label))
            .expect("WaitStart of the read wait");
        let we = events
            .iter()
            .position(|e| match e {
                EngineEvent::WaitEnd { target: WaitTarget::Read(x), label: l, started, at }
                    if *x == vid && *l == label =>
                {
                    assert!(at >= started);
                    true
                }
                _ => false,
            })
            .expect("WaitEnd of the read wait");
        assert!(ws < we);
        assert!(events
            .iter()
            .any(|e| matches!(e, EngineEvent::WaitStart { target: WaitTarget::All, label: None, .. })));
        assert!(events.iter().any(|e| matches!(e, EngineEvent::WaitEnd { target: WaitTarget::All, .. })));
        assert!(events.iter().any(|e| matches!(e, EngineEvent::Counters { in_flight, .. } if *in_flight > 0)));

        // Unsubscribed: nothing more arrives.
        let n = log.lock().unwrap().len();
        let x = engine.new_var();
        engine.push(Op::new("quiet", || Ok(())).writes([&x]));
        engine.wait_to_read(&x).unwrap();
        engine.wait_all().unwrap();
        drop(x);
        assert_eq!(log.lock().unwrap().len(), n, "events after unsubscribe");
    });
}

#[test]
fn several_listeners_are_independent() {
    with_deadline(DEADLINE, || {
        let engine = threaded(2);
        let (a, la) = recorder();
        let (b, lb) = recorder();
        let ia = engine.subscribe(la);
        let _ib = engine.subscribe(lb);
        let v = engine.new_var();
        engine.unsubscribe(ia);
        let u = engine.new_var();
        let count = |log: &Log, id: u64| {
            log.lock().unwrap().iter().filter(|e| matches!(e, EngineEvent::VarNew { var } if *var == id)).count()
        };
        assert_eq!((count(&a, v.id()), count(&b, v.id())), (1, 1));
        assert_eq!((count(&a, u.id()), count(&b, u.id())), (0, 1));
        engine.push(Op::new("seen_by_b", || Ok(())).writes([&u]));
        engine.wait_all().unwrap();
        assert!(has(&b, |e| matches!(e, EngineEvent::OpStart { name, .. } if &**name == "seen_by_b")));
        assert!(!has(&a, |e| matches!(e, EngineEvent::OpStart { .. })));
        engine.unsubscribe(12345); // unknown ids are ignored
    });
}

#[test]
fn listeners_see_naive_ops_on_the_calling_thread() {
    with_deadline(DEADLINE, || {
        let engine = Arc::new(naive());
        let (log, l) = recorder();
        engine.subscribe(l);
        let v = engine.new_var();
        let push_from = |thread: &'static str| {
            let (e, v) = (engine.clone(), v.clone());
            std::thread::Builder::new()
                .name(thread.into())
                .spawn(move || e.push(Op::new(thread, || Ok(())).writes([&v])))
                .unwrap()
                .join()
                .unwrap();
            // Both events were reported before push returned, naming the pushing thread.
            let events = log.lock().unwrap().clone();
            let starts: Vec<_> = events
                .iter()
                .filter(|e| matches!(e, EngineEvent::OpStart { name, thread: t, .. } if &**name == thread && &**t == thread))
                .collect();
            let ends: Vec<_> = events
                .iter()
                .filter(|e| matches!(e, EngineEvent::OpEnd { name, thread: t, failed: false, .. } if &**name == thread && &**t == thread))
                .collect();
            assert_eq!((starts.len(), ends.len()), (1, 1), "events of {thread}: {events:#?}");
        };
        push_from("naive-pusher-a");
        push_from("naive-pusher-b");
    });
}

#[test]
fn each_device_has_its_own_pool_and_ordering_spans_devices() {
    with_deadline(DEADLINE, || {
        let engine = threaded(2);
        let v = engine.new_var();
        let cell = Arc::new(AtomicU64::new(0));
        let names = Arc::new(Mutex::new(Vec::new()));
        let gate = Gate::new();
        let _guard = OpenOnDrop(gate.clone());
        let devices = [Device::cpu(0), Device::gpu(0), Device::cpu_pinned(0), Device::cpu(1), Device::gpu(1)];
        for (i, d) in devices.iter().enumerate() {
            let (c, n, g) = (cell.clone(), names.clone(), gate.clone());
            engine.push(
                Op::new("dev", move || {
                    if i == 0 {
                        g.wait()?;
                    }
                    // Each op sees the previous device's write: order spans pools.
                    let prev = c.swap(i as u64 + 1, Ordering::SeqCst);
                    if prev != i as u64 {
                        return Err(OpFailure::new(ErrorKind::Value, format!("op {i} saw {prev}")));
                    }
                    n.lock().unwrap().push(std::thread::current().name().unwrap_or("").to_string());
                    Ok(())
                })
                .writes([&v])
                .device(*d),
            );
        }
        gate.open();
        engine.wait_to_read(&v).unwrap();
        assert_eq!(cell.load(Ordering::SeqCst), devices.len() as u64);
        let names = names.lock().unwrap().clone();
        for (name, d) in names.iter().zip(devices) {
            assert!(name.starts_with(&format!("ferromx-{d}-w")), "{name} for {d}");
        }
        assert_eq!(names[1], "ferromx-gpu(0)-w0", "accelerator pools have one thread");
        assert_eq!(Device::default(), Device::cpu(0));
        engine.wait_all().unwrap();
    });
}
