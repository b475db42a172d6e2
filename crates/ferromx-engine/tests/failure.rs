//! Failure semantics: a failing or panicking op marks the vars it writes;
//! failures propagate to every op touching a failed var (those ops are
//! skipped); a wait returns the original error once and clears it; waits
//! inside ops are refused.
mod common;

use common::*;
use ferromx_engine::{in_engine_op, Engine, ErrorKind, Op, OpFailure, Var};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};

fn failing(name: &'static str, kind: ErrorKind, msg: &'static str) -> Op {
    Op::new(name, move || Err(OpFailure::new(kind, msg)))
}

fn flag_op(name: &'static str, flag: &Arc<AtomicBool>) -> Op {
    let flag = flag.clone();
    Op::new(name, move || {
        flag.store(true, Ordering::SeqCst);
        Ok(())
    })
}

#[test]
fn err_marks_written_vars_failed_but_not_read_vars() {
    with_deadline(DEADLINE, || {
        let engine = threaded(2);
        let (a, b, c) = (engine.new_var(), engine.new_var(), engine.new_var());
        engine.push(
            failing("bad_op", ErrorKind::Value, "shape (2,3) does not match (3,2)")
                .reads([&c])
                .writes([&a, &b])
                .label(Some("model.py:7".into())),
        );
        let e = engine.wait_to_read(&a).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Value);
        assert_eq!(e.op, "bad_op");
        assert_eq!(e.label.as_deref(), Some("model.py:7"));
        assert_eq!(e.message, "shape (2,3) does not match (3,2)");
        assert_eq!(e.to_string(), "bad_op: shape (2,3) does not match (3,2) (pushed at model.py:7)");
        // b carries the same error until someone waits on it; c was only read.
        assert_eq!(b.error().expect("b failed").op, "bad_op");
        assert!(c.error().is_none());
        engine.wait_to_read(&c).unwrap();
        assert_eq!(engine.wait_to_write(&b).unwrap_err().op, "bad_op");
        assert!(b.error().is_none());
    });
}

#[test]
fn error_kinds_are_preserved() {
    with_deadline(DEADLINE, || {
        let engine = threaded(1);
        for kind in [ErrorKind::Runtime, ErrorKind::Index, ErrorKind::Value, ErrorKind::Type] {
            let v = engine.new_var();
            engine.push(failing("k", kind, "msg").writes([&v]));
            let e = engine.wait_to_read(&v).unwrap_err();
            assert_eq!(e.kind, kind);
            assert_eq!(e.label, None);
            assert_eq!(e.to_string(), "k: msg");
        }
        engine.wait_all().unwrap();
    });
}

#[test]
fn failure_propagates_along_a_chain_with_the_original_name_and_label() {
    with_deadline(DEADLINE, || {
        let engine = threaded(2);
        let (a, b, c, side) = (engine.new_var(), engine.new_var(), engine.new_var(), engine.new_var());
        let (ran_b, ran_c, ran_side) =
            (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        engine.push(
            failing("producer", ErrorKind::Index, "index 10 out of range for axis 0 of size 4")
                .writes([&a])
                .label(Some("train.py:42".into())),
        );
        engine.push(flag_op("middle", &ran_b).reads([&a]).writes([&b]).label(Some("train.py:43".into())));
        engine.push(flag_op("consumer", &ran_c).reads([&b]).writes([&c]).label(Some("train.py:44".into())));
        engine.push(flag_op("independent", &ran_side).writes([&side]));
        let e = engine.wait_to_read(&c).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Index);
        assert_eq!(e.op, "producer", "the error names the op that failed first");
        assert_eq!(e.label.as_deref(), Some("train.py:42"));
        assert!(e.message.contains("out of range"), "{e}");
        assert!(!ran_b.load(Ordering::SeqCst), "an op reading a failed var is skipped");
        assert!(!ran_c.load(Ordering::SeqCst), "failures propagate transitively");
        engine.wait_to_read(&side).unwrap();
        assert!(ran_side.load(Ordering::SeqCst), "ops not touching failed vars run");
        assert_eq!(b.error().unwrap().op, "producer");
        // An op writing (not reading) a failed var is skipped too and keeps the error.
        let ran_over = Arc::new(AtomicBool::new(false));
        engine.push(flag_op("overwrite", &ran_over).writes([&a]));
        assert_eq!(engine.wait_to_write(&a).unwrap_err().op, "producer");
        assert!(!ran_over.load(Ordering::SeqCst));
        engine.wait_all().unwrap_err();
    });
}

