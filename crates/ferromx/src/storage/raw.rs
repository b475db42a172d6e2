//! Raw buffers and typed access to them from inside engine operations.
//!
//! # Safety argument
//!
//! This module holds the crate's `unsafe` code (apart from allocation in
//! `pool.rs` and the owned workspaces of `scratch.rs`). A [`Chunk`] owns one
//! 64-byte aligned allocation and the engine variable that guards it. Typed
//! slices of a chunk are only ever created by [`Kernel`], and a `Kernel` is
//! only ever constructed by [`push_kernel`] *inside the closure the engine
//! runs* for an operation that declared every input chunk's var as read and
//! every output chunk's var as written. The
//! engine's ordering rule then guarantees, for the whole time the closure runs:
//!
//! * no other operation writes any input or output chunk (writes are
//!   exclusive), and
//! * no other operation reads an output chunk.
//!
//! Within one operation, `push_kernel` rejects outputs that overlap an input
//! or another output in memory, and `Kernel::output` hands each output out at
//! most once, so the `&mut [T]` it returns is unique. Element types are checked
//! against the view's dtype, and buffers are 64-byte aligned with views at
//! element-multiple offsets, so every cast is aligned and in bounds.
//! Reading a chunk outside an operation is not possible through this API.

use super::backend::{backend_for, Backend};
use crate::dtype::{DType, Elem};
use crate::Context;
use ferromx_engine::{Engine, Op, OpFailure, Var};
use smallvec::SmallVec;
use std::cell::Cell;
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

/// One allocation plus the engine variable guarding it.
///
/// Memory is either the chunk's own (from the size-class pool, returned there
/// on drop) or borrowed from another framework through DLPack, in which case
/// `external` owns the producer's deleter and runs it on drop.
///
/// A chunk of our own from [`LAZY_MIN`] to [`LAZY_MAX`] bytes gets its buffer when
/// the first operation touching it *runs*, not when the frontend creates it: the
/// frontend may push a whole forward and backward ahead of execution, and a buffer
/// taken at push time would make every pending op's output exist at once.
pub(crate) struct Chunk {
    pub(crate) var: Var,
    /// The buffer and its pool class; `None` inside when the allocation failed.
    buf: OnceLock<Option<(NonNull<u8>, usize)>>,
    pub(crate) bytes: usize,
    pub(crate) ctx: Context,
    backend: Option<&'static dyn Backend>,
    external: Option<Box<dyn std::any::Any + Send + Sync>>,
}

/// Chunks at least this large are allocated when first used (smaller ones cost
/// less than the bookkeeping saves).
pub(crate) const LAZY_MIN: usize = 64 << 10;
/// Chunks larger than this are allocated at creation, so that an impossible size
/// is an error at the call that asked for it rather than at the next read.
pub(crate) const LAZY_MAX: usize = 1 << 30;

// SAFETY: the buffer is only accessed through `Kernel`, whose accesses the
// engine serialises (see the module docs); the pointer itself is plain data.
unsafe impl Send for Chunk {}
// SAFETY: as above; shared references never touch the buffer directly.
unsafe impl Sync for Chunk {}

impl Chunk {
    /// A chunk of `bytes` bytes from the context's backend (contents
    /// unspecified until an op writes it); `None` when the memory cannot be
    /// allocated. The caller checks first that the context has a backend.
    pub(crate) fn new(bytes: usize, ctx: Context) -> Option<Arc<Chunk>> {
        if bytes > isize::MAX as usize / 2 {
            return None;
        }
        let backend = backend_for(ctx)?;
        let buf = OnceLock::new();
        if !(LAZY_MIN..=LAZY_MAX).contains(&bytes) {
            let _ = buf.set(Some(backend.allocate(bytes)?));
        }
        Some(Arc::new(Chunk {
            var: Engine::global().new_var(),
            buf,
            bytes,
            ctx,
            backend: Some(backend),
            external: None,
        }))
    }

