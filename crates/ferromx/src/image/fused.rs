//! The DataLoader's fused vision path: for a dataset of encoded images whose
//! `transform_first` is exactly a `Compose` of the known transforms (a crop or
//! resize, `RandomFlipLeftRight`, `ToTensor`, `Normalize`), one native call per
//! batch decodes every image, crops and resizes it, mirrors it, and writes
//! `(x / 255 - mean) / std` as float32 CHW straight into the batch buffer.
//!
//! The values are bit for bit those of the per-transform engine ops it replaces:
//! the crop box is drawn in Python with the same `random` calls, the resize is
//! the same [`resize_image_u8`] kernel (`_cvimresize` / `_image_resize`), the
//! flip coin is drawn from the same seed stream as `_image_random_flip_left_right`
//! ([`flip_coins`]), and the arithmetic is `to_tensor`'s `v / 255.0` then
//! `normalize`'s `(v - mean as f32) / std as f32`, both in float32.

use super::decode;
use crate::error::{Error, Result};
use crate::ops::image::{resize_image_u8, Interp};
use crate::ops::random::{next_seed, Rng};
use crate::Context;

const OP: &str = "DataLoader (fused vision transforms)";

/// One image's geometry: crop `w x h` at `(x0, y0)`, then resize to the
/// batch's output size with `interp` when the sizes differ (always when
/// `force_resize`, as the `Resize` transform does).
#[derive(Clone, Copy, Debug)]
pub struct CropBox {
    /// Left column.
    pub x0: usize,
    /// Top row.
    pub y0: usize,
    /// Crop width.
    pub w: usize,
    /// Crop height.
    pub h: usize,
    /// Interpolation of the resize after the crop.
    pub interp: Interp,
}

/// What every image of a fused batch goes through.
#[derive(Clone, Debug)]
pub struct FusedSpec {
    /// Decode flag: 1 colour (3 channels), 0 grey (1 channel).
    pub flag: i32,
    /// Output rows.
    pub height: usize,
    /// Output columns.
    pub width: usize,
    /// Resize even when the crop already has the output size.
    pub force_resize: bool,
    /// Per channel `(mean, std)` of `Normalize` (`None`: no `Normalize`).
    pub normalize: Option<(Vec<f64>, Vec<f64>)>,
}

impl FusedSpec {
    /// Channels of the output (1 for grey, 3 for colour).
    pub fn channels(&self) -> usize {
        if self.flag == 0 {
            1
        } else {
            3
        }
    }

    /// Bytes of one image's float32 output.
    pub fn image_bytes(&self) -> usize {
        self.channels() * self.height * self.width * 4
    }
}

/// `(height, width)` of a JPEG or PNG from its header alone (no decoding).
pub fn image_size(bytes: &[u8]) -> Result<(usize, usize)> {
    let bad = || Error::value("imdecode", format!("cannot read the size of an image of {} bytes", bytes.len()));
    let be16 = |i: usize| bytes.get(i..i + 2).map(|b| u16::from_be_bytes([b[0], b[1]]) as usize);
    if bytes.starts_with(&[0x89, b'P', b'N', b'G']) {
        let be32 = |i: usize| bytes.get(i..i + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize);
        return match (be32(20), be32(16)) {
            (Some(h), Some(w)) if bytes.get(12..16) == Some(&b"IHDR"[..]) => Ok((h, w)),
            _ => Err(bad()),
        };
    }
    if !bytes.starts_with(&[0xFF, 0xD8]) {
        return Err(bad());
    }
    let mut i = 2;
    loop {
        while bytes.get(i) == Some(&0xFF) && bytes.get(i + 1) == Some(&0xFF) {
            i += 1; // fill bytes
        }
        if bytes.get(i) != Some(&0xFF) {
            return Err(bad());
        }
        let m = *bytes.get(i + 1).ok_or_else(bad)?;
        if m == 0x01 || (0xD0..=0xD8).contains(&m) {
            i += 2; // markers without a length
            continue;
        }
        let len = be16(i + 2).ok_or_else(bad)?;
        if matches!(m, 0xC0..=0xCF) && !matches!(m, 0xC4 | 0xC8 | 0xCC) {
            let (h, w) = (be16(i + 5).ok_or_else(bad)?, be16(i + 7).ok_or_else(bad)?);
            return Ok((h, w));
        }
        if m == 0xD9 || m == 0xDA || len < 2 {
            return Err(bad()); // image data or the end before any frame header
        }
        i += 2 + len;
    }
}

