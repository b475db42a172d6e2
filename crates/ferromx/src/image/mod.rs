//! Image codecs: JPEG and PNG bytes to HWC `uint8` arrays and back
//! (`mxnet.image.imdecode`, `recordio.pack_img`).
//!
//! Decoding is plain Rust on the calling thread; the bindings release the GIL
//! around it, and [`decode_batch`] spreads many images over the rayon pool
//! (the record iterator's `preprocess_threads`). Channel order follows
//! OpenCV, which MXNet decodes with: colour images come out BGR unless
//! `to_rgb`, grey from colour is `0.299 R + 0.587 G + 0.114 B` in OpenCV's
//! fixed-point form (JPEG grey is the luma plane, as libjpeg gives it).

use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::{Context, Shape};
use rayon::prelude::*;

mod batch;
mod fused;
pub use batch::{decode_augment_batch, BatchSpec, ImageDraw};
pub use fused::{flip_coins, fused_batch, image_size, CropBox, FusedSpec};

/// A decoded image: `height x width x channels` bytes, row-major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// Pixels, interleaved channels.
    pub data: Vec<u8>,
    /// Rows.
    pub height: usize,
    /// Columns.
    pub width: usize,
    /// Channels (1, 3, or with `flag < 0` whatever the file holds: 1 to 4).
    pub channels: usize,
}

/// An encoded format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// JPEG (lossy; `quality` 1..=100).
    Jpeg,
    /// PNG (lossless).
    Png,
}

impl Format {
    /// Parses an OpenCV-style extension (`.jpg`, `.jpeg`, `.png`).
    pub fn from_ext(ext: &str) -> Result<Format> {
        match ext.trim_start_matches('.').to_ascii_lowercase().as_str() {
            "jpg" | "jpeg" => Ok(Format::Jpeg),
            "png" => Ok(Format::Png),
            other => Err(Error::value("imencode", format!("unsupported image format '.{other}' (use .jpg or .png)"))),
        }
    }
}

const OP: &str = "imdecode";

fn corrupt(what: &str, e: impl std::fmt::Display) -> Error {
    Error::value(OP, format!("cannot decode {what} image: {e}"))
}

/// Decodes JPEG or PNG bytes. `flag`: 1 colour (3 channels), 0 grey (1
/// channel), negative: as stored (PNG keeps alpha). `to_rgb`: RGB order
/// instead of OpenCV's BGR.
pub fn decode(bytes: &[u8], flag: i32, to_rgb: bool) -> Result<Decoded> {
    let mut img = if bytes.starts_with(&[0xFF, 0xD8]) {
        decode_jpeg(bytes, flag)?
    } else if bytes.starts_with(&[0x89, b'P', b'N', b'G']) {
        decode_png(bytes, flag)?
    } else {
        return Err(Error::value(
            OP,
            format!("invalid image data ({} bytes): not a JPEG or PNG file, or corrupt", bytes.len()),
        ));
    };
    if !to_rgb && img.channels >= 3 {
        for px in img.data.chunks_exact_mut(img.channels) {
            px.swap(0, 2);
        }
    }
    Ok(img)
}

fn decode_jpeg(bytes: &[u8], flag: i32) -> Result<Decoded> {
    use zune_core::colorspace::ColorSpace;
    use zune_core::options::DecoderOptions;
    use zune_jpeg::JpegDecoder;
    // Only "as stored" needs the file's own colour space; parsing the headers twice costs
    // about a quarter of a decode, so colour (1) and grey (0) go straight to the decoder.
    let native_gray = flag < 0 && {
        let mut probe = JpegDecoder::new(bytes);
        probe.decode_headers().map_err(|e| corrupt("JPEG", format!("{e:?}")))?;
        probe.get_input_colorspace().map(|c| c.num_components() == 1).unwrap_or(false)
    };
    let out = if flag == 0 || native_gray { ColorSpace::Luma } else { ColorSpace::RGB };
    let opts = DecoderOptions::default().jpeg_set_out_colorspace(out).set_strict_mode(true);
    let mut d = JpegDecoder::new_with_options(bytes, opts);
    let data = d.decode().map_err(|e| corrupt("JPEG", format!("{e:?}")))?;
    let (width, height) = d.dimensions().ok_or_else(|| corrupt("JPEG", "no dimensions"))?;
    let channels = out.num_components();
    if data.len() != width * height * channels {
        return Err(corrupt("JPEG", format!("decoded {} bytes for {height}x{width}x{channels}", data.len())));
    }
    Ok(Decoded { data, height, width, channels })
}

fn decode_png(bytes: &[u8], flag: i32) -> Result<Decoded> {
    let mut dec = png::Decoder::new(std::io::Cursor::new(bytes));
    dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = dec.read_info().map_err(|e| corrupt("PNG", e))?;
    let mut buf = vec![0u8; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).map_err(|e| corrupt("PNG", e))?;
    let (w, h) = (info.width as usize, info.height as usize);
    let src_c = info.color_type.samples();
    buf.truncate(info.line_size * h);
    let packed: Vec<u8> = if info.line_size == w * src_c {
        buf
    } else {
        buf.chunks_exact(info.line_size).flat_map(|r| r[..w * src_c].iter().copied()).collect()
    };
    let img = Decoded { data: packed, height: h, width: w, channels: src_c };
    Ok(match flag {
        f if f < 0 => img,
        0 => to_channels(&img, 1),
        _ => to_channels(&img, 3),
    })
}

/// OpenCV's fixed-point grey of an RGB pixel.
fn gray(r: u8, g: u8, b: u8) -> u8 {
    ((r as u32 * 4899 + g as u32 * 9617 + b as u32 * 1868 + (1 << 13)) >> 14) as u8
}

