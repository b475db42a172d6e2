//! CPU kernels of the fused recurrent operator: `_rnn_fused` runs every layer,
//! direction and step in one engine op, `_backward_rnn_fused` is
//! backpropagation through the whole sequence in one engine op.
//!
//! `ints` layout of both: `[mode, state_size, num_layers, directions]` with mode
//! 0 `rnn_relu`, 1 `rnn_tanh`, 2 `lstm`, 3 `gru`.
//!
//! Forward, per layer and direction: the input projection of all steps is one
//! `(T·N, in) × (in, G·H)` gemm (both biases folded in where the gate allows),
//! then per step one `(N, H) × (H, G·H)` gemm and the fused gate nonlinearities.
//! The forward keeps, in a hidden `workspace` output, the activated gates
//! (LSTM `i f g o`, GRU `r z n` and the recurrent `n` part before the reset
//! gate), the LSTM cell states, and every layer's output but the last.
//!
//! Backward, per layer (top first) and direction: per step (last first) the
//! gate gradients from the stored activations and one `(N, G·H) × (G·H, H)`
//! gemm for the recurrent gradient; then one gemm each for the input-weight,
//! recurrent-weight and input gradients over the whole sequence.
//!
//! Inputs of `_rnn_fused`: data `(T, N, C)`, parameters (MXNet's flat vector),
//! state, [state_cell]. Outputs: out, hy, [cy], workspace.
//! Inputs of `_backward_rnn_fused`: data, parameters, state, [state_cell], out,
//! workspace, d_out, d_hy, [d_cy]. Outputs: d_data, d_parameters, d_state, [d_state_cell].

use crate::dtype::Elem;
use crate::engine::{ErrorKind, OpFailure};
use crate::opdef::OpCall;
use crate::storage::{dispatch, matmul, GemmElem, Kernel};

/// Mode numbers of `ints[0]`.
pub(super) const RELU: i64 = 0;
pub(super) const TANH: i64 = 1;
pub(super) const LSTM: i64 = 2;
pub(super) const GRU: i64 = 3;

fn internal(msg: &str) -> OpFailure {
    OpFailure::new(ErrorKind::Runtime, format!("RNN kernel: {msg}"))
}

/// Sizes of one call.
#[derive(Clone, Copy)]
pub(super) struct Geo {
    pub mode: i64,
    pub h: usize,
    pub layers: usize,
    pub dirs: usize,
    pub t: usize,
    pub n: usize,
    pub c: usize,
}

impl Geo {
    fn of(c: &OpCall, data: &crate::Shape) -> Result<Geo, OpFailure> {
        let i = |k: usize| c.ints.get(k).copied().ok_or_else(|| internal("missing integer parameter"));
        let d = data.dims();
        if d.len() != 3 {
            return Err(internal("data must be 3-d"));
        }
        Ok(Geo {
            mode: i(0)?,
            h: i(1)? as usize,
            layers: i(2)? as usize,
            dirs: i(3)? as usize,
            t: d[0],
            n: d[1],
            c: d[2],
        })
    }
    fn gates(&self) -> usize {
        match self.mode {
            LSTM => 4,
            GRU => 3,
            _ => 1,
        }
    }
    /// Width of the gate rows (all gates of all units).
    fn gh(&self) -> usize {
        self.gates() * self.h
    }
    /// Input width of layer `l`.
    fn width(&self, l: usize) -> usize {
        if l == 0 {
            self.c
        } else {
            self.dirs * self.h
        }
    }
    /// Stored activations per `(t, n)` row and direction: gates, then (LSTM) the cell.
    fn saved(&self) -> (usize, usize) {
        match self.mode {
            LSTM => (4 * self.h, self.h),
            GRU => (4 * self.h, 0),
            _ => (0, 0),
        }
    }
    fn dir_ws(&self) -> usize {
        let (g, c) = self.saved();
        self.t * self.n * (g + c)
    }
    fn layer_out(&self) -> usize {
        self.t * self.n * self.dirs * self.h
    }
    /// Length of the workspace.
    pub fn ws_len(&self) -> usize {
        self.layers * self.dirs * self.dir_ws() + (self.layers - 1) * self.layer_out()
    }
    /// Offsets of layer `l` direction `d`'s `i2h`, `h2h`, `i2h` bias and `h2h` bias.
    fn offsets(&self, l: usize, d: usize) -> [usize; 4] {
        let (gh, h) = (self.gh(), self.h);
        let mut w = 0;
        for ll in 0..l {
            w += self.dirs * gh * (self.width(ll) + h);
        }
        w += d * gh * (self.width(l) + h);
        let total: usize = (0..self.layers).map(|ll| self.dirs * gh * (self.width(ll) + h)).sum();
        let b = total + (l * self.dirs + d) * 2 * gh;
        [w, w + gh * self.width(l), b, b + gh]
    }
    /// Time of processing step `s` in direction `d`.
    #[inline]
    fn time(&self, d: usize, s: usize) -> usize {
        if d == 0 {
            s
        } else {
            self.t - 1 - s
        }
    }
}

