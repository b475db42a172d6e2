//! One native call per `ImageRecordIter` batch: decode, resize, crop, mirror,
//! normalise and HWC→CHW of every image, written straight into the float32
//! batch buffer, on `threads` scoped threads (the caller has released the GIL).
//!
//! The values are those of the engine-op path it replaces (`_cvimresize` with
//! bilinear interpolation, `image.crop`, `flip_left_right`, then
//! `(x - mean) * (scale / std)` in float32): the resize is the same
//! [`resize_image_u8`] kernel and the arithmetic is the same two float32 steps.

use super::{decode, Decoded};
use crate::error::{Error, Result};
use crate::ops::image::{resize_image_u8, Interp};
use parking_lot::Mutex;

const OP: &str = "ImageRecordIter";

/// What to do with every image of a batch.
#[derive(Clone, Debug)]
pub struct BatchSpec {
    /// Output channels (1: grey, 3: RGB).
    pub channels: usize,
    /// Output rows.
    pub height: usize,
    /// Output columns.
    pub width: usize,
    /// Resize the shorter edge to this first (`None`: keep the decoded size).
    pub resize: Option<usize>,
    /// Random crop position (from `crop_u`) instead of the centre.
    pub rand_crop: bool,
    /// Per channel, subtracted first.
    pub mean: [f32; 3],
    /// Per channel, multiplied after the subtraction (`scale / std`).
    pub mul: [f32; 3],
}

/// Per image: `(u_y, u_x)` in `[0, 1)` choose the crop offset when `rand_crop`
/// (`floor(u * (room + 1))`, i.e. uniform over the valid offsets), `mirror`
/// flips left-right.
#[derive(Clone, Copy, Debug, Default)]
pub struct ImageDraw {
    /// Vertical crop position.
    pub u_y: f64,
    /// Horizontal crop position.
    pub u_x: f64,
    /// Flip left-right.
    pub mirror: bool,
}

/// The decoded image resized as `ImageRecordIter` does before cropping: the
/// shorter edge to `resize`, then up to at least the crop size.
fn prepare(mut img: Decoded, spec: &BatchSpec) -> Decoded {
    let resize_to = |img: Decoded, nh: usize, nw: usize| {
        if nh == img.height && nw == img.width {
            return img;
        }
        let mut out = vec![0u8; nh * nw * img.channels];
        resize_image_u8(&img.data, [img.height, img.width, img.channels], &mut out, [nh, nw], Interp::Linear);
        Decoded { data: out, height: nh, width: nw, channels: img.channels }
    };
    if let Some(r) = spec.resize {
        let (ih, iw) = (img.height, img.width);
        let (nh, nw) = if ih > iw { (r * ih / iw, r) } else { (r, r * iw / ih) };
        img = resize_to(img, nh.max(1), nw.max(1));
    }
    if img.height < spec.height || img.width < spec.width {
        let (nh, nw) = (img.height.max(spec.height), img.width.max(spec.width));
        img = resize_to(img, nh, nw);
    }
    img
}

fn offset(u: f64, room: usize) -> usize {
    ((u.clamp(0.0, 1.0) * (room + 1) as f64) as usize).min(room)
}

/// Decodes, prepares and writes one image into `out` (`C*H*W` float32 little-endian
/// bytes); returns the crop offset `(y0, x0)`.
fn one(bytes: &[u8], draw: ImageDraw, spec: &BatchSpec, out: &mut [u8]) -> Result<[usize; 2]> {
    let (c, h, w) = (spec.channels, spec.height, spec.width);
    let img = decode(bytes, if c == 3 { 1 } else { 0 }, true)?;
    if img.height == 0 || img.width == 0 {
        return Err(Error::value(OP, format!("empty image ({}x{})", img.height, img.width)));
    }
    let img = prepare(img, spec);
    if img.channels != c {
        return Err(Error::value(OP, format!("decoded {} channels, data_shape wants {c}", img.channels)));
    }
    let (ih, iw) = (img.height, img.width);
    let (y0, x0) = if spec.rand_crop {
        (offset(draw.u_y, ih - h), offset(draw.u_x, iw - w))
    } else {
        ((ih - h) / 2, (iw - w) / 2)
    };
    for ch in 0..c {
        let (m, k) = (spec.mean[ch], spec.mul[ch]);
        let plane = &mut out[ch * h * w * 4..(ch + 1) * h * w * 4];
        for (y, orow) in plane.chunks_exact_mut(w * 4).enumerate() {
            let src = &img.data[((y0 + y) * iw + x0) * c..((y0 + y) * iw + x0 + w) * c];
            for (x, dst) in orow.chunks_exact_mut(4).enumerate() {
                let sx = if draw.mirror { w - 1 - x } else { x };
                let v = (src[sx * c + ch] as f32 - m) * k;
                dst.copy_from_slice(&v.to_le_bytes());
            }
        }
    }
    Ok([y0, x0])
}

