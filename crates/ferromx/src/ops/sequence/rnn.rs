//! The fused `RNN` operator (MXNet's `RNN`, `npx.rnn`): modes `rnn_relu`,
//! `rnn_tanh`, `lstm`, `gru`; several layers; bidirectional; dropout between
//! layers; LSTM projection and cell clipping; per-sequence lengths.
//!
//! Parameters come as MXNet's flat vector: every layer's and direction's
//! weights first (`i2h`, `h2h`, then `h2r` with a projection), then every
//! layer's and direction's biases (`i2h`, `h2h`).
//!
//! The common cases (float32/float64, no projection, no cell clipping, no
//! per-sequence lengths, no dropout while training) run as one engine op,
//! `_rnn_fused` (kernels in `rnn_cpu.rs`), whose gradient is one
//! `_backward_rnn_fused` op over the whole sequence. The rare combinations are
//! composed of engine operators (one input-projection gemm per layer and
//! direction for all steps, then one gemm and the gate arithmetic per step), so
//! autograd differentiates the whole sequence through the recorded steps.

use super::rnn_cpu::{self, Geo};
use super::{apply, DEFS, LAST, MASK, REVERSE, RNN_BWD, RNN_FUSED};
use crate::autograd::{is_training, needs_record, record};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{param, push_call, Attrs, Invocation, Meta, OpCall, OpDef, ParamDef, ParamKind as K};
use crate::ops::{self, nn, UnaryOp};
use crate::shape::Shape;

/// `RNN`'s parameters, in MXNet's order.
pub(crate) const PARAMS: &[ParamDef] = &[
    param("state_size", K::Int, None, "Number of hidden units."),
    param("num_layers", K::Int, None, "Number of stacked layers."),
    param("bidirectional", K::Bool, Some("False"), "Run a reverse direction too."),
    param("mode", K::Str, None, "'rnn_relu', 'rnn_tanh', 'lstm' or 'gru'."),
    param("p", K::Float, Some("0.0"), "Dropout between layers (training mode only)."),
    param("state_outputs", K::Bool, Some("False"), "Also return the final states."),
    param("projection_size", K::Int, Some("None"), "LSTM only: size of the projected hidden state."),
    param("lstm_state_clip_min", K::Float, Some("None"), "LSTM only: lower bound of the cell state."),
    param("lstm_state_clip_max", K::Float, Some("None"), "LSTM only: upper bound of the cell state."),
    param("lstm_state_clip_nan", K::Bool, Some("False"), "LSTM only: clip NaN cell states to the bounds."),
    param("use_sequence_length", K::Bool, Some("False"), "Read per-sequence lengths from `sequence_length`."),
];

/// The inputs' names (MXNet's; `state_cell` only for LSTM, `sequence_length` only with lengths).
pub(super) const INPUTS: &[&str] = &["data", "parameters", "state", "state_cell", "sequence_length"];

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Relu,
    Tanh,
    Lstm,
    Gru,
}

/// One call's configuration.
struct Cfg {
    mode: Mode,
    hidden: usize,
    layers: usize,
    dirs: usize,
    proj: Option<usize>,
    p: f64,
    clip: Option<(f64, f64)>,
}

impl Cfg {
    fn gates(&self) -> usize {
        match self.mode {
            Mode::Lstm => 4,
            Mode::Gru => 3,
            _ => 1,
        }
    }
    /// Width of the recurrent state h (the projection when there is one).
    fn rec(&self) -> usize {
        self.proj.unwrap_or(self.hidden)
    }
    /// Number of parameters for input width `c`.
    fn n_params(&self, c: usize) -> usize {
        let (g, h, r) = (self.gates() * self.hidden, self.hidden, self.rec());
        let mut n = 0;
        for l in 0..self.layers {
            let ni = if l == 0 { c } else { r * self.dirs };
            n += self.dirs * (g * ni + g * r + 2 * g + self.proj.map_or(0, |p| p * h));
        }
        n
    }
}

