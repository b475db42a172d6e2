//! Replayed plans: a fixed graph's operator calls recorded once and pushed again.
//!
//! Why: a hybridized block's forward pushes the same operator calls, on arrays of the
//! same shapes, every time it runs. For a batch-1 MLP the frontend's part of each
//! call (attribute parsing, shape inference, one output allocation and `OpCall` per
//! operator) cost more than the kernels. MXNet's `static_alloc`/`static_shape`
//! CachedOp plans a graph once per input signature; ferromx records the calls a
//! plan's first run collects in its bulk (a [`Tape`]: each call's definition,
//! parameters and kernel, with its views as templates over the plan's inputs and
//! the chunks the run allocated). A later run on inputs of the same shapes, dtypes
//! and contexts pushes those calls again, on the new inputs and on newly allocated
//! chunks, as one bulk, without running any operator's frontend.
//!
//! A tape is made only when the recorded run is a function of its inputs' metadata
//! alone, and [`Recording::finish`] checks that instead of trusting a list of
//! operators:
//! - every call the run issued went into this thread's bulk, none was pushed on
//!   its own and nothing was waited for or queried (the engine's
//!   [`crate::engine::frontend_calls_here`] is unchanged), and the bulk was never
//!   flushed in between;
//! - no random seed was drawn (a replay would repeat the numbers);
//! - every chunk the calls use is an input's or one made during the run that a call
//!   writes before any call reads it (a constant made on the calling thread is not a
//!   plan output, and state kept between runs is never replaced by a new chunk);
//! - no two inputs share a chunk.
//!
//! Autograd is not recorded by a tape: a frontend replays only outside
//! `autograd.record()`, and keys its tapes by the training flag (BatchNorm and
//! Dropout read it when their calls are made).

use super::bulk;
use crate::error::{Error, Result};
use crate::opdef::{KernelFn, Meta, OpCall, OpDef};
use crate::storage::{push_bulk, BulkCall, Chunk, View};
use crate::{Context, DType, NDArray, Shape};
use smallvec::SmallVec;
use std::sync::Arc;

/// Where a recorded view's chunk comes from at replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Src {
    /// Input `i`'s chunk, at an offset relative to the input's own.
    Input(usize),
    /// The `k`-th chunk the replay allocates.
    Fresh(usize),
}

/// A recorded view: its chunk's source, offset, length, dtype and shape.
#[derive(Clone, Debug)]
struct ViewT {
    src: Src,
    offset: usize,
    len: usize,
    dtype: DType,
    shape: Shape,
}

/// A recorded call: everything of its [`OpCall`] but the views, which are templates.
struct CallT {
    def: &'static OpDef,
    nums: SmallVec<[f64; 4]>,
    ints: SmallVec<[i64; 8]>,
    label: Option<Arc<str>>,
    f: KernelFn,
    ins: Vec<ViewT>,
    outs: Vec<ViewT>,
}

/// A plan's operator calls recorded for one input signature (see the module docs).
pub struct Tape {
    inputs: Vec<Meta>,
    /// Byte size and context of each chunk a replay allocates.
    alloc: Vec<(usize, Context)>,
    /// Per chunk the recorded run made: the allocated chunk holding it and its
    /// first byte there (see [`layout`]).
    place: Vec<(usize, usize)>,
    calls: Vec<CallT>,
    heads: Vec<ViewT>,
}

/// The state a recording started from: counters that any non-replayable step moves.
pub struct Recording {
    /// Engine variables with a smaller id existed before the run (ids only grow).
    first_var: u64,
    calls_here: u64,
    seeds: u64,
    flushes: u64,
}

impl Recording {
    /// Starts recording what this thread's bulk collects from now on. `None` when
    /// that would not be exactly one plan's calls: no bulk, a nested one, an
    /// imperative one (`engine.set_bulk_size`) or one already holding calls.
    pub fn start() -> Option<Recording> {
        if !bulk::fresh_outermost() {
            return None;
        }
        Some(Recording {
            first_var: crate::engine::Engine::global().next_var_id(),
            calls_here: crate::engine::frontend_calls_here(),
            seeds: crate::ops::random::seeds_drawn_here(),
            flushes: bulk::flushes_here(),
        })
    }

    /// Ends the recording of a run that read `inputs` and produced `heads`; call it
    /// before the bulk guard ends. The tape of the run, or `None` when the run is
    /// not replayable (module docs).
    pub fn finish(self, inputs: &[NDArray], heads: &[NDArray]) -> Option<Tape> {
        self.tape(inputs, heads).ok()
    }