    /// The buffer, allocated now if no operation touched the chunk yet. Panics
    /// (inside an engine op: the op fails with this message) when the memory
    /// cannot be had.
    fn ptr(&self) -> NonNull<u8> {
        match self.try_ptr() {
            Some(p) => p,
            None => panic!("cannot allocate {} bytes: out of memory", self.bytes),
        }
    }

    /// The buffer, allocated now if needed; `None` when the memory cannot be had.
    fn try_ptr(&self) -> Option<NonNull<u8>> {
        self.buf.get_or_init(|| self.backend.and_then(|b| b.allocate(self.bytes))).map(|(p, _)| p)
    }

    /// Whether the buffer exists yet (tests of lazy allocation).
    #[cfg(test)]
    pub(crate) fn is_allocated(&self) -> bool {
        self.buf.get().is_some()
    }

    /// A chunk initialised from bytes on the calling thread. The chunk is new,
    /// so no operation can reference it yet.
    pub(crate) fn from_bytes(src: &[u8], ctx: Context) -> Option<Arc<Chunk>> {
        let c = Chunk::new(src.len(), ctx)?;
        let dst = c.try_ptr()?;
        if !src.is_empty() {
            // SAFETY: the chunk was just created, nothing else can reference it;
            // it has room for `src.len()` bytes and does not overlap `src`.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_ptr(), src.len()) };
        }
        Some(c)
    }
}

impl Chunk {
    /// Wraps memory owned by someone else (zero-copy import).
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `bytes` bytes, aligned for
    /// the element type it will be viewed as, and stay valid (and unused by
    /// anyone else while engine ops run on it) until `owner` is dropped.
    pub(crate) unsafe fn from_external(
        ptr: NonNull<u8>,
        bytes: usize,
        ctx: Context,
        owner: Box<dyn std::any::Any + Send + Sync>,
    ) -> Arc<Chunk> {
        Arc::new(Chunk {
            var: Engine::global().new_var(),
            buf: OnceLock::from(Some((ptr, 0))),
            bytes,
            ctx,
            backend: None,
            external: Some(owner),
        })
    }

    /// Whether the memory is another framework's (DLPack): it cannot be allocated again.
    pub(crate) fn is_external(&self) -> bool {
        self.external.is_some()
    }

    /// Address of the first byte (for zero-copy export; dereferencing it is
    /// the importer's business and must follow the engine's waits), allocating
    /// the buffer if no op touched it yet; `None` when that allocation fails.
    pub(crate) fn addr(&self) -> Option<usize> {
        self.try_ptr().map(|p| p.as_ptr() as usize)
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        match (self.external.take(), self.backend) {
            (Some(owner), _) => drop(owner),
            (None, Some(b)) => {
                if let Some(Some((ptr, class))) = self.buf.take() {
                    b.release(ptr, class);
                }
            }
            (None, None) => {}
        }
    }
}

/// The identity of an input's contents ([`Kernel::input_identity`]): the same
/// chunk, place and count of write events mean the same values, since every
/// write to a chunk is an engine op that declares it.
#[derive(Clone, Debug)]
pub(crate) struct Written {
    /// The chunk, to tell when it is gone.
    pub(crate) chunk: std::sync::Weak<Chunk>,
    /// Its engine variable's id (ids are never reused).
    pub(crate) var: u64,
    /// Its variable's write events (`Var::write_events`) when the identity was taken.
    pub(crate) writes: u64,
    /// The view's first element.
    pub(crate) offset: usize,
    /// The view's element count.
    pub(crate) len: usize,
}

impl Written {
    /// Whether both name the same values.
    pub(crate) fn same(&self, other: &Written) -> bool {
        (self.var, self.writes, self.offset, self.len) == (other.var, other.writes, other.offset, other.len)
    }

