//! Running a fused elementwise program: one pass over memory, tile by tile,
//! split across cores with [`fanout`].

use super::tile::{Buf, InRef, OutRef, TILE};
use super::{Src, Step};
use crate::dtype::DType;
use crate::engine::OpFailure;
use crate::ops::par::PAR_MIN;
use crate::storage::{dispatch, fanout, Kernel};
use parking_lot::Mutex;
use smallvec::SmallVec;

/// One operator of a program: its function, its operands and its result dtype.
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
}

impl Program {
    /// A program; decides once which steps bypass their tile. A step whose value is
    /// one output and that no later step reads is computed straight into the output
    /// (no tile, no copy); other values live in tiles.
    pub(crate) fn new(ext: Vec<DType>, steps: Vec<PStep>, outs: Vec<usize>, n: usize) -> Program {
        let mut read_later = vec![false; steps.len()];
        for s in &steps {
            for a in &s.args {
                if let Src::Reg(r) = *a {
                    read_later[r as usize] = true;
                }
            }
        }
        let direct = (0..steps.len())
            .map(|j| match outs.iter().filter(|&&o| o == j).count() {
                1 if !read_later[j] => outs.iter().position(|&o| o == j),
                _ => None,
            })
            .collect();
        Program { ext, steps, outs, n, direct }
    }
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

/// Elements `start..start + len` of every output (`outs` are those pieces).
fn run_range(p: &Program, ins: &[InRef], mut outs: Vec<OutRef>, start: usize, len: usize) {
    let tile = TILE.min(len);
    let direct = &p.direct;
    let mut bufs: Vec<Buf> =
        p.steps.iter().zip(direct).map(|(s, d)| Buf::new(s.dtype, if d.is_some() { 0 } else { tile })).collect();
    let mut t = 0;
    while t < len {
        let m = tile.min(len - t);
        for (j, s) in p.steps.iter().enumerate() {
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
            match s.step {
                Step::Unary(u) => crate::ops::unary::run_tile(u, &arg(s.args[0]), &mut o, m),
                Step::Binary(op) => crate::ops::binary::binary_tile(op, &arg(s.args[0]), &arg(s.args[1]), &mut o, m),
                Step::Scalar(op, rev, c) => crate::ops::binary::scalar_tile(op, rev, c, &arg(s.args[0]), &mut o, m),
                Step::Cast => crate::ops::cast_tile(&arg(s.args[0]), &mut o, m),
                Step::Copy => o.copy_from(&arg(s.args[0])),
            }
        }
        for (oi, &j) in p.outs.iter().enumerate() {
            if direct[j].is_none() {
                outs[oi].store(t, m, &bufs[j]);
            }
        }
        t += m;
    }
}
