//! Eager fusion: consecutive elementwise operator calls become one engine op.
//!
//! [`crate::opdef::push_call`] hands every call here first. A call of an
//! elementwise operator (a unary function, a binary operator on inputs of the
//! output's shape, a scalar operator, `cast`, `_copy`) is not pushed: it is
//! appended to the pending *chain* (one per process, behind a mutex; the
//! Python frontend's threads are serialised by the GIL anyway). Its inputs
//! that an earlier call of the chain produces become registers of the chain.
//!
//! The chain is flushed — turned into engine ops — before anything else
//! reaches the engine: the engine calls [`flush`] (through
//! [`crate::engine::set_flush_hook`]) at the start of every push, wait
//! (`wait_to_read`, `asnumpy`, `waitall`, copy-out) and `is_ready` from a
//! frontend thread while a chain is pending, so the engine sees every op in
//! the order the frontend issued it. It is also flushed when the chain
//! reaches [`MAX_NODES`] calls or [`MAX_EXT`] inputs, when a call of another
//! length or context arrives, and when a call would write memory the chain
//! reads or writes, or read part of a value the chain produces.
//!
//! At a flush, a value is *live* when anything besides the chain holds its
//! storage chunk (`Arc::strong_count > 1`: a Python `NDArray` handle, a view
//! of it, an autograd node, an op's capture). Dead values — temporaries
//! whose handles Python has already dropped — are computed in registers and
//! never stored. Live values are grouped by the set of external inputs they
//! depend on, and each group becomes one fused op reading exactly those
//! inputs and writing exactly those values: an input that fails (an earlier
//! op's error) fails the values that depend on it and nothing else, as
//! unfused. A chain of one call is pushed as that call itself.
//!
//! The fused kernel (`exec.rs`) runs tile by tile with each operator's own
//! per-element code (results are bitwise those of the unfused kernels), and
//! splits the range across cores with `fanout`. It is on by default;
//! `FERROMX_FUSION=0` turns it off (it is never on under `NaiveEngine`);
//! [`set_enabled`] switches it at run time.

pub mod bulk;
mod exec;
mod lanes;
pub mod replay;
pub(crate) mod tile;

use crate::engine::{self, DeviceKind, Engine};
use crate::opdef::{KernelSlot, OpCall, OpDef, ScalarForm};
use crate::ops::{self, BinOp, UnaryOp};
use crate::storage::{call_site, push_fused, View};
use crate::Context;
use exec::{PStep, Program};
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

/// Calls a chain holds at most before it is flushed.
pub const MAX_NODES: usize = 32;
/// External inputs a chain reads at most.
pub const MAX_EXT: usize = 16;

/// An operand of a chain step: an external input or an earlier step's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Src {
    Ext(u8),
    Reg(u8),
}

/// The per-element function of a step.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Step {
    Unary(UnaryOp),
    Binary(BinOp),
    Scalar(BinOp, bool, f64),
    Cast,
    Copy,
    /// A constant (`_zeros`, `ones_like`, ...): no operand.
    Fill(f64),
    /// `clip(x, lo, hi)`.
    Clip(f64, f64),
    /// `where(c, x, y)`.
    Where,
}

struct Node {
    def: &'static OpDef,
    step: Step,
    args: SmallVec<[Src; 2]>,
    /// The output; `None` once nothing but the chain held it (its buffer is
    /// released at once: such a value can never be read, only recomputed).
    out: Option<View>,
    dtype: crate::DType,
    label: Option<Arc<str>>,
}

impl Node {
    /// Whether something besides the chain still holds the output's storage.
    fn live(&mut self) -> bool {
        if self.out.as_ref().is_some_and(|v| Arc::strong_count(&v.chunk) == 1) {
            self.out = None;
        }
        self.out.is_some()
    }
    fn holds(&self, v: &View) -> bool {
        self.out.as_ref().is_some_and(|o| Arc::ptr_eq(&o.chunk, &v.chunk))
    }
    fn is(&self, v: &View) -> bool {
        self.out.as_ref().is_some_and(|o| exact(o, v))
    }
}