#[test]
fn panics_become_errors_of_kind_panic() {
    quiet_intentional_panics();
    with_deadline(DEADLINE, || {
        let engine = threaded(2);
        let (v, w) = (engine.new_var(), engine.new_var());
        engine.push(Op::new("boom", || panic!("{INTENTIONAL}: kaboom")).writes([&v]));
        engine.push(Op::new("boom_str", || std::panic::panic_any(IntentionalPanic)).writes([&w]));
        let e = engine.wait_to_read(&v).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Panic);
        assert_eq!(e.op, "boom");
        assert!(e.message.contains("kaboom"), "{e}");
        let e = engine.wait_to_read(&w).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Panic);
        assert!(e.message.contains("unknown panic"), "{e}");
        // The worker survived the panic and left the in-op flag clear.
        let (tx, rx) = mpsc::channel();
        for _ in 0..8 {
            let tx = tx.clone();
            engine.push(Op::new("after", move || {
                tx.send(in_engine_op()).unwrap();
                Ok(())
            }));
        }
        engine.wait_all().unwrap();
        assert!(!in_engine_op());
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), vec![true; 8]);
    });
}

#[test]
fn errors_are_reported_once() {
    with_deadline(DEADLINE, || {
        let engine = threaded(2);
        let v = engine.new_var();
        engine.push(failing("once", ErrorKind::Runtime, "bad").writes([&v]));
        assert!(engine.wait_to_read(&v).is_err());
        assert!(v.error().is_none());
        engine.wait_to_read(&v).unwrap();
        engine.wait_to_write(&v).unwrap();
        // The cleared var is usable again: a new write runs and succeeds.
        let ran = Arc::new(AtomicBool::new(false));
        engine.push(flag_op("rewrite", &ran).writes([&v]));
        engine.wait_to_read(&v).unwrap();
        assert!(ran.load(Ordering::SeqCst));
        // And wait_all does not report the already-reported error again.
        engine.wait_all().unwrap();
    });
}

#[test]
fn wait_all_returns_the_first_error_and_clears_all() {
    with_deadline(DEADLINE, || {
        let engine = threaded(2);
        let (a, b, c, d) = (engine.new_var(), engine.new_var(), engine.new_var(), engine.new_var());
        engine.push(failing("first", ErrorKind::Value, "1").writes([&a]));
        // A ticket that is never finished observes completion without clearing anything.
        assert!(engine.write_ticket(&a, None).unwrap().wait_timeout(Some(DEADLINE)));
        assert_eq!(a.error().unwrap().op, "first");
        engine.push(failing("second", ErrorKind::Type, "2").writes([&b]));
        engine.push(Op::new("inherits", || Ok(())).reads([&b]).writes([&c]));
        engine.push(Op::new("fine", || Ok(())).writes([&d]));
        let e = engine.wait_all().unwrap_err();
        assert_eq!((e.op.as_str(), e.kind), ("first", ErrorKind::Value));
        for v in [&a, &b, &c, &d] {
            assert!(v.error().is_none(), "{v:?} still carries an error after wait_all");
            engine.wait_to_read(v).unwrap();
        }
        engine.wait_all().unwrap();
    });
}

#[test]
fn wait_all_raises_errors_of_deleted_vars_once() {
    with_deadline(DEADLINE, || {
        let engine = threaded(1);
        // MXNet's WaitForAll rethrows a failure whose arrays were all discarded.
        let v = engine.new_var();
        engine.push(failing("orphan", ErrorKind::Runtime, "x").writes([&v]));
        drop(v);
        assert_eq!(engine.wait_all().unwrap_err().op, "orphan");
        engine.wait_all().unwrap();
        // A live var's error comes first; the orphaned one is cleared with it.
        let v = engine.new_var();
        engine.push(failing("orphan2", ErrorKind::Runtime, "x").writes([&v]));
        let keep = engine.new_var();
        engine.push(failing("kept", ErrorKind::Runtime, "y").writes([&keep]));
        drop(v);
        let e = engine.wait_all().unwrap_err();
        assert!(e.op == "orphan2" || e.op == "kept", "{e}");
        assert!(keep.error().is_none());
        engine.wait_all().unwrap();
    });
}

#[test]
fn wait_all_raises_the_failure_of_a_var_its_op_block_releases_last() {
    with_deadline(DEADLINE, || {
        let engine = threaded(2);
        // The op block holds the var's last handle and may release it after the
        // engine is idle, while `wait_all` collects failures: never missed.
        for i in 0..2000 {
            let (v, w) = (engine.new_var(), engine.new_var());
            engine.push(failing("orphan", ErrorKind::Runtime, "x").writes([&v]));
            engine.push(Op::new("inherits", || Ok(())).reads([&v]).writes([&w]));
            drop((v, w));
            let e = engine.wait_all();
            assert_eq!(e.map_err(|e| e.op).unwrap_err(), "orphan", "round {i}");
            engine.wait_all().unwrap_or_else(|e| panic!("round {i}: raised again: {e}"));
        }
    });
}

