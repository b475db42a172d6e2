//! MXNet 1.9.1's binary NDArray file (`nd.save`, `.params`): the fast native reader.
//!
//! The layout is documented in the Python package (`ferromx.serialization`, which also
//! writes the format and holds the reference reader with its detailed error messages).
//! This reader maps the file copy-on-write and makes every dense array a view of the
//! mapping (a copy only where the data is not aligned for its dtype), after the whole file
//! has parsed. It refuses what it does not handle (sparse arrays, int16/uint16/uint32/uint64
//! data, any corruption) with an error; the Python package then falls back to its own
//! reader, which either loads the file or raises the precise error.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::Shape;
use crate::storage::MappedFile;
use crate::Context;
use std::path::Path;

const OP: &str = "load";
const LIST_MAGIC: u64 = 0x112;
const V1_MAGIC: u32 = 0xF993_FAC8;
const V2_MAGIC: u32 = 0xF993_FAC9;
const V3_MAGIC: u32 = 0xF993_FACA;
const MAX_NDIM: i64 = 32;

/// Arrays (`None` for MXNet's "none" array) and names (empty for a list file).
pub type MxnetFile = (Vec<Option<NDArray>>, Vec<String>);

struct Rd<'a> {
    b: &'a [u8],
    pos: usize,
}

fn bad(msg: impl Into<String>) -> Error {
    Error::value(OP, msg)
}

impl<'a> Rd<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len()).ok_or_else(|| bad("truncated"))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32> {
        let s = self.take(4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn i32(&mut self) -> Result<i32> {
        Ok(self.u32()? as i32)
    }
    fn u64(&mut self) -> Result<u64> {
        let s = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(u64::from_le_bytes(a))
    }
    fn left(&self) -> usize {
        self.b.len() - self.pos
    }
}

fn dtype_of(flag: i32) -> Result<DType> {
    Ok(match flag {
        0 => DType::F32,
        1 => DType::F64,
        2 => DType::F16,
        3 => DType::U8,
        4 => DType::I32,
        5 => DType::I8,
        6 => DType::I64,
        7 => DType::Bool,
        12 => DType::BF16,
        _ => return Err(bad(format!("dtype flag {flag} is not handled natively"))),
    })
}

/// Dims of `ndim` entries (`wide`: int64, else uint32); `None` for ndim -1.
fn dims(rd: &mut Rd<'_>, ndim: i64, wide: bool) -> Result<Option<Vec<i64>>> {
    if ndim == -1 {
        return Ok(None);
    }
    if !(0..=MAX_NDIM).contains(&ndim) {
        return Err(bad(format!("implausible ndim {ndim}")));
    }
    let mut out = Vec::with_capacity(ndim as usize);
    for _ in 0..ndim {
        out.push(if wide { rd.u64()? as i64 } else { rd.u32()? as i64 });
    }
    Ok(Some(out))
}

/// One record's `(data offset, shape, dtype)`, or `None` for a none array.
fn record(rd: &mut Rd<'_>) -> Result<Option<(usize, Vec<usize>, DType)>> {
    let magic = rd.u32()?;
    let shape = if magic == V2_MAGIC || magic == V3_MAGIC {
        let stype = rd.i32()?;
        if stype != 0 && stype != -1 {
            return Err(bad(format!("storage type {stype} is not dense")));
        }
        let ndim = rd.i32()? as i64;
        let Some(d) = dims(rd, ndim, true)? else { return Ok(None) };
        if (magic == V2_MAGIC && ndim == 0) || (magic == V3_MAGIC && d.contains(&-1)) {
            return Ok(None);
        }
        if stype == -1 {
            return Err(bad("undefined storage with a known shape"));
        }
        d
    } else {
        let d = if magic == V1_MAGIC {
            let ndim = rd.i32()? as i64;
            dims(rd, ndim, true)?
        } else if (magic as i64) <= MAX_NDIM {
            dims(rd, magic as i64, false)?
        } else {
            return Err(bad(format!("bad record magic 0x{magic:08X}")));
        };
        match d {
            Some(d) if d.iter().all(|&x| x >= 0) => d,
            _ => return Ok(None),
        }
    };
    rd.i32()?; // dev_type: loaded onto `ctx`
    rd.i32()?; // dev_id
    let dtype = dtype_of(rd.i32()?)?;
    if shape.iter().any(|&x| x < 0) {
        return Err(bad("negative dimension"));
    }
    let shape: Vec<usize> = shape.into_iter().map(|x| x as usize).collect();
    let count = shape.iter().try_fold(1usize, |a, &x| a.checked_mul(x)).ok_or_else(|| bad("size overflows"))?;
    let nbytes = count.checked_mul(dtype.size()).ok_or_else(|| bad("size overflows"))?;
    let offset = rd.pos;
    rd.take(nbytes)?;
    Ok(Some((offset, shape, dtype)))
}

/// Parses the whole file: record layouts and names, creating nothing.
type Layout = (Vec<Option<(usize, Vec<usize>, DType)>>, Vec<String>);

fn parse(b: &[u8]) -> Result<Layout> {
    let mut rd = Rd { b, pos: 0 };
    if rd.u64()? != LIST_MAGIC {
        return Err(bad("bad file magic"));
    }
    rd.u64()?;
    let count = rd.u64()?;
    if count > (rd.left() / 4) as u64 {
        return Err(bad("implausible array count"));
    }
    let mut recs = Vec::with_capacity(count as usize);
    for _ in 0..count {
        recs.push(record(&mut rd)?);
    }
    let nnames = rd.u64()?;
    if nnames != 0 && nnames != count {
        return Err(bad("name count does not match"));
    }
    let mut names = Vec::with_capacity(nnames as usize);
    for _ in 0..nnames {
        let len = rd.u64()?;
        if len > rd.left() as u64 {
            return Err(bad("truncated name"));
        }
        let raw = rd.take(len as usize)?;
        names.push(String::from_utf8(raw.to_vec()).map_err(|_| bad("name is not UTF-8"))?);
    }
    if rd.left() != 0 {
        return Err(bad("trailing bytes"));
    }
    Ok((recs, names))
}

/// Loads an MXNet NDArray file onto `ctx`: arrays share the file's mapped pages.
pub fn load_mxnet(path: &Path, ctx: Context) -> Result<MxnetFile> {
    let map = MappedFile::open(path, OP)?;
    let (recs, names) = parse(map.bytes())?;
    let mut arrays = Vec::with_capacity(recs.len());
    for r in recs {
        arrays.push(match r {
            None => None,
            Some((off, shape, dt)) => Some(map.array(off, Shape::new(&shape), dt, ctx, OP)?),
        });
    }
    Ok((arrays, names))
}