fn cfg(i: &Invocation<'_>) -> Result<Cfg> {
    let name = i.name();
    let mode = match i.str("mode")?.as_str() {
        "rnn_relu" => Mode::Relu,
        "rnn_tanh" => Mode::Tanh,
        "lstm" => Mode::Lstm,
        "gru" => Mode::Gru,
        m => return Err(Error::value(name, format!("mode must be rnn_relu, rnn_tanh, lstm or gru, got '{m}'"))),
    };
    let (hidden, layers) = (i.i64("state_size")?, i.i64("num_layers")?);
    if hidden < 1 || layers < 1 {
        return Err(Error::value(name, format!("state_size ({hidden}) and num_layers ({layers}) must be positive")));
    }
    let proj = i.opt_i64("projection_size")?.filter(|&v| v > 0).map(|v| v as usize);
    if proj.is_some() && mode != Mode::Lstm {
        return Err(Error::value(name, "projection_size is only supported with mode='lstm'"));
    }
    let (lo, hi) = (i.opt_f64("lstm_state_clip_min")?, i.opt_f64("lstm_state_clip_max")?);
    let clip = match (lo, hi) {
        (None, None) => None,
        (lo, hi) => Some((lo.unwrap_or(f64::MIN), hi.unwrap_or(f64::MAX))),
    };
    let p = i.f64("p")?;
    if !(0.0..1.0).contains(&p) {
        return Err(Error::value(name, format!("p must be in [0, 1), got {p}")));
    }
    let dirs = if i.bool("bidirectional")? { 2 } else { 1 };
    Ok(Cfg { mode, hidden: hidden as usize, layers: layers as usize, dirs, proj, p, clip })
}

/// Cuts MXNet's flat parameter vector into per-layer, per-direction arrays.
struct Params {
    flat: NDArray,
    off: usize,
}

impl Params {
    fn take(&mut self, dims: &[usize]) -> Result<NDArray> {
        let n: usize = dims.iter().product();
        let part = ops::slice_axis(&self.flat, 0, self.off as i64, Some((self.off + n) as i64))?;
        self.off += n;
        ops::reshape_to(&part, Shape::new(dims))
    }
}

/// One layer and direction's weights.
struct Weights {
    i2h: NDArray,
    h2h: NDArray,
    h2r: Option<NDArray>,
    bi: NDArray,
    bh: NDArray,
}

fn weights(c: &Cfg, flat: &NDArray, width: usize) -> Result<Vec<Weights>> {
    let (g, h, r) = (c.gates() * c.hidden, c.hidden, c.rec());
    let mut ps = Params { flat: flat.clone(), off: 0 };
    let mut mats = Vec::new();
    for l in 0..c.layers {
        let ni = if l == 0 { width } else { r * c.dirs };
        for _ in 0..c.dirs {
            let i2h = ps.take(&[g, ni])?;
            let h2h = ps.take(&[g, r])?;
            let h2r = c.proj.map(|p| ps.take(&[p, h])).transpose()?;
            mats.push((i2h, h2h, h2r));
        }
    }
    let mut out = Vec::new();
    for (i2h, h2h, h2r) in mats {
        let bi = ps.take(&[g])?;
        let bh = ps.take(&[g])?;
        out.push(Weights { i2h, h2h, h2r, bi, bh });
    }
    Ok(out)
}

/// Gate `k` of `n` equal parts along axis 1.
fn gate(x: &NDArray, k: usize, n: usize) -> Result<NDArray> {
    let w = x.dims()[1] / n;
    ops::slice_axis(x, 1, (k * w) as i64, Some(((k + 1) * w) as i64))
}

fn sig(x: &NDArray) -> Result<NDArray> {
    ops::unary(UnaryOp::Sigmoid, x)
}

fn tanh(x: &NDArray) -> Result<NDArray> {
    ops::unary(UnaryOp::Tanh, x)
}