#[test]
fn an_error_raised_through_one_var_is_not_raised_again_for_a_deleted_one() {
    with_deadline(DEADLINE, || {
        let engine = threaded(1);
        // read, then delete the var the failure started at
        let (a, b) = (engine.new_var(), engine.new_var());
        engine.push(failing("src", ErrorKind::Value, "bad").writes([&a]));
        engine.push(Op::new("use", || Ok(())).reads([&a]).writes([&b]));
        assert_eq!(engine.wait_to_read(&b).unwrap_err().op, "src");
        drop(a);
        engine.wait_all().unwrap();
        // delete first (the intermediate of `f(g(x))`), then read the result
        let (a, b) = (engine.new_var(), engine.new_var());
        engine.push(failing("src2", ErrorKind::Value, "bad").writes([&a]));
        engine.push(Op::new("use2", || Ok(())).reads([&a]).writes([&b]));
        drop(a);
        assert_eq!(engine.wait_to_read(&b).unwrap_err().op, "src2");
        engine.wait_all().unwrap();
    });
}

#[test]
fn a_raised_error_clears_earlier_discarded_failures() {
    with_deadline(DEADLINE, || {
        let engine = threaded(1);
        let old = engine.new_var();
        engine.push(failing("discarded", ErrorKind::Value, "old").writes([&old]));
        drop(old);
        let seen = engine.new_var();
        engine.push(failing("seen", ErrorKind::Value, "new").writes([&seen]));
        assert_eq!(engine.wait_to_read(&seen).unwrap_err().op, "seen");
        // MXNet 1.9.1's test_exc_imperative: the program has handled a failure
        engine.wait_all().unwrap();
    });
}

#[test]
fn a_raise_handles_the_discarded_failures_pushed_before_it_whenever_they_are_deleted() {
    with_deadline(DEADLINE, || {
        let engine = threaded(2);
        // deleted only after the raise (its op block, say, held it): still handled
        let old = engine.new_var();
        engine.push(failing("earlier", ErrorKind::Value, "old").writes([&old]));
        let seen = engine.new_var();
        engine.push(failing("seen", ErrorKind::Value, "new").writes([&seen]));
        assert_eq!(engine.wait_to_read(&seen).unwrap_err().op, "seen");
        drop(old);
        engine.wait_all().unwrap();
        // a failure pushed after the raised one is not handled by it
        let seen = engine.new_var();
        engine.push(failing("seen2", ErrorKind::Value, "new").writes([&seen]));
        engine.wait_to_read(&seen).unwrap_err();
        let later = engine.new_var();
        engine.push(failing("later", ErrorKind::Value, "x").writes([&later]));
        drop(later);
        assert_eq!(engine.wait_all().unwrap_err().op, "later");
        engine.wait_all().unwrap();
    });
}

#[test]
fn engine_keeps_working_after_failures() {
    quiet_intentional_panics();
    with_deadline(DEADLINE, || {
        let engine = threaded(2);
        let vars: Vec<Var> = (0..8).map(|_| engine.new_var()).collect();
        for (i, v) in vars.iter().enumerate() {
            if i % 2 == 0 {
                engine.push(failing("fail", ErrorKind::Runtime, "no").writes([v]));
            } else {
                engine.push(Op::new("panic", || panic!("{INTENTIONAL}")).writes([v]));
            }
        }
        assert!(engine.wait_all().is_err());
        let count = Arc::new(AtomicUsize::new(0));
        for round in 0..50 {
            for v in &vars {
                let count = count.clone();
                engine.push(
                    Op::new("work", move || {
                        count.fetch_add(1, Ordering::SeqCst);
                        Ok(())
                    })
                    .writes([v])
                    .reads([&vars[(round + 1) % vars.len()]]),
                );
            }
        }
        engine.wait_all().unwrap();
        assert_eq!(count.load(Ordering::SeqCst), 50 * vars.len());
        for v in &vars {
            assert!(engine.is_ready(v));
            engine.wait_to_read(v).unwrap();
        }
        assert_eq!(engine.inflight_ops(), 0);
    });
}

