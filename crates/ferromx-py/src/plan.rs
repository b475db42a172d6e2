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
use ferromx::opdef::{find, Attrs, OpDef};
use ferromx::NDArray;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

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
}

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
        Ok(NativePlan { steps: out, n_slots, heads, release })
    }

    /// Runs every step on `arrays` (one per graph input, in slot order); returns the outputs.
    fn run(&self, py: Python<'_>, arrays: Vec<PyRef<'_, PyND>>) -> PyResult<Vec<Py<PyND>>> {
        let mut slots: Vec<Option<(NDArray, bool)>> = vec![None; self.n_slots];
        for (slot, a) in slots.iter_mut().zip(&arrays) {
            *slot = Some((a.a.clone(), a.np));
        }
        pre_push(py);
        // The steps go to the engine as bulk ops (one per up to `bulk::MAX_CALLS`
        // calls): a small graph's per-op engine cost was larger than its kernels.
        let _bulk = bulk::allowed(ferromx::autograd::is_recording()).then(bulk::Bulk::begin);
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
        self.heads
            .iter()
            .map(|&h| {
                let (a, np) = slots[h]
                    .clone()
                    .ok_or_else(|| PyValueError::new_err(format!("plan head slot {h} has no array")))?;
                wrap_as(py, a, np)
            })
            .collect()
    }
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
