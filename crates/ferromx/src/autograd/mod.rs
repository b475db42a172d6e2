//! Autograd: a tape recorded inside `record()`, replayed backwards by pushing
//! gradient operators to the engine like any others.
//!
//! Each recorded operation becomes a `Node` holding the autograd entries of
//! its inputs and a backward closure written in terms of ordinary NDArray
//! operators. Outputs point at their node through their `AgState`. Variables
//! (arrays with `attach_grad`) get a leaf node that points back at the array
//! weakly, so the graph never keeps a variable alive. `backward` walks the
//! graph from the heads in reverse topological order; because every gradient
//! is itself an engine op, it returns as soon as everything is pushed.

use crate::error::{Error, Result};
use crate::ndarray::{ArrayInner, NDArray};
use crate::ops;
use parking_lot::Mutex;

mod symbolic;
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Weak};
use symbolic::NodeSym;
pub use symbolic::{annotate, annotate_args, annotate_as, graph, SymArg, SymGraph, SymKind, SymNode};

thread_local! {
    static RECORDING: Cell<bool> = const { Cell::new(false) };
    static TRAINING: Cell<bool> = const { Cell::new(false) };
}

/// Whether operations are being recorded on this thread.
pub fn is_recording() -> bool {
    RECORDING.with(|c| c.get())
}
/// Whether this thread is in training mode (Dropout active, ...).
pub fn is_training() -> bool {
    TRAINING.with(|c| c.get())
}
/// Sets recording; returns the previous value.
pub fn set_recording(on: bool) -> bool {
    RECORDING.with(|c| c.replace(on))
}
/// Sets training mode; returns the previous value.
pub fn set_training(on: bool) -> bool {
    TRAINING.with(|c| c.replace(on))
}

/// How a variable's gradient buffer is written by backward.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum GradReq {
    /// No gradient.
    #[default]
    Null,
    /// Overwrite.
    Write,
    /// Accumulate.
    Add,
}

impl GradReq {
    /// Parses `'null' | 'write' | 'add'`.
    pub fn parse(s: &str) -> Result<GradReq> {
        match s {
            "null" => Ok(GradReq::Null),
            "write" | "inplace" => Ok(GradReq::Write),
            "add" => Ok(GradReq::Add),
            _ => Err(Error::value("attach_grad", format!("grad_req must be 'write', 'add' or 'null', got '{s}'"))),
        }
    }
}

/// Per-array autograd state.
#[derive(Default)]
pub(crate) struct AgState {
    pub(crate) entry: Option<Entry>,
    pub(crate) grad: Option<NDArray>,
    pub(crate) grad_req: GradReq,
    pub(crate) fresh: bool,
}

/// An output of a recorded node.
#[derive(Clone)]
pub(crate) struct Entry {
    pub(crate) node: Arc<Node>,
    pub(crate) index: usize,
}

/// Computes input gradients from output gradients.
pub type BackwardFn = Box<dyn Fn(&[NDArray]) -> Result<Vec<Option<NDArray>>> + Send + Sync>;

/// A recorded operation (or a variable's leaf).
pub(crate) struct Node {
    name: &'static str,
    inputs: Vec<Option<Entry>>,
    outputs: Vec<(crate::Shape, crate::DType, crate::Context)>,
    backward: Mutex<Option<Arc<BackwardFn>>>,
    leaf: Option<Weak<ArrayInner>>,
    /// The frontend call that made this node's outputs (for `get_symbol`).
    sym: Mutex<Option<NodeSym>>,
}

