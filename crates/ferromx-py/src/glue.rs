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

/// Call-site labels by (code object address, position in its bytecode).
///
/// Why the bytecode position and not the line: the line of a frame is computed
/// by scanning its code object's line table (`PyFrame_GetLineNumber`), which
/// took a quarter of the frontend's time in a hybridized MLP's forward. The
/// position is a field read; the line is computed once per position.
type LabelCache = HashMap<(usize, i32), Option<Arc<str>>>;

/// Entries the label cache holds at most before it is cleared (a program that
/// keeps compiling new code, `exec` in a loop, must not grow it without bound).
const MAX_LABELS: usize = 1 << 16;

thread_local! {
    static LABELS: RefCell<LabelCache> = RefCell::new(HashMap::new());
    static INTERNAL: RefCell<HashMap<usize, Option<Arc<str>>>> = RefCell::new(HashMap::new());
}

/// Whether a filename belongs to the ferromx package itself (its frames are skipped).
fn is_internal(path: &str) -> bool {
    path.contains("/ferromx/") || path.contains("\\ferromx\\") || path.starts_with('<') && path.contains("frozen")
}

/// The short file name of a code object outside the ferromx package, `None` for
/// ferromx's own code (cached by the code object's address).
fn user_file(py: Python<'_>, code: *mut ffi::PyCodeObject) -> Option<Arc<str>> {
    let key = code as usize;
    INTERNAL.with(|m| {
        if let Some(v) = m.borrow().get(&key) {
            return v.clone();
        }
        // SAFETY: `code` is a live code object (the caller holds a reference) and we hold the GIL.
        let obj = unsafe { Bound::<PyAny>::from_borrowed_ptr(py, code.cast()) };
        let name: Option<String> = obj.getattr("co_filename").ok().and_then(|f| f.extract().ok());
        let v = name.filter(|n| !is_internal(n)).map(|n| {
            let short = n.rsplit(['/', '\\']).next().unwrap_or(&n).to_string();
            Arc::<str>::from(short)
        });
        m.borrow_mut().insert(key, v.clone());
        v
    })
}

/// The position a frame executes in its code: the cache key of its label.
#[cfg(Py_3_11)]
fn frame_pos(frame: *mut ffi::PyFrameObject) -> i32 {
    // SAFETY: `frame` is a live frame of this thread (see the module docs).
    unsafe { ffi::PyFrame_GetLasti(frame) }
}