/// One step; returns the new h (and c).
fn step(c: &Cfg, w: &Weights, xp: &NDArray, h: &NDArray, cell: Option<&NDArray>) -> Result<(NDArray, Option<NDArray>)> {
    let ng = c.gates() * c.hidden;
    let gh = nn::fully_connected(h, &w.h2h, Some(&w.bh), ng, false)?;
    match c.mode {
        Mode::Relu => Ok((nn::activation(&ops::add(xp, &gh)?, "relu")?, None)),
        Mode::Tanh => Ok((tanh(&ops::add(xp, &gh)?)?, None)),
        Mode::Gru => {
            let r = sig(&ops::add(&gate(xp, 0, 3)?, &gate(&gh, 0, 3)?)?)?;
            let z = sig(&ops::add(&gate(xp, 1, 3)?, &gate(&gh, 1, 3)?)?)?;
            let n = tanh(&ops::add(&gate(xp, 2, 3)?, &ops::mul(&r, &gate(&gh, 2, 3)?)?)?)?;
            // h' = (1 - z) * n + z * h = n + z * (h - n)
            Ok((ops::add(&n, &ops::mul(&z, &ops::sub(h, &n)?)?)?, None))
        }
        Mode::Lstm => {
            let g = ops::add(xp, &gh)?;
            let cell = cell.ok_or_else(|| Error::value("RNN", "lstm needs state_cell"))?;
            let (i, f) = (sig(&gate(&g, 0, 4)?)?, sig(&gate(&g, 1, 4)?)?);
            let (t, o) = (tanh(&gate(&g, 2, 4)?)?, sig(&gate(&g, 3, 4)?)?);
            let mut nc = ops::add(&ops::mul(&f, cell)?, &ops::mul(&i, &t)?)?;
            if let Some((lo, hi)) = c.clip {
                nc = ops::clip(&nc, lo, hi)?;
            }
            let mut nh = ops::mul(&o, &tanh(&nc)?)?;
            if let Some(r) = &w.h2r {
                nh = nn::fully_connected(&nh, r, None, r.dims()[0], false)?;
            }
            Ok((nh, Some(nc)))
        }
    }
}

/// The last step of each sequence of the stacked `steps` (lengths given), or the last step.
fn last_of(steps: Vec<NDArray>, lens: Option<&NDArray>) -> Result<NDArray> {
    match lens {
        None => steps.last().cloned().ok_or_else(|| Error::value("RNN", "empty sequence")),
        Some(l) => {
            let s = ops::stack(&steps, 0)?;
            let mut d = s.dims().to_vec();
            d.remove(0);
            Ok(apply(&DEFS[LAST], &[&s, l], &[0.0], &[Meta { shape: Shape::new(&d), ..Meta::of(&s) }])?.remove(0))
        }
    }
}

fn reverse(x: &NDArray, lens: Option<&NDArray>) -> Result<NDArray> {
    match lens {
        None => ops::flip(x, &[0]),
        Some(l) => Ok(apply(&DEFS[REVERSE], &[x, l], &[0.0], &[Meta::of(x)])?.remove(0)),
    }
}

/// One layer and direction over (T, N, C) `x`: outputs (T, N, rec), final h and c.
fn run_dir(
    c: &Cfg,
    w: &Weights,
    x: &NDArray,
    h0: NDArray,
    c0: Option<NDArray>,
    lens: Option<&NDArray>,
) -> Result<(NDArray, NDArray, Option<NDArray>)> {
    let (t, n, width) = (x.dims()[0], x.dims()[1], x.dims()[2]);
    let ng = c.gates() * c.hidden;
    let x2 = ops::reshape_to(x, Shape::new(&[t * n, width]))?;
    let xp = ops::reshape_to(&nn::fully_connected(&x2, &w.i2h, Some(&w.bi), ng, false)?, Shape::new(&[t, n, ng]))?;
    let (mut h, mut cell) = (h0, c0);
    let (mut hs, mut cs) = (Vec::with_capacity(t), Vec::with_capacity(t));
    for s in 0..t {
        let xs = ops::reshape_to(&ops::slice_axis(&xp, 0, s as i64, Some(s as i64 + 1))?, Shape::new(&[n, ng]))?;
        let (nh, nc) = step(c, w, &xs, &h, cell.as_ref())?;
        hs.push(nh.clone());
        if let Some(nc) = &nc {
            cs.push(nc.clone());
        }
        h = nh;
        cell = nc;
    }
    let y = ops::stack(&hs, 0)?;
    let h = last_of(hs, lens)?;
    let cell = if cs.is_empty() { None } else { Some(last_of(cs, lens)?) };
    Ok((y, h, cell))
}

