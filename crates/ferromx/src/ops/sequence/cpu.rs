//! CPU kernels of the sequence and attention operators.

use crate::dtype::Elem;
use crate::engine::{ErrorKind, OpFailure};
use crate::opdef::OpCall;
use crate::storage::Kernel;
use crate::{with_dtype, with_float_dtype};

fn internal(msg: &str) -> OpFailure {
    OpFailure::new(ErrorKind::Runtime, msg.to_string())
}

fn num(c: &OpCall, i: usize) -> Result<f64, OpFailure> {
    c.nums.get(i).copied().ok_or_else(|| internal("sequence kernel: missing numeric parameter"))
}

/// `(steps, batch, inner)` of a sequence array whose time axis is `axis` (0 or 1).
fn seq_dims(d: &[usize], axis: usize) -> (usize, usize, usize) {
    let inner: usize = d[2..].iter().product();
    if axis == 0 {
        (d[0], d[1], inner)
    } else {
        (d[1], d[0], inner)
    }
}

/// Element offset of `(t, b)` in a sequence array with time axis `axis`.
#[inline]
fn at(axis: usize, t: usize, b: usize, steps: usize, batch: usize, inner: usize) -> usize {
    if axis == 0 {
        (t * batch + b) * inner
    } else {
        (b * steps + t) * inner
    }
}

/// Lengths of input `i` as integers (truncated like MXNet's cast), or `steps` each.
fn lengths(c: &OpCall, k: &Kernel, i: usize, batch: usize, steps: usize) -> Vec<i64> {
    if c.inputs.len() <= i {
        return vec![steps as i64; batch];
    }
    let dt = k.in_dtype(i);
    with_dtype!(dt, L, k.input::<L>(i).iter().map(|v| v.to_f64() as i64).collect())
}

fn bad_len(name: &str, b: usize, l: i64, steps: usize) -> OpFailure {
    OpFailure::new(
        ErrorKind::Value,
        format!("{name}: sequence_length[{b}] = {l} is outside 1..={steps} (the sequence has {steps} steps)"),
    )
}

/// `SequenceMask`: nums `[value, axis]`; input 1 (when given) holds the lengths.
pub(crate) fn sequence_mask(c: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let (value, axis) = (num(c, 0)?, num(c, 1)? as usize);
    let (steps, batch, inner) = seq_dims(c.inputs[0].shape.dims(), axis);
    let lens = lengths(c, k, 1, batch, steps);
    let dt = k.in_dtype(0);
    with_dtype!(dt, T, {
        let (x, o) = (k.input::<T>(0), k.output::<T>(0));
        let fill = T::from_f64(value);
        for t in 0..steps {
            for (b, &l) in lens.iter().enumerate() {
                let p = at(axis, t, b, steps, batch, inner);
                if (t as i64) < l {
                    o[p..p + inner].copy_from_slice(&x[p..p + inner]);
                } else {
                    o[p..p + inner].fill(fill);
                }
            }
        }
    });
    Ok(())
}

/// `SequenceLast`: nums `[axis]`; output `(batch, inner...)` = the step at `length - 1`.
pub(crate) fn sequence_last(c: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let axis = num(c, 0)? as usize;
    let (steps, batch, inner) = seq_dims(c.inputs[0].shape.dims(), axis);
    let lens = lengths(c, k, 1, batch, steps);
    let dt = k.in_dtype(0);
    with_dtype!(dt, T, {
        let (x, o) = (k.input::<T>(0), k.output::<T>(0));
        for (b, &l) in lens.iter().enumerate() {
            if l < 1 || l as usize > steps {
                return Err(bad_len("SequenceLast", b, l, steps));
            }
            let p = at(axis, l as usize - 1, b, steps, batch, inner);
            o[b * inner..(b + 1) * inner].copy_from_slice(&x[p..p + inner]);
        }
    });
    Ok(())
}

/// Backward of `SequenceLast`: input 0 the output gradient `(batch, inner...)`,
/// output the data-shaped gradient (zero except at each sequence's last step).
pub(crate) fn sequence_last_backward(c: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let axis = num(c, 0)? as usize;
    let (steps, batch, inner) = seq_dims(c.outputs[0].shape.dims(), axis);
    let lens = lengths(c, k, 1, batch, steps);
    let dt = k.in_dtype(0);
    with_dtype!(dt, T, {
        let (g, o) = (k.input::<T>(0), k.output::<T>(0));
        o.fill(T::default());
        for (b, &l) in lens.iter().enumerate() {
            if l < 1 || l as usize > steps {
                return Err(bad_len("SequenceLast", b, l, steps));
            }
            let p = at(axis, l as usize - 1, b, steps, batch, inner);
            o[p..p + inner].copy_from_slice(&g[b * inner..(b + 1) * inner]);
        }
    });
    Ok(())
}

