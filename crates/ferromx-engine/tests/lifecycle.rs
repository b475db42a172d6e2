//! Lifetimes and flow control: deferred var deletion, engine shutdown,
//! back-pressure on ops and bytes in flight, naive mode, priorities.
mod common;

use common::*;
use ferromx_engine::{Engine, EngineConfig, EngineMode, Op};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};

fn gated(gate: &Arc<Gate>) -> Op {
    let gate = gate.clone();
    Op::new("gated", move || gate.wait())
}

#[test]
fn var_deletion_is_deferred_until_its_ops_complete() {
    with_deadline(DEADLINE, || {
        let engine = threaded(2);
        let v = engine.new_var();
        let op_done = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let seen = op_done.clone();
        v.set_on_delete(move || tx.send(seen.load(Ordering::SeqCst)).unwrap());
        let gate = Gate::new();
        let _guard = OpenOnDrop(gate.clone());
        let (g, d) = (gate.clone(), op_done.clone());
        engine.push(
            Op::new("uses_v", move || {
                g.wait()?;
                d.store(true, Ordering::SeqCst);
                Ok(())
            })
            .writes([&v]),
        );
        engine.push(Op::new("reads_v", || Ok(())).reads([&v]));
        drop(v);
        assert!(rx.recv_timeout(BLOCKED_FOR).is_err(), "deleted while an op pushed against it is pending");
        gate.open();
        let op_finished_first = rx.recv_timeout(DEADLINE).expect("deleted after the ops completed");
        assert!(op_finished_first);
        engine.wait_all().unwrap();
    });
}

#[test]
fn var_without_pending_ops_is_deleted_on_drop() {
    with_deadline(DEADLINE, || {
        let engine = threaded(1);
        let deleted = Arc::new(AtomicUsize::new(0));
        let v = engine.new_var();
        let d = deleted.clone();
        v.set_on_delete(move || {
            d.fetch_add(1, Ordering::SeqCst);
        });
        let clone = v.clone();
        assert!(clone.same(&v));
        assert_eq!(clone.id(), v.id());
        assert!(!engine.new_var().same(&v));
        drop(v);
        assert_eq!(deleted.load(Ordering::SeqCst), 0, "a clone is still alive");
        drop(clone);
        assert_eq!(deleted.load(Ordering::SeqCst), 1, "deleted synchronously by the last drop");
        // A var whose ops all completed is deleted soon after its last handle goes.
        let w = engine.new_var();
        let d = deleted.clone();
        w.set_on_delete(move || {
            d.fetch_add(1, Ordering::SeqCst);
        });
        engine.push(Op::new("w", || Ok(())).writes([&w]));
        engine.wait_all().unwrap();
        drop(w);
        eventually(DEADLINE, "on_delete after completion", || deleted.load(Ordering::SeqCst) == 2);
    });
}

#[test]
fn op_closures_are_released_after_they_run() {
    with_deadline(DEADLINE, || {
        let engine = threaded(2);
        let payload = Arc::new(vec![0u8; 1024]);
        let v = engine.new_var();
        for _ in 0..16 {
            let p = payload.clone();
            engine.push(
                Op::new("holds", move || {
                    assert_eq!(p.len(), 1024);
                    Ok(())
                })
                .writes([&v]),
            );
        }
        engine.wait_all().unwrap();
        eventually(DEADLINE, "captures dropped", || Arc::strong_count(&payload) == 1);
    });
}

#[test]
fn dropping_the_engine_waits_for_pending_ops() {
    with_deadline(DEADLINE, || {
        let engine = threaded(1);
        let gate = Gate::new();
        let _guard = OpenOnDrop(gate.clone());
        let ran = Arc::new(AtomicBool::new(false));
        let (g, r) = (gate.clone(), ran.clone());
        let v = engine.new_var();
        engine.push(
            Op::new("last", move || {
                g.wait()?;
                r.store(true, Ordering::SeqCst);
                Ok(())
            })
            .writes([&v]),
        );
        let (tx, rx) = mpsc::channel();
        let h = std::thread::spawn(move || {
            drop(engine);
            tx.send(()).unwrap();
        });
        assert!(rx.recv_timeout(BLOCKED_FOR).is_err(), "engine dropped with an op still pending");
        gate.open();
        rx.recv_timeout(DEADLINE).expect("engine drop returns once its ops are done");
        h.join().unwrap();
        assert!(ran.load(Ordering::SeqCst));
        // The var outlives the engine harmlessly.
        assert!(v.error().is_none());
    });
}

/// Pushes `n` gated ops from a new thread, counting each completed push.
fn spawn_pusher(
    engine: &Arc<Engine>,
    gate: &Arc<Gate>,
    n: usize,
    bytes: u64,
) -> (Arc<AtomicUsize>, mpsc::Receiver<()>, std::thread::JoinHandle<()>) {
    let pushed = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    let (engine, gate, p) = (engine.clone(), gate.clone(), pushed.clone());
    let h = std::thread::spawn(move || {
        for _ in 0..n {
            engine.push(gated(&gate).bytes(bytes));
            p.fetch_add(1, Ordering::SeqCst);
        }
        tx.send(()).unwrap();
    });
    (pushed, rx, h)
}