thread_local! {
    /// Outputs saved (by [`save_output`]) for the node the next [`record`] makes.
    static PENDING: std::cell::RefCell<Vec<(usize, Arc<SavedLink>)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Where a saved output sits in the graph: its node (weakly) and output index.
#[derive(Default)]
struct SavedLink(Mutex<Option<(Weak<Node>, usize)>>);

/// An output of an operation, kept by the operation's own backward closure.
///
/// The closure lives in the output's node, and the output points at that node, so
/// holding the output itself would be a reference cycle: a graph that is never
/// differentiated (outputs computed inside `record()` and dropped, as in evaluation
/// or a metric) would never be freed. `Saved` keeps the storage and only a weak
/// link to the node; [`Saved::get`] gives the output back, still in the graph (so
/// `create_graph` differentiates through it), while the node is alive, which it is
/// whenever its backward runs.
pub struct Saved {
    data: NDArray,
    link: Arc<SavedLink>,
}

impl Saved {
    /// The saved output, with its autograd entry while its node lives.
    pub fn get(&self) -> NDArray {
        let link = self.link.0.lock().as_ref().and_then(|(w, i)| w.upgrade().map(|n| (n, *i)));
        match link {
            Some((node, index)) => {
                let a = self.data.detach();
                a.0.ag.lock().entry = Some(Entry { node, index });
                a
            }
            None => self.data.clone(),
        }
    }
}

/// Saves `out`, an output of the operation about to be [`record`]ed, for that
/// operation's backward closure (see [`Saved`]).
pub fn save_output(out: &NDArray) -> Saved {
    let link = Arc::new(SavedLink::default());
    PENDING.with(|p| p.borrow_mut().push((Arc::as_ptr(&out.0) as usize, link.clone())));
    Saved { data: out.detach(), link }
}

/// Whether an op on `inputs` should be recorded (recording on and some input
/// needs a gradient). Ops build their backward closure only when this holds.
pub fn needs_record(inputs: &[&NDArray]) -> bool {
    is_recording() && inputs.iter().any(|x| x.0.ag.lock().entry.is_some())
}

/// Records an operation: outputs get an entry pointing at a new node.
pub fn record(name: &'static str, inputs: &[&NDArray], outputs: &[&NDArray], backward: BackwardFn) {
    let entries: Vec<Option<Entry>> = inputs.iter().map(|x| x.0.ag.lock().entry.clone()).collect();
    let node = Arc::new(Node {
        name,
        inputs: entries,
        outputs: outputs.iter().map(|o| (o.shape().clone(), o.dtype(), o.ctx())).collect(),
        backward: Mutex::new(Some(Arc::new(backward))),
        leaf: None,
        sym: Mutex::new(None),
    });
    for (i, o) in outputs.iter().enumerate() {
        o.0.ag.lock().entry = Some(Entry { node: node.clone(), index: i });
    }
    let pending = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
    for (ptr, link) in pending {
        if let Some(i) = outputs.iter().position(|o| Arc::as_ptr(&o.0) as usize == ptr) {
            *link.0.lock() = Some((Arc::downgrade(&node), i));
        }
    }
}

impl NDArray {
    /// Attaches a gradient buffer (zeros) and marks this array as a variable.
    pub fn attach_grad(&self, req: GradReq) -> Result<()> {
        let grad = if req == GradReq::Null { None } else { Some(ops::zeros_like(self)?) };
        self.mark_variable(grad, req);
        Ok(())
    }

    /// Marks this array as a variable whose gradient goes into `grad`.
    pub fn mark_variable(&self, grad: Option<NDArray>, req: GradReq) {
        let node = Arc::new(Node {
            name: "variable",
            inputs: vec![],
            outputs: vec![(self.shape().clone(), self.dtype(), self.ctx())],
            backward: Mutex::new(None),
            leaf: Some(Arc::downgrade(&self.0)),
            sym: Mutex::new(None),
        });
        let mut ag = self.0.ag.lock();
        ag.entry = if req == GradReq::Null { None } else { Some(Entry { node, index: 0 }) };
        ag.grad = grad;
        ag.grad_req = req;
        ag.fresh = false;
    }

    /// The gradient buffer, if attached.
    pub fn grad(&self) -> Option<NDArray> {
        self.0.ag.lock().grad.clone()
    }

    /// The gradient request of this variable.
    pub fn grad_req(&self) -> GradReq {
        self.0.ag.lock().grad_req
    }

    /// Whether backward wrote this variable's gradient since the flag was last cleared.
    pub fn grad_fresh(&self) -> bool {
        self.0.ag.lock().fresh
    }

    /// Sets the fresh-gradient flag (the Trainer clears it after each step).
    pub fn set_grad_fresh(&self, v: bool) {
        self.0.ag.lock().fresh = v;
    }

    /// A new handle to the same storage, cut from the graph.
    pub fn detach(&self) -> NDArray {
        NDArray::from_parts(self.0.chunk.clone(), self.0.shape.clone(), self.0.offset, self.0.dtype)
    }

    /// Whether this array is part of a recorded graph (or is a variable).
    pub fn has_entry(&self) -> bool {
        self.0.ag.lock().entry.is_some()
    }

    /// Backpropagates from this array, writing variables' `.grad`.
    pub fn backward(&self, head_grad: Option<&NDArray>, retain_graph: bool) -> Result<()> {
        backward(std::slice::from_ref(self), &[head_grad.cloned()], retain_graph, false, None).map(|_| ())
    }
}

fn node_key(n: &Arc<Node>) -> usize {
    Arc::as_ptr(n) as usize
}

/// Runs backward from `heads`. With `variables = Some(v)`, returns the
/// gradients of `v` instead of writing `.grad` buffers (`autograd.grad`): zeros for a
/// variable the heads reach without a gradient arriving, `None` for an unreachable one.
pub fn backward(
    heads: &[NDArray],
    head_grads: &[Option<NDArray>],
    retain_graph: bool,
    create_graph: bool,
    variables: Option<&[NDArray]>,
) -> Result<Vec<Option<NDArray>>> {
    // Topological order by iterative DFS.
    let mut order: Vec<Arc<Node>> = Vec::new();
    let mut seen: HashSet<usize> = HashSet::new();
    let mut head_entries = Vec::new();
    for h in heads {
        let e = h.0.ag.lock().entry.clone().ok_or_else(|| {
            Error::value(
                "backward",
                "cannot differentiate an array that was not computed inside autograd.record() \
                 from a variable with attach_grad()",
            )
        })?;
        head_entries.push(e);
    }
    let mut stack: Vec<(Arc<Node>, bool)> = head_entries.iter().map(|e| (e.node.clone(), false)).collect();
    while let Some((n, done)) = stack.pop() {
        if done {
            order.push(n);
            continue;
        }
        if !seen.insert(node_key(&n)) {
            continue;
        }
        stack.push((n.clone(), true));
        for e in n.inputs.iter().flatten() {
            if !seen.contains(&node_key(&e.node)) {
                stack.push((e.node.clone(), false));
            }
        }
    }
    let prev_rec = set_recording(create_graph);
    let result = (|| {
        let mut grads: HashMap<(usize, usize), NDArray> = HashMap::new();
        let acc = |grads: &mut HashMap<(usize, usize), NDArray>, key, g: NDArray| -> Result<()> {
            let v = match grads.remove(&key) {
                Some(old) => ops::add(&old, &g)?,
                None => g,
            };
            grads.insert(key, v);
            Ok(())
        };
        for (h, (e, hg)) in heads.iter().zip(head_entries.iter().zip(head_grads.iter())) {
            let g = match hg {
                // an empty head takes an empty gradient of any shape, as MXNet's executor does
                Some(g) if g.shape() != h.shape() && g.size() == 0 && h.size() == 0 => ops::zeros_like(h)?,
                Some(g) => {
                    if g.shape() != h.shape() {
                        return Err(Error::shape(
                            "backward",
                            &[h.shape(), g.shape()],
                            "head gradient shape differs from head",
                        ));
                    }
                    g.clone()
                }
                None => ops::ones_like(h)?,
            };
            acc(&mut grads, (node_key(&e.node), e.index), g)?;
        }
        let mut var_grads: HashMap<usize, NDArray> = HashMap::new();
        for n in order.iter().rev() {
            let k = node_key(n);
            if let Some(leaf) = &n.leaf {
                if let Some(g) = grads.remove(&(k, 0)) {
                    if let Some(arr) = leaf.upgrade() {
                        var_grads.insert(Arc::as_ptr(&arr) as usize, g.clone());
                        if variables.is_none() {
                            let arr = NDArray(arr);
                            write_grad(&arr, &g)?;
                        }
                    }
                }
                continue;
            }
            let outs: Vec<Option<NDArray>> = (0..n.outputs.len()).map(|i| grads.remove(&(k, i))).collect();
            if outs.iter().all(|o| o.is_none()) {
                continue;
            }
            let outs: Vec<NDArray> = outs
                .into_iter()
                .enumerate()
                .map(|(i, o)| match o {
                    Some(o) => Ok(o),
                    None => {
                        let (s, d, c) = &n.outputs[i];
                        ops::zeros(s.clone(), *d, *c)
                    }
                })
                .collect::<Result<_>>()?;
            // Without retain_graph a node's closure (and the arrays it saved) is dropped
            // as soon as its gradient is pushed, as MXNet frees each node's saved arrays
            // once its backward ran: the pushed gradient ops keep what they read until
            // they have run, and nothing else waits for the rest of the backward.
            let taken = if retain_graph { n.backward.lock().clone() } else { n.backward.lock().take() };
            let bw = taken.ok_or_else(|| {
                Error::value(
                    "backward",
                    format!(
                        "the graph through '{}' was already freed by a previous backward; \
                         pass retain_graph=True to backward twice",
                        n.name
                    ),
                )
            })?;
            let in_grads = bw(&outs)?;
            for (e, g) in n.inputs.iter().zip(in_grads) {
                if let (Some(e), Some(g)) = (e, g) {
                    acc(&mut grads, (node_key(&e.node), e.index), g)?;
                }
            }
        }
        if !retain_graph {
            for n in &order {
                if n.leaf.is_none() {
                    n.backward.lock().take();
                }
            }
        }
        Ok(match variables {
            // A variable the heads reach but no gradient arrived at (an index input of
            // `pick`, ...) gets zeros, as in MXNet; an unreachable one stays `None`.
            Some(vars) => vars
                .iter()
                .map(|v| match var_grads.get(&(Arc::as_ptr(&v.0) as usize)) {
                    Some(g) => Ok(Some(g.clone())),
                    None => {
                        let reached = v.0.ag.lock().entry.as_ref().is_some_and(|e| seen.contains(&node_key(&e.node)));
                        if reached {
                            ops::zeros_like(v).map(Some)
                        } else {
                            Ok(None)
                        }
                    }
                })
                .collect::<Result<Vec<_>>>()?,
            None => vec![],
        })
    })();
    set_recording(prev_rec);
    result
}

fn write_grad(arr: &NDArray, g: &NDArray) -> Result<()> {
    let (grad, req) = {
        let mut ag = arr.0.ag.lock();
        ag.fresh = true;
        (ag.grad.clone(), ag.grad_req)
    };
    let Some(grad) = grad else { return Ok(()) };
    let g = if g.dtype() != grad.dtype() { ops::astype(g, grad.dtype())? } else { g.clone() };
    match req {
        GradReq::Null => Ok(()),
        GradReq::Write => ops::assign(&grad, &g),
        GradReq::Add => ops::add_into(&grad, &g),
    }
}