/// Float element types of the kernels, with the gate nonlinearities.
pub(super) trait Fl: Elem + GemmElem + num_traits::Float {
    /// Logistic sigmoid.
    fn sig(self) -> Self;
    /// Hyperbolic tangent.
    fn th(self) -> Self;
}

impl Fl for f32 {
    #[inline(always)]
    fn sig(self) -> f32 {
        1.0 / (1.0 + crate::ops::unary::exp_f32(-self))
    }
    #[inline(always)]
    fn th(self) -> f32 {
        // 1 - 2 / (1 + e^{2x}): exact limits at both tails, vectorises.
        1.0 - 2.0 / (1.0 + crate::ops::unary::exp_f32(2.0 * self))
    }
}

impl Fl for f64 {
    #[inline(always)]
    fn sig(self) -> f64 {
        1.0 / (1.0 + (-self).exp())
    }
    #[inline(always)]
    fn th(self) -> f64 {
        self.tanh()
    }
}

/// Row `r` (width `w`) of a row-major matrix.
#[inline(always)]
fn row<T>(a: &[T], r: usize, w: usize) -> &[T] {
    &a[r * w..(r + 1) * w]
}

#[inline(always)]
fn row_mut<T>(a: &mut [T], r: usize, w: usize) -> &mut [T] {
    &mut a[r * w..(r + 1) * w]
}

/// The four `h`-wide parts of a gate row (exact lengths, so the loops over them
/// carry no bounds checks and vectorise).
#[inline(always)]
fn parts<T>(a: &[T], h: usize) -> [&[T]; 4] {
    let a = &a[..4 * h];
    [&a[..h], &a[h..2 * h], &a[2 * h..3 * h], &a[3 * h..4 * h]]
}

#[inline(always)]
fn parts_mut<T>(a: &mut [T], h: usize) -> [&mut [T]; 4] {
    let (p0, r) = a[..4 * h].split_at_mut(h);
    let (p1, r) = r.split_at_mut(h);
    let (p2, p3) = r.split_at_mut(h);
    [p0, &mut p1[..h], &mut p2[..h], &mut p3[..h]]
}

/// Three `h`-wide parts (GRU rows).
#[inline(always)]
fn parts3<T>(a: &[T], h: usize) -> [&[T]; 3] {
    let a = &a[..3 * h];
    [&a[..h], &a[h..2 * h], &a[2 * h..3 * h]]
}

#[inline(always)]
fn parts3_mut<T>(a: &mut [T], h: usize) -> [&mut [T]; 3] {
    let (p0, r) = a[..3 * h].split_at_mut(h);
    let (p1, p2) = r.split_at_mut(h);
    [p0, &mut p1[..h], &mut p2[..h]]
}

/// The weights of one layer and direction.
struct W<'a, T> {
    wi: &'a [T],
    wh: &'a [T],
    bi: &'a [T],
    bh: &'a [T],
}

fn weights<'a, T>(g: &Geo, p: &'a [T], l: usize, d: usize) -> W<'a, T> {
    let [wi, wh, bi, bh] = g.offsets(l, d);
    let (gh, ni) = (g.gh(), g.width(l));
    W { wi: &p[wi..wi + gh * ni], wh: &p[wh..wh + gh * g.h], bi: &p[bi..bi + gh], bh: &p[bh..bh + gh] }
}