/// `state[i]` of a (layers * dirs, N, width) state array.
fn state_at(s: &NDArray, i: usize) -> Result<NDArray> {
    let d = s.dims();
    ops::reshape_to(&ops::slice_axis(s, 0, i as i64, Some(i as i64 + 1))?, Shape::new(&d[1..]))
}

fn check_state(name: &str, what: &str, s: &NDArray, want: &[usize]) -> Result<()> {
    if s.dims() != want {
        return Err(Error::shape(
            name,
            &[s.shape()],
            format!("{what} must have shape {} (num_layers * directions, batch, state size)", Shape::new(want)),
        ));
    }
    Ok(())
}

/// The checked inputs of one call: data, parameters, state, [state_cell], [lengths].
type Ins<'a> = (&'a NDArray, &'a NDArray, &'a NDArray, Option<&'a NDArray>, Option<&'a NDArray>);

/// Checks the inputs of `RNN` (and `_rnn_fused`) against the configuration.
fn check<'a>(i: &Invocation<'_>, c: &Cfg, ins: &'a [NDArray]) -> Result<Ins<'a>> {
    let name = i.name();
    let use_len = i.bool("use_sequence_length")?;
    let need = 3 + usize::from(c.mode == Mode::Lstm) + usize::from(use_len);
    if ins.len() != need {
        return Err(Error::value(
            name,
            format!(
                "expects {need} inputs for mode {} (data, parameters, state{}{}), got {}",
                i.str("mode")?,
                if c.mode == Mode::Lstm { ", state_cell" } else { "" },
                if use_len { ", sequence_length" } else { "" },
                ins.len()
            ),
        ));
    }
    let (x, flat, h0) = (&ins[0], &ins[1], &ins[2]);
    let c0 = if c.mode == Mode::Lstm { Some(&ins[3]) } else { None };
    let lens = if use_len { ins.last() } else { None };
    if x.ndim() != 3 {
        return Err(Error::shape(name, &[x.shape()], "data must be (seq_length, batch, input_size)"));
    }
    let (t, n, width) = (x.dims()[0], x.dims()[1], x.dims()[2]);
    let want = c.n_params(width);
    if flat.dims() != [want] {
        return Err(Error::shape(name, &[x.shape(), flat.shape()], format!("parameters must have shape ({want},)")));
    }
    let nl = c.layers * c.dirs;
    check_state(name, "state", h0, &[nl, n, c.rec()])?;
    if let Some(c0) = c0 {
        check_state(name, "state_cell", c0, &[nl, n, c.hidden])?;
    }
    if let Some(l) = lens {
        if l.dims() != [n] {
            return Err(Error::shape(name, &[x.shape(), l.shape()], format!("sequence_length must have shape ({n},)")));
        }
    }
    if t == 0 {
        return Err(Error::shape(name, &[x.shape()], "the sequence is empty"));
    }
    Ok((x, flat, h0, c0, lens))
}

/// Whether the call runs as the fused kernel (else it is composed of engine operators).
fn fusable(c: &Cfg, x: &NDArray, flat: &NDArray, h0: &NDArray, c0: Option<&NDArray>, lens: Option<&NDArray>) -> bool {
    let dt = x.dtype();
    matches!(dt, DType::F32 | DType::F64)
        && [flat, h0].iter().chain(c0.as_ref()).all(|a| a.dtype() == dt)
        && c.proj.is_none()
        && c.clip.is_none()
        && lens.is_none()
        && !(c.p > 0.0 && c.layers > 1 && is_training())
}

