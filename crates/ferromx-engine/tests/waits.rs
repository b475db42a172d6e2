//! Waits block only for what they need: `wait_to_read` for pending writes,
//! `wait_to_write` for pending reads and writes, `wait_all` for everything.
//! Timing is controlled by gates inside ops; the test thread never sleeps.
mod common;

use common::*;
use ferromx_engine::{Engine, Op, Var};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// An op that reports it started, then blocks until `gate` opens.
fn gated(name: &'static str, gate: &Arc<Gate>, started: Option<mpsc::Sender<()>>) -> Op {
    let gate = gate.clone();
    Op::new(name, move || {
        if let Some(s) = started {
            let _ = s.send(());
        }
        gate.wait()
    })
}

/// An op that stores `val` into `cell` once `gate` opens.
fn gated_store(gate: &Arc<Gate>, cell: &Arc<AtomicU64>, val: u64) -> Op {
    let (gate, cell) = (gate.clone(), cell.clone());
    Op::new("gated_store", move || {
        gate.wait()?;
        cell.store(val, Ordering::SeqCst);
        Ok(())
    })
}

#[test]
fn a_running_reader_blocks_wait_to_write_but_not_wait_to_read() {
    with_deadline(DEADLINE, || {
        let engine = threaded(2);
        let v = engine.new_var();
        let cell = Arc::new(AtomicU64::new(0));
        let open = Gate::new();
        open.open();
        engine.push(gated_store(&open, &cell, 7).writes([&v]));
        let gate = Gate::new();
        let _guard = OpenOnDrop(gate.clone());
        let (tx, rx) = mpsc::channel();
        engine.push(gated("long_reader", &gate, Some(tx)).reads([&v]));
        rx.recv_timeout(DEADLINE).expect("reader started");
        // The write before the reader is done; the reader itself does not matter.
        engine.wait_to_read(&v).unwrap();
        assert_eq!(cell.load(Ordering::SeqCst), 7);
        assert!(engine.is_ready(&v));
        let t = engine.write_ticket(&v, None).unwrap();
        assert!(!t.is_done());
        assert!(!t.wait_timeout(Some(BLOCKED_FOR)), "wait_to_write returned while a reader runs");
        gate.open();
        assert!(t.wait_timeout(Some(DEADLINE)));
        assert!(t.is_done());
        t.finish().unwrap();
    });
}

#[test]
fn wait_to_read_waits_for_the_write_but_not_for_reads_queued_after_it() {
    with_deadline(DEADLINE, || {
        let engine = threaded(3);
        let v = engine.new_var();
        let cell = Arc::new(AtomicU64::new(0));
        let (g_write, g_read) = (Gate::new(), Gate::new());
        let _guards = (OpenOnDrop(g_write.clone()), OpenOnDrop(g_read.clone()));
        engine.push(gated_store(&g_write, &cell, 11).writes([&v]));
        let (tx, rx) = mpsc::channel();
        engine.push(gated("queued_reader", &g_read, Some(tx)).reads([&v]));
        assert!(!engine.is_ready(&v));
        let rt = engine.read_ticket(&v, None).unwrap();
        assert!(!rt.wait_timeout(Some(BLOCKED_FOR)), "wait_to_read returned before the write ran");
        assert_eq!(cell.load(Ordering::SeqCst), 0);
        g_write.open();
        assert!(rt.wait_timeout(Some(DEADLINE)), "wait_to_read must not wait for the later reader");
        rt.finish().unwrap();
        assert_eq!(cell.load(Ordering::SeqCst), 11);
        rx.recv_timeout(DEADLINE).expect("the queued reader runs once the write is done");
        let wt = engine.write_ticket(&v, None).unwrap();
        assert!(!wt.wait_timeout(Some(BLOCKED_FOR)));
        g_read.open();
        wt.finish().unwrap();
    });
}

#[test]
fn is_ready_never_blocks_and_turns_true_after_completion() {
    with_deadline(DEADLINE, || {
        let engine = threaded(1);
        let (v, untouched) = (engine.new_var(), engine.new_var());
        assert!(engine.is_ready(&v));
        let gate = Gate::new();
        let _guard = OpenOnDrop(gate.clone());
        let cell = Arc::new(AtomicU64::new(0));
        engine.push(gated_store(&gate, &cell, 5).writes([&v]));
        // A reader does not make a var unready.
        engine.push(Op::new("reader", || Ok(())).reads([&untouched]));
        let start = Instant::now();
        for _ in 0..10_000 {
            assert!(!engine.is_ready(&v));
        }
        assert!(start.elapsed() < DEADLINE);
        gate.open();
        eventually(DEADLINE, "is_ready after the write completes", || engine.is_ready(&v));
        assert_eq!(cell.load(Ordering::SeqCst), 5, "ready implies the write's effect is visible");
        engine.wait_all().unwrap();
        assert!(engine.is_ready(&untouched));
    });
}