/// One step's gate arithmetic for all rows: `xp` the input projection (biases
/// folded in as [`project`] does), `gh` the recurrent product (overwritten); updates
/// `hb` (and `cb`) in place and writes the saved activations. Each loop zips a few
/// equal-length slices, so it compiles without bounds checks and vectorises.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn gates_fwd<T: Fl>(g: &Geo, xp: &[T], gh: &mut [T], bh: &[T], hb: &mut [T], cb: &mut [T], sg: &mut [T], sc: &mut [T]) {
    let (h, w) = (g.h, g.gh());
    for b in 0..g.n {
        let (x, a) = (row(xp, b, w), row_mut(gh, b, w));
        let hr = row_mut(hb, b, h);
        match g.mode {
            LSTM => {
                for (a, &x) in a.iter_mut().zip(x) {
                    *a = *a + x;
                }
                let [ai, af, ag, ao] = parts_mut(a, h);
                for v in ai.iter_mut().chain(af.iter_mut()).chain(ao.iter_mut()) {
                    *v = v.sig();
                }
                for v in ag.iter_mut() {
                    *v = v.th();
                }
                let c = row_mut(cb, b, h);
                for ((c, &i), (&f, &gg)) in c.iter_mut().zip(ai.iter()).zip(af.iter().zip(ag.iter())) {
                    *c = f * *c + i * gg;
                }
                for ((hv, &o), &cv) in hr.iter_mut().zip(ao.iter()).zip(c.iter()) {
                    *hv = o * cv.th();
                }
                row_mut(sg, b, 4 * h).copy_from_slice(a);
                row_mut(sc, b, h).copy_from_slice(c);
            }
            GRU => {
                let ([xr, xz, xn], [rr, rz, rn]) = (parts3(x, h), parts3(a, h));
                let [sr, sz, sn, shn] = parts_mut(row_mut(sg, b, 4 * h), h);
                for ((s, &x), &r) in sr.iter_mut().zip(xr).zip(rr) {
                    *s = (x + r).sig();
                }
                for ((s, &x), &r) in sz.iter_mut().zip(xz).zip(rz) {
                    *s = (x + r).sig();
                }
                for ((s, &r), &bb) in shn.iter_mut().zip(rn).zip(&bh[2 * h..3 * h]) {
                    *s = r + bb;
                }
                for ((s, &x), (&r, &hn)) in sn.iter_mut().zip(xn).zip(sr.iter().zip(shn.iter())) {
                    *s = (x + r * hn).th();
                }
                for ((hv, &nn), &z) in hr.iter_mut().zip(sn.iter()).zip(sz.iter()) {
                    *hv = nn + z * (*hv - nn);
                }
            }
            RELU => {
                for ((hv, &x), &r) in hr.iter_mut().zip(x).zip(a.iter()) {
                    let v = x + r;
                    *hv = if v > T::zero() { v } else { T::zero() };
                }
            }
            _ => {
                for ((hv, &x), &r) in hr.iter_mut().zip(x).zip(a.iter()) {
                    *hv = (x + r).th();
                }
            }
        }
    }
}

/// `xp = input · Wiᵀ + bi (+ bh except GRU's candidate part)` for all steps.
fn project<T: Fl>(g: &Geo, input: &[T], ni: usize, w: &W<'_, T>, xp: &mut [T]) {
    let (rows, gh) = (g.t * g.n, g.gh());
    matmul(rows, gh, ni, xp, input, false, w.wi, true, false);
    let mut bias: Vec<T> = w.bi.iter().zip(w.bh).map(|(&a, &b)| a + b).collect();
    if g.mode == GRU {
        bias[2 * g.h..].copy_from_slice(&w.bi[2 * g.h..]);
    }
    dispatch(|| {
        for r in xp.chunks_exact_mut(gh) {
            for (v, &b) in r.iter_mut().zip(&bias) {
                *v = *v + b;
            }
        }
    });
}

/// Outputs of the forward for one layer and direction.
struct DirOut<'a, T> {
    y: &'a mut [T],
    hy: &'a mut [T],
    cy: &'a mut [T],
    ws: &'a mut [T],
}