fn mode_num(m: Mode) -> i64 {
    match m {
        Mode::Relu => rnn_cpu::RELU,
        Mode::Tanh => rnn_cpu::TANH,
        Mode::Lstm => rnn_cpu::LSTM,
        Mode::Gru => rnn_cpu::GRU,
    }
}

fn geo(c: &Cfg, x: &NDArray) -> Geo {
    let d = x.dims();
    Geo { mode: mode_num(c.mode), h: c.hidden, layers: c.layers, dirs: c.dirs, t: d[0], n: d[1], c: d[2] }
}

/// The fused kernel's call: outputs `out, hy, [cy], workspace`; records one backward
/// node for the visible outputs.
fn fused(c: &Cfg, x: &NDArray, flat: &NDArray, h0: &NDArray, c0: Option<&NDArray>) -> Result<Vec<NDArray>> {
    let g = geo(c, x);
    let (dt, ctx) = (x.dtype(), x.ctx());
    let out = NDArray::empty(Shape::new(&[g.t, g.n, g.dirs * g.h]), dt, ctx)?;
    let mut outs = vec![out, NDArray::empty(h0.shape().clone(), dt, ctx)?];
    if let Some(c0) = c0 {
        outs.push(NDArray::empty(c0.shape().clone(), dt, ctx)?);
    }
    let ws = NDArray::empty(Shape::new(&[g.ws_len()]), dt, ctx)?;
    outs.push(ws.clone());
    let ints = [g.mode, g.h as i64, g.layers as i64, g.dirs as i64];
    let ins: Vec<&NDArray> = [x, flat, h0].into_iter().chain(c0).collect();
    let orefs: Vec<&NDArray> = outs.iter().collect();
    push_call(OpCall::new(&DEFS[RNN_FUSED], &ins, &orefs).with_ints(&ints))?;
    let visible = &orefs[..orefs.len() - 1];
    if needs_record(&ins) {
        let saved: Vec<NDArray> = ins.iter().map(|a| (*a).clone()).collect();
        let ys = crate::autograd::save_output(&outs[0]);
        record(
            "RNN",
            &ins,
            visible,
            Box::new(move |gr| {
                let y = ys.get();
                let mut bins: Vec<&NDArray> = saved.iter().collect();
                bins.push(&y);
                bins.push(&ws);
                bins.extend(gr.iter());
                let metas: Vec<Meta> = saved.iter().map(Meta::of).collect();
                let grads = backward_call(&bins, &ints, &metas)?;
                Ok(grads.into_iter().map(Some).collect())
            }),
        );
    }
    Ok(outs)
}

/// Pushes `_backward_rnn_fused` (inputs as documented in `rnn_cpu.rs`).
fn backward_call(ins: &[&NDArray], ints: &[i64], metas: &[Meta]) -> Result<Vec<NDArray>> {
    let grads = metas.iter().map(|m| NDArray::empty(m.shape.clone(), m.dtype, m.ctx)).collect::<Result<Vec<_>>>()?;
    let gref: Vec<&NDArray> = grads.iter().collect();
    push_call(OpCall::new(&DEFS[RNN_BWD], ins, &gref).with_ints(ints))?;
    Ok(grads)
}

/// The `RNN` operator's forward.
pub(super) fn forward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let c = cfg(i)?;
    let ins = i.all();
    let (x, flat, h0, c0, lens) = check(i, &c, &ins)?;
    if fusable(&c, x, flat, h0, c0, lens) {
        let mut outs = fused(&c, x, flat, h0, c0)?;
        outs.pop();
        if !i.bool("state_outputs")? {
            outs.truncate(1);
        }
        return Ok(outs);
    }
    composite(i, &c, x, flat, h0, c0, lens)
}

/// `_rnn_fused`'s forward (internal): the fused kernel, all outputs including the workspace.
pub(super) fn forward_fused(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let c = cfg(i)?;
    let ins = i.all();
    let (x, flat, h0, c0, lens) = check(i, &c, &ins)?;
    if !fusable(&c, x, flat, h0, c0, lens) {
        return Err(Error::value(
            i.name(),
            "supports float32/float64 without projection, clipping, lengths or training dropout (use RNN)",
        ));
    }
    fused(&c, x, flat, h0, c0)
}