#[test]
fn push_blocks_at_the_inflight_op_bound() {
    with_deadline(DEADLINE, || {
        let engine =
            Arc::new(Engine::new(EngineConfig { cpu_workers: 1, max_inflight_ops: 4, ..EngineConfig::default() }));
        assert!(!engine.over_limit());
        let gate = Gate::new();
        let _guard = OpenOnDrop(gate.clone());
        let (pushed, done, h) = spawn_pusher(&engine, &gate, 10, 0);
        eventually(DEADLINE, "four pushes", || pushed.load(Ordering::SeqCst) >= 4);
        assert!(done.recv_timeout(BLOCKED_FOR).is_err(), "pusher ran past the bound");
        let p = pushed.load(Ordering::SeqCst);
        assert!((4..=5).contains(&p), "{p} pushes with a bound of 4 and every op held");
        assert!(engine.inflight_ops() <= 5);
        assert!(engine.over_limit());
        gate.open();
        done.recv_timeout(DEADLINE).expect("pusher finishes once ops drain");
        h.join().unwrap();
        assert_eq!(pushed.load(Ordering::SeqCst), 10);
        engine.wait_all().unwrap();
        assert_eq!(engine.inflight_ops(), 0);
        assert!(!engine.over_limit());
    });
}

#[test]
fn push_blocks_at_the_inflight_byte_bound() {
    with_deadline(DEADLINE, || {
        let engine =
            Arc::new(Engine::new(EngineConfig { cpu_workers: 1, max_inflight_bytes: 1000, ..EngineConfig::default() }));
        let gate = Gate::new();
        let _guard = OpenOnDrop(gate.clone());
        let (pushed, done, h) = spawn_pusher(&engine, &gate, 8, 400);
        eventually(DEADLINE, "three pushes", || pushed.load(Ordering::SeqCst) >= 3);
        assert!(done.recv_timeout(BLOCKED_FOR).is_err(), "pusher ran past the byte bound");
        let p = pushed.load(Ordering::SeqCst);
        assert!((3..=4).contains(&p), "{p} pushes of 400 B with a bound of 1000 B");
        assert!(engine.inflight_bytes() >= 1000);
        assert!(engine.over_limit());
        gate.open();
        done.recv_timeout(DEADLINE).expect("pusher finishes once bytes drain");
        h.join().unwrap();
        engine.wait_all().unwrap();
        assert_eq!(engine.inflight_bytes(), 0);
        // One op larger than the whole bound still goes through on an idle engine.
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        engine.push(
            Op::new("huge", move || {
                r.store(true, Ordering::SeqCst);
                Ok(())
            })
            .bytes(1 << 20),
        );
        engine.wait_all().unwrap();
        assert!(ran.load(Ordering::SeqCst));
    });
}

#[test]
fn throttle_blocks_until_work_drains() {
    with_deadline(DEADLINE, || {
        let engine =
            Arc::new(Engine::new(EngineConfig { cpu_workers: 1, max_inflight_ops: 2, ..EngineConfig::default() }));
        engine.throttle(); // no-op when under the bound
        let gate = Gate::new();
        let _guard = OpenOnDrop(gate.clone());
        engine.push(gated(&gate));
        engine.push(gated(&gate));
        assert!(engine.over_limit());
        let (tx, rx) = mpsc::channel();
        let e = engine.clone();
        let h = std::thread::spawn(move || {
            e.throttle();
            tx.send(()).unwrap();
        });
        assert!(rx.recv_timeout(BLOCKED_FOR).is_err(), "throttle returned over the bound");
        gate.open();
        rx.recv_timeout(DEADLINE).expect("throttle returns after draining");
        h.join().unwrap();
        engine.wait_all().unwrap();
    });
}

#[test]
fn pushes_from_inside_ops_are_never_throttled() {
    with_deadline(DEADLINE, || {
        let engine =
            Arc::new(Engine::new(EngineConfig { cpu_workers: 1, max_inflight_ops: 2, ..EngineConfig::default() }));
        let count = Arc::new(AtomicUsize::new(0));
        let (eng, c) = (engine.clone(), count.clone());
        let v = engine.new_var();
        engine.push(
            Op::new("fan_out", move || {
                assert!(!eng.over_limit(), "over_limit is false inside ops");
                for _ in 0..50 {
                    let c = c.clone();
                    // With one worker, blocking here would deadlock.
                    eng.push(Op::new("child", move || {
                        c.fetch_add(1, Ordering::SeqCst);
                        Ok(())
                    }));
                }
                Ok(())
            })
            .writes([&v]),
        );
        engine.wait_all().unwrap();
        assert_eq!(count.load(Ordering::SeqCst), 50);
    });
}

