//! Image codec bindings: decoding and encoding run with the GIL released.

use crate::convert::{parse_ctx, to_py_err};
use crate::ndarray::{wrap, PyND};
use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

fn bytes_of(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let buf = PyBuffer::<u8>::get(obj).map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err("imdecode: buf must be bytes, bytearray or a uint8 buffer")
    })?;
    crate::glue::with_bytes(&buf, |b| b.to_vec())
}

/// Decodes JPEG/PNG bytes into a new `(H, W, C)` uint8 array (GIL released while decoding).
#[pyfunction]
#[pyo3(signature = (buf, flag=1, to_rgb=true, ctx="cpu(0)"))]
pub fn imdecode(py: Python<'_>, buf: &Bound<'_, PyAny>, flag: i32, to_rgb: bool, ctx: &str) -> PyResult<Py<PyND>> {
    let data = bytes_of(buf)?;
    let c = parse_ctx(ctx)?;
    let a = py.detach(|| ferromx::image::imdecode(&data, flag, to_rgb, c)).map_err(to_py_err)?;
    wrap(py, a)
}

/// Decodes many images in parallel (GIL released); returns one array per image,
/// or raises for the first image that fails (naming its position).
#[pyfunction]
#[pyo3(signature = (bufs, flag=1, to_rgb=true, ctx="cpu(0)"))]
pub fn imdecode_batch(
    py: Python<'_>,
    bufs: Vec<Bound<'_, PyAny>>,
    flag: i32,
    to_rgb: bool,
    ctx: &str,
) -> PyResult<Vec<Py<PyND>>> {
    let data: Vec<Vec<u8>> = bufs.iter().map(bytes_of).collect::<PyResult<_>>()?;
    let c = parse_ctx(ctx)?;
    let decoded = py.detach(|| {
        let refs: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
        ferromx::image::decode_batch(&refs, flag, to_rgb)
    });
    let mut out = Vec::with_capacity(decoded.len());
    for (i, d) in decoded.into_iter().enumerate() {
        let d = d.map_err(|e| to_py_err(ferromx::Error::value("imdecode", format!("image {i}: {e}"))))?;
        let a = ferromx::NDArray::from_vec(d.data, ferromx::Shape::new(&[d.height, d.width, d.channels]), c)
            .map_err(to_py_err)?;
        out.push(wrap(py, a)?);
    }
    Ok(out)
}

/// Encodes `(H, W, C)` uint8 bytes in RGB order as `.jpg` or `.png` (GIL released).
#[pyfunction]
#[pyo3(signature = (data, height, width, channels, ext=".jpg", quality=95))]
pub fn imencode<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    height: usize,
    width: usize,
    channels: usize,
    ext: &str,
    quality: u8,
) -> PyResult<Bound<'py, PyBytes>> {
    let raw = bytes_of(data)?;
    let fmt = ferromx::image::Format::from_ext(ext).map_err(to_py_err)?;
    let enc = py.detach(|| ferromx::image::encode(&raw, height, width, channels, fmt, quality)).map_err(to_py_err)?;
    Ok(PyBytes::new(py, &enc))
}