    /// Whether the chunk still exists.
    pub(crate) fn alive(&self) -> bool {
        self.chunk.strong_count() > 0
    }
}

/// What an operation captures of an array: chunk, element offset, length, dtype.
#[derive(Clone)]
pub(crate) struct View {
    pub(crate) chunk: Arc<Chunk>,
    pub(crate) offset: usize,
    pub(crate) len: usize,
    pub(crate) dtype: DType,
    pub(crate) shape: crate::Shape,
}

impl View {
    fn byte_range(&self) -> (usize, usize) {
        let s = self.offset * self.dtype.size();
        (s, s + self.len * self.dtype.size())
    }
    fn overlaps(&self, o: &View) -> bool {
        if !Arc::ptr_eq(&self.chunk, &o.chunk) {
            return false;
        }
        let (a0, a1) = self.byte_range();
        let (b0, b1) = o.byte_range();
        a0 < b1 && b0 < a1 && a1 > a0 && b1 > b0
    }
}

/// Typed access to an operation's inputs and outputs while it runs.
pub struct Kernel<'a> {
    ins: &'a [View],
    outs: &'a [View],
    taken: Cell<u64>,
}

impl<'a> Kernel<'a> {
    /// The `i`-th input as a slice of `T` (panics, becoming an op error, on a dtype mismatch).
    pub fn input<T: Elem>(&self, i: usize) -> &'a [T] {
        let v = &self.ins[i];
        assert_eq!(v.dtype, T::DTYPE, "kernel read input {i} with the wrong element type");
        assert!((v.offset + v.len) * v.dtype.size() <= v.chunk.bytes, "view out of its chunk's bounds");
        if v.len == 0 {
            return &[];
        }
        // SAFETY: see the module docs: the engine forbids concurrent writers
        // of this chunk while the op runs; the range is in bounds and aligned.
        unsafe { std::slice::from_raw_parts(v.chunk.ptr().as_ptr().cast::<T>().add(v.offset), v.len) }
    }

    /// The `i`-th output as a mutable slice of `T`; each output can be taken once.
    pub fn output<T: Elem>(&self, i: usize) -> &'a mut [T] {
        let v = &self.outs[i];
        assert_eq!(v.dtype, T::DTYPE, "kernel wrote output {i} with the wrong element type");
        assert!((v.offset + v.len) * v.dtype.size() <= v.chunk.bytes, "view out of its chunk's bounds");
        let bit = 1u64 << i;
        assert!(self.taken.get() & bit == 0, "kernel took output {i} twice");
        self.taken.set(self.taken.get() | bit);
        if v.len == 0 {
            return &mut [];
        }
        // SAFETY: see the module docs: the op holds exclusive write access to
        // this chunk, outputs do not overlap inputs or each other, and this
        // output is handed out only once.
        unsafe { std::slice::from_raw_parts_mut(v.chunk.ptr().as_ptr().cast::<T>().add(v.offset), v.len) }
    }

    /// What input `i` holds, as long as the returned [`Written`] compares
    /// equal: its chunk, its place in it and the chunk's write events.
    /// `None` for memory another framework owns (DLPack), which it may
    /// change behind the engine's back.
    pub(crate) fn input_identity(&self, i: usize) -> Option<Written> {
        let v = &self.ins[i];
        if v.chunk.external.is_some() {
            return None;
        }
        Some(Written {
            chunk: Arc::downgrade(&v.chunk),
            var: v.chunk.var.id(),
            writes: v.chunk.var.write_events(),
            offset: v.offset,
            len: v.len,
        })
    }

    /// Dtype of input `i`.
    pub fn in_dtype(&self, i: usize) -> DType {
        self.ins[i].dtype
    }

    /// Dtype of output `i`.
    pub fn out_dtype(&self, i: usize) -> DType {
        self.outs[i].dtype
    }

    /// Shape of input `i`.
    pub fn in_shape(&self, i: usize) -> &crate::Shape {
        &self.ins[i].shape
    }

    /// Shape of output `i`.
    pub fn out_shape(&self, i: usize) -> &crate::Shape {
        &self.outs[i].shape
    }

    /// Number of inputs.
    pub fn n_inputs(&self) -> usize {
        self.ins.len()
    }

    /// Number of outputs.
    pub fn n_outputs(&self) -> usize {
        self.outs.len()
    }

    /// Copies input `i`'s bytes to `dst`.
    ///
    /// # Safety
    /// `dst` must be valid for writes of the input's byte length and must not
    /// be accessed by anyone else until the operation completes.
    pub(crate) unsafe fn copy_input_to(&self, i: usize, dst: *mut u8) {
        let v = &self.ins[i];
        let (s, e) = v.byte_range();
        let n = e.saturating_sub(s);
        let src = v.chunk.ptr().as_ptr() as usize + s;
        let dst = dst as usize;
        let copy = |off: usize, len: usize| {
            // SAFETY: the source range is in bounds and not written concurrently
            // (module docs); the caller guarantees `dst` for `n` bytes, and the
            // parallel pieces below are disjoint.
            unsafe { std::ptr::copy_nonoverlapping((src + off) as *const u8, (dst + off) as *mut u8, len) };
        };
        // Large copies split across cores: one core does not saturate memory bandwidth.
        let threads = rayon::current_num_threads();
        if n >= 1 << 20 && threads > 1 {
            let piece = n.div_ceil(threads * 4).next_multiple_of(4096);
            super::fanout(n.div_ceil(piece), threads - 1, &|p| {
                let off = p * piece;
                copy(off, piece.min(n - off));
            });
        } else if n > 0 {
            copy(0, n);
        }
    }
}

