//! Device backends: where a context's memory comes from.
//!
//! Storage is a device buffer behind a [`Backend`]. Host memory (the
//! size-class pool) backs `cpu`, `cpu_pinned` and `cpu_shared` contexts;
//! no backend exists for `gpu` yet, so creating an array there fails with
//! [`crate::Error::Device`] in Rust as well as in Python instead of silently
//! computing on host memory. A GPU backend plugs in here, beside each
//! operator's GPU kernel slot ([`crate::opdef::OpDef::gpu`]).

use super::pool::{self, size_class};
use crate::engine::DeviceKind;
use crate::Context;
use std::ptr::NonNull;

/// A source of device memory for the contexts of one device kind.
pub trait Backend: Send + Sync {
    /// Name for messages (`"host"`).
    fn name(&self) -> &'static str;
    /// A buffer of at least `bytes` bytes aligned to 64, with its allocation
    /// class (passed back to [`Backend::release`]); `None` when the memory
    /// cannot be had.
    fn allocate(&self, bytes: usize) -> Option<(NonNull<u8>, usize)>;
    /// Returns a buffer from [`Backend::allocate`].
    fn release(&self, ptr: NonNull<u8>, class: usize);
}

/// Host memory from the size-class pool.
pub struct Host;

impl Backend for Host {
    fn name(&self) -> &'static str {
        "host"
    }
    fn allocate(&self, bytes: usize) -> Option<(NonNull<u8>, usize)> {
        pool::take(size_class(bytes))
    }
    fn release(&self, ptr: NonNull<u8>, class: usize) {
        pool::give(ptr, class)
    }
}

/// The backend of a context, if it has one.
pub fn backend_for(ctx: Context) -> Option<&'static dyn Backend> {
    static HOST: Host = Host;
    match ctx.kind {
        DeviceKind::Cpu | DeviceKind::CpuPinned | DeviceKind::CpuShared => Some(&HOST),
        DeviceKind::Gpu => None,
    }
}
