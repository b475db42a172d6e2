//! Storage: aligned buffers, the size-class pool, and the one place where a
//! kernel is handed typed slices of them (and, in `fanout`, the one place a
//! kernel's chunks are handed to other threads).

mod backend;
mod fanout;
mod gemm;
mod mapped;
mod pool;
mod raw;
mod scratch;
mod simd;

pub use backend::{backend_for, Backend, Host};
pub use fanout::fanout;
pub use gemm::{matmul, matmul_seq, GemmElem};
pub use mapped::MappedFile;
pub use pool::{pool_stats, release_pool, reset_pool_peaks, PoolStats};
pub use raw::{call_site, set_call_site, Kernel};
pub(crate) use raw::{
    push_bulk, push_copy_out, push_fused, push_kernel, push_op_call, push_op_call_deferred, BulkCall, Chunk, View,
    Written,
};
pub(crate) use scratch::{Scratch, ScratchElem};
pub use simd::{as_f32s, as_f32s_mut, dispatch, prefetch};