/// `SequenceReverse` (time axis 0): the first `length` steps of each sequence reversed.
pub(crate) fn sequence_reverse(c: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let (steps, batch, inner) = seq_dims(c.inputs[0].shape.dims(), 0);
    let lens = lengths(c, k, 1, batch, steps);
    let dt = k.in_dtype(0);
    with_dtype!(dt, T, {
        let (x, o) = (k.input::<T>(0), k.output::<T>(0));
        for (b, &l) in lens.iter().enumerate() {
            if l < 0 || l as usize > steps {
                return Err(bad_len("SequenceReverse", b, l, steps));
            }
            let l = l as usize;
            for t in 0..steps {
                let src = if t < l { l - 1 - t } else { t };
                let (p, q) = ((t * batch + b) * inner, (src * batch + b) * inner);
                o[p..p + inner].copy_from_slice(&x[q..q + inner]);
            }
        }
    });
    Ok(())
}

/// `masked_softmax` / `masked_log_softmax`: nums `[axis, temperature, normalize, log]`;
/// input 1 is the mask, already broadcast to the data's shape (non-zero: kept).
pub(crate) fn masked_softmax(c: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let (axis, temp, normalize, log) = (num(c, 0)? as usize, num(c, 1)?, num(c, 2)? != 0.0, num(c, 3)? != 0.0);
    let d = c.inputs[0].shape.dims();
    let (outer, n, inner): (usize, usize, usize) =
        (d[..axis].iter().product(), d[axis], d[axis + 1..].iter().product());
    let mdt = k.in_dtype(1);
    let keep: Vec<bool> = with_dtype!(mdt, M, k.input::<M>(1).iter().map(|v| v.to_f64() != 0.0).collect());
    let dt = k.in_dtype(0);
    with_float_dtype!(
        dt,
        T,
        {
            let (x, o) = (k.input::<T>(0), k.output::<T>(0));
            for r in 0..outer {
                for i in 0..inner {
                    let base = r * n * inner + i;
                    let idx = |j: usize| base + j * inner;
                    let mut mx = f64::NEG_INFINITY;
                    if normalize {
                        for j in (0..n).filter(|&j| keep[idx(j)]) {
                            mx = mx.max(x[idx(j)].to_f64() / temp);
                        }
                    }
                    let shift = if normalize && mx.is_finite() { mx } else { 0.0 };
                    let mut sum = 0.0;
                    for j in (0..n).filter(|&j| keep[idx(j)]) {
                        sum += (x[idx(j)].to_f64() / temp - shift).exp();
                    }
                    for j in 0..n {
                        let z = x[idx(j)].to_f64() / temp - shift;
                        let v = match (keep[idx(j)], log) {
                            (true, true) => z - sum.ln(),
                            (true, false) => z.exp() / sum,
                            (false, true) => f64::NEG_INFINITY,
                            (false, false) => 0.0,
                        };
                        o[idx(j)] = T::from_f64(v);
                    }
                }
            }
        },
        return Err(internal("masked_softmax: float data expected"))
    );
    Ok(())
}

/// `_contrib_div_sqrt_dim`: `x / sqrt(x.shape[-1])`.
pub(crate) fn div_sqrt_dim(c: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let last = c.inputs[0].shape.dims().last().copied().unwrap_or(1);
    let s = 1.0 / (last as f64).sqrt();
    let dt = k.in_dtype(0);
    with_dtype!(dt, T, {
        let (x, o) = (k.input::<T>(0), k.output::<T>(0));
        for (o, &v) in o.iter_mut().zip(x) {
            *o = T::from_f64(v.to_f64() * s);
        }
    });
    Ok(())
}

/// `_contrib_arange_like`: nums `[start, step, repeat]`; `start + step * (i / repeat)`.
pub(crate) fn arange_like(c: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let (start, step, repeat) = (num(c, 0)?, num(c, 1)?, num(c, 2)?.max(1.0) as usize);
    let dt = k.out_dtype(0);
    with_dtype!(dt, T, {
        for (i, o) in k.output::<T>(0).iter_mut().enumerate() {
            *o = T::from_f64(start + step * (i / repeat) as f64);
        }
    });
    Ok(())
}

