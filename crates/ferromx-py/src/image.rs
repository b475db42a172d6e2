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
        let a = ferromx::image::decoded_array(d, c).map_err(to_py_err)?;
        out.push(wrap(py, a)?);
    }
    Ok(out)
}

/// A decoded batch and each image's crop offset `(y0, x0)`.
type BatchOut = (Py<PyND>, Vec<(usize, usize)>);

/// `ImageRecordIter`'s batch in one call (GIL released): decodes every record, resizes
/// (shorter edge to `resize` when > 0, then up to the crop), crops (`rand_crop`: at
/// `floor(u * (room + 1))` from `u_y`/`u_x`, else centred), mirrors where `mirror`, and
/// writes `(x - mean) * mul` as a `(B, C, H, W)` float32 array, on `threads` threads.
/// Returns the array and each image's crop offset `(y0, x0)`.
#[pyfunction]
#[pyo3(signature = (bufs, data_shape, u_y, u_x, mirror, mean, mul, resize=-1, rand_crop=false,
                    threads=1, ctx="cpu(0)"))]
#[allow(clippy::too_many_arguments)]
pub fn image_record_batch(
    py: Python<'_>,
    bufs: Vec<Bound<'_, PyAny>>,
    data_shape: (usize, usize, usize),
    u_y: Vec<f64>,
    u_x: Vec<f64>,
    mirror: Vec<bool>,
    mean: Vec<f32>,
    mul: Vec<f32>,
    resize: i64,
    rand_crop: bool,
    threads: usize,
    ctx: &str,
) -> PyResult<BatchOut> {
    let n = bufs.len();
    if u_y.len() != n || u_x.len() != n || mirror.len() != n {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "ImageRecordIter: {n} images but {}/{}/{} crop and mirror draws",
            u_y.len(),
            u_x.len(),
            mirror.len()
        )));
    }
    let (c, h, w) = data_shape;
    if mean.len() < c.min(3) || mul.len() < c.min(3) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "ImageRecordIter: mean and mul need {c} values, got {} and {}",
            mean.len(),
            mul.len()
        )));
    }
    let pick = |v: &[f32]| [v[0], *v.get(1).unwrap_or(&v[0]), *v.get(2).unwrap_or(&v[0])];
    let spec = ferromx::image::BatchSpec {
        channels: c,
        height: h,
        width: w,
        resize: usize::try_from(resize).ok().filter(|&r| r > 0),
        rand_crop,
        mean: pick(&mean),
        mul: pick(&mul),
    };
    let draws: Vec<ferromx::image::ImageDraw> =
        (0..n).map(|i| ferromx::image::ImageDraw { u_y: u_y[i], u_x: u_x[i], mirror: mirror[i] }).collect();
    let data: Vec<Vec<u8>> = bufs.iter().map(bytes_of).collect::<PyResult<_>>()?;
    let dev = parse_ctx(ctx)?;
    let (arr, offs) = py
        .detach(|| {
            let refs: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
            let (buf, offs) = ferromx::image::decode_augment_batch(&refs, &draws, &spec, threads)?;
            let a = ferromx::NDArray::from_bytes(&buf, ferromx::Shape::new(&[n, c, h, w]), ferromx::DType::F32, dev)?;
            Ok::<_, ferromx::Error>((a, offs))
        })
        .map_err(to_py_err)?;
    Ok((wrap(py, arr)?, offs.into_iter().map(|[y, x]| (y, x)).collect()))
}

/// `(height, width)` of JPEG/PNG bytes, read from the header alone.
#[pyfunction]
pub fn image_size(buf: &Bound<'_, PyAny>) -> PyResult<(usize, usize)> {
    let buf = PyBuffer::<u8>::get(buf)
        .map_err(|_| pyo3::exceptions::PyTypeError::new_err("image_size: buf must be bytes or a uint8 buffer"))?;
    crate::glue::with_bytes(&buf, ferromx::image::image_size)?.map_err(to_py_err)
}

/// The DataLoader's fused vision transforms for a batch (GIL released): decodes every
/// image (`flag` 1 colour, 0 grey), crops `boxes[i] = (x0, y0, w, h)`, resizes to
/// `out_hw` with `interps[i]` when the sizes differ (always with `force_resize`),
/// mirrors left-right with coins drawn as `_image_random_flip_left_right` does on `ctx`
/// when `flip`, and writes `x / 255` (then `(v - mean) / std` when given) as float32
/// `(B, C, H, W)` into the writable buffer `out`.
#[pyfunction]
#[pyo3(signature = (bufs, out, boxes, interps, out_hw, flag=1, force_resize=false, flip=false,
                    mean=None, std=None, ctx="cpu(0)"))]
#[allow(clippy::too_many_arguments)]
pub fn fused_vision_batch(
    py: Python<'_>,
    bufs: Vec<Bound<'_, PyAny>>,
    out: &Bound<'_, PyAny>,
    boxes: Vec<(usize, usize, usize, usize)>,
    interps: Vec<i64>,
    out_hw: (usize, usize),
    flag: i32,
    force_resize: bool,
    flip: bool,
    mean: Option<Vec<f64>>,
    std: Option<Vec<f64>>,
    ctx: &str,
) -> PyResult<()> {
    const OP: &str = "DataLoader (fused vision transforms)";
    let n = bufs.len();
    if boxes.len() != n || interps.len() != n {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{OP}: {n} images but {} boxes and {} interpolations",
            boxes.len(),
            interps.len()
        )));
    }
    let boxes: Vec<ferromx::image::CropBox> = boxes
        .iter()
        .zip(&interps)
        .map(|(&(x0, y0, w, h), &code)| {
            let interp = ferromx::ops::image::Interp::from_code(OP, code)?;
            Ok(ferromx::image::CropBox { x0, y0, w, h, interp })
        })
        .collect::<ferromx::Result<_>>()
        .map_err(to_py_err)?;
    let normalize = match (mean, std) {
        (Some(m), Some(s)) => Some((m, s)),
        (None, None) => None,
        _ => return Err(pyo3::exceptions::PyValueError::new_err(format!("{OP}: give both mean and std, or neither"))),
    };
    let spec = ferromx::image::FusedSpec { flag, height: out_hw.0, width: out_hw.1, force_resize, normalize };
    let dev = parse_ctx(ctx)?;
    let mirror = if flip { ferromx::image::flip_coins(n, dev) } else { vec![false; n] };
    let pybufs: Vec<PyBuffer<u8>> = bufs
        .iter()
        .map(PyBuffer::<u8>::get)
        .collect::<PyResult<_>>()
        .map_err(|_| pyo3::exceptions::PyTypeError::new_err(format!("{OP}: images must be bytes")))?;
    let data: Vec<Vec<u8>> =
        pybufs.iter().map(|b| crate::glue::with_bytes(b, |s| s.to_vec())).collect::<PyResult<_>>()?;
    let dst = PyBuffer::<u8>::get(out)
        .map_err(|_| pyo3::exceptions::PyTypeError::new_err(format!("{OP}: out must be a writable byte buffer")))?;
    crate::glue::with_bytes_mut(&dst, |o| {
        py.detach(|| {
            let refs: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
            ferromx::image::fused_batch(&refs, &boxes, &mirror, &spec, o)
        })
    })?
    .map_err(to_py_err)
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