    /// [`Recording::finish`] with the reason a run is not replayable.
    pub(crate) fn tape(self, inputs: &[NDArray], heads: &[NDArray]) -> std::result::Result<Tape, &'static str> {
        if crate::engine::frontend_calls_here() != self.calls_here {
            return Err("pushed, waited or queried outside the bulk");
        }
        if crate::ops::random::seeds_drawn_here() != self.seeds {
            return Err("drew a random seed");
        }
        if bulk::flushes_here() != self.flushes {
            return Err("the bulk was flushed");
        }
        bulk::with_calls(|calls| Tape::build(inputs, calls, heads, self.first_var))
    }
}

/// Maps a run's views to templates, numbering the chunks it allocated.
struct Mapper<'a> {
    inputs: &'a [NDArray],
    first_var: u64,
    fresh: Vec<Arc<Chunk>>,
    written: Vec<bool>,
}

impl Mapper<'_> {
    /// The template of `v`; `None` when it reads a chunk nothing wrote yet, lies
    /// before its input's offset, or uses memory that is not an input's and was
    /// not made during the run (or that a replay cannot allocate again).
    fn map(&mut self, v: &View, writing: bool) -> std::result::Result<ViewT, &'static str> {
        let (src, offset) = match self.inputs.iter().position(|x| Arc::ptr_eq(&x.0.chunk, &v.chunk)) {
            Some(i) => (Src::Input(i), v.offset.checked_sub(self.inputs[i].0.offset).ok_or("a view before its input")?),
            None => {
                let k = match self.fresh.iter().position(|c| Arc::ptr_eq(c, &v.chunk)) {
                    Some(k) => k,
                    None => {
                        if v.chunk.is_external() {
                            return Err("borrowed memory that is not an input");
                        }
                        if v.chunk.var.id() < self.first_var {
                            return Err("an array older than the run that is not an input");
                        }
                        self.fresh.push(v.chunk.clone());
                        self.written.push(false);
                        self.fresh.len() - 1
                    }
                };
                if !writing && !self.written[k] {
                    return Err("read an array no call of the run wrote");
                }
                (Src::Fresh(k), v.offset)
            }
        };
        Ok(ViewT { src, offset, len: v.len, dtype: v.dtype, shape: v.shape.clone() })
    }

    /// Marks the fresh chunks of `outs` written.
    fn wrote(&mut self, outs: &[ViewT]) {
        for t in outs {
            if let Src::Fresh(k) = t.src {
                self.written[k] = true;
            }
        }
    }
}