/// Where a batch of matrices lies in a buffer: element `(b, h, i, j)` is at
/// `off + b*sb + h*sh + i*row + j*col`.
#[derive(Clone, Copy)]
struct Mat {
    off: usize,
    sb: usize,
    sh: usize,
    row: usize,
    col: usize,
}

impl Mat {
    fn t(self) -> Mat {
        Mat { row: self.col, col: self.row, ..self }
    }
    #[inline]
    fn idx(&self, b: usize, h: usize, i: usize, j: usize) -> usize {
        self.off + b * self.sb + h * self.sh + i * self.row + j * self.col
    }
}

/// The slot `slot` of a `(steps, batch, heads * slots * dim)` interleaved array,
/// as `(step, d)` matrices per `(batch, head)`.
fn seq_mat(batch: usize, heads: usize, slots: usize, dim: usize, slot: usize) -> Mat {
    let w = heads * slots * dim;
    Mat { off: slot * dim, sb: w, sh: slots * dim, row: batch * w, col: 1 }
}

/// A `(batch * heads, m, n)` attention array as `(i, j)` matrices per `(batch, head)`.
fn att_mat(heads: usize, m: usize, n: usize) -> Mat {
    Mat { off: 0, sb: heads * m * n, sh: m * n, row: n, col: 1 }
}

/// The shapes of one product: `batch`, `heads`, and `(m × kk) · (kk × n)`.
#[derive(Clone, Copy)]
struct Dims {
    batch: usize,
    heads: usize,
    m: usize,
    n: usize,
    kk: usize,
}

/// `c = alpha * a · b` for every `(batch, head)`, accumulating in f64.
#[allow(clippy::too_many_arguments)]
fn bmm<T: Elem>(dm: Dims, a: &[T], sa: Mat, b: &[T], sb: Mat, c: &mut [T], sc: Mat, alpha: f64) {
    let mut row = vec![0.0f64; dm.kk];
    for bi in 0..dm.batch {
        for hi in 0..dm.heads {
            for i in 0..dm.m {
                for (l, r) in row.iter_mut().enumerate() {
                    *r = a[sa.idx(bi, hi, i, l)].to_f64();
                }
                for j in 0..dm.n {
                    let mut s = 0.0;
                    for (l, r) in row.iter().enumerate() {
                        s += r * b[sb.idx(bi, hi, l, j)].to_f64();
                    }
                    c[sc.idx(bi, hi, i, j)] = T::from_f64(alpha * s);
                }
            }
        }
    }
}

/// Which interleaved product a kernel computes.
#[derive(Clone, Copy)]
pub(crate) enum Attn {
    SelfQk,
    SelfValAtt,
    EncDecQk,
    EncDecValAtt,
}

/// `(steps, batch, dim)` of the interleaved operand of `which` (input 0; the
/// query length for encdec_qk comes from its own input 0).
fn attn_dims(c: &OpCall, which: Attn, heads: usize) -> (usize, usize, usize, usize) {
    let d0 = c.inputs[0].shape.dims();
    match which {
        Attn::SelfQk | Attn::SelfValAtt => (d0[0], d0[1], d0[2] / 3 / heads, d0[0]),
        Attn::EncDecQk => (d0[0], d0[1], d0[2] / heads, c.inputs[1].shape.dims()[0]),
        Attn::EncDecValAtt => (c.inputs[1].shape.dims()[1], d0[1], d0[2] / 2 / heads, d0[0]),
    }
}

/// Forward of the four interleaved attention products; nums `[heads]`.
pub(crate) fn attn_forward(c: &OpCall, k: &Kernel, which: Attn) -> Result<(), OpFailure> {
    let heads = num(c, 0)? as usize;
    let (tq, batch, dim, tk) = attn_dims(c, which, heads);
    let scale = 1.0 / (dim as f64).sqrt();
    let dt = k.in_dtype(0);
    with_float_dtype!(
        dt,
        T,
        {
            let o = k.output::<T>(0);
            let (x0, x1) = (k.input::<T>(0), if c.inputs.len() > 1 { k.input::<T>(1) } else { &[][..] });
            let out_seq = Mat { off: 0, sb: heads * dim, sh: dim, row: batch * heads * dim, col: 1 };
            let d = |m, n, kk| Dims { batch, heads, m, n, kk };
            match which {
                Attn::SelfQk => {
                    let (q, kt) = (seq_mat(batch, heads, 3, dim, 0), seq_mat(batch, heads, 3, dim, 1).t());
                    bmm(d(tq, tq, dim), x0, q, x0, kt, o, att_mat(heads, tq, tq), scale);
                }
                Attn::SelfValAtt => {
                    let v = seq_mat(batch, heads, 3, dim, 2);
                    bmm(d(tq, dim, tq), x1, att_mat(heads, tq, tq), x0, v, o, out_seq, 1.0);
                }
                Attn::EncDecQk => {
                    let (q, kt) = (seq_mat(batch, heads, 1, dim, 0), seq_mat(batch, heads, 2, dim, 0).t());
                    bmm(d(tq, tk, dim), x0, q, x1, kt, o, att_mat(heads, tq, tk), scale);
                }
                Attn::EncDecValAtt => {
                    let v = seq_mat(batch, heads, 2, dim, 1);
                    bmm(d(tq, dim, tk), x1, att_mat(heads, tq, tk), x0, v, o, out_seq, 1.0);
                }
            }
        },
        return Err(internal("interleaved attention: float inputs expected"))
    );
    Ok(())
}