#[test]
fn naive_mode_runs_ops_on_the_pushing_thread() {
    with_deadline(DEADLINE, || {
        let engine = Arc::new(Engine::new(EngineConfig {
            mode: EngineMode::Naive,
            max_inflight_ops: 1,
            ..EngineConfig::default()
        }));
        assert!(engine.is_naive());
        assert!(!threaded(1).is_naive());
        let check = |engine: &Engine| {
            let v = engine.new_var();
            for i in 0..20 {
                let ran_on = Arc::new(Mutex::new(None));
                let r = ran_on.clone();
                engine.push(
                    Op::new("naive_op", move || {
                        *r.lock().unwrap() = Some(std::thread::current().id());
                        Ok(())
                    })
                    .writes([&v])
                    .bytes(i),
                );
                assert_eq!(*ran_on.lock().unwrap(), Some(std::thread::current().id()), "done when push returns");
                assert!(engine.is_ready(&v));
                assert_eq!(engine.inflight_ops(), 0);
                assert_eq!(engine.inflight_bytes(), 0);
                assert!(!engine.over_limit(), "naive mode never throttles");
            }
            engine.wait_all().unwrap();
        };
        check(&engine);
        let e = engine.clone();
        std::thread::spawn(move || check(&e)).join().unwrap();
    });
}

#[test]
fn priority_ops_are_taken_before_normal_ready_ops() {
    with_deadline(DEADLINE, || {
        let engine = threaded(1);
        let gate = Gate::new();
        let _guard = OpenOnDrop(gate.clone());
        let (tx, rx) = mpsc::channel();
        let g = gate.clone();
        engine.push(Op::new("blocker", move || {
            tx.send(()).unwrap();
            g.wait()
        }));
        rx.recv_timeout(DEADLINE).expect("blocker occupies the only worker");
        let order = Arc::new(Mutex::new(Vec::new()));
        for (name, prio) in [("n1", 0), ("n2", 0), ("n3", -1), ("p1", 5), ("n4", 0)] {
            let o = order.clone();
            engine.push(
                Op::new(name, move || {
                    o.lock().unwrap().push(name);
                    Ok(())
                })
                .priority(prio),
            );
        }
        gate.open();
        engine.wait_all().unwrap();
        assert_eq!(*order.lock().unwrap(), vec!["p1", "n1", "n2", "n3", "n4"]);
    });
}

#[test]
fn priority_does_not_break_dependencies() {
    with_deadline(DEADLINE, || {
        let engine = threaded(2);
        let v = engine.new_var();
        let log = Arc::new(Mutex::new(Vec::new()));
        let gate = Gate::new();
        let _guard = OpenOnDrop(gate.clone());
        let (g, l) = (gate.clone(), log.clone());
        engine.push(
            Op::new("slow_write", move || {
                g.wait()?;
                l.lock().unwrap().push("write");
                Ok(())
            })
            .writes([&v]),
        );
        for i in 0..4 {
            let l = log.clone();
            engine.push(
                Op::new("urgent_read", move || {
                    l.lock().unwrap().push("read");
                    Ok(())
                })
                .reads([&v])
                .priority(10 + i),
            );
        }
        let l = log.clone();
        engine.push(
            Op::new("urgent_write", move || {
                l.lock().unwrap().push("write2");
                Ok(())
            })
            .writes([&v])
            .priority(100),
        );
        gate.open();
        engine.wait_to_read(&v).unwrap();
        assert_eq!(*log.lock().unwrap(), vec!["write", "read", "read", "read", "read", "write2"]);
    });
}

#[test]
fn write_events_count_each_write_twice_in_both_modes() {
    with_deadline(DEADLINE, || {
        for engine in [threaded(2), naive()] {
            let v = engine.new_var();
            assert_eq!(v.write_events(), 0);
            engine.push(Op::new("reads_v", || Ok(())).reads([&v]));
            engine.wait_all().unwrap();
            assert_eq!(v.write_events(), 0, "a read is not a write");
            for _ in 0..3 {
                engine.push(Op::new("writes_v", || Ok(())).writes([&v]));
            }
            engine.push(Op::new("fails_on_v", || Err(ferromx_engine::OpFailure::runtime("no"))).writes([&v]));
            let _ = engine.wait_all();
            assert_eq!(v.write_events(), 8, "three writes and a failed one, each granted and completed");
            let w = engine.new_var();
            assert_eq!(w.write_events(), 0);
        }
    });
}

#[test]
fn next_var_id_is_the_id_of_the_next_var_and_creates_none() {
    let engine = threaded(1);
    let before = engine.next_var_id();
    assert_eq!(engine.next_var_id(), before, "reading it makes no variable");
    let v = engine.new_var();
    assert_eq!(v.id(), before);
    assert!(engine.next_var_id() > v.id());
}
