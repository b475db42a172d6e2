use super::{Recording, Tape};
use crate::fusion::bulk::Bulk;
use crate::opdef::{invoke, Attr, Attrs};
use crate::{Context, NDArray};

fn attrs(kv: &[(&str, Attr)]) -> Attrs {
    Attrs(kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())
}

fn arr(v: &[f32], shape: &[usize]) -> NDArray {
    NDArray::from_vec(v.to_vec(), shape, Context::default()).expect("array")
}

/// `relu(FullyConnected(x, w, b)) * 2`, the way a plan runs it: in a bulk.
fn plan(ins: &[NDArray]) -> Vec<NDArray> {
    let fc = invoke(
        "FullyConnected",
        &[Some(ins[0].clone()), Some(ins[1].clone()), Some(ins[2].clone())],
        &attrs(&[("num_hidden", Attr::Int(2))]),
    )
    .expect("fc");
    let r =
        invoke("Activation", &[Some(fc[0].clone())], &attrs(&[("act_type", Attr::Str("relu".into()))])).expect("relu");
    invoke("_mul_scalar", &[Some(r[0].clone())], &attrs(&[("scalar", Attr::Float(2.0))])).expect("mul")
}

/// Runs `f` on `ins` in a bulk while recording; its outputs and the tape (or why not).
fn record_why(ins: &[NDArray], f: impl Fn(&[NDArray]) -> Vec<NDArray>) -> (Vec<NDArray>, Result<Tape, &'static str>) {
    let bulk = Bulk::begin();
    let rec = Recording::start().expect("a fresh bulk records");
    let outs = f(ins);
    let tape = rec.tape(ins, &outs);
    drop(bulk);
    (outs, tape)
}

fn record(ins: &[NDArray], f: impl Fn(&[NDArray]) -> Vec<NDArray>) -> (Vec<NDArray>, Option<Tape>) {
    let (outs, t) = record_why(ins, f);
    (outs, t.ok())
}

fn why_not(ins: &[NDArray], f: impl Fn(&[NDArray]) -> Vec<NDArray>) -> &'static str {
    match record_why(ins, f).1 {
        Ok(_) => "taped",
        Err(e) => e,
    }
}

fn inputs(x: &[f32]) -> Vec<NDArray> {
    vec![arr(x, &[1, 3]), arr(&[1.0, -1.0, 0.5, 2.0, 0.0, -3.0], &[2, 3]), arr(&[0.25, -0.5], &[2])]
}

#[test]
fn a_replay_computes_what_the_plan_computes_on_new_inputs() {
    let (first, tape) = record(&inputs(&[1.0, 2.0, 3.0]), plan);
    let tape = tape.expect("FullyConnected, relu and a scalar product replay");
    assert_eq!(tape.len(), 3);
    assert_eq!(first[0].to_vec::<f32>().expect("read"), vec![1.5, 0.0]);
    for x in [[3.0f32, -1.0, 2.0], [0.5, 0.25, -4.0]] {
        let ins = inputs(&x);
        let want = plan(&ins)[0].to_vec::<f32>().expect("read");
        let got = tape.replay(&ins).expect("replay");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].shape().dims(), &[1, 2]);
        assert_eq!(got[0].to_vec::<f32>().expect("read"), want);
    }
    // a later write to an input is seen by the next replay (the chunk is the input's)
    let ins = inputs(&[1.0, 1.0, 1.0]);
    let before = tape.replay(&ins).expect("replay")[0].to_vec::<f32>().expect("read");
    crate::ops::assign(&ins[2], &arr(&[10.0, 10.0], &[2])).expect("assign");
    let after = tape.replay(&ins).expect("replay")[0].to_vec::<f32>().expect("read");
    assert_eq!(before, vec![1.5, 0.0]);
    assert_eq!(after, vec![21.0, 18.0]);
}

