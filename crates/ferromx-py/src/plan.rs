//! A traced graph's plan run in one call into Rust.
//!
//! Why: a hybridized block's forward is a fixed list of operator calls over numbered
//! slots (`symbol/executor.py`'s `Plan`). Run from Python, each call pays for a list,
//! a keyword dict and the conversion of every attribute again; a small MLP's forward
//! spent more time there than in its operators. [`NativePlan`] converts the attributes
//! once and runs the steps in a Rust loop, with the same results as `invoke` per step:
//! the same operator definitions, autograd recording, legacy shapes and array classes.

use crate::convert::to_attrs;
use crate::ndarray::{pre_push, throttle, wrap_as, PyND};
use crate::{invoke_prepared, is_reduction};
use ferromx::engine::Engine;
use ferromx::fusion::bulk;
use ferromx::fusion::replay::{Recording, Tape};
use ferromx::opdef::{find, Attrs, OpDef};
use ferromx::NDArray;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::{Arc, Mutex};

/// One operator call of a plan: its inputs' slots, its first output slot and count.
struct Step {
    def: &'static OpDef,
    attrs: Attrs,
    ins: Vec<usize>,
    out: usize,
    nout: usize,
    /// [`is_reduction`] of `def`, decided once.
    reduction: bool,
}

/// A step as Python describes it: `(op name, input slots, first output slot, output count, attrs)`.
type StepSpec<'py> = (String, Vec<usize>, usize, usize, Option<Bound<'py, PyDict>>);

/// A compiled graph: `run(arrays)` feeds slots `0..len(arrays)` and returns the head slots.
#[pyclass(frozen, module = "ferromx._native")]
pub struct NativePlan {
    steps: Vec<Step>,
    n_slots: usize,
    heads: Vec<usize>,
    /// Per step, the slots no later step reads (and that are not heads): they are
    /// dropped once the step is pushed, so an intermediate nothing saved for backward
    /// is freed as soon as its consumers ran instead of when the whole forward ends.
    release: Vec<Vec<usize>>,
    /// Recorded runs (`fusion::replay`), per input signature: a later run outside
    /// `autograd.record()` on inputs of a recorded signature replays the tape.
    tapes: Mutex<Vec<TapeEntry>>,
}

/// A tape with what its key adds to the inputs' metadata, or a signature that
/// could not be taped (`tape: None`) after [`MAX_TAPE_TRIES`] tries.
struct TapeEntry {
    np: Vec<bool>,
    training: bool,
    /// The tape and whether each head is an np array; `None` while not taped.
    tape: Option<(Arc<Tape>, Vec<bool>)>,
    tries: u8,
    /// An input of the signature, to match its metadata against before a tape exists.
    first: Vec<(ferromx::Shape, ferromx::DType, ferromx::Context)>,
}

/// Runs of one signature that may fail to record (a back-pressure flush in the
/// middle, say) before the signature is left untaped.
const MAX_TAPE_TRIES: u8 = 3;

/// Signatures a plan keeps tapes for (a plan is made per input signature; more
/// come only from np/legacy inputs and the training flag).
const MAX_TAPES: usize = 8;

#[pymethods]
impl NativePlan {
    #[new]
    fn new(steps: Vec<StepSpec<'_>>, n_slots: usize, heads: Vec<usize>) -> PyResult<Self> {
        let mut out = Vec::with_capacity(steps.len());
        for (name, ins, first, nout, attrs) in steps {
            let def = find(&name).ok_or_else(|| PyValueError::new_err(format!("NativePlan: no operator {name:?}")))?;
            if ins.iter().any(|&i| i >= n_slots) || first + nout > n_slots {
                return Err(PyValueError::new_err(format!("NativePlan: step {name} uses a slot past {n_slots}")));
            }
            out.push(Step {
                def,
                attrs: to_attrs(attrs.as_ref())?,
                ins,
                out: first,
                nout,
                reduction: is_reduction(def),
            });
        }
        if heads.iter().any(|&h| h >= n_slots) {
            return Err(PyValueError::new_err(format!("NativePlan: a head slot is past {n_slots}")));
        }
        let release = release_points(&out, n_slots, &heads);
        Ok(NativePlan { steps: out, n_slots, heads, release, tapes: Mutex::new(Vec::new()) })
    }

