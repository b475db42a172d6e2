//! The recorded graph as a symbolic graph (MXNet's `autograd.get_symbol`).
//!
//! A frontend call of an operator (a table invocation, an arithmetic operator, a
//! recorded reshape) [`annotate`]s the nodes it recorded with its operator name, its
//! attributes and its own inputs. [`graph`] walks from the heads through those
//! annotations: a call that recorded several nodes internally (a composite, a gradient
//! built from other operators) appears once, as the operator the user called. Leaves are
//! the variables (`attach_grad`) and the arrays that entered a recorded call without
//! being part of the graph (MXNet's `null` inputs).

use super::Entry;
use crate::error::{Error, Result};
use crate::ndarray::{ArrayInner, NDArray};
use crate::opdef::{Attr, Attrs};
use std::collections::HashMap;
use std::sync::{Arc, Weak};

/// An input of an annotated call.
enum SymInput {
    /// Part of the recorded graph.
    Entry(Entry),
    /// An array outside the graph (identified by its allocation while the graph lives).
    Const(Weak<ArrayInner>),
    /// A constant the call computes internally and does not keep (MXNet's index array of
    /// `gather_nd` for `x[idx]`): a `null` input of its own, identified by this token.
    Hidden(Arc<()>),
}

/// An input of [`annotate_args`].
pub enum SymArg<'a> {
    /// An array the call read.
    Array(&'a NDArray),
    /// A constant input MXNet's graph has but the call never materialises.
    Hidden,
}

/// One frontend call: operator, attributes, inputs.
struct SymCall {
    op: &'static str,
    attrs: Vec<(String, String)>,
    inputs: Vec<SymInput>,
}

/// A node's annotation: the call, and which call output each node output is.
pub(crate) struct NodeSym {
    call: Arc<SymCall>,
    outs: Vec<Option<usize>>,
}

