//! The bindings' unsafe code: reading the caller's Python frame for call-site
//! labels, and raw pointers into NumPy buffers.
//!
//! # Safety argument
//! * Frames: `PyEval_GetFrame` returns a borrowed frame of the running thread
//!   (we hold the GIL); `PyFrame_GetBack` / `PyFrame_GetCode` return new
//!   references that we release with `Py_DecRef` before moving on. Code
//!   objects are only used while referenced; the cache keys on their address
//!   *and* line, and a stale hit at worst yields a wrong label, never UB.
//! * Buffers: `PyBuffer<u8>` guarantees a C-contiguous byte buffer that stays
//!   valid while the `PyBuffer` lives. Copy-out hands the destination pointer
//!   to an engine op together with the `PyBuffer` itself as keep-alive, so the
//!   memory outlives the op even if the waiting caller is interrupted.

use pyo3::buffer::PyBuffer;
use pyo3::ffi;
use pyo3::prelude::*;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

thread_local! {
    static LABELS: RefCell<HashMap<(usize, i32), Option<Arc<str>>>> = RefCell::new(HashMap::new());
    static INTERNAL: RefCell<HashMap<usize, Option<Arc<str>>>> = RefCell::new(HashMap::new());
}

/// Whether a filename belongs to the ferromx package itself (its frames are skipped).
fn is_internal(path: &str) -> bool {
    path.contains("/ferromx/") || path.contains("\\ferromx\\") || path.starts_with('<') && path.contains("frozen")
}

/// `file.py:line` of the innermost frame outside the ferromx package.
pub fn call_site(py: Python<'_>) -> Option<Arc<str>> {
    // SAFETY: see the module docs; we hold the GIL (`py`).
    unsafe {
        let mut frame = ffi::PyEval_GetFrame();
        if frame.is_null() {
            return None;
        }
        ffi::Py_IncRef(frame.cast());
        let mut depth = 0;
        let result = loop {
            let code = ffi::PyFrame_GetCode(frame);
            let key = code as usize;
            let line = ffi::PyFrame_GetLineNumber(frame);
            let fname: Option<Arc<str>> = INTERNAL.with(|m| {
                if let Some(v) = m.borrow().get(&key) {
                    return v.clone();
                }
                let obj = Bound::<PyAny>::from_borrowed_ptr(py, code.cast());
                let name: Option<String> = obj.getattr("co_filename").ok().and_then(|f| f.extract().ok());
                let v = name.filter(|n| !is_internal(n)).map(|n| {
                    let short = n.rsplit(['/', '\\']).next().unwrap_or(&n).to_string();
                    Arc::<str>::from(short)
                });
                m.borrow_mut().insert(key, v.clone());
                v
            });
            ffi::Py_DecRef(code.cast());
            if let Some(f) = fname {
                let label = LABELS.with(|m| {
                    m.borrow_mut()
                        .entry((key, line))
                        .or_insert_with(|| Some(Arc::from(format!("{f}:{line}"))))
                        .clone()
                });
                break label;
            }
            depth += 1;
            let back = ffi::PyFrame_GetBack(frame);
            ffi::Py_DecRef(frame.cast());
            if back.is_null() || depth > 16 {
                if !back.is_null() {
                    ffi::Py_DecRef(back.cast());
                }
                return None;
            }
            frame = back;
        };
        ffi::Py_DecRef(frame.cast());
        result
    }
}

/// Reads a C-contiguous byte buffer into a Vec-free slice callback.
pub fn with_bytes<R>(buf: &PyBuffer<u8>, f: impl FnOnce(&[u8]) -> R) -> PyResult<R> {
    if !buf.is_c_contiguous() {
        return Err(pyo3::exceptions::PyValueError::new_err("buffer must be C-contiguous"));
    }
    let n = buf.len_bytes();
    if n == 0 {
        return Ok(f(&[]));
    }
    // SAFETY: the buffer is C-contiguous, `n` bytes long and alive for this
    // call (we hold the GIL and the PyBuffer).
    let s = unsafe { std::slice::from_raw_parts(buf.buf_ptr() as *const u8, n) };
    Ok(f(s))
}

/// Pushes a copy of `arr` into the writable C-contiguous buffer `dst` and
/// returns the wait ticket. The caller must keep `dst` alive until the ticket
/// is done, or leak it (`std::mem::forget`) if it stops waiting early.
pub fn copy_out(
    arr: &ferromx::NDArray,
    dst: &PyBuffer<u8>,
    label: Option<Arc<str>>,
) -> PyResult<ferromx::engine::WaitTicket> {
    let need = arr.size() * arr.dtype().size();
    if dst.readonly() || !dst.is_c_contiguous() || dst.len_bytes() != need {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "copy destination must be a writable C-contiguous buffer of {need} bytes"
        )));
    }
    let ptr = dst.buf_ptr() as *mut u8;
    // SAFETY: `ptr` addresses `need` writable bytes that the exporter keeps
    // valid while `dst` lives; the caller keeps `dst` alive until the ticket
    // is done or leaks it (module docs).
    unsafe { arr.copy_to_host(ptr, Box::new(()), label) }.map_err(crate::convert::to_py_err)
}