/// Before Python 3.11 there is no public accessor of the position: the line is the key.
#[cfg(not(Py_3_11))]
fn frame_pos(frame: *mut ffi::PyFrameObject) -> i32 {
    // SAFETY: `frame` is a live frame of this thread (see the module docs).
    unsafe { ffi::PyFrame_GetLineNumber(frame) }
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
            let fname = user_file(py, code);
            let key = code as usize;
            ffi::Py_DecRef(code.cast());
            if let Some(f) = fname {
                let pos = frame_pos(frame);
                let label = LABELS.with(|m| {
                    let mut m = m.borrow_mut();
                    if let Some(v) = m.get(&(key, pos)) {
                        return v.clone();
                    }
                    if m.len() >= MAX_LABELS {
                        m.clear();
                    }
                    let line = ffi::PyFrame_GetLineNumber(frame);
                    let v = Some(Arc::<str>::from(format!("{f}:{line}")));
                    m.insert((key, pos), v.clone());
                    v
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

/// Lends a writable C-contiguous byte buffer to `f` as a mutable slice.
/// `f` runs with the GIL held by the caller's token or released (the buffer
/// stays exported while `buf` lives, so its memory cannot move or be freed).
pub fn with_bytes_mut<R>(buf: &PyBuffer<u8>, f: impl FnOnce(&mut [u8]) -> R) -> PyResult<R> {
    if buf.readonly() || !buf.is_c_contiguous() {
        return Err(pyo3::exceptions::PyValueError::new_err("buffer must be writable and C-contiguous"));
    }
    let n = buf.len_bytes();
    if n == 0 {
        return Ok(f(&mut []));
    }
    // SAFETY: the buffer is writable, C-contiguous, `n` bytes long and stays
    // exported (alive, not resized) while `buf` lives, which outlasts `f`; no
    // other Rust slice of it exists during the call.
    let s = unsafe { std::slice::from_raw_parts_mut(buf.buf_ptr() as *mut u8, n) };
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

// ----------------------------------------------------------------------------- DLPack
//
// DLPack (https://dmlc.github.io/dlpack) structs, legacy unversioned ABI.
// Export: a capsule named "dltensor" owning a boxed `Exported`, which keeps an
// NDArray handle (so the chunk, and its memory, stay alive) and the shape
// array. The consumer renames the capsule to "used_dltensor" and later calls
// our deleter; if nobody consumed it, the capsule destructor calls it.
// Import: the producer's DLManagedTensor is owned by an `Imported`, whose drop
// (when the wrapping chunk dies) calls the producer's deleter.

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut std::ffi::c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut std::ffi::c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut std::ffi::c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

const DLPACK_FLAG_READ_ONLY: u64 = 1;

struct Exported {
    managed: DLManagedTensor,
    _arr: ferromx::NDArray,
    _shape: Vec<i64>,
}

struct ExportedV {
    managed: DLManagedTensorVersioned,
    _arr: ferromx::NDArray,
    _shape: Vec<i64>,
}

const DLTENSOR: &std::ffi::CStr = c"dltensor";
const DLTENSOR_V: &std::ffi::CStr = c"dltensor_versioned";
const USED_DLTENSOR: &std::ffi::CStr = c"used_dltensor";

fn dl_dtype(d: ferromx::DType) -> DLDataType {
    use ferromx::DType::*;
    let (code, bits) = match d {
        F32 => (2, 32),
        F64 => (2, 64),
        F16 => (2, 16),
        BF16 => (4, 16),
        U8 => (1, 8),
        I8 => (0, 8),
        I32 => (0, 32),
        I64 => (0, 64),
        Bool => (6, 8),
    };
    DLDataType { code, bits, lanes: 1 }
}

fn from_dl_dtype(t: DLDataType) -> Option<ferromx::DType> {
    use ferromx::DType::*;
    Some(match (t.code, t.bits, t.lanes) {
        (2, 32, 1) => F32,
        (2, 64, 1) => F64,
        (2, 16, 1) => F16,
        (4, 16, 1) => BF16,
        (1, 8, 1) => U8,
        (0, 8, 1) => I8,
        (0, 32, 1) => I32,
        (0, 64, 1) => I64,
        (6, 8, 1) | (1, 1, 1) => Bool,
        _ => return None,
    })
}

unsafe extern "C" fn exported_deleter(m: *mut DLManagedTensor) {
    // SAFETY: `m` is the first field of a boxed `Exported` we leaked in
    // `to_dlpack`; the consumer calls this exactly once.
    unsafe {
        let ctx = (*m).manager_ctx as *mut Exported;
        drop(Box::from_raw(ctx));
    }
}

unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with the GIL held on our capsule; if it was not
    // consumed (still named "dltensor") we own the tensor and delete it.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, DLTENSOR.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, DLTENSOR.as_ptr()) as *mut DLManagedTensor;
            if !m.is_null() {
                if let Some(d) = (*m).deleter {
                    d(m);
                }
            }
        }
    }
}

unsafe extern "C" fn exported_v_deleter(m: *mut DLManagedTensorVersioned) {
    // SAFETY: as `exported_deleter`, for the versioned layout.
    unsafe {
        let ctx = (*m).manager_ctx as *mut ExportedV;
        drop(Box::from_raw(ctx));
    }
}

unsafe extern "C" fn capsule_v_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: as `capsule_destructor`, for "dltensor_versioned".
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, DLTENSOR_V.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, DLTENSOR_V.as_ptr()) as *mut DLManagedTensorVersioned;
            if !m.is_null() {
                if let Some(d) = (*m).deleter {
                    d(m);
                }
            }
        }
    }
}

/// Wraps `arr` in a versioned (DLPack ≥ 1.0) capsule; `read_only` sets the flag.
pub fn to_dlpack_versioned(py: Python<'_>, arr: &ferromx::NDArray, read_only: bool) -> PyResult<Py<PyAny>> {
    let shape: Vec<i64> = arr.dims().iter().map(|&d| d as i64).collect();
    let mut ex = Box::new(ExportedV {
        managed: DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 0 },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(exported_v_deleter),
            flags: if read_only { DLPACK_FLAG_READ_ONLY } else { 0 },
            dl_tensor: DLTensor {
                data: arr.data_addr().map_err(crate::convert::to_py_err)? as *mut std::ffi::c_void,
                device: DLDevice { device_type: 1, device_id: 0 },
                ndim: shape.len() as i32,
                dtype: dl_dtype(arr.dtype()),
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
        },
        _arr: arr.clone(),
        _shape: shape,
    });
    ex.managed.dl_tensor.shape = ex._shape.as_mut_ptr();
    let raw = Box::into_raw(ex);
    // SAFETY: as in `to_dlpack`.
    unsafe {
        (*raw).managed.manager_ctx = raw as *mut std::ffi::c_void;
        let m = std::ptr::addr_of_mut!((*raw).managed);
        let cap = ffi::PyCapsule_New(m as *mut std::ffi::c_void, DLTENSOR_V.as_ptr(), Some(capsule_v_destructor));
        if cap.is_null() {
            drop(Box::from_raw(raw));
            return Err(PyErr::fetch(py));
        }
        Ok(Bound::from_owned_ptr(py, cap).unbind())
    }
}