/// MXNet's string form of an attribute (`None` values are left out, as unset).
fn attr_string(a: &Attr) -> Option<String> {
    match a {
        Attr::None => None,
        Attr::Str(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// Annotates the nodes that produced `outputs` with the call `op(inputs, attrs)`.
///
/// Does nothing unless recording. An output whose node is a variable's leaf or the node
/// of one of the inputs (an operator that handed an input back) is left alone; the
/// outermost call wins, so a frontend annotates after the calls it made.
pub fn annotate(op: &'static str, attrs: &Attrs, inputs: &[Option<&NDArray>], outputs: &[&NDArray]) {
    let args: Vec<SymArg<'_>> = inputs.iter().flatten().map(|x| SymArg::Array(x)).collect();
    annotate_args(op, attrs, &args, outputs);
}

/// [`annotate`] with inputs that may be [`SymArg::Hidden`] constants.
pub fn annotate_args(op: &'static str, attrs: &Attrs, inputs: &[SymArg<'_>], outputs: &[&NDArray]) {
    if !super::is_recording() {
        return;
    }
    let outs: Vec<Option<Entry>> = outputs.iter().map(|o| o.0.ag.lock().entry.clone()).collect();
    if outs.iter().all(|e| e.is_none()) {
        return;
    }
    let ins: Vec<SymInput> = inputs
        .iter()
        .map(|a| match a {
            SymArg::Hidden => SymInput::Hidden(Arc::new(())),
            SymArg::Array(x) => match x.0.ag.lock().entry.clone() {
                Some(e) => SymInput::Entry(e),
                None => SymInput::Const(Arc::downgrade(&x.0)),
            },
        })
        .collect();
    let attrs = attrs.0.iter().filter_map(|(k, v)| attr_string(v).map(|v| (k.clone(), v))).collect();
    let call = Arc::new(SymCall { op, attrs, inputs: ins });
    for (i, e) in outs.iter().enumerate() {
        let Some(e) = e else { continue };
        let is_input_node =
            call.inputs.iter().any(|i| matches!(i, SymInput::Entry(ie) if Arc::ptr_eq(&ie.node, &e.node)));
        if e.node.leaf.is_some() || is_input_node {
            continue;
        }
        let mut slot = e.node.sym.lock();
        let fresh = !matches!(&*slot, Some(s) if Arc::ptr_eq(&s.call, &call));
        if fresh {
            *slot = Some(NodeSym { call: call.clone(), outs: vec![None; e.node.outputs.len()] });
        }
        if let Some(s) = slot.as_mut() {
            if let Some(o) = s.outs.get_mut(e.index) {
                *o = Some(i);
            }
        }
    }
}

/// Makes `out` (a recorded view of `src`: the legacy API's `(1,)` lift of a 0-d result)
/// stand for the same call as `src` in `get_symbol`, as part of that call.
pub fn annotate_as(src: &NDArray, out: &NDArray) {
    if !super::is_recording() {
        return;
    }
    let (Some(se), Some(oe)) = (src.0.ag.lock().entry.clone(), out.0.ag.lock().entry.clone()) else { return };
    if Arc::ptr_eq(&se.node, &oe.node) || oe.node.leaf.is_some() {
        return;
    }
    let Some((call, idx)) =
        se.node.sym.lock().as_ref().map(|s| (s.call.clone(), s.outs.get(se.index).copied().flatten()))
    else {
        return;
    };
    let mut outs = vec![None; oe.node.outputs.len()];
    if let Some(o) = outs.get_mut(oe.index) {
        *o = idx;
    }
    *oe.node.sym.lock() = Some(NodeSym { call, outs });
}

/// What a symbolic node is.
#[derive(Clone, Debug, PartialEq)]
pub enum SymKind {
    /// A variable (an array with `attach_grad`).
    Var,
    /// An array that entered the graph without being part of it (MXNet's `null` input).
    Const,
    /// An operator application.
    Op {
        /// Operator name as called.
        op: String,
        /// Attributes as MXNet's strings.
        attrs: Vec<(String, String)>,
        /// Whether a frontend call annotated it (otherwise its attributes are unknown).
        annotated: bool,
    },
}

/// One node of a [`SymGraph`].
#[derive(Clone, Debug)]
pub struct SymNode {
    /// What it is.
    pub kind: SymKind,
    /// `(node index, output index)` of each input.
    pub inputs: Vec<(usize, usize)>,
    /// A leaf's array while it is alive (the variable, or the array that entered the
    /// graph), so a caller can tell which of its arrays a leaf is, or take its value as a
    /// constant (graph tracing).
    pub array: Option<NDArray>,
}

/// The recorded computation of some arrays, inputs before users.
#[derive(Clone, Debug, Default)]
pub struct SymGraph {
    /// Nodes in topological order.
    pub nodes: Vec<SymNode>,
    /// `(node index, output index)` of each head.
    pub heads: Vec<(usize, usize)>,
}

/// An item of the walk: an entry of the recorded graph or a constant.
#[derive(Clone)]
enum Item {
    Entry(Entry),
    Const(Weak<ArrayInner>),
    /// A hidden constant of an annotated call.
    Hidden(Arc<()>),
    /// Input `pos` of the unannotated node at `node`, an array outside the graph whose
    /// identity the node did not keep.
    Anon(usize, usize),
}

/// A node's identity in the walk: an address, and for anonymous inputs their position + 1.
type Key = (usize, usize);

/// The node key and output index an item resolves to, and its inputs when it is an operator.
/// What an item resolves to: its key, its output index, and (for an operator) its kind
/// and inputs.
type Resolved = (Key, usize, Option<(SymKind, Vec<Item>)>);

fn resolve(item: &Item) -> Result<Resolved> {
    match item {
        Item::Const(w) => Ok(((w.as_ptr() as usize, 0), 0, None)),
        Item::Hidden(t) => Ok(((Arc::as_ptr(t) as usize, 0), 0, None)),
        Item::Anon(n, pos) => Ok(((*n, pos + 1), 0, None)),
        Item::Entry(e) => {
            let n = &e.node;
            if n.leaf.is_some() {
                return Ok(((Arc::as_ptr(n) as usize, 0), 0, None));
            }
            if let Some(s) = &*n.sym.lock() {
                let idx = s.outs.get(e.index).copied().flatten().ok_or_else(|| {
                    Error::value("get_symbol", format!("output {} of '{}' is internal to the call", e.index, s.call.op))
                })?;
                let ins = s
                    .call
                    .inputs
                    .iter()
                    .map(|i| match i {
                        SymInput::Entry(e) => Item::Entry(e.clone()),
                        SymInput::Const(w) => Item::Const(w.clone()),
                        SymInput::Hidden(t) => Item::Hidden(t.clone()),
                    })
                    .collect();
                let kind = SymKind::Op { op: s.call.op.to_string(), attrs: s.call.attrs.clone(), annotated: true };
                return Ok(((Arc::as_ptr(&s.call) as usize, 0), idx, Some((kind, ins))));
            }
            let p = Arc::as_ptr(n) as usize;
            let ins =
                n.inputs.iter().enumerate().map(|(k, i)| i.clone().map_or(Item::Anon(p, k), Item::Entry)).collect();
            let kind = SymKind::Op { op: n.name.to_string(), attrs: vec![], annotated: false };
            Ok(((p, 0), e.index, Some((kind, ins))))
        }
    }
}

/// The live array of a leaf item (a variable's, or a constant input's).
fn leaf_array(item: &Item) -> Option<NDArray> {
    match item {
        Item::Entry(e) => e.node.leaf.as_ref().and_then(Weak::upgrade).map(NDArray),
        Item::Const(w) => w.upgrade().map(NDArray),
        Item::Hidden(_) | Item::Anon(..) => None,
    }
}

/// The recorded computation that produced `heads`.
pub fn graph(heads: &[NDArray]) -> Result<SymGraph> {
    let mut g = SymGraph::default();
    let mut index: HashMap<Key, usize> = HashMap::new();
    for h in heads {
        let e = h.0.ag.lock().entry.clone().ok_or_else(|| {
            Error::value("get_symbol", "the array was not computed inside autograd.record() from a variable")
        })?;
        let (key, out, _) = resolve(&Item::Entry(e.clone()))?;
        // Iterative post-order walk: (item, its resolved inputs so far).
        let mut stack: Vec<(Item, Vec<(usize, usize)>)> = vec![(Item::Entry(e), vec![])];
        while let Some((item, done)) = stack.pop() {
            let (k, _, desc) = resolve(&item)?;
            if index.contains_key(&k) && done.is_empty() {
                continue;
            }
            match desc {
                None => {
                    let kind = if matches!(item, Item::Entry(_)) { SymKind::Var } else { SymKind::Const };
                    index.insert(k, g.nodes.len());
                    g.nodes.push(SymNode { kind, inputs: vec![], array: leaf_array(&item) });
                }
                Some((kind, ins)) => {
                    if done.len() == ins.len() {
                        index.insert(k, g.nodes.len());
                        g.nodes.push(SymNode { kind, inputs: done, array: None });
                        continue;
                    }
                    let next = ins[done.len()].clone();
                    let (nk, nout, _) = resolve(&next)?;
                    if let Some(&ni) = index.get(&nk) {
                        let mut done = done;
                        done.push((ni, nout));
                        stack.push((item, done));
                    } else {
                        stack.push((item, done));
                        stack.push((next, vec![]));
                    }
                }
            }
        }
        let hi = *index.get(&key).ok_or_else(|| Error::value("get_symbol", "head node missing from the walk"))?;
        g.heads.push((hi, out));
    }
    Ok(g)
}
