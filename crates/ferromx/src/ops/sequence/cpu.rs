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

/// The shapes of the attention products: sequence lengths, batch, heads, head width.
#[derive(Clone, Copy)]
struct Att {
    tq: usize,
    tk: usize,
    batch: usize,
    heads: usize,
    dim: usize,
}

impl Att {
    /// The slot `slot` of a `(steps, batch, heads * slots * dim)` interleaved array,
    /// as `(step, d)` matrices per `(batch, head)`.
    fn seq(&self, slots: usize, slot: usize) -> Mat {
        let w = self.heads * slots * self.dim;
        Mat { off: slot * self.dim, sb: w, sh: slots * self.dim, row: self.batch * w, col: 1 }
    }
    /// A `(batch * heads, m, n)` attention array as `(i, j)` matrices per `(batch, head)`.
    fn att(&self, m: usize, n: usize) -> Mat {
        Mat { off: 0, sb: self.heads * m * n, sh: m * n, row: n, col: 1 }
    }
}

/// One batched product `c[o] = alpha * a[ia] · b[ib]` per `(batch, head)`, with
/// `(m × kk) · (kk × n)` matrices; `ia`/`ib` index the kernel's inputs, `o` its outputs.
#[derive(Clone, Copy)]
struct Prod {
    a: (usize, Mat),
    b: (usize, Mat),
    c: (usize, Mat),
    m: usize,
    n: usize,
    kk: usize,
    alpha: f64,
}

/// Accumulation types of the products (f16/bf16 multiply in f32).
trait Acc: crate::storage::GemmElem + Default {
    fn of(v: f64) -> Self;
    fn f(self) -> f64;
}
impl Acc for f32 {
    fn of(v: f64) -> f32 {
        v as f32
    }
    fn f(self) -> f64 {
        self as f64
    }
}
impl Acc for f64 {
    fn of(v: f64) -> f64 {
        v
    }
    fn f(self) -> f64 {
        self
    }
}

/// Copies the `(rows, cols)` matrix `(b, h)` of `src` at `m` into row-major `dst`.
fn gather<T: Elem, A: Acc>(src: &[T], m: Mat, b: usize, h: usize, rows: usize, cols: usize, dst: &mut [A]) {
    for i in 0..rows {
        for (j, d) in dst[i * cols..(i + 1) * cols].iter_mut().enumerate() {
            *d = A::of(src[m.idx(b, h, i, j)].to_f64());
        }
    }
}