/// Wraps `arr` in a DLPack capsule sharing its memory (the caller waited first).
pub fn to_dlpack(py: Python<'_>, arr: &ferromx::NDArray) -> PyResult<Py<PyAny>> {
    let shape: Vec<i64> = arr.dims().iter().map(|&d| d as i64).collect();
    let mut ex = Box::new(Exported {
        managed: DLManagedTensor {
            dl_tensor: DLTensor {
                data: arr.data_addr().map_err(crate::convert::to_py_err)? as *mut std::ffi::c_void,
                device: DLDevice { device_type: 1, device_id: 0 },
                ndim: shape.len() as i32,
                dtype: dl_dtype(arr.dtype()),
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(exported_deleter),
        },
        _arr: arr.clone(),
        _shape: shape,
    });
    ex.managed.dl_tensor.shape = ex._shape.as_mut_ptr();
    let raw = Box::into_raw(ex);
    // SAFETY: `raw` is a valid leaked Box; `managed` is its first field
    // (repr(Rust) struct, so we take the field's address explicitly).
    unsafe {
        (*raw).managed.manager_ctx = raw as *mut std::ffi::c_void;
        let m = std::ptr::addr_of_mut!((*raw).managed);
        let cap = ffi::PyCapsule_New(m as *mut std::ffi::c_void, DLTENSOR.as_ptr(), Some(capsule_destructor));
        if cap.is_null() {
            drop(Box::from_raw(raw));
            return Err(PyErr::fetch(py));
        }
        Ok(Bound::from_owned_ptr(py, cap).unbind())
    }
}

struct Imported(*mut DLManagedTensor);
// SAFETY: the producer's tensor is plain memory plus a deleter; we call the
// deleter once, from whichever thread drops the last chunk reference.
unsafe impl Send for Imported {}
// SAFETY: shared references never touch the pointer.
unsafe impl Sync for Imported {}

impl Drop for Imported {
    fn drop(&mut self) {
        // SAFETY: we own the consumed tensor and call its deleter exactly once.
        // Producers' deleters may need the GIL (NumPy's does), so attach.
        Python::attach(|_| unsafe {
            if let Some(d) = (*self.0).deleter {
                d(self.0);
            }
        });
    }
}

/// Wraps a DLPack capsule's memory as an NDArray without copying.
pub fn from_dlpack(capsule: &Bound<'_, PyAny>) -> PyResult<ferromx::NDArray> {
    use pyo3::exceptions::{PyTypeError, PyValueError};
    let ptr = capsule.as_ptr();
    // SAFETY: we check the capsule's name before reading its pointer, read the
    // DLTensor fields the standard defines, and take ownership by renaming the
    // capsule to "used_dltensor" as the protocol requires.
    unsafe {
        if ffi::PyCapsule_IsValid(ptr, DLTENSOR.as_ptr()) != 1 {
            return Err(PyTypeError::new_err("from_dlpack expects an unused 'dltensor' capsule"));
        }
        let m = ffi::PyCapsule_GetPointer(ptr, DLTENSOR.as_ptr()) as *mut DLManagedTensor;
        let t = &(*m).dl_tensor;
        if t.device.device_type != 1 && t.device.device_type != 3 {
            return Err(PyValueError::new_err(format!(
                "from_dlpack: only CPU tensors are supported (device type {})",
                t.device.device_type
            )));
        }
        let dtype = from_dl_dtype(t.dtype).ok_or_else(|| {
            PyTypeError::new_err(format!("from_dlpack: unsupported dtype code {} bits {}", t.dtype.code, t.dtype.bits))
        })?;
        let nd = t.ndim.max(0) as usize;
        let shape: Vec<usize> = (0..nd).map(|i| *t.shape.add(i) as usize).collect();
        if !t.strides.is_null() {
            let mut expect = 1i64;
            for i in (0..nd).rev() {
                if shape[i] > 1 && *t.strides.add(i) != expect {
                    return Err(PyValueError::new_err("from_dlpack: only C-contiguous tensors can be shared"));
                }
                expect *= shape[i] as i64;
            }
        }
        let data = (t.data as *mut u8).add(t.byte_offset as usize);
        let data = std::ptr::NonNull::new(data).unwrap_or(std::ptr::NonNull::dangling());
        ffi::PyCapsule_SetName(ptr, USED_DLTENSOR.as_ptr());
        let owner = Box::new(Imported(m));
        ferromx::NDArray::from_external(data, ferromx::Shape::new(&shape), dtype, ferromx::Context::cpu(0), owner)
            .map_err(crate::convert::to_py_err)
    }
}