/// `n` coins of `_image_random_flip_left_right` on `ctx`, in order: each draws
/// the operator's seed from the same stream (so after `mx.random.seed` the fused
/// path mirrors exactly the images the per-transform path would).
pub fn flip_coins(n: usize, ctx: Context) -> Vec<bool> {
    (0..n)
        .map(|_| {
            // The operator carries its seed as an f64 (`seed >> 11` is exact).
            let seed = ((next_seed(ctx) >> 11) as f64) as u64;
            Rng::new(seed).uniform() < 0.5
        })
        .collect()
}

/// Decodes and transforms one image into `out` (its float32 CHW bytes).
fn one(bytes: &[u8], b: &CropBox, mirror: bool, spec: &FusedSpec, out: &mut [u8]) -> Result<()> {
    let c = spec.channels();
    let (oh, ow) = (spec.height, spec.width);
    let img = decode(bytes, spec.flag, true)?;
    if img.channels != c {
        return Err(Error::value(OP, format!("decoded {} channels, expected {c}", img.channels)));
    }
    let (ih, iw) = (img.height, img.width);
    if b.w == 0 || b.h == 0 || b.x0 + b.w > iw || b.y0 + b.h > ih {
        return Err(Error::value(
            OP,
            format!("crop {}x{} at ({}, {}) does not fit the {ih}x{iw} image", b.w, b.h, b.x0, b.y0),
        ));
    }
    let cropped: Vec<u8>;
    let src: &[u8] = if (b.x0, b.y0, b.w, b.h) == (0, 0, iw, ih) {
        &img.data
    } else {
        let row = b.w * c;
        let mut v = Vec::with_capacity(b.h * row);
        for y in b.y0..b.y0 + b.h {
            let s = (y * iw + b.x0) * c;
            v.extend_from_slice(&img.data[s..s + row]);
        }
        cropped = v;
        &cropped
    };
    let resized: Vec<u8>;
    let src = if spec.force_resize || (b.h, b.w) != (oh, ow) {
        let mut o = vec![0u8; oh * ow * c];
        resize_image_u8(src, [b.h, b.w, c], &mut o, [oh, ow], b.interp);
        resized = o;
        &resized[..]
    } else {
        src
    };
    let plane = oh * ow * 4;
    for ch in 0..c {
        // A pixel has 256 values: the float32 result of each, computed once.
        let table = value_table(spec, ch);
        let dst = &mut out[ch * plane..(ch + 1) * plane];
        for (y, orow) in dst.chunks_exact_mut(ow * 4).enumerate() {
            let srow = &src[y * ow * c..(y + 1) * ow * c];
            for (x, d) in orow.chunks_exact_mut(4).enumerate() {
                let sx = if mirror { ow - 1 - x } else { x };
                d.copy_from_slice(&table[srow[sx * c + ch] as usize]);
            }
        }
    }
    Ok(())
}

/// `to_tensor` then `normalize` of every uint8 value of channel `ch`, as the
/// native-endian bytes of the float32 result (the kernels' exact arithmetic).
fn value_table(spec: &FusedSpec, ch: usize) -> [[u8; 4]; 256] {
    let mut t = [[0u8; 4]; 256];
    for (p, slot) in t.iter_mut().enumerate() {
        let v = p as f32 / 255.0;
        let v = match &spec.normalize {
            Some((m, s)) => (v - m[ch] as f32) / s[ch] as f32,
            None => v,
        };
        *slot = v.to_ne_bytes();
    }
    t
}