/// Backward of the interleaved attention products: the forward's inputs, then
/// the output gradient; outputs the input gradients (untouched slots zero).
pub(crate) fn attn_backward(c: &OpCall, k: &Kernel, which: Attn) -> Result<(), OpFailure> {
    let heads = num(c, 0)? as usize;
    let (tq, batch, dim, tk) = attn_dims(c, which, heads);
    let scale = 1.0 / (dim as f64).sqrt();
    let dt = k.in_dtype(0);
    with_float_dtype!(
        dt,
        T,
        {
            let (x0, x1) = (k.input::<T>(0), k.input::<T>(1));
            let out_seq = Mat { off: 0, sb: heads * dim, sh: dim, row: batch * heads * dim, col: 1 };
            let d = |m, n, kk| Dims { batch, heads, m, n, kk };
            match which {
                Attn::SelfQk => {
                    let (g, o) = (x1, k.output::<T>(0));
                    o.fill(T::default());
                    let (q, km) = (seq_mat(batch, heads, 3, dim, 0), seq_mat(batch, heads, 3, dim, 1));
                    let ga = att_mat(heads, tq, tq);
                    bmm(d(tq, dim, tq), g, ga, x0, km, o, q, scale);
                    bmm(d(tq, dim, tq), g, ga.t(), x0, q, o, km, scale);
                }
                Attn::SelfValAtt => {
                    let (g, o, oa) = (k.input::<T>(2), k.output::<T>(0), k.output::<T>(1));
                    o.fill(T::default());
                    let v = seq_mat(batch, heads, 3, dim, 2);
                    bmm(d(tq, tq, dim), g, out_seq, x0, v.t(), oa, att_mat(heads, tq, tq), 1.0);
                    bmm(d(tq, dim, tq), x1, att_mat(heads, tq, tq).t(), g, out_seq, o, v, 1.0);
                }
                Attn::EncDecQk => {
                    let (g, oq, okv) = (k.input::<T>(2), k.output::<T>(0), k.output::<T>(1));
                    okv.fill(T::default());
                    let (q, km) = (seq_mat(batch, heads, 1, dim, 0), seq_mat(batch, heads, 2, dim, 0));
                    let ga = att_mat(heads, tq, tk);
                    bmm(d(tq, dim, tk), g, ga, x1, km, oq, q, scale);
                    bmm(d(tk, dim, tq), g, ga.t(), x0, q, okv, km, scale);
                }
                Attn::EncDecValAtt => {
                    let (g, okv, oa) = (k.input::<T>(2), k.output::<T>(0), k.output::<T>(1));
                    okv.fill(T::default());
                    let v = seq_mat(batch, heads, 2, dim, 1);
                    bmm(d(tq, tk, dim), g, out_seq, x0, v.t(), oa, att_mat(heads, tq, tk), 1.0);
                    bmm(d(tk, dim, tq), x1, att_mat(heads, tq, tk).t(), g, out_seq, okv, v, 1.0);
                }
            }
        },
        return Err(internal("interleaved attention: float inputs expected"))
    );
    Ok(())
}

macro_rules! attn_kernels {
    ($( $f:ident $b:ident => $w:ident; )*) => {
        $(
            pub(crate) fn $f(c: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
                attn_forward(c, k, Attn::$w)
            }
            pub(crate) fn $b(c: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
                attn_backward(c, k, Attn::$w)
            }
        )*
    };
}

attn_kernels! {
    selfatt_qk selfatt_qk_backward => SelfQk;
    selfatt_valatt selfatt_valatt_backward => SelfValAtt;
    encdec_qk encdec_qk_backward => EncDecQk;
    encdec_valatt encdec_valatt_backward => EncDecValAtt;
}