struct Chain {
    n: usize,
    ctx: Option<Context>,
    ext: Vec<View>,
    nodes: Vec<Node>,
}

static CHAIN: Mutex<Chain> = Mutex::new(Chain { n: 0, ctx: None, ext: Vec::new(), nodes: Vec::new() });
/// 0: not read yet, 1: on, 2: off.
static ENABLED: AtomicU8 = AtomicU8::new(0);

/// Whether eager fusion is on: the default, `FERROMX_FUSION=0` turns it off
/// (it is never on under `NaiveEngine`, where each op runs as it is pushed).
pub fn enabled() -> bool {
    match ENABLED.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let off = std::env::var("FERROMX_FUSION").is_ok_and(|v| v.trim() == "0") || Engine::global().is_naive();
            ensure_hook();
            ENABLED.store(if off { 2 } else { 1 }, Ordering::Relaxed);
            !off
        }
    }
}

/// Installs the engine's flush hook (once): this thread's bulk first, then the chain.
fn ensure_hook() {
    engine::set_flush_hook(flush_all);
}

/// The engine's flush hook: hands over everything held back, this thread's bulk
/// (newer than the chain: a bulk starts by flushing the chain) and the chain.
fn flush_all() {
    bulk::flush();
    flush();
}

/// Turns eager fusion on or off for the whole process (pending work is flushed first).
pub fn set_enabled(on: bool) {
    let _ = enabled();
    flush();
    ENABLED.store(if on && !Engine::global().is_naive() { 1 } else { 2 }, Ordering::Relaxed);
}

thread_local! {
    /// Set while this thread pushes a chain: the engine calls [`flush`] at the
    /// start of each of those pushes, and the chain's lock is already held.
    static FLUSHING: Cell<bool> = const { Cell::new(false) };
}

/// Hands the pending chain to the engine (no-op when nothing is pending).
///
/// Another thread's flush in progress makes this wait for it (on the chain's
/// lock): its ops may be inputs of what the caller is about to push or read.
pub fn flush() {
    if FLUSHING.with(Cell::get) {
        return;
    }
    flush_locked(&mut CHAIN.lock());
}

/// Clears [`FLUSHING`] when a flush ends, also by a panic.
struct FlushingGuard;

impl FlushingGuard {
    fn enter() -> FlushingGuard {
        FLUSHING.with(|f| f.set(true));
        FlushingGuard
    }
}

impl Drop for FlushingGuard {
    fn drop(&mut self) {
        FLUSHING.with(|f| f.set(false));
    }
}

/// Whether `v` is exactly a value the pending chain computes (so an elementwise
/// call reading it joins the chain instead of waiting for it).
pub(crate) fn computes(v: &View) -> bool {
    enabled() && CHAIN.lock().nodes.iter().any(|nd| nd.is(v))
}

/// Calls (of the pending chain) not yet handed to the engine.
pub fn pending() -> usize {
    CHAIN.lock().nodes.len()
}

fn step_of(call: &OpCall) -> Option<Step> {
    if !call.ints.is_empty() || call.outputs.len() != 1 {
        return None;
    }
    let (out, ins) = (&call.outputs[0], &call.inputs);
    let same = |i: usize| ins.get(i).is_some_and(|v| v.dtype == out.dtype);
    match call.def.scalar {
        Some(ScalarForm::Fill) if ins.is_empty() && call.nums.len() == 1 => Some(Step::Fill(call.nums[0])),
        Some(ScalarForm::Clip) if ins.len() == 1 && same(0) && call.nums.len() == 2 => {
            Some(Step::Clip(call.nums[0], call.nums[1]))
        }
        Some(ScalarForm::Where) if ins.len() == 3 && same(1) && same(2) => Some(Step::Where),
        Some(ScalarForm::Unary(u, _)) if ins.len() == 1 && same(0) => Some(Step::Unary(u)),
        Some(ScalarForm::Binary(op)) if ins.len() == 2 && same(0) && same(1) => Some(Step::Binary(op)),
        Some(ScalarForm::Scalar(op, rev)) if ins.len() == 1 && same(0) && call.nums.len() == 1 => {
            Some(Step::Scalar(op, rev, call.nums[0]))
        }
        None if ops::is_cast(call.def) && ins.len() == 1 => Some(Step::Cast),
        None if ops::is_copy(call.def) && ins.len() == 1 && same(0) => Some(Step::Copy),
        _ => None,
    }
}

