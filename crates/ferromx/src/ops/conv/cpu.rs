//! CPU kernels of the convolution family: im2col (or the input itself for
//! 1×1 convolutions) and one large gemm per sample and group. Samples are
//! split into one contiguous block per core ([`fanout`]: the engine worker
//! starts at once), each block running single-threaded gemms on its own
//! column buffer; with fewer samples than cores the gemm itself goes parallel.

use super::Geom;
use crate::engine::{ErrorKind, OpFailure};
use crate::opdef::OpCall;
use crate::storage::{dispatch, fanout, matmul, matmul_seq, GemmElem, Kernel};
use crate::DType;
use num_traits::Float;
use parking_lot::Mutex;

/// Element types the convolution kernels run on.
pub(crate) trait ConvElem: GemmElem + Float + std::ops::AddAssign + Send + Sync + crate::dtype::Elem {}
impl ConvElem for f32 {}
impl ConvElem for f64 {}

macro_rules! with_conv_dtype {
    ($dt:expr, $T:ident, $body:expr) => {
        match $dt {
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            d => {
                return Err(OpFailure::new(
                    ErrorKind::Runtime,
                    format!("convolution kernels take float32/float64, got {d}"),
                ))
            }
        }
    };
}
pub(crate) use with_conv_dtype;

/// A gemm, parallel or on this thread only.
#[allow(clippy::too_many_arguments)]
fn mm<T: GemmElem>(
    par: bool,
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [T],
    a: &[T],
    ta: bool,
    b: &[T],
    tb: bool,
    acc: bool,
) {
    if par {
        matmul(m, n, k, dst, a, ta, b, tb, acc)
    } else {
        matmul_seq(m, n, k, dst, a, ta, b, tb, acc)
    }
}

/// Runs `f(first_sample, block, parallel_gemm)` over blocks of `out` holding
/// `per` elements per sample: one block per core when there are enough
/// samples (single-threaded gemms inside), else one block with parallel gemms.
fn for_blocks<T: Send>(out: &mut [T], per: usize, flops_per_sample: usize, f: &(dyn Fn(usize, &mut [T], bool) + Sync)) {
    let n = out.len().checked_div(per).unwrap_or(0);
    let threads = rayon::current_num_threads().max(1);
    if n == 0 {
        return;
    }
    if threads == 1 || n < threads || flops_per_sample * n < 1 << 20 {
        let par = threads > 1 && flops_per_sample >= 1 << 18;
        dispatch(|| f(0, out, par));
        return;
    }
    let per_block = n.div_ceil(threads);
    let slots: Vec<Mutex<Option<&mut [T]>>> = out.chunks_mut(per_block * per).map(|c| Mutex::new(Some(c))).collect();
    fanout(slots.len(), threads - 1, &|i| {
        if let Some(c) = slots[i].lock().take() {
            dispatch(|| f(i * per_block, c, false));
        }
    });
}

