//! The NDArray type.

use crate::autograd::AgState;
use crate::dtype::{DType, Elem};
use crate::error::{Error, Result};
use crate::shape::Shape;
use crate::storage::{push_copy_out, Chunk, View};
use crate::Context;
use ferromx_engine::{Engine, WaitTicket};
use parking_lot::Mutex;
use std::sync::Arc;

/// Fails with [`Error::Device`] for a context that has no storage backend.
fn check_backend(ctx: Context) -> Result<()> {
    match crate::storage::backend_for(ctx) {
        Some(_) => Ok(()),
        None => Err(Error::Device {
            op: String::new(),
            ctx: ctx.to_string(),
            msg: "no backend for this context: ferromx has no GPU backend yet".into(),
        }),
    }
}

/// An n-dimensional array whose every operation runs on the engine.
///
/// An `NDArray` is a handle: cloning it gives another handle to the *same*
/// array (same identity for autograd, same storage). It is a shared storage
/// chunk (with its engine var) plus shape, element offset, dtype and context.
/// `reshape`, first-axis slices and `at(i)` are views of the same chunk, so a
/// write through a view is a write of the base; every other op allocates a new
/// chunk. Because views always cover a contiguous range, kernels only ever see
/// contiguous slices.
#[derive(Clone)]
pub struct NDArray(pub(crate) Arc<ArrayInner>);

pub(crate) struct ArrayInner {
    pub(crate) chunk: Arc<Chunk>,
    pub(crate) shape: Shape,
    pub(crate) offset: usize,
    pub(crate) dtype: DType,
    pub(crate) ag: Mutex<AgState>,
}

impl NDArray {
    pub(crate) fn from_parts(chunk: Arc<Chunk>, shape: Shape, offset: usize, dtype: DType) -> Self {
        NDArray(Arc::new(ArrayInner { chunk, shape, offset, dtype, ag: Mutex::new(AgState::default()) }))
    }

    /// A new array whose contents are unspecified (the engine writes them).
    /// Fails with [`Error::Alloc`] when the memory cannot be had, or the size
    /// does not fit in the address space, instead of aborting the process.
    /// Buffers of 64 KiB to 1 GiB are taken when the first op touching them runs
    /// (a failure there fails that op); see `storage::Chunk`.
    ///
    /// A context without a backend (`gpu(i)` today) fails with [`Error::Device`].
    pub fn empty(shape: impl Into<Shape>, dtype: DType, ctx: Context) -> Result<Self> {
        let shape = shape.into();
        check_backend(ctx)?;
        let bytes = shape.dims().iter().try_fold(dtype.size(), |acc, &d| acc.checked_mul(d));
        let chunk = bytes.and_then(|b| Chunk::new(b, ctx));
        match chunk {
            Some(chunk) => Ok(Self::from_parts(chunk, shape, 0, dtype)),
            None => {
                let want = shape.dims().iter().fold(dtype.size() as u128, |acc, &d| acc.saturating_mul(d as u128));
                Err(Error::Alloc {
                    op: String::new(),
                    shape: shape.to_string(),
                    dtype: dtype.to_string(),
                    bytes: crate::error::fmt_bytes(want),
                })
            }
        }
    }

    /// An array with the same shape, dtype and context as `self`, contents unspecified.
    pub fn empty_like(&self) -> Result<Self> {
        Self::empty(self.shape().clone(), self.dtype(), self.ctx())
    }

    /// Copies raw little-endian bytes (synchronously: the new chunk is not yet
    /// visible to any operation, so nothing is computed on the calling thread).
    pub fn from_bytes(bytes: &[u8], shape: impl Into<Shape>, dtype: DType, ctx: Context) -> Result<Self> {
        let shape = shape.into();
        check_backend(ctx)?;
        if bytes.len() != shape.size() * dtype.size() {
            return Err(Error::value("array", format!("{} bytes do not fill shape {shape} of {dtype}", bytes.len())));
        }
        match Chunk::from_bytes(bytes, ctx) {
            Some(c) => Ok(Self::from_parts(c, shape, 0, dtype)),
            None => Err(Error::Alloc {
                op: "array".into(),
                shape: shape.to_string(),
                dtype: dtype.to_string(),
                bytes: crate::error::fmt_bytes(bytes.len() as u128),
            }),
        }
    }