fn exact(a: &View, b: &View) -> bool {
    Arc::ptr_eq(&a.chunk, &b.chunk) && a.offset == b.offset && a.len == b.len && a.dtype == b.dtype
}

/// Takes `call` into the pending chain, or gives it back to be pushed as is.
///
/// The call comes back by value, not boxed: this runs on every push, and an
/// allocation per unfusable op would cost more than moving 184 bytes.
#[allow(clippy::result_large_err)]
pub(crate) fn try_defer(call: OpCall) -> std::result::Result<(), OpCall> {
    if !enabled() || engine::in_engine_op() {
        return Err(call);
    }
    let Some(step) = step_of(&call) else { return Err(call) };
    let out = &call.outputs[0];
    let (n, ctx) = (out.len, out.chunk.ctx);
    if n == 0 || ctx.kind == DeviceKind::Gpu || call.inputs.iter().any(|v| v.len != n || v.chunk.ctx != ctx) {
        return Err(call);
    }
    let mut ch = CHAIN.lock();
    for nd in ch.nodes.iter_mut() {
        nd.live();
    }
    let clash = ch.nodes.iter().any(|nd| nd.holds(out) || call.inputs.iter().any(|v| nd.holds(v) && !nd.is(v)))
        || ch.ext.iter().any(|v| Arc::ptr_eq(&v.chunk, &out.chunk));
    if !ch.nodes.is_empty()
        && (clash
            || ch.n != n
            || ch.ctx != Some(ctx)
            || ch.nodes.len() >= MAX_NODES
            || ch.ext.len() + call.inputs.len() > MAX_EXT)
    {
        flush_locked(&mut ch);
    }
    if ch.nodes.is_empty() {
        ch.n = n;
        ch.ctx = Some(ctx);
    }
    let OpCall { def, inputs, mut outputs, .. } = call;
    let mut args = SmallVec::new();
    for v in inputs {
        let src = if let Some(j) = ch.nodes.iter().rposition(|nd| nd.is(&v)) {
            Src::Reg(j as u8)
        } else if let Some(i) = ch.ext.iter().position(|e| exact(e, &v)) {
            Src::Ext(i as u8)
        } else {
            ch.ext.push(v);
            Src::Ext((ch.ext.len() - 1) as u8)
        };
        args.push(src);
    }
    let out = outputs.pop().expect("one output");
    ch.nodes.push(Node { def, step, args, dtype: out.dtype, out: Some(out), label: call_site() });
    engine::set_deferred(true);
    Ok(())
}

/// Pushes the chain's live values as fused ops (one per input set).
fn flush_locked(ch: &mut Chain) {
    if ch.nodes.is_empty() {
        return;
    }
    let _flushing = FlushingGuard::enter();
    let mut nodes = std::mem::take(&mut ch.nodes);
    let ext = std::mem::take(&mut ch.ext);
    let live: Vec<bool> = nodes.iter_mut().map(Node::live).collect();
    let mut masks: Vec<u64> = Vec::with_capacity(nodes.len());
    for nd in &nodes {
        let m = nd.args.iter().fold(0u64, |m, a| match *a {
            Src::Ext(i) => m | (1 << i),
            Src::Reg(r) => m | masks[r as usize],
        });
        masks.push(m);
    }
    let mut groups: Vec<(u64, Vec<usize>)> = Vec::new();
    for (j, _) in live.iter().enumerate().filter(|(_, l)| **l) {
        match groups.iter_mut().find(|g| g.0 == masks[j]) {
            Some(g) => g.1.push(j),
            None => groups.push((masks[j], vec![j])),
        }
    }
    for (mask, outs) in groups {
        push_group(&nodes, &ext, mask, &outs);
    }
    // Only now, with every fused op in the engine: a thread that reads `false`
    // goes on to push or wait, and must find these ops there. Cleared before
    // the pushes, a second frontend thread read or overwrote a value whose
    // writer was still in this chain (the `ops_index` race, 7 failures in 60).
    engine::set_deferred(false);
}