#[test]
fn many_threads_wait_at_once() {
    with_deadline(DEADLINE, || {
        let engine = Arc::new(threaded(2));
        let v = engine.new_var();
        let cell = Arc::new(AtomicU64::new(0));
        let gate = Gate::new();
        let _guard = OpenOnDrop(gate.clone());
        engine.push(gated_store(&gate, &cell, 42).writes([&v]));
        let (tx, rx) = mpsc::channel();
        let mut hs = Vec::new();
        for i in 0..9 {
            let (engine, v, cell, tx) = (engine.clone(), v.clone(), cell.clone(), tx.clone());
            hs.push(std::thread::spawn(move || {
                let r = match i % 3 {
                    0 => engine.wait_to_read(&v),
                    1 => engine.wait_to_write(&v),
                    _ => engine.wait_all(),
                };
                tx.send((i, r.is_ok(), cell.load(Ordering::SeqCst))).unwrap();
            }));
        }
        drop(tx);
        assert!(rx.recv_timeout(BLOCKED_FOR).is_err(), "a wait returned while the write it waits for is held open");
        gate.open();
        let mut got: Vec<_> = (0..9).map(|_| rx.recv_timeout(DEADLINE).expect("every waiter returns")).collect();
        got.sort();
        for (i, ok, val) in got {
            assert!(ok, "waiter {i} failed");
            assert_eq!(val, 42, "waiter {i} returned before the write's effect");
        }
        for h in hs {
            h.join().unwrap();
        }
        // A waiter is released just before its internal wait op is retired.
        eventually(DEADLINE, "no op in flight", || engine.inflight_ops() == 0);
    });
}

#[test]
fn wait_timeout_is_false_while_held_and_true_after_release() {
    with_deadline(DEADLINE, || {
        let engine = threaded(2);
        let (v, r) = (engine.new_var(), engine.new_var());
        let gate = Gate::new();
        let _guard = OpenOnDrop(gate.clone());
        let (tx, rx) = mpsc::channel();
        engine.push(gated("held", &gate, Some(tx)).writes([&v]).reads([&r]));
        rx.recv_timeout(DEADLINE).expect("op started");
        // Reading a var the held op only reads needs no wait at all.
        let free = engine.read_ticket(&r, None).unwrap();
        assert!(free.is_done());
        assert!(free.wait_timeout(Some(Duration::ZERO)));
        let tickets = [
            ("read", engine.read_ticket(&v, Some("w.rs:1".into())).unwrap()),
            ("write", engine.write_ticket(&v, None).unwrap()),
            ("write of a read var", engine.write_ticket(&r, None).unwrap()),
            ("all", engine.all_ticket(None).unwrap()),
        ];
        for (what, t) in &tickets {
            assert!(!t.is_done(), "{what}");
            assert!(!t.wait_timeout(Some(BLOCKED_FOR)), "{what} ticket done while the op is held");
            assert!(!t.wait_timeout(Some(Duration::ZERO)), "{what}");
        }
        gate.open();
        for (what, t) in tickets {
            // Wait in short slices, as a frontend checking for Ctrl-C would.
            let start = Instant::now();
            while !t.wait_timeout(Some(Duration::from_millis(1))) {
                assert!(start.elapsed() < DEADLINE, "{what} ticket never completed");
            }
            assert!(t.is_done());
            t.finish().unwrap();
        }
        free.finish().unwrap();
    });
}

#[test]
fn wait_all_covers_ops_pushed_from_inside_ops() {
    with_deadline(DEADLINE, || {
        let engine = Arc::new(threaded(2));
        let v = engine.new_var();
        let cell = Arc::new(AtomicU64::new(0));
        let gate = Gate::new();
        let _guard = OpenOnDrop(gate.clone());
        let (tx, rx) = mpsc::channel();
        let (eng, v2, g2, c2) = (engine.clone(), v.clone(), gate.clone(), cell.clone());
        engine.push(Op::new("parent", move || {
            eng.push(gated_store(&g2, &c2, 3).writes([&v2]));
            tx.send(()).unwrap();
            Ok(())
        }));
        rx.recv_timeout(DEADLINE).expect("parent ran");
        let t = engine.all_ticket(None).unwrap();
        assert!(!t.wait_timeout(Some(BLOCKED_FOR)), "wait_all ignored the child op");
        assert!(!engine.is_ready(&v));
        gate.open();
        t.finish().unwrap();
        assert_eq!(cell.load(Ordering::SeqCst), 3);
        assert!(engine.is_ready(&v));
    });
}

#[test]
fn waits_on_idle_vars_return_at_once() {
    with_deadline(DEADLINE, || {
        let engine = threaded(1);
        let v = engine.new_var();
        for t in [
            engine.read_ticket(&v, None).unwrap(),
            engine.write_ticket(&v, None).unwrap(),
            engine.all_ticket(None).unwrap(),
        ] {
            assert!(t.is_done());
            t.finish().unwrap();
        }
        assert_eq!(engine.inflight_ops(), 0, "an idle wait pushes nothing");
    });
}

fn chain_then_wait(engine: &Engine, vars: &[Var], rounds: usize) -> u64 {
    let total = Arc::new(AtomicU64::new(0));
    for i in 0..rounds {
        let t = total.clone();
        let (src, dst) = (&vars[i % vars.len()], &vars[(i + 1) % vars.len()]);
        engine.push(
            Op::new("step", move || {
                t.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .reads([src])
            .writes([dst]),
        );
        if i % 7 == 0 {
            engine.wait_to_read(dst).unwrap();
            assert!(engine.is_ready(dst));
            assert_eq!(total.load(Ordering::SeqCst), i as u64 + 1, "wait_to_read after a chain step");
        }
    }
    engine.wait_all().unwrap();
    total.load(Ordering::SeqCst)
}

#[test]
fn interleaved_waits_and_pushes_on_a_chain() {
    with_deadline(DEADLINE, || {
        for workers in 1..=3 {
            let engine = threaded(workers);
            let vars: Vec<Var> = (0..3).map(|_| engine.new_var()).collect();
            assert_eq!(chain_then_wait(&engine, &vars, 500), 500);
        }
        let engine = naive();
        let vars: Vec<Var> = (0..3).map(|_| engine.new_var()).collect();
        assert_eq!(chain_then_wait(&engine, &vars, 100), 100);
    });
}