thread_local! {
    static CALL_SITE: std::cell::RefCell<Option<Arc<str>>> = const { std::cell::RefCell::new(None) };
}

/// Sets the call-site label attached to ops pushed from this thread (the
/// Python frontend sets `file.py:line` before each call).
pub fn set_call_site(label: Option<Arc<str>>) {
    CALL_SITE.with(|c| *c.borrow_mut() = label);
}

/// The current call-site label of this thread.
pub fn call_site() -> Option<Arc<str>> {
    CALL_SITE.with(|c| c.borrow().clone())
}

/// Pushes a kernel reading `ins` and writing `outs` to the engine.
///
/// `detail` is computed only when a profiler listens (shapes for the trace).
pub(crate) fn push_kernel(
    name: &'static str,
    ins: Vec<View>,
    outs: Vec<View>,
    f: impl FnOnce(&Kernel) -> Result<(), OpFailure> + Send + 'static,
) {
    let meta = OpMeta::of(name, &ins, &outs);
    Engine::global().push(meta.op(name, move || {
        let k = Kernel { ins: &ins, outs: &outs, taken: Cell::new(0) };
        f(&k)
    }));
}

/// Pushes an operator call: the engine runs `f(&call, kernel)` with typed
/// access to the call's own input and output views (no copy of them).
pub(crate) fn push_op_call(call: crate::opdef::OpCall, f: crate::opdef::KernelFn) {
    let name = call.def.name;
    let meta = OpMeta::of(name, &call.inputs, &call.outputs);
    Engine::global().push(meta.op(name, move || {
        let k = Kernel { ins: &call.inputs, outs: &call.outputs, taken: Cell::new(0) };
        f(&call, &k)
    }));
}

/// [`push_op_call`] for a call fusion held back: no back-pressure wait, no
/// flush, and the call site recorded when the frontend issued it.
pub(crate) fn push_op_call_deferred(call: crate::opdef::OpCall, f: crate::opdef::KernelFn, label: Option<Arc<str>>) {
    let name = call.def.name;
    let meta = OpMeta::of(name, &call.inputs, &call.outputs);
    let op = Op::new(name, move || {
        let k = Kernel { ins: &call.inputs, outs: &call.outputs, taken: Cell::new(0) };
        f(&call, &k)
    })
    .reads(&meta.reads)
    .writes(&meta.writes)
    .device(meta.device)
    .bytes(meta.bytes)
    .detail(meta.detail)
    .label(label);
    Engine::global().push_deferred(op);
}