#[allow(clippy::too_many_arguments)]
fn forward_dir<T: Fl>(g: &Geo, l: usize, d: usize, input: &[T], p: &[T], h0: &[T], c0: &[T], o: DirOut<'_, T>) {
    let (h, n, gh, ni) = (g.h, g.n, g.gh(), g.width(l));
    let w = weights(g, p, l, d);
    let mut xp = vec![T::zero(); g.t * n * gh];
    project(g, input, ni, &w, &mut xp);
    o.hy.copy_from_slice(h0);
    o.cy.copy_from_slice(c0);
    let (sgw, scw) = g.saved();
    let (sg, sc) = o.ws.split_at_mut(g.t * n * sgw);
    let mut ghb = vec![T::zero(); n * gh];
    let yw = g.dirs * h;
    for s in 0..g.t {
        let tt = g.time(d, s);
        matmul(n, gh, h, &mut ghb, o.hy, false, w.wh, true, false);
        let xs = &xp[tt * n * gh..(tt + 1) * n * gh];
        let sgs = &mut sg[tt * n * sgw..(tt + 1) * n * sgw];
        let scs = &mut sc[tt * n * scw..(tt + 1) * n * scw];
        dispatch(|| gates_fwd(g, xs, &mut ghb, w.bh, o.hy, o.cy, sgs, scs));
        for b in 0..n {
            let at = (tt * n + b) * yw + d * h;
            o.y[at..at + h].copy_from_slice(row(o.hy, b, h));
        }
    }
}

/// Forward over all layers and directions.
#[allow(clippy::too_many_arguments)]
fn forward<T: Fl>(
    g: &Geo,
    x: &[T],
    p: &[T],
    h0: &[T],
    c0: &[T],
    out: &mut [T],
    hy: &mut [T],
    cy: &mut [T],
    ws: &mut [T],
) {
    let (nh, nc) = (g.n * g.h, if g.mode == LSTM { g.n * g.h } else { 0 });
    let (dws, louts) = ws.split_at_mut(g.layers * g.dirs * g.dir_ws());
    let mut dws = dws.chunks_mut(g.dir_ws().max(1));
    for l in 0..g.layers {
        let (_, here) = louts.split_at_mut(l.saturating_sub(1) * g.layer_out());
        let (input, y): (&[T], &mut [T]) = match (l, l + 1 == g.layers) {
            (0, true) => (x, &mut *out),
            (0, false) => (x, &mut here[..g.layer_out()]),
            (_, true) => (&here[..g.layer_out()], &mut *out),
            (_, false) => {
                let (a, b) = here.split_at_mut(g.layer_out());
                (&*a, &mut b[..g.layer_out()])
            }
        };
        for d in 0..g.dirs {
            let k = l * g.dirs + d;
            let ws_k: &mut [T] = if g.dir_ws() == 0 { &mut [] } else { dws.next().unwrap_or_default() };
            let o =
                DirOut { y: &mut *y, hy: &mut hy[k * nh..(k + 1) * nh], cy: &mut cy[k * nc..(k + 1) * nc], ws: ws_k };
            forward_dir(g, l, d, input, p, &h0[k * nh..(k + 1) * nh], &c0[k * nc..(k + 1) * nc], o);
        }
    }
}

/// The `_rnn_fused` kernel.
pub(crate) fn rnn_forward(c: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let g = Geo::of(c, k.in_shape(0))?;
    let lstm = g.mode == LSTM;
    macro_rules! go {
        ($t:ty) => {{
            let (x, p, h0) = (k.input::<$t>(0), k.input::<$t>(1), k.input::<$t>(2));
            let c0: &[$t] = if lstm { k.input::<$t>(3) } else { &[] };
            let (out, hy) = (k.output::<$t>(0), k.output::<$t>(1));
            let cy: &mut [$t] = if lstm { k.output::<$t>(2) } else { &mut [] };
            let ws = k.output::<$t>(if lstm { 3 } else { 2 });
            if ws.len() != g.ws_len() {
                return Err(internal("workspace size mismatch"));
            }
            forward(&g, x, p, h0, c0, out, hy, cy, ws);
        }};
    }
    match k.in_dtype(0) {
        crate::dtype::DType::F32 => go!(f32),
        crate::dtype::DType::F64 => go!(f64),
        _ => return Err(internal("float32 or float64 expected")),
    }
    Ok(())
}

