//! Files mapped copy-on-write (`MAP_PRIVATE`): arrays loaded from a parameter file share
//! the mapping's pages instead of copying them (the OS reads a page when it is first
//! touched; a write copies that page privately and never reaches the file).
//!
//! # Safety argument
//! The mapping is private and writable, lives in an `Arc` that every array made from it
//! owns (as its chunk's external owner), so the memory stays valid while any array does.
//! Each array covers a disjoint byte range checked against the mapping's length and
//! aligned for its dtype. Like every file mapping, it assumes the file is not truncated
//! by another program while mapped (ferromx's own writers replace files by rename, which
//! leaves a mapped file untouched).

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::Shape;
use crate::Context;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

/// A whole file mapped copy-on-write.
pub struct MappedFile {
    map: memmap2::MmapMut,
}

impl MappedFile {
    /// Maps the file at `path`; `op` names the caller in errors.
    pub fn open(path: &Path, op: &str) -> Result<Arc<MappedFile>> {
        let file = std::fs::File::open(path)
            .map_err(|e| Error::value(op, format!("cannot open '{}': {e}", path.display())))?;
        // SAFETY: a private (copy-on-write) mapping: writes through it never reach the
        // file; see the module's safety argument about concurrent truncation.
        let map = unsafe { memmap2::MmapOptions::new().map_copy(&file) }
            .map_err(|e| Error::value(op, format!("cannot map '{}': {e}", path.display())))?;
        Ok(Arc::new(MappedFile { map }))
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// An array over `bytes()[offset..]` holding `shape` of `dtype`: shares the pages
    /// when the data is aligned for the dtype, else copies them.
    pub fn array(
        self: &Arc<Self>,
        offset: usize,
        shape: Shape,
        dtype: DType,
        ctx: Context,
        op: &str,
    ) -> Result<NDArray> {
        let len = shape.size() * dtype.size();
        let end = offset.checked_add(len).filter(|&e| e <= self.map.len()).ok_or_else(|| {
            Error::value(op, format!("array of shape {shape} and dtype {dtype} runs past the end of the file"))
        })?;
        let src = &self.map[offset..end];
        let addr = src.as_ptr() as usize;
        if len == 0 || !addr.is_multiple_of(dtype.size()) || ctx.kind != ferromx_engine::DeviceKind::Cpu {
            return NDArray::from_bytes(src, shape, dtype, ctx);
        }
        let ptr = NonNull::new(addr as *mut u8).ok_or_else(|| Error::value(op, "null mapping"))?;
        let owner: Box<dyn std::any::Any + Send + Sync> = Box::new(Arc::clone(self));
        // SAFETY: `ptr..ptr+len` lies inside the private writable mapping (checked above),
        // is aligned for `dtype`, stays valid while `owner` (an Arc of the mapping) lives,
        // and no other array is made over the same range by the loaders using this type.
        unsafe { NDArray::from_external(ptr, shape, dtype, ctx, owner) }
    }
}