/// Runs the fused transforms of a batch into `out`: `images.len()` float32
/// `(C, H, W)` images back to back, in native byte order. The first image that
/// fails is named by its position in the error.
pub fn fused_batch(
    images: &[&[u8]],
    boxes: &[CropBox],
    mirror: &[bool],
    spec: &FusedSpec,
    out: &mut [u8],
) -> Result<()> {
    let n = images.len();
    let c = spec.channels();
    if boxes.len() != n || mirror.len() != n {
        return Err(Error::value(OP, format!("{n} images but {} crop boxes and {} flips", boxes.len(), mirror.len())));
    }
    if spec.height == 0 || spec.width == 0 {
        return Err(Error::value(OP, format!("output size must be positive, got {}x{}", spec.height, spec.width)));
    }
    if let Some((m, s)) = &spec.normalize {
        if m.len() != c || s.len() != c {
            return Err(Error::value(OP, format!("mean and std need {c} values, got {} and {}", m.len(), s.len())));
        }
    }
    let per = spec.image_bytes();
    if out.len() != n * per {
        return Err(Error::value(OP, format!("output buffer has {} bytes, the batch needs {}", out.len(), n * per)));
    }
    for (i, dst) in out.chunks_exact_mut(per).enumerate() {
        one(images[i], &boxes[i], mirror[i], spec, dst)
            .map_err(|e| Error::value(OP, format!("image {i} of the batch: {e}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::{encode, Format};

    fn img(h: usize, w: usize) -> Vec<u8> {
        (0..h * w * 3).map(|i| ((i * 37 + i / 7) % 251) as u8).collect()
    }

    #[test]
    fn sizes_come_from_the_headers() {
        let data = img(7, 11);
        let j = encode(&data, 7, 11, 3, Format::Jpeg, 90).expect("jpeg");
        let p = encode(&data, 7, 11, 3, Format::Png, 0).expect("png");
        assert_eq!(image_size(&j).expect("jpeg size"), (7, 11));
        assert_eq!(image_size(&p).expect("png size"), (7, 11));
        assert!(image_size(b"not an image").is_err());
        assert!(image_size(&j[..4]).is_err());
    }

    #[test]
    fn crop_resize_mirror_normalise_match_a_direct_reference() {
        let data = img(9, 12);
        let p = encode(&data, 9, 12, 3, Format::Png, 0).expect("png");
        let b = CropBox { x0: 2, y0: 1, w: 8, h: 6, interp: Interp::Linear };
        let spec = FusedSpec {
            flag: 1,
            height: 4,
            width: 5,
            force_resize: false,
            normalize: Some((vec![0.4, 0.5, 0.6], vec![0.2, 0.25, 0.3])),
        };
        let mut out = vec![0u8; spec.image_bytes()];
        fused_batch(&[&p], &[b], &[true], &spec, &mut out).expect("fused");
        let mut crop = Vec::new();
        for y in 1..7 {
            crop.extend_from_slice(&data[(y * 12 + 2) * 3..(y * 12 + 10) * 3]);
        }
        let mut res = vec![0u8; 4 * 5 * 3];
        resize_image_u8(&crop, [6, 8, 3], &mut res, [4, 5], Interp::Linear);
        let got: Vec<f32> = out.chunks_exact(4).map(|q| f32::from_ne_bytes([q[0], q[1], q[2], q[3]])).collect();
        let (m, s) = ([0.4f64, 0.5, 0.6], [0.2f64, 0.25, 0.3]);
        for ch in 0..3 {
            for y in 0..4 {
                for x in 0..5 {
                    let v = res[(y * 5 + 4 - x) * 3 + ch] as f32 / 255.0;
                    let want = (v - m[ch] as f32) / s[ch] as f32;
                    assert_eq!(got[(ch * 4 + y) * 5 + x], want, "c{ch} y{y} x{x}");
                }
            }
        }
        let mut small = vec![0u8; 8];
        assert!(fused_batch(&[&p], &[b], &[true], &spec, &mut small).is_err());
        let far = CropBox { x0: 10, ..b };
        let e = fused_batch(&[&p], &[far], &[false], &spec, &mut out).expect_err("box outside");
        assert!(e.to_string().contains("image 0 of the batch"), "{e}");
    }
}