/// One step's gate gradients (all rows): `dh` the gradient of this step's h (consumed),
/// `dc` the running cell gradient (updated to the previous step's); writes the gradients
/// of the input-side (`dgx`) and recurrent-side (`dgh`, GRU only) pre-activations, and for
/// GRU the direct part of the previous h's gradient into `dh`. `tmp` is `h` scratch.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn gates_bwd<T: Fl>(
    g: &Geo,
    sg: &[T],
    cell: &[T],
    cprev: &[T],
    hprev: &[T],
    y: &[T],
    dh: &mut [T],
    dc: &mut [T],
    dgx: &mut [T],
    dgh: &mut [T],
    tmp: &mut [T],
) {
    let (h, w, one) = (g.h, g.gh(), T::one());
    for b in 0..g.n {
        let dhr = row_mut(dh, b, h);
        let dx = row_mut(dgx, b, w);
        match g.mode {
            LSTM => {
                let [si, sf, sgg, so] = parts(row(sg, b, 4 * h), h);
                let (c, cp, dcr) = (row(cell, b, h), row(cprev, b, h), row_mut(dc, b, h));
                let [di, df, dg, dox] = parts_mut(dx, h);
                let tc = &mut tmp[..h];
                for (t, &cv) in tc.iter_mut().zip(c) {
                    *t = cv.th();
                }
                for ((d, &dhv), (&o, &t)) in dcr.iter_mut().zip(dhr.iter()).zip(so.iter().zip(tc.iter())) {
                    *d = *d + dhv * o * (one - t * t);
                }
                for ((d, &dhv), (&o, &t)) in dox.iter_mut().zip(dhr.iter()).zip(so.iter().zip(tc.iter())) {
                    *d = dhv * t * o * (one - o);
                }
                for ((d, &dcv), (&gg, &i)) in di.iter_mut().zip(dcr.iter()).zip(sgg.iter().zip(si)) {
                    *d = dcv * gg * i * (one - i);
                }
                for ((d, &dcv), (&cpv, &f)) in df.iter_mut().zip(dcr.iter()).zip(cp.iter().zip(sf)) {
                    *d = dcv * cpv * f * (one - f);
                }
                for ((d, &dcv), (&i, &gg)) in dg.iter_mut().zip(dcr.iter()).zip(si.iter().zip(sgg)) {
                    *d = dcv * i * (one - gg * gg);
                }
                for (d, &f) in dcr.iter_mut().zip(sf) {
                    *d = *d * f;
                }
            }
            GRU => {
                let [sr, sz, sn, shn] = parts(row(sg, b, 4 * h), h);
                let hp = row(hprev, b, h);
                let [dxr, dxz, dxn] = parts3_mut(dx, h);
                for ((d, &dhv), (&z, &nn)) in dxn.iter_mut().zip(dhr.iter()).zip(sz.iter().zip(sn)) {
                    *d = dhv * (one - z) * (one - nn * nn);
                }
                for ((d, &dan), (&hn, &r)) in dxr.iter_mut().zip(dxn.iter()).zip(shn.iter().zip(sr)) {
                    *d = dan * hn * r * (one - r);
                }
                for ((d, &dhv), ((&hpv, &nn), &z)) in dxz.iter_mut().zip(dhr.iter()).zip(hp.iter().zip(sn).zip(sz)) {
                    *d = dhv * (hpv - nn) * z * (one - z);
                }
                let [dhr_, dhz, dhn] = parts3_mut(row_mut(dgh, b, w), h);
                dhr_.copy_from_slice(dxr);
                dhz.copy_from_slice(dxz);
                for ((d, &dan), &r) in dhn.iter_mut().zip(dxn.iter()).zip(sr) {
                    *d = dan * r;
                }
                for (d, &z) in dhr.iter_mut().zip(sz) {
                    *d = *d * z;
                }
            }
            RELU => {
                for ((d, &yv), &dhv) in dx.iter_mut().zip(row(y, b, h)).zip(dhr.iter()) {
                    *d = if yv > T::zero() { dhv } else { T::zero() };
                }
            }
            _ => {
                for ((d, &yv), &dhv) in dx.iter_mut().zip(row(y, b, h)).zip(dhr.iter()) {
                    *d = dhv * (one - yv * yv);
                }
            }
        }
    }
}

