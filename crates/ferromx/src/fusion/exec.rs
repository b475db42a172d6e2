//! Running a fused elementwise program: one pass over memory, tile by tile,
//! split across cores with [`fanout`].

use super::lanes::{self, LanePlan};
use super::tile::{Buf, InRef, OutRef, TILE};
use super::{needed_by, Src, Step};
use crate::dtype::DType;
use crate::engine::OpFailure;
use crate::ops::par::PAR_MIN;
use crate::storage::{dispatch, fanout, Kernel};
use parking_lot::Mutex;
use smallvec::SmallVec;

/// One operator of a program: its function, its operands and its result dtype.
#[derive(Clone)]
pub(crate) struct PStep {
    pub(crate) step: Step,
    pub(crate) args: SmallVec<[Src; 2]>,
    pub(crate) dtype: DType,
}

/// A fused program: external inputs (the kernel's inputs, in order), steps in
/// issue order, and the steps whose values are stored (the kernel's outputs).
pub(crate) struct Program {
    pub(crate) ext: Vec<DType>,
    pub(crate) steps: Vec<PStep>,
    pub(crate) outs: Vec<usize>,
    pub(crate) n: usize,
    /// Per step, the output it writes straight into (see [`Program::new`]).
    direct: Vec<Option<usize>>,
    /// Per step, whether it is not run: nothing stored reads it, or it is a copy
    /// whose operand was computed straight into the copy's output.
    skip: Vec<bool>,
    /// The program in registers, where every step has a register form (`lanes.rs`).
    lanes: Option<LanePlan>,
}

impl Program {
    /// A program; decides once which steps run and which bypass their tile.
    ///
    /// - A step nothing stored depends on is not run (a constant folded into its
    ///   reader's scalar form, say).
    /// - A step whose value is one output and that no later step reads is computed
    ///   straight into the output (no tile, no copy); other values live in tiles.
    /// - A copy (`grad[:] = value`) whose operand nothing else reads is not run: the
    ///   operand is computed straight into the copy's output.
    pub(crate) fn new(ext: Vec<DType>, steps: Vec<PStep>, outs: Vec<usize>, n: usize) -> Program {
        let live = needed_by(&outs, steps.len(), |j| &steps[j].args);
        let mut readers = vec![0u32; steps.len()];
        for s in steps.iter().zip(&live).filter(|(_, l)| **l).map(|(s, _)| s) {
            for a in &s.args {
                if let Src::Reg(r) = *a {
                    readers[r as usize] += 1;
                }
            }
        }
        let mut direct: Vec<Option<usize>> = (0..steps.len())
            .map(|j| match outs.iter().filter(|&&o| o == j).count() {
                1 if readers[j] == 0 => outs.iter().position(|&o| o == j),
                _ => None,
            })
            .collect();
        let mut skip: Vec<bool> = live.iter().map(|l| !l).collect();
        for j in 0..steps.len() {
            if let (Step::Copy, Some(oi), [Src::Reg(r)]) = (steps[j].step, direct[j], steps[j].args.as_slice()) {
                let r = *r as usize;
                if readers[r] == 1 && !outs.contains(&r) && steps[r].dtype == steps[j].dtype {
                    direct[r] = Some(oi);
                    skip[j] = true;
                }
            }
        }
        let lanes = if lanes_enabled() { LanePlan::new(&ext, &steps, &outs) } else { None };
        Program { ext, steps, outs, n, direct, skip, lanes }
    }

    /// Whether the program runs in registers (where the CPU has AVX-512).
    #[cfg(test)]
    pub(crate) fn has_lanes(&self) -> bool {
        self.lanes.is_some()
    }

    /// The same program, always on tiles (tests compare the two).
    #[cfg(test)]
    pub(crate) fn without_lanes(mut self) -> Program {
        self.lanes = None;
        self
    }
}