/// `_backward_rnn_fused`'s forward (internal): `ints` from the attributes.
pub(super) fn forward_backward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let c = cfg(i)?;
    let ins = i.all();
    let lstm = c.mode == Mode::Lstm;
    let nin = if lstm { 4 } else { 3 };
    if ins.len() != 2 * nin + 2 {
        return Err(Error::value(i.name(), format!("expects {} inputs, got {}", 2 * nin + 2, ins.len())));
    }
    let g = geo(&c, &ins[0]);
    let ints = [g.mode, g.h as i64, g.layers as i64, g.dirs as i64];
    let metas: Vec<Meta> = ins[..nin].iter().map(Meta::of).collect();
    let refs: Vec<&NDArray> = ins.iter().collect();
    backward_call(&refs, &ints, &metas)
}

/// The composed path (projection, clipping, lengths, dropout while training, other dtypes).
#[allow(clippy::too_many_arguments)]
fn composite(
    i: &Invocation<'_>,
    c: &Cfg,
    x: &NDArray,
    flat: &NDArray,
    h0: &NDArray,
    c0: Option<&NDArray>,
    lens: Option<&NDArray>,
) -> Result<Vec<NDArray>> {
    let width = x.dims()[2];
    let nl = c.layers * c.dirs;
    let ws = weights(c, flat, width)?;
    let mut x = x.clone();
    let (mut hs, mut cs) = (Vec::with_capacity(nl), Vec::with_capacity(nl));
    for l in 0..c.layers {
        let mut outs = Vec::with_capacity(c.dirs);
        for d in 0..c.dirs {
            let k = l * c.dirs + d;
            let xin = if d == 0 { x.clone() } else { reverse(&x, lens)? };
            let c0k = c0.map(|s| state_at(s, k)).transpose()?;
            let (y, h, cell) = run_dir(c, &ws[k], &xin, state_at(h0, k)?, c0k, lens)?;
            outs.push(if d == 0 { y } else { reverse(&y, lens)? });
            hs.push(h);
            cs.extend(cell);
        }
        x = if outs.len() == 1 { outs.remove(0) } else { ops::concat(&outs, 2)? };
        if c.p > 0.0 && l + 1 < c.layers {
            x = nn::dropout(&x, c.p, false)?;
        }
    }
    if let Some(l) = lens {
        x = apply(&DEFS[MASK], &[&x, l], &[0.0, 0.0], &[Meta::of(&x)])?.remove(0);
    }
    let mut out = vec![x];
    if i.bool("state_outputs")? {
        out.push(ops::stack(&hs, 0)?);
        if c.mode == Mode::Lstm {
            out.push(ops::stack(&cs, 0)?);
        }
    }
    Ok(out)
}

/// Shapes of `RNN`'s outputs from metadata: `out` is `(seq, batch, dirs * hidden)` where
/// `hidden` is `projection_size` when set, else `state_size`; with `state_outputs` the final
/// states `(layers * dirs, batch, hidden)` and, for LSTM, the cell states
/// `(layers * dirs, batch, state_size)`.
pub(super) fn infer(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let p = Invocation::params(def, a);
    let x = ins.first().ok_or_else(|| Error::value(def.name, "needs data"))?;
    let d = x.shape.dims();
    if d.len() != 3 {
        return Err(Error::shape(def.name, &[&x.shape], "data must be 3-d (seq, batch, input)"));
    }
    let state = p.i64("state_size")?.max(0) as usize;
    let layers = p.i64("num_layers")?.max(0) as usize;
    let dirs = if p.bool("bidirectional")? { 2 } else { 1 };
    let hidden = p.opt_i64("projection_size")?.map_or(state, |v| v.max(0) as usize);
    let mode = p.str("mode")?;
    let mut out = vec![Meta { shape: Shape::new(&[d[0], d[1], dirs * hidden]), ..x.clone() }];
    if p.bool("state_outputs")? {
        out.push(Meta { shape: Shape::new(&[layers * dirs, d[1], hidden]), ..x.clone() });
        if mode == "lstm" {
            out.push(Meta { shape: Shape::new(&[layers * dirs, d[1], state]), ..x.clone() });
        }
    }
    Ok(out)
}