/// Column sums of a `(rows, w)` matrix into `dst`.
fn colsum<T: Fl>(a: &[T], w: usize, dst: &mut [T]) {
    dst.fill(T::zero());
    dispatch(|| {
        for r in a.chunks_exact(w) {
            for (d, &v) in dst.iter_mut().zip(r) {
                *d = *d + v;
            }
        }
    });
}

/// Everything the backward of one layer and direction reads.
struct DirIn<'a, T> {
    input: &'a [T],
    y: &'a [T],
    dy: &'a [T],
    ws: &'a [T],
    h0: &'a [T],
    c0: &'a [T],
}

/// Backward of one layer and direction: accumulates into `dxin` when `acc`, writes
/// this direction's parameter gradients into `dp`, and `dh0`/`dc0`.
#[allow(clippy::too_many_arguments)]
fn backward_dir<T: Fl>(
    g: &Geo,
    l: usize,
    d: usize,
    a: DirIn<'_, T>,
    p: &[T],
    dp: &mut [T],
    dxin: &mut [T],
    dh0: &mut [T],
    dc0: &mut [T],
) {
    let (h, n, gh, ni, t) = (g.h, g.n, g.gh(), g.width(l), g.t);
    let (yw, nh) = (g.dirs * h, n * h);
    let w = weights(g, p, l, d);
    let (sgw, scw) = g.saved();
    let (sg, sc) = a.ws.split_at(t * n * sgw);
    // h before each time step, in this direction's order, as one (T·N, H) matrix.
    let mut hprev = vec![T::zero(); t * nh];
    let mut ycur = vec![T::zero(); if g.mode == LSTM || g.mode == GRU { 0 } else { nh }];
    for s in 0..t {
        let tt = g.time(d, s);
        let dst = &mut hprev[tt * nh..(tt + 1) * nh];
        if s == 0 {
            dst.copy_from_slice(a.h0);
        } else {
            let pt = g.time(d, s - 1);
            for b in 0..n {
                let at = (pt * n + b) * yw + d * h;
                dst[b * h..(b + 1) * h].copy_from_slice(&a.y[at..at + h]);
            }
        }
    }
    let gru = g.mode == GRU;
    let mut dgx = vec![T::zero(); t * n * gh];
    let mut dgh = vec![T::zero(); if gru { t * n * gh } else { 0 }];
    let mut dhb = dh0.to_vec();
    let mut dcb = dc0.to_vec();
    let mut dh = vec![T::zero(); nh];
    let mut tmp = vec![T::zero(); h];
    for s in (0..t).rev() {
        let tt = g.time(d, s);
        for b in 0..n {
            let at = (tt * n + b) * yw + d * h;
            for j in 0..h {
                dh[b * h + j] = a.dy[at + j] + dhb[b * h + j];
            }
            if !ycur.is_empty() {
                ycur[b * h..(b + 1) * h].copy_from_slice(&a.y[at..at + h]);
            }
        }
        let cell = &sc[tt * n * scw..(tt + 1) * n * scw];
        let cprev: &[T] = match (scw, s) {
            (0, _) => &[],
            (_, 0) => a.c0,
            _ => {
                let pt = g.time(d, s - 1);
                &sc[pt * n * scw..(pt + 1) * n * scw]
            }
        };
        let sgs = &sg[tt * n * sgw..(tt + 1) * n * sgw];
        let hp = &hprev[tt * nh..(tt + 1) * nh];
        let dgx_t = &mut dgx[tt * n * gh..(tt + 1) * n * gh];
        let dgh_t: &mut [T] = if gru { &mut dgh[tt * n * gh..(tt + 1) * n * gh] } else { &mut [] };
        dispatch(|| gates_bwd(g, sgs, cell, cprev, hp, &ycur, &mut dh, &mut dcb, dgx_t, dgh_t, &mut tmp));
        if gru {
            dhb.copy_from_slice(&dh);
            matmul(n, h, gh, &mut dhb, dgh_t, false, w.wh, false, true);
        } else {
            matmul(n, h, gh, &mut dhb, dgx_t, false, w.wh, false, false);
        }
    }
    dh0.copy_from_slice(&dhb);
    dc0.copy_from_slice(&dcb);
    let dgh: &[T] = if gru { &dgh } else { &dgx };
    let [owi, owh, obi, obh] = g.offsets(l, d);
    let rows = t * n;
    matmul(gh, ni, rows, &mut dp[owi..owi + gh * ni], &dgx, true, a.input, false, false);
    matmul(gh, h, rows, &mut dp[owh..owh + gh * h], dgh, true, &hprev, false, false);
    colsum(&dgx, gh, &mut dp[obi..obi + gh]);
    colsum(dgh, gh, &mut dp[obh..obh + gh]);
    matmul(rows, ni, gh, dxin, &dgx, false, w.wi, false, d > 0);
}

