//! safetensors read and write (the Hugging Face format, through the `safetensors` crate).
//!
//! * **Write**: every array is copied to the host (waiting for pending writes), the file is
//!   serialized in memory, written to a temporary file in the target's directory, fsynced and
//!   renamed over the target: a failed save leaves any old file untouched.
//! * **Read**: the file is mapped copy-on-write (from a path) and the whole file is validated by the crate (header JSON, dtypes, offsets that
//!   tile the data exactly, total length) and every tensor's dtype is checked before any
//!   array is created, so a corrupt, truncated or unsupported file yields an error and no
//!   arrays. Tensors come back in file order (by data offset).
//!
//! dtypes: `F32 F64 F16 BF16 U8 I8 I32 I64 BOOL` map to ferromx's nine dtypes; any other
//! safetensors dtype (`I16`, `U16`, `U32`, `U64`, the FP8/FP4 kinds, `C64`) is refused by
//! name.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::Shape;
use crate::Context;
use ::safetensors::tensor::{Dtype, SafeTensors, TensorView};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

const SAVE: &str = "save_safetensors";
const LOAD: &str = "load_safetensors";

/// The parsed contents of a safetensors file.
#[derive(Debug)]
pub struct SafetensorsFile {
    /// `(name, array)` pairs in file order.
    pub tensors: Vec<(String, NDArray)>,
    /// The free-form `__metadata__` string map, if the file has one.
    pub metadata: Option<HashMap<String, String>>,
}

fn to_st(dt: DType) -> Dtype {
    match dt {
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::U8 => Dtype::U8,
        DType::I8 => Dtype::I8,
        DType::I32 => Dtype::I32,
        DType::I64 => Dtype::I64,
        DType::Bool => Dtype::BOOL,
    }
}

fn from_st(dt: Dtype) -> Option<DType> {
    Some(match dt {
        Dtype::F32 => DType::F32,
        Dtype::F64 => DType::F64,
        Dtype::F16 => DType::F16,
        Dtype::BF16 => DType::BF16,
        Dtype::U8 => DType::U8,
        Dtype::I8 => DType::I8,
        Dtype::I32 => DType::I32,
        Dtype::I64 => DType::I64,
        Dtype::BOOL => DType::Bool,
        _ => return None,
    })
}

/// The safetensors bytes of named arrays (copies each array to the host, in turn).
pub fn serialize_safetensors(
    names: &[String],
    arrays: &[NDArray],
    metadata: Option<HashMap<String, String>>,
) -> Result<Vec<u8>> {
    if names.len() != arrays.len() {
        return Err(Error::value(SAVE, format!("{} names for {} arrays", names.len(), arrays.len())));
    }
    let mut seen = std::collections::HashSet::new();
    for n in names {
        if !seen.insert(n.as_str()) {
            return Err(Error::value(SAVE, format!("duplicate tensor name '{n}'")));
        }
        if n == "__metadata__" {
            return Err(Error::value(SAVE, "'__metadata__' is reserved by the format and cannot name a tensor"));
        }
    }
    let mut host = Vec::with_capacity(arrays.len());
    for a in arrays {
        host.push(a.to_bytes()?);
    }
    let mut views = Vec::with_capacity(arrays.len());
    for ((name, a), bytes) in names.iter().zip(arrays).zip(&host) {
        let v = TensorView::new(to_st(a.dtype()), a.dims().to_vec(), bytes)
            .map_err(|e| Error::value(SAVE, format!("tensor '{name}' of shape {}: {e}", a.shape())))?;
        views.push((name.as_str(), v));
    }
    ::safetensors::serialize(views, metadata).map_err(|e| Error::value(SAVE, e.to_string()))
}