/// One call of a bulk: the call, its kernel and the call site that issued it.
pub(crate) type BulkCall = (crate::opdef::OpCall, crate::opdef::KernelFn, Option<Arc<str>>);

/// Pushes several operator calls as one engine op (a bulk): it reads what the
/// calls read and writes what they write, and runs the calls in order on one
/// worker. The first failing call ends it: its error, attributed to that call's
/// operator, is the error of every array the bulk writes (later calls do not run).
/// Held-back work: no back-pressure wait, no flush.
pub(crate) fn push_bulk(calls: Vec<BulkCall>) {
    let mut reads: SmallVec<[Var; 8]> = SmallVec::new();
    let mut writes: SmallVec<[Var; 8]> = SmallVec::new();
    let mut bytes = 0u64;
    for (c, _, _) in &calls {
        let m = OpMeta::of(c.def.name, &c.inputs, &c.outputs);
        reads.extend(m.reads);
        writes.extend(m.writes);
        bytes += m.bytes;
    }
    let label = calls.first().and_then(|c| c.2.clone());
    let device =
        calls.first().map(|(c, _, _)| c.outputs.first().or(c.inputs.first()).map(|v| v.chunk.ctx).unwrap_or_default());
    let (name, detail): (std::borrow::Cow<'static, str>, Option<Arc<str>>) = if Engine::global().has_listeners() {
        let names: Vec<&str> = calls.iter().map(|(c, _, _)| c.def.name).collect();
        let d = format!("bulk of {} calls: {}", names.len(), names.join(", "));
        (format!("_bulk({})", names.join(",")).into(), Some(Arc::from(d)))
    } else {
        (std::borrow::Cow::Borrowed("_bulk"), None)
    };
    let op = Op::new(name, move || {
        // Each call is dropped once it ran: its views are the last references to
        // intermediates the frontend already released, so they are freed as soon
        // as their last reader in the bulk is done, not when the bulk ends (holding
        // them all cost ~100 MB of peak RSS in a ResNet-18 training step).
        for (call, f, site) in calls {
            let op_name = call.def.name;
            let r = f(&call, &Kernel { ins: &call.inputs, outs: &call.outputs, taken: Cell::new(0) });
            drop(call);
            r.map_err(|e| if e.op.is_some() { e } else { e.in_op(op_name).at(site.as_deref()) })?;
        }
        Ok(())
    })
    .reads(&reads)
    .writes(&writes)
    .device(device.unwrap_or_default())
    .bytes(bytes)
    .detail(detail)
    .label(label);
    Engine::global().push_deferred(op);
}

/// Pushes a fused elementwise op (held-back work: no back-pressure wait,
/// no flush), with its own name, call-site label and profiler detail.
pub(crate) fn push_fused(
    name: std::borrow::Cow<'static, str>,
    ins: Vec<View>,
    outs: Vec<View>,
    label: Option<Arc<str>>,
    detail: Option<Arc<str>>,
    f: impl FnOnce(&Kernel) -> Result<(), OpFailure> + Send + 'static,
) {
    let meta = OpMeta::of("_fused", &ins, &outs);
    let op = Op::new(name, move || {
        let k = Kernel { ins: &ins, outs: &outs, taken: Cell::new(0) };
        f(&k)
    })
    .reads(&meta.reads)
    .writes(&meta.writes)
    .device(meta.device)
    .bytes(meta.bytes)
    .detail(detail.or(meta.detail))
    .label(label);
    Engine::global().push_deferred(op);
}