fn check_wait_inside_op(engine: Arc<Engine>) {
    let v = engine.new_var();
    let other = engine.new_var();
    let (tx, rx) = mpsc::channel();
    let eng = engine.clone();
    let other2 = other.clone();
    engine.push(
        Op::new("waits_inside", move || {
            let r = (
                in_engine_op(),
                eng.wait_to_read(&other2).map_err(|e| e.kind),
                eng.wait_to_write(&other2).map_err(|e| e.kind),
                eng.wait_all().map_err(|e| e.kind),
                eng.read_ticket(&other2, None).err().map(|e| e.kind),
            );
            tx.send(r).unwrap();
            Ok(())
        })
        .writes([&v]),
    );
    let (inside, r, w, a, t) = rx.recv_timeout(DEADLINE).expect("op ran");
    assert!(inside);
    assert_eq!(r, Err(ErrorKind::WaitInsideOp));
    assert_eq!(w, Err(ErrorKind::WaitInsideOp));
    assert_eq!(a, Err(ErrorKind::WaitInsideOp));
    assert_eq!(t, Some(ErrorKind::WaitInsideOp));
    // The refused waits did not fail the op or any var.
    engine.wait_to_read(&v).unwrap();
    engine.wait_to_read(&other).unwrap();
    engine.wait_all().unwrap();
    assert!(!in_engine_op());
}

#[test]
fn waits_inside_ops_are_refused_threaded() {
    with_deadline(DEADLINE, || check_wait_inside_op(Arc::new(threaded(2))));
}

#[test]
fn waits_inside_ops_are_refused_naive() {
    with_deadline(DEADLINE, || check_wait_inside_op(Arc::new(naive())));
}

#[test]
fn an_op_may_return_a_refused_wait_as_its_error() {
    with_deadline(DEADLINE, || {
        let engine = Arc::new(threaded(1));
        let (v, out) = (engine.new_var(), engine.new_var());
        let eng = engine.clone();
        let v2 = v.clone();
        engine.push(
            Op::new("nested_wait", move || eng.wait_to_read(&v2).map_err(|e| OpFailure::new(e.kind, e.message)))
                .writes([&out]),
        );
        let e = engine.wait_to_read(&out).unwrap_err();
        assert_eq!(e.kind, ErrorKind::WaitInsideOp);
        assert_eq!(e.op, "nested_wait");
        engine.wait_all().unwrap();
    });
}

#[test]
fn failures_in_naive_mode_surface_the_same_way() {
    quiet_intentional_panics();
    with_deadline(DEADLINE, || {
        let engine = naive();
        let (a, b) = (engine.new_var(), engine.new_var());
        engine.push(failing("naive_bad", ErrorKind::Value, "v").writes([&a]).label(Some("n.py:1".into())));
        assert_eq!(a.error().unwrap().op, "naive_bad", "failed as soon as push returned");
        let ran = Arc::new(AtomicBool::new(false));
        engine.push(flag_op("naive_next", &ran).reads([&a]).writes([&b]));
        assert!(!ran.load(Ordering::SeqCst));
        let e = engine.wait_to_read(&b).unwrap_err();
        assert_eq!((e.op.as_str(), e.label.as_deref()), ("naive_bad", Some("n.py:1")));
        engine.push(Op::new("naive_panic", || panic!("{INTENTIONAL}")).writes([&b]));
        assert_eq!(engine.wait_to_read(&b).unwrap_err().kind, ErrorKind::Panic);
        assert!(engine.wait_all().is_err(), "a's error is still pending");
        engine.wait_all().unwrap();
    });
}

#[test]
fn raising_an_error_does_not_unfail_ops_already_pushed() {
    with_deadline(DEADLINE, || {
        let engine = threaded(2);
        let (a, b, c) = (engine.new_var(), engine.new_var(), engine.new_var());
        let gate = Gate::new();
        // `b = f(a)` is pushed before the error on `a` is raised, but held by a
        // gate on `c` so it runs only after the raise.
        let g = gate.clone();
        engine.push(Op::new("hold", move || g.wait()).writes([&c]));
        engine.push(failing("origin", ErrorKind::Value, "bad").writes([&a]));
        let ran = Arc::new(AtomicBool::new(false));
        engine.push(flag_op("b_from_a", &ran).reads([&a, &c]).writes([&b]));
        assert_eq!(engine.wait_to_read(&a).unwrap_err().op, "origin");
        gate.open();
        // b still inherits the failure; its op never ran.
        assert_eq!(engine.wait_to_read(&b).unwrap_err().op, "origin");
        assert!(!ran.load(Ordering::SeqCst));
        // Ops pushed after the raise run normally, and a write makes `a` healthy again.
        let ran2 = Arc::new(AtomicBool::new(false));
        engine.push(flag_op("rewrite_a", &ran2).writes([&a]));
        engine.wait_to_read(&a).unwrap();
        assert!(ran2.load(Ordering::SeqCst));
        assert!(a.error().is_none());
        let ran3 = Arc::new(AtomicBool::new(false));
        engine.push(flag_op("read_a", &ran3).reads([&a]).writes([&b]));
        engine.wait_to_read(&b).unwrap();
        assert!(ran3.load(Ordering::SeqCst));
    });
}