/// Writes `bytes` to `path` atomically: temporary file in the same directory, fsync, rename.
pub fn atomic_write(path: &Path, bytes: &[u8], op: &str) -> Result<()> {
    let io = |what: &str, e: std::io::Error| Error::value(op, format!("cannot {what} '{}': {e}", path.display()));
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let stem = path.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{stem}."))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| io("create a temporary file next to", e))?;
    tmp.write_all(bytes).map_err(|e| io("write", e))?;
    tmp.as_file().sync_all().map_err(|e| io("sync", e))?;
    tmp.persist(path).map_err(|e| io("rename the temporary file over", e.error))?;
    Ok(())
}

/// Saves named arrays to a safetensors file at `path`, atomically.
pub fn save_safetensors(
    path: &Path,
    names: &[String],
    arrays: &[NDArray],
    metadata: Option<HashMap<String, String>>,
) -> Result<()> {
    let bytes = serialize_safetensors(names, arrays, metadata)?;
    atomic_write(path, &bytes, SAVE)
}

/// Parses a whole safetensors buffer into arrays on `ctx`; `source` names it in errors.
pub fn load_safetensors_bytes(buf: &[u8], ctx: Context, source: &str) -> Result<SafetensorsFile> {
    let bad = |msg: String| Error::value(LOAD, format!("invalid safetensors file {source}: {msg}"));
    let (_, meta) = SafeTensors::read_metadata(buf).map_err(|e| bad(e.to_string()))?;
    let st = SafeTensors::deserialize(buf).map_err(|e| bad(e.to_string()))?;
    let order = meta.offset_keys();
    let mut parsed = Vec::with_capacity(order.len());
    for name in &order {
        let view = st.tensor(name).map_err(|e| bad(format!("tensor '{name}': {e}")))?;
        let dt = from_st(view.dtype()).ok_or_else(|| {
            bad(format!(
                "tensor '{name}' has dtype {:?}, which ferromx does not support (supported: F32, F64, F16, \
                 BF16, U8, I8, I32, I64, BOOL)",
                view.dtype()
            ))
        })?;
        parsed.push((name.clone(), view, dt));
    }
    let mut tensors = Vec::with_capacity(parsed.len());
    for (name, view, dt) in parsed {
        let a = NDArray::from_bytes(view.data(), Shape::new(view.shape()), dt, ctx)
            .map_err(|e| bad(format!("tensor '{name}': {e}")))?;
        tensors.push((name, a));
    }
    Ok(SafetensorsFile { tensors, metadata: meta.metadata().clone() })
}

/// Loads the safetensors file at `path`: the file is mapped copy-on-write and validated as
/// in [`load_safetensors_bytes`]; the arrays then share the mapping's pages (a copy only
/// for data not aligned for its dtype).
pub fn load_safetensors(path: &Path, ctx: Context) -> Result<SafetensorsFile> {
    let map = crate::storage::MappedFile::open(path, LOAD)?;
    let source = format!("'{}'", path.display());
    let bad = |msg: String| Error::value(LOAD, format!("invalid safetensors file {source}: {msg}"));
    let (n, meta) = SafeTensors::read_metadata(map.bytes()).map_err(|e| bad(e.to_string()))?;
    let mut parsed = Vec::new();
    for name in meta.offset_keys() {
        let info = meta.info(&name).ok_or_else(|| bad(format!("tensor '{name}' has no entry")))?;
        let dt = from_st(info.dtype).ok_or_else(|| {
            bad(format!(
                "tensor '{name}' has dtype {:?}, which ferromx does not support (supported: F32, F64, F16, \
                 BF16, U8, I8, I32, I64, BOOL)",
                info.dtype
            ))
        })?;
        parsed.push((name, 8 + n + info.data_offsets.0, Shape::new(&info.shape), dt));
    }
    let mut tensors = Vec::with_capacity(parsed.len());
    for (name, off, shape, dt) in parsed {
        let a = map.array(off, shape, dt, ctx, LOAD).map_err(|e| bad(format!("tensor '{name}': {e}")))?;
        tensors.push((name, a));
    }
    Ok(SafetensorsFile { tensors, metadata: meta.metadata().clone() })
}