/// Backward over all layers (top first) and directions.
#[allow(clippy::too_many_arguments)]
fn backward<T: Fl>(
    g: &Geo,
    x: &[T],
    p: &[T],
    h0: &[T],
    c0: &[T],
    out: &[T],
    ws: &[T],
    dout: &[T],
    dhy: &[T],
    dcy: &[T],
    dx: &mut [T],
    dp: &mut [T],
    dh0: &mut [T],
    dc0: &mut [T],
) {
    let (nh, nc) = (g.n * g.h, if g.mode == LSTM { g.n * g.h } else { 0 });
    let (dws, louts) = ws.split_at(g.layers * g.dirs * g.dir_ws());
    dh0.copy_from_slice(dhy);
    dc0.copy_from_slice(dcy);
    let mut dy = dout.to_vec();
    for l in (0..g.layers).rev() {
        let lo = |m: usize| &louts[m * g.layer_out()..(m + 1) * g.layer_out()];
        let input = if l == 0 { x } else { lo(l - 1) };
        let y = if l + 1 == g.layers { out } else { lo(l) };
        let mut dxin_buf = if l == 0 { Vec::new() } else { vec![T::zero(); g.t * g.n * g.width(l)] };
        let dxin: &mut [T] = if l == 0 { &mut *dx } else { &mut dxin_buf };
        for d in 0..g.dirs {
            let k = l * g.dirs + d;
            let a = DirIn {
                input,
                y,
                dy: &dy,
                ws: &dws[k * g.dir_ws()..(k + 1) * g.dir_ws()],
                h0: &h0[k * nh..(k + 1) * nh],
                c0: &c0[k * nc..(k + 1) * nc],
            };
            let (dh, dc) = (&mut dh0[k * nh..(k + 1) * nh], &mut dc0[k * nc..(k + 1) * nc]);
            backward_dir(g, l, d, a, p, dp, dxin, dh, dc);
        }
        if l > 0 {
            dy = dxin_buf;
        }
    }
}

/// The `_backward_rnn_fused` kernel.
pub(crate) fn rnn_backward(c: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let g = Geo::of(c, k.in_shape(0))?;
    let lstm = g.mode == LSTM;
    let o = usize::from(lstm);
    macro_rules! go {
        ($t:ty) => {{
            let (x, p, h0) = (k.input::<$t>(0), k.input::<$t>(1), k.input::<$t>(2));
            let c0: &[$t] = if lstm { k.input::<$t>(3) } else { &[] };
            let (out, ws, dout, dhy) =
                (k.input::<$t>(3 + o), k.input::<$t>(4 + o), k.input::<$t>(5 + o), k.input::<$t>(6 + o));
            let dcy: &[$t] = if lstm { k.input::<$t>(8) } else { &[] };
            let (dx, dp, dh0) = (k.output::<$t>(0), k.output::<$t>(1), k.output::<$t>(2));
            let dc0: &mut [$t] = if lstm { k.output::<$t>(3) } else { &mut [] };
            if ws.len() != g.ws_len() {
                return Err(internal("workspace size mismatch"));
            }
            backward(&g, x, p, h0, c0, out, ws, dout, dhy, dcy, dx, dp, dh0, dc0);
        }};
    }
    match k.in_dtype(0) {
        crate::dtype::DType::F32 => go!(f32),
        crate::dtype::DType::F64 => go!(f64),
        _ => return Err(internal("float32 or float64 expected")),
    }
    Ok(())
}