/// Per step of a chain or program of `len` steps (`args(j)`: step `j`'s
/// operands), whether the values `outs` depend on it.
fn needed_by<'a>(outs: &[usize], len: usize, args: impl Fn(usize) -> &'a [Src]) -> Vec<bool> {
    let mut needed = vec![false; len];
    for &j in outs {
        needed[j] = true;
    }
    for j in (0..len).rev() {
        if needed[j] {
            for a in args(j) {
                if let Src::Reg(r) = *a {
                    needed[r as usize] = true;
                }
            }
        }
    }
    needed
}

/// Pushes one fused op computing `outs` (node indices) from the inputs in `mask`.
fn push_group(nodes: &[Node], ext: &[View], mask: u64, outs: &[usize]) {
    if outs.len() == 1 && outs[0] == 0 {
        return push_single(&nodes[0], ext);
    }
    let needed = needed_by(outs, nodes.len(), |j| &nodes[j].args);
    let mut ext_map = [u8::MAX; 64];
    let mut ins = Vec::new();
    for (i, v) in ext.iter().enumerate() {
        if mask & (1 << i) != 0 {
            ext_map[i] = ins.len() as u8;
            ins.push(v.clone());
        }
    }
    let mut reg_map = vec![u8::MAX; nodes.len()];
    let mut steps = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    let mut step_defs: Vec<&str> = Vec::new();
    for (j, nd) in nodes.iter().enumerate().filter(|(j, _)| needed[*j]) {
        let args: SmallVec<[Src; 2]> = nd
            .args
            .iter()
            .map(|a| match *a {
                Src::Ext(i) => Src::Ext(ext_map[i as usize]),
                Src::Reg(r) => Src::Reg(reg_map[r as usize]),
            })
            .collect();
        let (step, args) = fold_constant(nd.step, args, &steps, nd.dtype);
        // A call repeating an earlier one (`x*2+1` written twice) reuses its value.
        if let Some(r) =
            steps.iter().position(|s: &PStep| s.dtype == nd.dtype && s.args == args && same_step(s.step, step))
        {
            reg_map[j] = r as u8;
            // A repeated call is one step under one name; a different call whose
            // value turned out the same (`sqrt` of zeros) still counts as a call.
            if step_defs[r] != nd.def.name {
                names.push(nd.def.name);
            }
            continue;
        }
        reg_map[j] = steps.len() as u8;
        steps.push(PStep { step, args, dtype: nd.dtype });
        step_defs.push(nd.def.name);
        names.push(nd.def.name);
    }
    let outv: Vec<View> = outs.iter().filter_map(|&j| nodes[j].out.clone()).collect();
    let prog = Program::new(
        ins.iter().map(|v| v.dtype).collect(),
        steps,
        outs.iter().map(|&j| reg_map[j] as usize).collect(),
        outv.first().map(|v| v.len).unwrap_or(0),
    );
    let first = needed.iter().position(|&x| x).unwrap_or(outs[0]);
    let label = nodes[first].label.clone();
    let (name, detail) = if Engine::global().has_listeners() {
        let sites: Vec<String> = nodes
            .iter()
            .enumerate()
            .filter(|(j, _)| needed[*j])
            .map(|(_, nd)| format!("{} ({})", nd.def.name, nd.label.as_deref().unwrap_or("?")))
            .collect();
        let shapes: Vec<String> = ins.iter().map(|v| format!("{}{}", v.dtype, v.shape)).collect();
        let d = format!("fused: {}; inputs: {}", sites.join(", "), shapes.join(", "));
        (format!("_fused({})", names.join(",")).into(), Some(Arc::from(d)))
    } else {
        (std::borrow::Cow::Borrowed("_fused"), None)
    };
    push_fused(name, ins, outv, label, detail, move |k| exec::run(&prog, k));
}