/// What the engine needs to know of an op's views: vars, device, bytes and
/// the profiler's detail (computed only when a profiler listens).
struct OpMeta {
    reads: SmallVec<[Var; 4]>,
    writes: SmallVec<[Var; 2]>,
    device: Context,
    bytes: u64,
    detail: Option<Arc<str>>,
}

impl OpMeta {
    /// Checks that no output overlaps an input or another output.
    fn of(name: &'static str, ins: &[View], outs: &[View]) -> OpMeta {
        for (i, o) in outs.iter().enumerate() {
            let bad = ins.iter().any(|x| x.overlaps(o)) || outs[..i].iter().any(|x| x.overlaps(o));
            assert!(!bad, "{name}: an output overlaps an input or another output (internal error)");
        }
        assert!(outs.len() <= 64, "{name}: too many outputs");
        let detail: Option<Arc<str>> = if Engine::global().has_listeners() {
            let shapes: Vec<String> = ins.iter().map(|v| format!("{}{}", v.dtype, v.shape)).collect();
            Some(Arc::from(format!("inputs: {}", shapes.join(", "))))
        } else {
            None
        };
        OpMeta {
            reads: ins.iter().map(|v| v.chunk.var.clone()).collect(),
            writes: outs.iter().map(|v| v.chunk.var.clone()).collect(),
            device: outs.first().or(ins.first()).map(|v| v.chunk.ctx).unwrap_or_default(),
            bytes: outs.iter().map(|v| (v.len * v.dtype.size()) as u64).sum(),
            detail,
        }
    }

    /// The engine op running `run`.
    fn op(self, name: &'static str, run: impl FnOnce() -> Result<(), OpFailure> + Send + 'static) -> Op {
        Op::new(name, run)
            .reads(&self.reads)
            .writes(&self.writes)
            .device(self.device)
            .bytes(self.bytes)
            .detail(self.detail)
            .label(call_site())
    }
}

/// Pushes an op that copies `view` into caller memory at `dst`, keeping
/// `keepalive` alive until it has run. Returns a ticket for that op.
///
/// # Safety
/// `dst` must be valid for `view.len * dtype.size()` bytes until the op has
/// run; `keepalive` should own it.
pub(crate) unsafe fn push_copy_out(
    view: View,
    dst: usize,
    keepalive: Box<dyn std::any::Any + Send>,
    label: Option<Arc<str>>,
) -> ferromx_engine::Result<ferromx_engine::WaitTicket> {
    let var = view.chunk.var.clone();
    let device = view.chunk.ctx;
    let ins = vec![view];
    let op = Op::new("copy_to_host", move || {
        let k = Kernel { ins: &ins, outs: &[], taken: Cell::new(0) };
        // SAFETY: forwarded from the caller's contract.
        unsafe { k.copy_input_to(0, dst as *mut u8) };
        drop(keepalive);
        Ok(())
    })
    .reads([&var])
    .device(device)
    .label(call_site());
    Engine::global().push_ticket(op, &var, label)
}

#[cfg(test)]
mod tests {
    use crate::{ops, Context, DType, NDArray};

    #[test]
    fn a_buffer_is_taken_when_the_first_op_runs() {
        let a = NDArray::empty(crate::Shape::new(&[1 << 18]), DType::F32, Context::default()).expect("empty");
        assert!(!a.0.chunk.is_allocated(), "a 1 MiB chunk has no buffer before any op ran");
        let b = ops::scalar(ops::BinOp::Add, &ops::zeros_like(&a).expect("zeros"), 1.0).expect("add");
        assert_eq!(b.to_vec::<f32>().expect("read")[..3], [1.0, 1.0, 1.0]);
        assert!(b.0.chunk.is_allocated());
        let small = NDArray::empty(crate::Shape::new(&[16]), DType::F32, Context::default()).expect("empty");
        assert!(small.0.chunk.is_allocated(), "small chunks are allocated at creation");
    }
}