/// Whether programs run in registers where they can: `FERROMX_FUSION_LANES=0`
/// keeps every program on tiles (for comparisons; results are bitwise the same).
fn lanes_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| !std::env::var("FERROMX_FUSION_LANES").is_ok_and(|v| v.trim() == "0"))
}

/// The kernel of a fused op.
pub(crate) fn run(p: &Program, k: &Kernel) -> Result<(), OpFailure> {
    let ins: Vec<InRef> = (0..p.ext.len()).map(|i| InRef::of(k, i)).collect();
    let outs: Vec<OutRef> = (0..p.outs.len()).map(|i| OutRef::of(k, i)).collect();
    let threads = rayon::current_num_threads().max(1);
    if p.n < PAR_MIN || threads == 1 {
        dispatch(|| run_range(p, &ins, outs, 0, p.n));
        return Ok(());
    }
    let pieces = (p.n / PAR_MIN).clamp(1, threads * 4);
    let chunk = p.n.div_ceil(pieces).next_multiple_of(TILE);
    let count = p.n.div_ceil(chunk);
    let mut per: Vec<Vec<OutRef>> = (0..count).map(|_| Vec::with_capacity(outs.len())).collect();
    for o in outs {
        for (i, piece) in o.split(chunk).into_iter().enumerate() {
            per[i].push(piece);
        }
    }
    let slots: Vec<Mutex<Option<Vec<OutRef>>>> = per.into_iter().map(|v| Mutex::new(Some(v))).collect();
    let ins = &ins;
    fanout(slots.len(), threads - 1, &|i| {
        if let Some(o) = slots[i].lock().take() {
            let start = i * chunk;
            dispatch(|| run_range(p, ins, o, start, chunk.min(p.n - start)));
        }
    });
    Ok(())
}

/// Tiles ahead of the current one whose memory is prefetched:
/// `FERROMX_FUSION_PREFETCH_TILES` (default 4; 0 turns prefetching off).
fn prefetch_tiles() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| {
        std::env::var("FERROMX_FUSION_PREFETCH_TILES").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(4)
    })
}

/// Elements `start..start + len` of every output (`outs` are those pieces).
pub(super) fn run_range(p: &Program, ins: &[InRef], mut outs: Vec<OutRef>, start: usize, len: usize) {
    let tile = TILE.min(len);
    let direct = &p.direct;
    let mut bufs: Vec<Buf> = (0..p.steps.len())
        .map(|j| Buf::new(p.steps[j].dtype, if direct[j].is_some() || p.skip[j] { 0 } else { tile }))
        .collect();
    let mut arena = p.lanes.as_ref().map(|l| vec![[0f32; 16]; l.arena_len(tile)]);
    let tiles_ahead = prefetch_tiles();
    let mut t = 0;
    while t < len {
        let m = tile.min(len - t);
        // A tile `tiles_ahead` ahead: its inputs and outputs start moving
        // while this tile's arithmetic runs (see `storage::prefetch`).
        let ahead = t + tiles_ahead * tile;
        let n_ahead = if ahead < len && ahead > t { tile.min(len - ahead) } else { 0 };
        let done = match (&p.lanes, arena.as_mut()) {
            (Some(plan), Some(arena)) => lanes::run_tile(plan, ins, &mut outs, arena, start, t, m, (ahead, n_ahead)),
            _ => 0,
        };
        if done < m {
            let n_ahead = if done == 0 { n_ahead } else { 0 };
            run_steps(p, ins, &mut outs, &mut bufs, start, t + done, m - done, (ahead, n_ahead));
        }
        t += m;
    }
}