/// `RNN`'s parameter vector and initial states from the data's shape (MXNet's
/// `FInferShape` fills them, so a graph needs only the data's): `parameters` `(n,)`,
/// `state` `(layers · dirs, batch, state or projection)` and, for an LSTM, `state_cell`
/// `(layers · dirs, batch, state)`. A 0 (unknown) dim stays unknown.
pub(crate) fn param_shapes(i: &Invocation<'_>, data: Option<&Shape>) -> Result<Vec<(&'static str, Shape)>> {
    let Some(x) = data.filter(|x| x.ndim() == 3) else { return Ok(Vec::new()) };
    let d = x.dims();
    let c = cfg(i)?;
    let mut out = Vec::with_capacity(3);
    if d[2] > 0 {
        out.push(("parameters", Shape::new(&[c.n_params(d[2])])));
    }
    out.push(("state", Shape::new(&[c.layers * c.dirs, d[1], c.rec()])));
    if c.mode == Mode::Lstm {
        out.push(("state_cell", Shape::new(&[c.layers * c.dirs, d[1], c.hidden])));
    }
    Ok(out)
}

/// `_rnn_fused`'s outputs from metadata: `out`, `hy`, [`cy`] as `RNN` with
/// `state_outputs`, then the 1-d workspace.
pub(super) fn infer_fused(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let mut attrs = a.clone();
    attrs.0.retain(|(k, _)| k != "state_outputs");
    attrs.0.push(("state_outputs".into(), crate::opdef::Attr::Bool(true)));
    let mut out = infer(def, &attrs, ins)?;
    let p = Invocation::params(def, a);
    let mode = match p.str("mode")?.as_str() {
        "rnn_relu" => Mode::Relu,
        "rnn_tanh" => Mode::Tanh,
        "lstm" => Mode::Lstm,
        _ => Mode::Gru,
    };
    let d = ins[0].shape.dims();
    let g = Geo {
        mode: mode_num(mode),
        h: p.i64("state_size")?.max(0) as usize,
        layers: p.i64("num_layers")?.max(1) as usize,
        dirs: if p.bool("bidirectional")? { 2 } else { 1 },
        t: d[0],
        n: d[1],
        c: d[2],
    };
    out.push(Meta { shape: Shape::new(&[g.ws_len()]), ..ins[0].clone() });
    Ok(out)
}

/// `_backward_rnn_fused`'s outputs: the gradients of data, parameters and states.
pub(super) fn infer_backward(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let lstm = Invocation::params(def, a).str("mode")? == "lstm";
    let n = if lstm { 4 } else { 3 };
    if ins.len() < n {
        return Err(Error::value(def.name, format!("expects at least {n} inputs, got {}", ins.len())));
    }
    Ok(ins[..n].to_vec())
}

/// `RNN`'s visible outputs (MXNet's `FNumVisibleOutputs`): `out`, then with
/// `state_outputs` the final hidden state and, for an LSTM, the final cell state.
pub(super) fn visible_outputs(i: &Invocation<'_>) -> Result<usize> {
    Ok(match (i.bool("state_outputs")?, i.str("mode")?.as_str()) {
        (false, _) => 1,
        (true, "lstm") => 3,
        (true, _) => 2,
    })
}

/// `RNN`'s inputs in a graph: `state_cell` for an LSTM only, `sequence_length` only with
/// `use_sequence_length` (MXNet's `ListArguments`; the forward reads the present inputs
/// in this order).
pub(super) fn graph_inputs(i: &Invocation<'_>) -> Result<Vec<&'static str>> {
    let lstm = i.str("mode")? == "lstm";
    let use_len = i.bool("use_sequence_length")?;
    Ok(INPUTS
        .iter()
        .copied()
        .filter(|n| (*n != "state_cell" || lstm) && (*n != "sequence_length" || use_len))
        .collect())
}