/// Converts RGB(A)/grey(A) pixels to `c` channels (1: grey, 3: RGB), dropping alpha.
fn to_channels(img: &Decoded, c: usize) -> Decoded {
    let src_c = img.channels;
    let mut data = Vec::with_capacity(img.width * img.height * c);
    for px in img.data.chunks_exact(src_c) {
        let (r, g, b) = if src_c >= 3 { (px[0], px[1], px[2]) } else { (px[0], px[0], px[0]) };
        if c == 1 {
            data.push(if src_c >= 3 { gray(r, g, b) } else { r });
        } else {
            data.extend_from_slice(&[r, g, b]);
        }
    }
    Decoded { data, height: img.height, width: img.width, channels: c }
}

/// Decodes into a new `(H, W, C)` uint8 array on `ctx`.
pub fn imdecode(bytes: &[u8], flag: i32, to_rgb: bool, ctx: Context) -> Result<NDArray> {
    decoded_array(decode(bytes, flag, to_rgb)?, ctx)
}

/// A decoded image as an `(H, W, C)` uint8 array (one copy of the bytes).
pub fn decoded_array(d: Decoded, ctx: Context) -> Result<NDArray> {
    NDArray::from_bytes(&d.data, Shape::new(&[d.height, d.width, d.channels]), crate::DType::U8, ctx)
}

/// Decodes many images in parallel (rayon); each result is its own.
pub fn decode_batch(images: &[&[u8]], flag: i32, to_rgb: bool) -> Vec<Result<Decoded>> {
    images.par_iter().map(|b| decode(b, flag, to_rgb)).collect()
}

/// Encodes `(H, W, C)` bytes in RGB(A) order (`C` 1 or 3; PNG also 2 and 4).
pub fn encode(data: &[u8], height: usize, width: usize, channels: usize, fmt: Format, quality: u8) -> Result<Vec<u8>> {
    const E: &str = "imencode";
    if data.len() != height * width * channels {
        return Err(Error::value(
            E,
            format!("{} bytes do not fill an image of {height}x{width}x{channels}", data.len()),
        ));
    }
    if height == 0 || width == 0 {
        return Err(Error::value(E, format!("cannot encode an empty image ({height}x{width})")));
    }
    let mut out = Vec::new();
    match fmt {
        Format::Jpeg => {
            let ct = match channels {
                1 => jpeg_encoder::ColorType::Luma,
                3 => jpeg_encoder::ColorType::Rgb,
                c => return Err(Error::value(E, format!("JPEG needs 1 or 3 channels, got {c}"))),
            };
            let (w, h) = (u16::try_from(width), u16::try_from(height));
            let (Ok(w), Ok(h)) = (w, h) else {
                return Err(Error::value(E, format!("JPEG is limited to 65535 pixels a side, got {height}x{width}")));
            };
            let enc = jpeg_encoder::Encoder::new(&mut out, quality.clamp(1, 100));
            enc.encode(data, w, h, ct).map_err(|e| Error::value(E, format!("JPEG encoding failed: {e}")))?;
        }
        Format::Png => {
            let ct = match channels {
                1 => png::ColorType::Grayscale,
                2 => png::ColorType::GrayscaleAlpha,
                3 => png::ColorType::Rgb,
                4 => png::ColorType::Rgba,
                c => return Err(Error::value(E, format!("PNG needs 1 to 4 channels, got {c}"))),
            };
            let perr = |e: png::EncodingError| Error::value(E, format!("PNG encoding failed: {e}"));
            let mut enc = png::Encoder::new(&mut out, width as u32, height as u32);
            enc.set_color(ct);
            enc.set_depth(png::BitDepth::Eight);
            let mut w = enc.write_header().map_err(perr)?;
            w.write_image_data(data).map_err(perr)?;
            w.finish().map_err(perr)?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_round_trip_is_exact() {
        let data: Vec<u8> = (0..4 * 5 * 3).map(|i| (i * 7 % 256) as u8).collect();
        let enc = encode(&data, 4, 5, 3, Format::Png, 0).expect("encode");
        let d = decode(&enc, 1, true).expect("decode");
        assert_eq!((d.height, d.width, d.channels), (4, 5, 3));
        assert_eq!(d.data, data);
        let bgr = decode(&enc, 1, false).expect("decode");
        assert_eq!(bgr.data[0], data[2]);
        let g = decode(&enc, 0, true).expect("decode");
        assert_eq!(g.channels, 1);
        assert_eq!(g.data[1], gray(data[3], data[4], data[5]));
    }

    #[test]
    fn jpeg_round_trip_is_close() {
        let data: Vec<u8> = (0..16 * 16).flat_map(|i| [(i % 16 * 10) as u8, 128, (i / 16 * 10) as u8]).collect();
        let enc = encode(&data, 16, 16, 3, Format::Jpeg, 95).expect("encode");
        let d = decode(&enc, 1, true).expect("decode");
        let err = d.data.iter().zip(&data).map(|(a, b)| (*a as i32 - *b as i32).abs()).max();
        assert!(err.unwrap_or(255) <= 12, "max error {err:?}");
    }

    #[test]
    fn corrupt_bytes_are_errors() {
        assert!(decode(b"not an image", 1, true).is_err());
        let data = vec![10u8; 8 * 8 * 3];
        let enc = encode(&data, 8, 8, 3, Format::Png, 0).expect("encode");
        let e = decode(&enc[..enc.len() / 2], 1, true).expect_err("truncated png");
        assert!(e.to_string().starts_with("imdecode"), "{e}");
        let j = encode(&data, 8, 8, 3, Format::Jpeg, 90).expect("encode");
        assert!(decode(&j[..20], 1, true).is_err());
    }
}