    /// An array holding `data` with the given shape.
    pub fn from_vec<T: Elem>(data: Vec<T>, shape: impl Into<Shape>, ctx: Context) -> Result<Self> {
        let shape = shape.into();
        if data.len() != shape.size() {
            return Err(Error::value("array", format!("{} values do not fill shape {shape}", data.len())));
        }
        let bytes: Vec<u8> = {
            let mut out = Vec::with_capacity(data.len() * T::DTYPE.size());
            for v in &data {
                match T::DTYPE {
                    DType::F32 => out.extend_from_slice(&v.to_f32().to_le_bytes()),
                    DType::F64 => out.extend_from_slice(&v.to_f64().to_le_bytes()),
                    DType::F16 => out.extend_from_slice(&half::f16::from_f64(v.to_f64()).to_le_bytes()),
                    DType::BF16 => out.extend_from_slice(&half::bf16::from_f64(v.to_f64()).to_le_bytes()),
                    DType::U8 => out.push(v.to_i64() as u8),
                    DType::I8 => out.push(v.to_i64() as i8 as u8),
                    DType::I32 => out.extend_from_slice(&(v.to_i64() as i32).to_le_bytes()),
                    DType::I64 => out.extend_from_slice(&v.to_i64().to_le_bytes()),
                    DType::Bool => out.push((v.to_f64() != 0.0) as u8),
                }
            }
            out
        };
        Self::from_bytes(&bytes, shape, T::DTYPE, ctx)
    }

    /// A 0-d array.
    pub fn scalar<T: Elem>(v: T, ctx: Context) -> Self {
        Self::from_vec(vec![v], Shape::scalar(), ctx).expect("one value fills a scalar")
    }

    /// Wraps external memory without copying (DLPack import).
    ///
    /// # Safety
    /// `ptr` must address `shape.size() * dtype.size()` bytes, aligned to
    /// `dtype.size()`, valid until `owner` is dropped, and not modified by
    /// anyone else while ferromx operations use it.
    pub unsafe fn from_external(
        ptr: std::ptr::NonNull<u8>,
        shape: impl Into<Shape>,
        dtype: DType,
        ctx: Context,
        owner: Box<dyn std::any::Any + Send + Sync>,
    ) -> Result<Self> {
        let shape = shape.into();
        if !(ptr.as_ptr() as usize).is_multiple_of(dtype.size()) {
            return Err(Error::value("from_dlpack", format!("data pointer is not aligned for {dtype}")));
        }
        let bytes = shape.size() * dtype.size();
        // SAFETY: forwarded from this function's contract.
        let chunk = unsafe { Chunk::from_external(ptr, bytes, ctx, owner) };
        Ok(Self::from_parts(chunk, shape, 0, dtype))
    }

    /// Address of this array's first element, for zero-copy export (DLPack).
    /// Call [`NDArray::wait_to_read`] (reading) or [`NDArray::wait_to_write`]
    /// (writing) first; the address stays valid while any handle lives.
    /// Fails with [`Error::Alloc`] when a buffer no op has touched yet cannot be had.
    pub fn data_addr(&self) -> Result<usize> {
        match self.0.chunk.addr() {
            Some(a) => Ok(a + self.0.offset * self.0.dtype.size()),
            None => Err(Error::Alloc {
                op: "to_dlpack".into(),
                shape: self.0.shape.to_string(),
                dtype: self.0.dtype.to_string(),
                bytes: crate::error::fmt_bytes(self.0.chunk.bytes as u128),
            }),
        }
    }