impl Tape {
    fn build(
        inputs: &[NDArray],
        calls: &[BulkCall],
        heads: &[NDArray],
        first_var: u64,
    ) -> std::result::Result<Tape, &'static str> {
        if calls.is_empty() {
            return Err("no calls");
        }
        if !distinct_chunks(inputs) {
            return Err("two inputs share a chunk");
        }
        let mut m = Mapper { inputs, first_var, fresh: Vec::new(), written: Vec::new() };
        let mut out = Vec::with_capacity(calls.len());
        for (c, f, _) in calls {
            let ins = c.inputs.iter().map(|v| m.map(v, false)).collect::<std::result::Result<Vec<_>, _>>()?;
            let outs = c.outputs.iter().map(|v| m.map(v, true)).collect::<std::result::Result<Vec<_>, _>>()?;
            m.wrote(&outs);
            out.push(CallT {
                def: c.def,
                nums: c.nums.clone(),
                ints: c.ints.clone(),
                label: c.label.clone(),
                f: *f,
                ins,
                outs,
            });
        }
        let heads = heads.iter().map(|h| m.map(&h.view(), false)).collect::<std::result::Result<Vec<_>, _>>()?;
        let sizes: Vec<(usize, Context)> = m.fresh.iter().map(|c| (c.bytes, c.ctx)).collect();
        let returned: Vec<bool> = (0..sizes.len()).map(|k| heads.iter().any(|h| h.src == Src::Fresh(k))).collect();
        let (alloc, place) = layout(&sizes, &returned);
        Ok(Tape { inputs: inputs.iter().map(Meta::of).collect(), alloc, place, calls: out, heads })
    }

    /// Whether `inputs` have the recorded shapes, dtypes and contexts, each in a
    /// chunk of its own.
    pub fn matches(&self, inputs: &[NDArray]) -> bool {
        inputs.len() == self.inputs.len()
            && inputs
                .iter()
                .zip(&self.inputs)
                .all(|(x, m)| x.dtype() == m.dtype && x.ctx() == m.ctx && *x.shape() == m.shape)
            && distinct_chunks(inputs)
    }

    /// Number of recorded calls.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Whether the tape holds no calls (never true of a recorded tape).
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Pushes the recorded calls on `inputs` (which must [`Tape::matches`]) as one
    /// bulk engine op, after any work this thread holds back; returns the heads,
    /// new arrays over newly allocated chunks (or views of inputs where the run
    /// returned those).
    pub fn replay(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        if !self.matches(inputs) {
            return Err(Error::value("_replay", "inputs differ from the recorded signature"));
        }
        let fresh = self
            .alloc
            .iter()
            .map(|&(bytes, ctx)| {
                Chunk::new(bytes, ctx).ok_or_else(|| Error::Alloc {
                    op: "_replay".into(),
                    shape: format!("({bytes},)"),
                    dtype: "uint8".into(),
                    bytes: crate::error::fmt_bytes(bytes as u128),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let view = |t: &ViewT| {
            let (chunk, offset) = match t.src {
                Src::Input(i) => (inputs[i].0.chunk.clone(), inputs[i].0.offset + t.offset),
                Src::Fresh(k) => {
                    let (c, base) = self.place[k];
                    (fresh[c].clone(), base / t.dtype.size() + t.offset)
                }
            };
            View { chunk, offset, len: t.len, dtype: t.dtype, shape: t.shape.clone() }
        };
        let site = crate::storage::call_site();
        let calls: Vec<BulkCall> = self
            .calls
            .iter()
            .map(|c| {
                let call = OpCall {
                    def: c.def,
                    nums: c.nums.clone(),
                    ints: c.ints.clone(),
                    label: c.label.clone(),
                    inputs: c.ins.iter().map(view).collect(),
                    outputs: c.outs.iter().map(view).collect(),
                };
                (call, c.f, site.clone())
            })
            .collect();
        let heads = self
            .heads
            .iter()
            .map(|t| {
                let v = view(t);
                NDArray::from_parts(v.chunk, v.shape, v.offset, v.dtype)
            })
            .collect();
        // Work held back on this thread (a fusion chain, an imperative bulk) goes first.
        crate::engine::flush_deferred();
        push_bulk(calls);
        Ok(heads)
    }
}

/// The chunks a replay allocates (bytes, context), and per chunk of the recorded run
/// its allocation and first byte there.
type Layout = (Vec<(usize, Context)>, Vec<(usize, usize)>);

/// Intermediates up to this many bytes in all share one allocation per replay.
const MERGE_MAX: usize = 256 << 10;

/// Where a replay puts the chunks the recorded run made (`sizes`: bytes and context):
/// the chunks to allocate, and per recorded chunk its allocation and first byte. Small
/// intermediates (not `returned`, on the first one's context, up to [`MERGE_MAX`] bytes
/// in all) share one chunk at 64-byte aligned places, so a batch-1 forward allocates,
/// tracks and frees one chunk for them, not one per operator; larger ones keep their
/// own, so the bulk frees each once its last reader ran.
fn layout(sizes: &[(usize, Context)], returned: &[bool]) -> Layout {
    let mut alloc: Vec<(usize, Context)> = Vec::new();
    let mut place = vec![(0, 0); sizes.len()];
    let mut merged: Option<(usize, Context)> = None; // (alloc index, context)
    for (k, &(bytes, ctx)) in sizes.iter().enumerate() {
        let small = !returned[k] && bytes <= MERGE_MAX;
        match merged {
            Some((m, c)) if small && c == ctx && alloc[m].0 + bytes <= MERGE_MAX => {
                place[k] = (m, alloc[m].0);
                alloc[m].0 += bytes.next_multiple_of(64);
            }
            None if small => {
                merged = Some((alloc.len(), ctx));
                place[k] = (alloc.len(), 0);
                alloc.push((bytes.next_multiple_of(64), ctx));
            }
            _ => {
                place[k] = (alloc.len(), 0);
                alloc.push((bytes, ctx));
            }
        }
    }
    (alloc, place)
}

/// Whether no two of `xs` share a chunk.
fn distinct_chunks(xs: &[NDArray]) -> bool {
    xs.iter().enumerate().all(|(i, a)| xs[..i].iter().all(|b| !Arc::ptr_eq(&a.0.chunk, &b.0.chunk)))
}

#[cfg(test)]
#[path = "replay_tests.rs"]
mod tests;