/// The value and dtype of `a` when it is a constant step's value.
fn constant(a: &Src, steps: &[PStep]) -> Option<(f64, crate::DType)> {
    match *a {
        Src::Reg(r) => match steps[r as usize].step {
            Step::Fill(c) => Some((c, steps[r as usize].dtype)),
            _ => None,
        },
        Src::Ext(_) => None,
    }
}

/// Folds constant operands into a step (`args` already in `steps`' registers):
/// - a step whose operands are all constants (`-ones_like(y)`) becomes a constant,
///   evaluated once with the kernels the fused op would run;
/// - a float `+ - * /` with one constant operand (`ones_like(y) * x`, the head
///   gradient of `backward()`) becomes that operator's scalar form: the same
///   arithmetic on the same converted constant, so results stay bitwise those of the
///   unfused ops, and the constant's step is then not run.
fn fold_constant(
    step: Step,
    args: SmallVec<[Src; 2]>,
    steps: &[PStep],
    dtype: crate::DType,
) -> (Step, SmallVec<[Src; 2]>) {
    let consts: Option<SmallVec<[(f64, crate::DType); 2]>> = args.iter().map(|a| constant(a, steps)).collect();
    if let Some(c) = consts.filter(|c| !c.is_empty()) {
        return match exec::eval_constant(step, &c, dtype) {
            Some(v) => (Step::Fill(v), SmallVec::new()),
            None => (step, args),
        };
    }
    let Step::Binary(op) = step else { return (step, args) };
    if !dtype.is_float() || !matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div) {
        return (step, args);
    }
    match (constant(&args[0], steps), constant(&args[1], steps)) {
        (None, Some((c, _))) => (Step::Scalar(op, false, c), SmallVec::from_slice(&args[..1])),
        (Some((c, _)), None) => (Step::Scalar(op, true, c), SmallVec::from_slice(&args[1..])),
        _ => (step, args),
    }
}

/// Whether two steps compute the same function (scalars compared bit for bit).
fn same_step(a: Step, b: Step) -> bool {
    match (a, b) {
        (Step::Unary(x), Step::Unary(y)) => x == y,
        (Step::Binary(x), Step::Binary(y)) => x == y,
        (Step::Scalar(x, rx, cx), Step::Scalar(y, ry, cy)) => x == y && rx == ry && cx.to_bits() == cy.to_bits(),
        (Step::Fill(x), Step::Fill(y)) => x.to_bits() == y.to_bits(),
        (Step::Clip(a, b), Step::Clip(c, d)) => a.to_bits() == c.to_bits() && b.to_bits() == d.to_bits(),
        (Step::Where, Step::Where) => true,
        (Step::Cast, Step::Cast) | (Step::Copy, Step::Copy) => true,
        _ => false,
    }
}

/// A chain of one live call: pushed as that call (same name, kernel, label).
fn push_single(nd: &Node, ext: &[View]) {
    let inputs: Vec<View> = nd
        .args
        .iter()
        .map(|a| match *a {
            Src::Ext(i) => ext[i as usize].clone(),
            Src::Reg(_) => unreachable!("the first call of a chain reads only external inputs"),
        })
        .collect();
    let nums: SmallVec<[f64; 4]> = match nd.step {
        Step::Scalar(_, _, s) | Step::Fill(s) => SmallVec::from_slice(&[s]),
        Step::Clip(lo, hi) => SmallVec::from_slice(&[lo, hi]),
        _ => SmallVec::new(),
    };
    let Some(out) = nd.out.clone() else { return };
    let ctx = out.chunk.ctx;
    let call = OpCall { def: nd.def, nums, ints: SmallVec::new(), label: None, inputs, outputs: vec![out] };
    if let KernelSlot::Call(f) = nd.def.kernel(ctx) {
        crate::storage::push_op_call_deferred(call, *f, nd.label.clone());
    }
}