/// One tile's elements `t..t + m`, step by step through the tiles `bufs`;
/// `ahead` is the tile to prefetch meanwhile (its first element and length).
#[allow(clippy::too_many_arguments)]
fn run_steps(
    p: &Program,
    ins: &[InRef],
    outs: &mut [OutRef],
    bufs: &mut [Buf],
    start: usize,
    t: usize,
    m: usize,
    ahead: (usize, usize),
) {
    let direct = &p.direct;
    // Each run step issues its share of the prefetches, so memory requests are
    // spread over the tile's arithmetic: issued all at once, they filled the
    // core's line-fill buffers and the core stalled on the prefetches
    // themselves (half of a 7-step chain's samples sat on them).
    let run_steps = p.skip.iter().filter(|s| !**s).count().max(1);
    let (ahead, n_ahead) = ahead;
    let mut nth = 0;
    for (j, s) in p.steps.iter().enumerate() {
        if p.skip[j] {
            continue;
        }
        if n_ahead > 0 {
            let (lo, hi) = (nth * n_ahead / run_steps, (nth + 1) * n_ahead / run_steps);
            for i in ins {
                i.prefetch(start + ahead + lo, hi - lo);
            }
            for o in outs.iter() {
                o.prefetch(ahead + lo, hi - lo);
            }
        }
        nth += 1;
        let (lo, hi) = bufs.split_at_mut(j);
        let mut o = match direct[j] {
            Some(oi) => outs[oi].sub_mut(t, m),
            None => hi[0].as_out(m),
        };
        // Inputs are read in place; earlier values from their tiles.
        let arg = |a: Src| -> InRef {
            match a {
                Src::Ext(i) => ins[i as usize].sub(start + t, m),
                Src::Reg(r) => lo[r as usize].as_in(m),
            }
        };
        apply(s.step, &s.args, arg, &mut o, m);
    }
    for (oi, &j) in p.outs.iter().enumerate() {
        if direct[j].is_none() {
            outs[oi].store(t, m, &bufs[j]);
        }
    }
}

/// Runs one step on the front `m` elements: each operator's own per-element code.
#[inline(always)]
fn apply<'a>(step: Step, args: &[Src], arg: impl Fn(Src) -> InRef<'a>, o: &mut OutRef, m: usize) {
    match step {
        Step::Unary(u) => crate::ops::unary::run_tile(u, &arg(args[0]), o, m),
        Step::Binary(op) => crate::ops::binary::binary_tile(op, &arg(args[0]), &arg(args[1]), o, m),
        Step::Scalar(op, rev, c) => crate::ops::binary::scalar_tile(op, rev, c, &arg(args[0]), o, m),
        Step::Cast => crate::ops::cast_tile(&arg(args[0]), o, m),
        Step::Copy => o.copy_from(&arg(args[0])),
        Step::Fill(c) => o.fill(c),
        Step::Clip(lo, hi) => crate::ops::shape::clip_tile(lo, hi, &arg(args[0]), o, m),
        Step::Where => crate::ops::index::where_tile(&arg(args[0]), &arg(args[1]), &arg(args[2]), o, m),
    }
}

/// A step whose operands are all constants, evaluated once (at the flush) with the
/// kernels the fused op would run, so the folded constant is bitwise the value
/// every element would get. `None` where a value might not survive the round trip
/// through f64 (64-bit integers).
pub(crate) fn eval_constant(step: Step, args: &[(f64, DType)], dtype: DType) -> Option<f64> {
    if dtype == DType::I64 || args.iter().any(|a| a.1 == DType::I64) {
        return None;
    }
    let bufs: Vec<Buf> = args
        .iter()
        .map(|&(c, dt)| {
            let mut b = Buf::new(dt, 1);
            b.as_out(1).fill(c);
            b
        })
        .collect();
    let regs: Vec<Src> = (0..args.len()).map(|i| Src::Reg(i as u8)).collect();
    let mut out = Buf::new(dtype, 1);
    apply(
        step,
        &regs,
        |a| match a {
            Src::Reg(r) => bufs[r as usize].as_in(1),
            Src::Ext(_) => unreachable!("constant operands are registers"),
        },
        &mut out.as_out(1),
        1,
    );
    Some(out.get_f64(0))
}