/// Fills `col` (rows `c, kd, kh, kw`; columns the output positions) from one
/// group of one sample `x` (`cg × D × H × W`).
fn im2col<T: ConvElem>(g: &Geom, x: &[T], col: &mut [T]) {
    let [id, ih, iw] = g.ind;
    let [od, oh, ow] = g.outd;
    let p = od * oh * ow;
    let zero = T::zero();
    let mut r = 0;
    for c in 0..g.cg() {
        let xc = &x[c * id * ih * iw..(c + 1) * id * ih * iw];
        for kd in 0..g.k[0] {
            for kh in 0..g.k[1] {
                for kw in 0..g.k[2] {
                    let row = &mut col[r * p..(r + 1) * p];
                    r += 1;
                    let off_w = (kw * g.d[2]) as isize - g.p[2] as isize;
                    let mut idx = 0;
                    for z in 0..od {
                        let zi = (z * g.s[0] + kd * g.d[0]) as isize - g.p[0] as isize;
                        if !(0..id as isize).contains(&zi) {
                            row[idx..idx + oh * ow].fill(zero);
                            idx += oh * ow;
                            continue;
                        }
                        for y in 0..oh {
                            let yi = (y * g.s[1] + kh * g.d[1]) as isize - g.p[1] as isize;
                            let dst = &mut row[idx..idx + ow];
                            idx += ow;
                            if !(0..ih as isize).contains(&yi) {
                                dst.fill(zero);
                                continue;
                            }
                            let xrow = &xc[(zi as usize * ih + yi as usize) * iw..][..iw];
                            if g.s[2] == 1 {
                                let lo = (-off_w).clamp(0, ow as isize) as usize;
                                let hi = (iw as isize - off_w).clamp(lo as isize, ow as isize) as usize;
                                dst[..lo].fill(zero);
                                let s0 = (lo as isize + off_w) as usize;
                                dst[lo..hi].copy_from_slice(&xrow[s0..s0 + hi - lo]);
                                dst[hi..].fill(zero);
                            } else {
                                for (xo, v) in dst.iter_mut().enumerate() {
                                    let xi = (xo * g.s[2]) as isize + off_w;
                                    *v = if (0..iw as isize).contains(&xi) { xrow[xi as usize] } else { zero };
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Adds `col` back into one group of one sample's input gradient `dx` (the adjoint of [`im2col`]).
fn col2im<T: ConvElem>(g: &Geom, col: &[T], dx: &mut [T]) {
    let [id, ih, iw] = g.ind;
    let [od, oh, ow] = g.outd;
    let p = od * oh * ow;
    let mut r = 0;
    for c in 0..g.cg() {
        let xc = &mut dx[c * id * ih * iw..(c + 1) * id * ih * iw];
        for kd in 0..g.k[0] {
            for kh in 0..g.k[1] {
                for kw in 0..g.k[2] {
                    let row = &col[r * p..(r + 1) * p];
                    r += 1;
                    let off_w = (kw * g.d[2]) as isize - g.p[2] as isize;
                    for z in 0..od {
                        let zi = (z * g.s[0] + kd * g.d[0]) as isize - g.p[0] as isize;
                        if !(0..id as isize).contains(&zi) {
                            continue;
                        }
                        for y in 0..oh {
                            let yi = (y * g.s[1] + kh * g.d[1]) as isize - g.p[1] as isize;
                            if !(0..ih as isize).contains(&yi) {
                                continue;
                            }
                            let src = &row[(z * oh + y) * ow..][..ow];
                            let xrow = &mut xc[(zi as usize * ih + yi as usize) * iw..][..iw];
                            for (xo, &v) in src.iter().enumerate() {
                                let xi = (xo * g.s[2]) as isize + off_w;
                                if (0..iw as isize).contains(&xi) {
                                    xrow[xi as usize] += v;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `out = conv(x, w) [+ bias]` for all samples.
pub(crate) fn forward<T: ConvElem>(g: &Geom, x: &[T], w: &[T], bias: Option<&[T]>, out: &mut [T]) {
    let (cg, og, rows, ip, op) = (g.cg(), g.og(), g.rows(), g.ip(), g.op());
    let pointwise = g.pointwise();
    let flops = 2 * g.o * op * rows;
    for_blocks(out, g.o * op, flops, &|first, block, par| {
        let mut col = if pointwise { Vec::new() } else { vec![T::zero(); rows * op] };
        for (j, out_n) in block.chunks_mut(g.o * op).enumerate() {
            let x_n = &x[(first + j) * g.c * ip..(first + j + 1) * g.c * ip];
            if let Some(b) = bias {
                for (o, orow) in out_n.chunks_mut(op).enumerate() {
                    orow.fill(b[o]);
                }
            }
            for grp in 0..g.groups {
                let xg = &x_n[grp * cg * ip..(grp + 1) * cg * ip];
                let colm: &[T] = if pointwise {
                    xg
                } else {
                    im2col(g, xg, &mut col);
                    &col
                };
                let wg = &w[grp * og * rows..(grp + 1) * og * rows];
                mm(
                    par,
                    og,
                    op,
                    rows,
                    &mut out_n[grp * og * op..(grp + 1) * og * op],
                    wg,
                    false,
                    colm,
                    false,
                    bias.is_some(),
                );
            }
        }
    });
}

/// `dx = conv_transpose(dy, w)`: the data gradient (written, not accumulated).
pub(crate) fn backward_data<T: ConvElem>(g: &Geom, dy: &[T], w: &[T], dx: &mut [T]) {
    let (cg, og, rows, ip, op) = (g.cg(), g.og(), g.rows(), g.ip(), g.op());
    let pointwise = g.pointwise();
    let flops = 2 * g.o * op * rows;
    for_blocks(dx, g.c * ip, flops, &|first, block, par| {
        let mut col = if pointwise { Vec::new() } else { vec![T::zero(); rows * op] };
        for (j, dx_n) in block.chunks_mut(g.c * ip).enumerate() {
            let dy_n = &dy[(first + j) * g.o * op..(first + j + 1) * g.o * op];
            for grp in 0..g.groups {
                let wg = &w[grp * og * rows..(grp + 1) * og * rows];
                let dyg = &dy_n[grp * og * op..(grp + 1) * og * op];
                let dxg = &mut dx_n[grp * cg * ip..(grp + 1) * cg * ip];
                if pointwise {
                    mm(par, rows, op, og, dxg, wg, true, dyg, false, false);
                } else {
                    mm(par, rows, op, og, &mut col, wg, true, dyg, false, false);
                    dxg.fill(T::zero());
                    col2im(g, &col, dxg);
                }
            }
        }
    });
}

/// `dw = Σ_n dy_n · col(x_n)ᵀ`: the weight gradient (written).
pub(crate) fn backward_weight<T: ConvElem>(g: &Geom, dy: &[T], x: &[T], dw: &mut [T]) {
    let (cg, og, rows, ip, op) = (g.cg(), g.og(), g.rows(), g.ip(), g.op());
    let pointwise = g.pointwise();
    let threads = rayon::current_num_threads().max(1);
    let blocks = if threads > 1 && g.n >= threads && 2 * g.o * op * rows * g.n >= 1 << 20 { threads } else { 1 };
    let per_block = g.n.div_ceil(blocks);
    let partial = |b: usize, acc: &mut [T], par: bool| {
        let mut col = if pointwise { Vec::new() } else { vec![T::zero(); rows * op] };
        let mut first = true;
        for n in b * per_block..((b + 1) * per_block).min(g.n) {
            for grp in 0..g.groups {
                let xg = &x[(n * g.c + grp * cg) * ip..(n * g.c + (grp + 1) * cg) * ip];
                let colm: &[T] = if pointwise {
                    xg
                } else {
                    im2col(g, xg, &mut col);
                    &col
                };
                let dyg = &dy[(n * g.o + grp * og) * op..(n * g.o + (grp + 1) * og) * op];
                mm(par, og, rows, op, &mut acc[grp * og * rows..(grp + 1) * og * rows], dyg, false, colm, true, !first);
            }
            first = false;
        }
        if first {
            acc.fill(T::zero());
        }
    };
    if blocks == 1 {
        dispatch(|| partial(0, dw, threads > 1));
        return;
    }
    let parts: Vec<Mutex<Vec<T>>> = (0..blocks).map(|_| Mutex::new(Vec::new())).collect();
    fanout(blocks, threads - 1, &|b| {
        let mut acc = vec![T::zero(); dw.len()];
        dispatch(|| partial(b, &mut acc, false));
        *parts[b].lock() = acc;
    });
    dw.fill(T::zero());
    for p in &parts {
        for (d, &v) in dw.iter_mut().zip(p.lock().iter()) {
            *d += v;
        }
    }
}

/// `db[c] = Σ_{n, p} dy[n, c, p]` for `dy` of shape `(n, ch, plane)`.
pub(crate) fn channel_sum<T: ConvElem>(dy: &[T], n: usize, ch: usize, plane: usize, db: &mut [T]) {
    db.fill(T::zero());
    for s in 0..n {
        for (c, d) in db.iter_mut().enumerate() {
            let mut acc = T::zero();
            for &v in &dy[(s * ch + c) * plane..(s * ch + c + 1) * plane] {
                acc += v;
            }
            *d += acc;
        }
    }
}

/// `Convolution`: inputs data, weight[, bias]; output 0.
pub(crate) fn conv_fwd(call: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let (g, bias) = Geom::from_nums(&call.nums);
    with_conv_dtype!(k.in_dtype(0), T, {
        let b = if bias { Some(k.input::<T>(2)) } else { None };
        forward::<T>(&g, k.input::<T>(0), k.input::<T>(1), b, k.output::<T>(0));
    });
    Ok(())
}

/// `_backward_Convolution`: inputs out_grad, data, weight; outputs data, weight[, bias] gradients.
pub(crate) fn conv_bwd(call: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let (g, bias) = Geom::from_nums(&call.nums);
    with_conv_dtype!(k.in_dtype(0), T, {
        let (dy, x, w) = (k.input::<T>(0), k.input::<T>(1), k.input::<T>(2));
        backward_data::<T>(&g, dy, w, k.output::<T>(0));
        backward_weight::<T>(&g, dy, x, k.output::<T>(1));
        if bias {
            channel_sum::<T>(dy, g.n, g.o, g.op(), k.output::<T>(2));
        }
    });
    Ok(())
}

/// `Deconvolution`: inputs data, weight[, bias]; output 0 (the transpose of a
/// convolution whose input is this output).
pub(crate) fn deconv_fwd(call: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let (g, bias) = Geom::from_nums(&call.nums);
    with_conv_dtype!(k.in_dtype(0), T, {
        let out = k.output::<T>(0);
        backward_data::<T>(&g, k.input::<T>(0), k.input::<T>(1), out);
        if bias {
            let b = k.input::<T>(2);
            let plane = g.ip();
            for (i, row) in out.chunks_mut(plane).enumerate() {
                let bv = b[i % g.c];
                for v in row {
                    *v += bv;
                }
            }
        }
    });
    Ok(())
}

/// `_backward_Deconvolution`: inputs out_grad, data, weight; outputs data, weight[, bias] gradients.
pub(crate) fn deconv_bwd(call: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let (g, bias) = Geom::from_nums(&call.nums);
    with_conv_dtype!(k.in_dtype(0), T, {
        let (dy, x, w) = (k.input::<T>(0), k.input::<T>(1), k.input::<T>(2));
        forward::<T>(&g, dy, w, None, k.output::<T>(0));
        backward_weight::<T>(&g, x, dy, k.output::<T>(1));
        if bias {
            channel_sum::<T>(dy, g.n, g.c, g.ip(), k.output::<T>(2));
        }
    });
    Ok(())
}