#[test]
fn a_replay_refuses_another_signature_or_shared_inputs() {
    let (_, tape) = record(&inputs(&[1.0, 2.0, 3.0]), plan);
    let tape = tape.expect("tape");
    let mut other = inputs(&[1.0, 2.0, 3.0]);
    other[0] = arr(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    assert!(!tape.matches(&other));
    assert!(tape.replay(&other).is_err());
    let mut shared = inputs(&[1.0, 2.0, 3.0]);
    shared[2] = shared[1].clone();
    assert!(!tape.matches(&shared), "two inputs in one chunk");
}

#[test]
fn runs_that_draw_seeds_wait_or_make_constants_are_not_taped() {
    let ins = inputs(&[1.0, 2.0, 3.0]);
    let dropout = |ins: &[NDArray]| {
        crate::autograd::set_training(true);
        let r = invoke("Dropout", &[Some(ins[0].clone())], &attrs(&[("p", Attr::Float(0.5))]));
        crate::autograd::set_training(false);
        r.expect("dropout")
    };
    assert_eq!(why_not(&ins, dropout), "drew a random seed");
    let waits = |ins: &[NDArray]| {
        let y = plan(ins);
        let _ = y[0].is_ready();
        y
    };
    assert_eq!(why_not(&ins, waits), "pushed, waited or queried outside the bulk");
    // made before the recording, read by the plan but not one of its inputs
    let c = arr(&[1.0, 2.0], &[1, 2]);
    let constant = move |ins: &[NDArray]| {
        let y = plan(ins);
        invoke("broadcast_add", &[Some(y[0].clone()), Some(c.clone())], &Attrs::default()).expect("add")
    };
    assert_eq!(why_not(&ins, constant), "an array older than the run that is not an input");
    let made_here = |ins: &[NDArray]| {
        let c = arr(&[1.0, 2.0], &[1, 2]);
        let y = plan(ins);
        invoke("broadcast_add", &[Some(y[0].clone()), Some(c)], &Attrs::default()).expect("add")
    };
    assert_eq!(why_not(&ins, made_here), "read an array no call of the run wrote");
    // state made before the run and written by it (not an input): a replay would
    // write a new chunk instead
    let state = arr(&[0.0, 0.0], &[1, 2]);
    let keeps_state = move |ins: &[NDArray]| {
        let y = plan(ins);
        invoke("sgd_update", &[Some(state.clone()), Some(y[0].clone())], &attrs(&[("lr", Attr::Float(0.1))]))
            .expect("an update writes its weight in place");
        y
    };
    assert_eq!(why_not(&ins, keeps_state), "an array older than the run that is not an input");
    assert_eq!(why_not(&ins, |_| Vec::new()), "no calls");
    let x = arr(&[1.0, 2.0], &[2]);
    let add = |ins: &[NDArray]| {
        invoke("broadcast_add", &[Some(ins[0].clone()), Some(ins[1].clone())], &Attrs::default()).expect("add")
    };
    assert_eq!(why_not(&[x.clone(), arr(&[1.0, 2.0], &[2])], add), "taped");
    assert_eq!(why_not(&[x.clone(), x], add), "two inputs share a chunk");
}

#[test]
fn only_a_fresh_outermost_bulk_records() {
    assert!(Recording::start().is_none(), "no bulk");
    let outer = Bulk::begin();
    let _ = plan(&inputs(&[1.0, 2.0, 3.0]));
    let inner = Bulk::begin();
    assert!(Recording::start().is_none(), "nested, and holding calls");
    drop(inner);
    drop(outer);
}

#[test]
fn small_intermediates_share_one_allocation_and_outputs_keep_their_own() {
    let ctx = Context::default();
    let sizes = [(1024, ctx), (100, ctx), (8, ctx), (300 << 10, ctx), (64, ctx)];
    let returned = [false, false, true, false, false];
    let (alloc, place) = super::layout(&sizes, &returned);
    assert_eq!(place, vec![(0, 0), (0, 1024), (1, 0), (2, 0), (0, 1152)]);
    assert_eq!(alloc.iter().map(|a| a.0).collect::<Vec<_>>(), vec![1216, 8, 300 << 10]);
    let (_, tape) = record(&inputs(&[1.0, 2.0, 3.0]), plan);
    let tape = tape.expect("tape");
    assert_eq!(tape.alloc.len(), 2, "FullyConnected's and relu's outputs in one chunk, the head in its own");
}