    /// Shape.
    pub fn shape(&self) -> &Shape {
        &self.0.shape
    }
    /// Dims as a slice.
    pub fn dims(&self) -> &[usize] {
        self.0.shape.dims()
    }
    /// Rank.
    pub fn ndim(&self) -> usize {
        self.0.shape.ndim()
    }
    /// Element count.
    pub fn size(&self) -> usize {
        self.0.shape.size()
    }
    /// Element type.
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }
    /// Context (device).
    pub fn ctx(&self) -> Context {
        self.0.chunk.ctx
    }
    /// Whether two handles are the same array.
    pub fn same(&self, o: &NDArray) -> bool {
        Arc::ptr_eq(&self.0, &o.0)
    }
    /// Whether two arrays share storage.
    pub fn shares_storage(&self, o: &NDArray) -> bool {
        Arc::ptr_eq(&self.0.chunk, &o.0.chunk)
    }
    /// Engine var id of the storage (for profilers and debugging).
    pub fn var_id(&self) -> u64 {
        self.0.chunk.var.id()
    }

    /// The engine var of the storage (for frontends pushing their own engine ops).
    pub fn var(&self) -> &ferromx_engine::Var {
        &self.0.chunk.var
    }

    pub(crate) fn view(&self) -> View {
        View {
            chunk: self.0.chunk.clone(),
            offset: self.0.offset,
            len: self.size(),
            dtype: self.0.dtype,
            shape: self.0.shape.clone(),
        }
    }

    /// Whether every pending write to this array's storage has completed. Never blocks.
    pub fn is_ready(&self) -> bool {
        Engine::global().is_ready(&self.0.chunk.var)
    }

    /// Blocks until pending writes complete; returns (once) the error of a failed op.
    pub fn wait_to_read(&self) -> Result<()> {
        Ok(Engine::global().wait_to_read(&self.0.chunk.var)?)
    }

    /// Starts a wait for pending writes (poll it in slices; see [`WaitTicket`]).
    pub fn read_ticket(&self, label: Option<Arc<str>>) -> Result<WaitTicket> {
        Ok(Engine::global().read_ticket(&self.0.chunk.var, label)?)
    }

    /// Blocks until pending reads and writes complete.
    pub fn wait_to_write(&self) -> Result<()> {
        Ok(Engine::global().wait_to_write(&self.0.chunk.var)?)
    }

    /// Pushes a copy of the contents into caller memory and returns a ticket
    /// to wait on (the copy runs on the engine like any op).
    ///
    /// # Safety
    /// `dst` must be valid for `self.size() * self.dtype().size()` bytes and
    /// untouched by anyone else until the ticket is done; `keepalive` should
    /// own that memory so it outlives the copy even if the caller stops waiting.
    pub unsafe fn copy_to_host(
        &self,
        dst: *mut u8,
        keepalive: Box<dyn std::any::Any + Send>,
        label: Option<Arc<str>>,
    ) -> Result<WaitTicket> {
        // SAFETY: forwarded from this function's contract.
        Ok(unsafe { push_copy_out(self.view(), dst as usize, keepalive, label) }?)
    }

    /// Blocks and returns the contents as raw bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let n = self.size() * self.dtype().size();
        let buf = Arc::new(Mutex::new(vec![0u8; n]));
        let ptr = buf.lock().as_mut_ptr();
        // SAFETY: the Vec is heap memory of `n` bytes owned by `buf`, which the
        // op keeps alive; nobody touches it until the wait below returns.
        let t = unsafe { self.copy_to_host(ptr, Box::new(buf.clone()), None)? };
        t.finish()?;
        let v = std::mem::take(&mut *buf.lock());
        Ok(v)
    }

    /// Blocks and returns the contents converted to `T`.
    pub fn to_vec<T: Elem>(&self) -> Result<Vec<T>> {
        let b = self.to_bytes()?;
        let n = self.size();
        let sz = self.dtype().size();
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let s = &b[i * sz..(i + 1) * sz];
            let v = match self.dtype() {
                DType::F32 => T::from_f64(f32::from_le_bytes([s[0], s[1], s[2], s[3]]) as f64),
                DType::F64 => T::from_f64(f64::from_le_bytes(s.try_into().expect("8 bytes"))),
                DType::F16 => T::from_f64(half::f16::from_le_bytes([s[0], s[1]]).to_f64()),
                DType::BF16 => T::from_f64(half::bf16::from_le_bytes([s[0], s[1]]).to_f64()),
                DType::U8 => T::from_i64(s[0] as i64),
                DType::I8 => T::from_i64(s[0] as i8 as i64),
                DType::I32 => T::from_i64(i32::from_le_bytes([s[0], s[1], s[2], s[3]]) as i64),
                DType::I64 => T::from_i64(i64::from_le_bytes(s.try_into().expect("8 bytes"))),
                DType::Bool => T::from_i64((s[0] != 0) as i64),
            };
            out.push(v);
        }
        Ok(out)
    }

    /// Blocks and returns the single value of a size-1 array as f64.
    pub fn item(&self) -> Result<f64> {
        if self.size() != 1 {
            return Err(Error::value(
                "item",
                format!("can only convert an array of size 1 to a scalar, got shape {}", self.shape()),
            ));
        }
        Ok(self.to_vec::<f64>()?[0])
    }

    /// A view with a new shape of the same size (no copy).
    pub(crate) fn view_as(&self, shape: Shape, extra_offset: usize) -> NDArray {
        NDArray::from_parts(self.0.chunk.clone(), shape, self.0.offset + extra_offset, self.0.dtype)
    }
}

impl std::fmt::Debug for NDArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NDArray({} {} @{})", self.shape(), self.dtype(), self.ctx())
    }
}