/// Runs `p` for every `(batch, head)`: operands gathered into contiguous buffers, one
/// gemm each (the pairs spread over cores), results scattered into `out`.
fn run_prod<T: Elem, A: Acc>(g: Att, p: &Prod, ins: &[&[T]], out: &mut [T]) {
    use rayon::prelude::*;
    let (m, n, kk) = (p.m, p.n, p.kk);
    let pairs: Vec<Vec<A>> = (0..g.batch * g.heads)
        .into_par_iter()
        .map(|bh| {
            let (b, h) = (bh / g.heads, bh % g.heads);
            let (mut a, mut bb, mut c) = (vec![A::default(); m * kk], vec![A::default(); kk * n], vec![A::ZERO; m * n]);
            gather(ins[p.a.0], p.a.1, b, h, m, kk, &mut a);
            gather(ins[p.b.0], p.b.1, b, h, kk, n, &mut bb);
            crate::storage::matmul_seq(m, n, kk, &mut c, &a, false, &bb, false, false);
            c
        })
        .collect();
    let sc = p.c.1;
    for (bh, c) in pairs.iter().enumerate() {
        let (b, h) = (bh / g.heads, bh % g.heads);
        for i in 0..m {
            for j in 0..n {
                out[sc.idx(b, h, i, j)] = T::from_f64(p.alpha * c[i * n + j].f());
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

/// The shapes of `which` from the call's inputs (the interleaved operand is input 0).
fn attn_dims(c: &OpCall, which: Attn, heads: usize) -> Att {
    let d0 = c.inputs[0].shape.dims();
    let d1 = || c.inputs[1].shape.dims();
    let (tq, dim, tk) = match which {
        Attn::SelfQk | Attn::SelfValAtt => (d0[0], d0[2] / 3 / heads, d0[0]),
        Attn::EncDecQk => (d0[0], d0[2] / heads, d1()[0]),
        Attn::EncDecValAtt => (d1()[1], d0[2] / 2 / heads, d0[0]),
    };
    Att { tq, tk, batch: d0[1], heads, dim }
}

/// The products of `which`: the forward's one, or the backward's two (inputs: the
/// forward's inputs then the output gradient `gi`; outputs: the input gradients).
fn plan(g: Att, which: Attn, backward: bool) -> Vec<Prod> {
    let (tq, tk, dim) = (g.tq, g.tk, g.dim);
    let scale = 1.0 / (dim as f64).sqrt();
    let out_seq = Mat { off: 0, sb: g.heads * dim, sh: dim, row: g.batch * g.heads * dim, col: 1 };
    let pr = |a, b, c, m, n, kk, alpha| Prod { a, b, c, m, n, kk, alpha };
    // (q, k) of the qk products: input and slot layout; tk the key length.
    let qk = |q: (usize, Mat), k: (usize, Mat)| {
        let att = g.att(tq, tk);
        if !backward {
            return vec![pr(q, (k.0, k.1.t()), (0, att), tq, tk, dim, scale)];
        }
        let gi = k.0.max(q.0) + 1;
        // dq = g · k * scale, dk = gᵀ · q * scale.
        let oq = usize::from(k.0 != q.0 && q.0 == 1);
        let ok = usize::from(k.0 != q.0 && k.0 == 1);
        vec![pr((gi, att), k, (oq, q.1), tq, dim, tk, scale), pr((gi, att.t()), q, (ok, k.1), tk, dim, tq, scale)]
    };
    // (v, att) of the value products: v's slot layout in input 0, attention input 1.
    let valatt = |v: Mat| {
        let att = g.att(tq, tk);
        if !backward {
            return vec![pr((1, att), (0, v), (0, out_seq), tq, dim, tk, 1.0)];
        }
        // d_att = g · vᵀ, dv = attᵀ · g.
        vec![
            pr((2, out_seq), (0, v.t()), (1, att), tq, tk, dim, 1.0),
            pr((1, att.t()), (2, out_seq), (0, v), tk, dim, tq, 1.0),
        ]
    };
    match which {
        Attn::SelfQk => qk((0, g.seq(3, 0)), (0, g.seq(3, 1))),
        Attn::SelfValAtt => valatt(g.seq(3, 2)),
        Attn::EncDecQk => qk((0, g.seq(1, 0)), (1, g.seq(2, 0))),
        Attn::EncDecValAtt => valatt(g.seq(2, 1)),
    }
}

/// The four interleaved attention products and their gradients; nums `[heads]`.
/// Outputs are zeroed first (a gradient leaves the slots its input does not use zero).
fn attn(c: &OpCall, k: &Kernel, which: Attn, backward: bool) -> Result<(), OpFailure> {
    let heads = num(c, 0)? as usize;
    let g = attn_dims(c, which, heads);
    let plan = plan(g, which, backward);
    macro_rules! go {
        ($t:ty, $a:ty) => {{
            let ins: Vec<&[$t]> = (0..k.n_inputs()).map(|i| k.input::<$t>(i)).collect();
            let mut outs: Vec<&mut [$t]> = (0..k.n_outputs()).map(|i| k.output::<$t>(i)).collect();
            if backward {
                for o in outs.iter_mut() {
                    o.fill(<$t>::default());
                }
            }
            for p in &plan {
                run_prod::<$t, $a>(g, p, &ins, &mut *outs[p.c.0]);
            }
        }};
    }
    match k.in_dtype(0) {
        crate::DType::F32 => go!(f32, f32),
        crate::DType::F64 => go!(f64, f64),
        crate::DType::F16 => go!(half::f16, f32),
        crate::DType::BF16 => go!(half::bf16, f32),
        _ => return Err(internal("interleaved attention: float inputs expected")),
    }
    Ok(())
}

macro_rules! attn_kernels {
    ($( $f:ident $b:ident => $w:ident; )*) => {
        $(
            pub(crate) fn $f(c: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
                attn(c, k, Attn::$w, false)
            }
            pub(crate) fn $b(c: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
                attn(c, k, Attn::$w, true)
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
