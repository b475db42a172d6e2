//! Inline scopes: ops pushed from inside an op (within `run_inline`) run at once on
//! that thread, may use the outer op's vars and free vars, and fail instead of
//! deadlocking on a var that other pending work uses.
mod common;

use common::*;
use ferromx_engine::{Engine, ErrorKind, Op};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

#[test]
fn nested_ops_run_inline_in_order_and_the_outer_op_orders_with_others() {
    with_deadline(DEADLINE, || {
        let engine: &'static Engine = Box::leak(Box::new(threaded(2)));
        let (held, fresh) = (engine.new_var(), engine.new_var());
        let log = Arc::new(Mutex::new(Vec::new()));
        let (h2, f2, l2) = (held.clone(), fresh.clone(), log.clone());
        let outer = Op::new("outer", move || {
            let (h3, f3, l3) = (h2.clone(), f2.clone(), l2.clone());
            let (_, nested) = engine.run_inline(&[], std::slice::from_ref(&h2), move || {
                let l4 = l3.clone();
                engine.push(
                    Op::new("nested_held", move || {
                        l4.lock().unwrap().push("nested_held");
                        Ok(())
                    })
                    .writes([&h3]),
                );
                // pushed inline: it has already run, and a wait on the held var returns
                l3.lock().unwrap().push("after_push");
                engine.wait_to_read(&h3).expect("held var is ready inside the scope");
                let l5 = l3.clone();
                engine.push(
                    Op::new("nested_fresh", move || {
                        l5.lock().unwrap().push("nested_fresh");
                        Ok(())
                    })
                    .reads([&h3])
                    .writes([&f3]),
                );
                engine.wait_to_read(&f3).expect("fresh var ran inline");
            });
            assert!(nested.is_none());
            Ok(())
        })
        .writes([&held]);
        engine.push(outer);
        let l6 = log.clone();
        engine.push(
            Op::new("later", move || {
                l6.lock().unwrap().push("later");
                Ok(())
            })
            .reads([&held]),
        );
        engine.wait_all().unwrap();
        assert_eq!(*log.lock().unwrap(), vec!["nested_held", "after_push", "nested_fresh", "later"]);
    });
}

#[test]
fn nested_op_on_a_busy_var_fails_the_outer_op_instead_of_deadlocking() {
    with_deadline(DEADLINE, || {
        let engine: &'static Engine = Box::leak(Box::new(threaded(2)));
        let (busy, out) = (engine.new_var(), engine.new_var());
        let gate = Gate::new();
        let g2 = gate.clone();
        engine.push(Op::new("holder", move || g2.wait()).writes([&busy]));
        let ran = Arc::new(AtomicUsize::new(0));
        let (b2, r2) = (busy.clone(), ran.clone());
        let o2 = out.clone();
        engine.push(
            Op::new("outer", move || {
                let (_, nested) = engine.run_inline(&[], std::slice::from_ref(&o2), || {
                    let r3 = r2.clone();
                    engine.push(
                        Op::new("touch_busy", move || {
                            r3.fetch_add(1, Ordering::SeqCst);
                            Ok(())
                        })
                        .reads([&b2]),
                    );
                    assert_eq!(engine.wait_to_read(&b2).unwrap_err().kind, ErrorKind::WaitInsideOp);
                });
                match nested {
                    Some(f) => Err(f),
                    None => Ok(()),
                }
            })
            .writes([&out]),
        );
        let e = engine.wait_to_read(&out).unwrap_err();
        assert!(e.message.contains("touch_busy") && e.message.contains("other pending operations"), "{e}");
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        gate.open();
        engine.wait_all().unwrap();
    });
}

#[test]
fn a_nested_failure_is_reported_once_through_the_outer_op() {
    // MXNet shares one exception between an op pushed inside a custom operator and the
    // custom operator: raising it from the outer op's array clears it everywhere
    with_deadline(DEADLINE, || {
        let engine: &'static Engine = Box::leak(Box::new(threaded(2)));
        let (inner, out) = (engine.new_var(), engine.new_var());
        let (i2, o2) = (inner.clone(), out.clone());
        engine.push(
            Op::new("outer", move || {
                let (_, nested) = engine.run_inline(&[], std::slice::from_ref(&o2), || {
                    engine.push(
                        Op::new("inner_fails", || Err(ferromx_engine::OpFailure::new(ErrorKind::Value, "bad")))
                            .writes([&i2]),
                    );
                });
                match nested {
                    Some(f) => Err(f),
                    None => Ok(()),
                }
            })
            .writes([&out]),
        );
        let e = engine.wait_to_read(&out).unwrap_err();
        assert!(e.message.contains("inner_fails") && e.message.contains("bad"), "{e}");
        engine.wait_all().expect("the inner failure was reported by the outer op");
        engine.wait_to_read(&inner).expect("and is cleared with it, as MXNet's shared exception");
    });
}