    /// Runs every step on `arrays` (one per graph input, in slot order); returns the outputs.
    fn run(&self, py: Python<'_>, arrays: Vec<PyRef<'_, PyND>>) -> PyResult<Vec<Py<PyND>>> {
        let recording = ferromx::autograd::is_recording();
        let key = (!recording && bulk::allowed(false) && replay_enabled())
            .then(|| (arrays.iter().map(|a| a.np).collect::<Vec<_>>(), ferromx::autograd::is_training()));
        let inputs: Vec<NDArray> =
            if key.is_some() { arrays.iter().map(|a| a.a.clone()).collect() } else { Vec::new() };
        let mut record = false;
        if let Some((np, training)) = &key {
            match self.lookup(np, *training, &inputs) {
                Lookup::Tape(tape, head_np) => {
                    pre_push(py);
                    let outs = tape.replay(&inputs).map_err(crate::to_py_err)?;
                    return outs.into_iter().zip(head_np).map(|(o, np)| wrap_as(py, o, np)).collect();
                }
                Lookup::Record => record = true,
                Lookup::Run => {}
            }
        }
        let mut slots: Vec<Option<(NDArray, bool)>> = vec![None; self.n_slots];
        for (slot, a) in slots.iter_mut().zip(&arrays) {
            *slot = Some((a.a.clone(), a.np));
        }
        pre_push(py);
        // The steps go to the engine as bulk ops (one per up to `bulk::MAX_CALLS`
        // calls): a small graph's per-op engine cost was larger than its kernels.
        let bulk_guard = bulk::allowed(recording).then(bulk::Bulk::begin);
        let recorder = if record { Recording::start() } else { None };
        for (k, (s, done)) in self.steps.iter().zip(&self.release).enumerate() {
            if k > 0 && Engine::global().over_limit() {
                // Hand the bulk over before releasing the GIL to wait: another
                // thread may push while we wait, and must find our earlier steps.
                bulk::flush();
                throttle(py);
            }
            let mut ins = Vec::with_capacity(s.ins.len());
            let mut np = false;
            for &i in &s.ins {
                let (a, is_np) = slots[i].as_ref().ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "{}: input slot {i} has no array (the plan was given too few)",
                        s.def.name
                    ))
                })?;
                ins.push(Some(a.clone()));
                np |= *is_np;
            }
            let outs = invoke_prepared(s.def, &ins, &s.attrs, np, s.reduction)?;
            for (k, o) in outs.into_iter().take(s.nout).enumerate() {
                slots[s.out + k] = Some((o, np));
            }
            for &i in done {
                slots[i] = None;
            }
        }
        let heads = self
            .heads
            .iter()
            .map(|&h| slots[h].clone().ok_or_else(|| PyValueError::new_err(format!("plan head slot {h} has no array"))))
            .collect::<PyResult<Vec<_>>>()?;
        if let (Some((np, training)), true) = (key, record) {
            let outs: Vec<NDArray> = heads.iter().map(|(a, _)| a.clone()).collect();
            let tape = recorder.and_then(|r| r.finish(&inputs, &outs));
            self.remember(np, training, &inputs, tape.map(|t| (Arc::new(t), heads.iter().map(|h| h.1).collect())));
        }
        drop(bulk_guard);
        heads.into_iter().map(|(a, np)| wrap_as(py, a, np)).collect()
    }

    /// How many input signatures have a tape (tests).
    fn taped(&self) -> usize {
        self.tapes.lock().map(|t| t.iter().filter(|e| e.tape.is_some()).count()).unwrap_or(0)
    }
}

/// What a run does: replay a tape, record one, or just run.
enum Lookup {
    Tape(Arc<Tape>, Vec<bool>),
    Record,
    Run,
}

impl NativePlan {
    /// The tape for this signature, or whether to record one.
    fn lookup(&self, np: &[bool], training: bool, inputs: &[NDArray]) -> Lookup {
        let Ok(tapes) = self.tapes.lock() else { return Lookup::Run };
        for e in tapes.iter() {
            if e.np != np || e.training != training || !same_meta(&e.first, inputs) {
                continue;
            }
            return match &e.tape {
                Some((t, head_np)) if t.matches(inputs) => Lookup::Tape(t.clone(), head_np.clone()),
                Some(_) => Lookup::Run,
                None if e.tries < MAX_TAPE_TRIES => Lookup::Record,
                None => Lookup::Run,
            };
        }
        if tapes.len() < MAX_TAPES {
            Lookup::Record
        } else {
            Lookup::Run
        }
    }

    /// Keeps the outcome of a recorded run of this signature.
    fn remember(&self, np: Vec<bool>, training: bool, inputs: &[NDArray], tape: Option<(Arc<Tape>, Vec<bool>)>) {
        let Ok(mut tapes) = self.tapes.lock() else { return };
        if let Some(e) = tapes.iter_mut().find(|e| e.np == np && e.training == training && same_meta(&e.first, inputs))
        {
            e.tries = e.tries.saturating_add(1);
            if e.tape.is_none() {
                e.tape = tape;
            }
            return;
        }
        if tapes.len() < MAX_TAPES {
            let first = inputs.iter().map(|x| (x.shape().clone(), x.dtype(), x.ctx())).collect();
            tapes.push(TapeEntry { np, training, tape, tries: 1, first });
        }
    }
}

/// `FERROMX_PLAN_REPLAY=0` turns replayed plans off (every run runs each
/// operator's frontend, as a plan's first run does).
fn replay_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| !std::env::var("FERROMX_PLAN_REPLAY").is_ok_and(|v| v.trim() == "0"))
}

/// Whether `inputs` have the shapes, dtypes and contexts of `first`.
fn same_meta(first: &[(ferromx::Shape, ferromx::DType, ferromx::Context)], inputs: &[NDArray]) -> bool {
    first.len() == inputs.len()
        && first.iter().zip(inputs).all(|((s, d, c), x)| x.shape() == s && x.dtype() == *d && x.ctx() == *c)
}

/// For each step, the slots to drop after it: those whose last reader (or, never
/// read, whose producer) it is, heads excepted.
fn release_points(steps: &[Step], n_slots: usize, heads: &[usize]) -> Vec<Vec<usize>> {
    let mut last: Vec<Option<usize>> = vec![None; n_slots];
    for (j, s) in steps.iter().enumerate() {
        for slot in s.ins.iter().copied().chain(s.out..s.out + s.nout) {
            last[slot] = Some(j);
        }
    }
    for &h in heads {
        last[h] = None;
    }
    let mut release = vec![Vec::new(); steps.len()];
    for (slot, j) in last.into_iter().enumerate() {
        if let Some(j) = j {
            release[j].push(slot);
        }
    }
    release
}