/// Decodes and augments a batch into one `(B, C, H, W)` float32 buffer (as
/// little-endian bytes), `threads` images at a time. Returns the buffer and
/// each image's crop offset `(y0, x0)`; the first image that fails to decode
/// is named in the error.
pub fn decode_augment_batch(
    images: &[&[u8]],
    draws: &[ImageDraw],
    spec: &BatchSpec,
    threads: usize,
) -> Result<(Vec<u8>, Vec<[usize; 2]>)> {
    let (c, h, w) = (spec.channels, spec.height, spec.width);
    if (c != 1 && c != 3) || h == 0 || w == 0 {
        return Err(Error::value(OP, format!("data_shape must be (1 or 3, H, W) with H, W > 0, got ({c}, {h}, {w})")));
    }
    if draws.len() != images.len() {
        return Err(Error::value(OP, format!("{} images but {} random draws", images.len(), draws.len())));
    }
    let per = c * h * w * 4;
    let mut buf = vec![0u8; images.len() * per];
    let mut offsets = vec![[0usize; 2]; images.len()];
    let work = Mutex::new(buf.chunks_exact_mut(per).zip(offsets.iter_mut()).enumerate());
    let first_err: Mutex<Option<(usize, Error)>> = Mutex::new(None);
    let run = || loop {
        let next = work.lock().next();
        let Some((i, (out, off))) = next else { break };
        match one(images[i], draws[i], spec, out) {
            Ok(o) => *off = o,
            Err(e) => {
                let mut slot = first_err.lock();
                if slot.as_ref().is_none_or(|(j, _)| i < *j) {
                    *slot = Some((i, e));
                }
            }
        }
    };
    let threads = threads.clamp(1, images.len().max(1));
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(run);
        }
        run();
    });
    if let Some((i, e)) = first_err.into_inner() {
        return Err(Error::value(OP, format!("image {i} of the batch: {e}")));
    }
    Ok((buf, offsets))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::{encode, Format};

    fn png(h: usize, w: usize, seed: usize) -> Vec<u8> {
        let data: Vec<u8> = (0..h * w * 3).map(|i| ((i * 31 + seed * 17) % 251) as u8).collect();
        encode(&data, h, w, 3, Format::Png, 0).expect("encode")
    }

    fn f32s(b: &[u8]) -> Vec<f32> {
        b.chunks_exact(4).map(|q| f32::from_le_bytes([q[0], q[1], q[2], q[3]])).collect()
    }

    #[test]
    fn crop_mirror_normalise_match_a_direct_reference() {
        let imgs = [png(9, 12, 0), png(10, 8, 1)];
        let refs: Vec<&[u8]> = imgs.iter().map(|v| v.as_slice()).collect();
        let draws = [ImageDraw { u_y: 0.99, u_x: 0.3, mirror: true }, ImageDraw { u_y: 0.0, u_x: 0.7, mirror: false }];
        let spec = BatchSpec {
            channels: 3,
            height: 5,
            width: 6,
            resize: None,
            rand_crop: true,
            mean: [1.0, 2.0, 3.0],
            mul: [0.5, 0.25, 2.0],
        };
        for threads in [1, 2] {
            let (buf, offs) = decode_augment_batch(&refs, &draws, &spec, threads).expect("batch");
            assert_eq!(offs, vec![[4, 2], [0, 2]]);
            let got = f32s(&buf);
            for (b, img) in imgs.iter().enumerate() {
                let d = decode(img, 1, true).expect("decode");
                let [y0, x0] = offs[b];
                for ch in 0..3 {
                    for y in 0..5 {
                        for x in 0..6 {
                            let sx = if draws[b].mirror { 5 - x } else { x };
                            let v = d.data[((y0 + y) * d.width + x0 + sx) * 3 + ch] as f32;
                            let want = (v - spec.mean[ch]) * spec.mul[ch];
                            assert_eq!(got[((b * 3 + ch) * 5 + y) * 6 + x], want, "b{b} c{ch} y{y} x{x}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn small_images_are_resized_up_and_bad_ones_named() {
        let imgs = [png(3, 4, 2), b"not an image".to_vec()];
        let refs: Vec<&[u8]> = imgs.iter().map(|v| v.as_slice()).collect();
        let spec = BatchSpec {
            channels: 3,
            height: 6,
            width: 6,
            resize: None,
            rand_crop: false,
            mean: [0.0; 3],
            mul: [1.0; 3],
        };
        let draws = [ImageDraw::default(); 2];
        let e = decode_augment_batch(&refs, &draws, &spec, 2).expect_err("bad image");
        assert!(e.to_string().contains("image 1 of the batch"), "{e}");
        let (buf, offs) = decode_augment_batch(&refs[..1], &draws[..1], &spec, 1).expect("batch");
        assert_eq!(offs, vec![[0, 0]]);
        let d = decode(&imgs[0], 1, true).expect("decode");
        let mut up = vec![0u8; 6 * 6 * 3];
        resize_image_u8(&d.data, [3, 4, 3], &mut up, [6, 6], Interp::Linear);
        let got = f32s(&buf);
        assert_eq!(got[0], up[0] as f32);
        assert_eq!(got[6 * 6 + 7], up[7 * 3 + 1] as f32);
    }
}
