//! Register programs: a fused float32 chain evaluated in AVX-512 registers.
//!
//! Why: the tile executor (`exec.rs`) runs each step of a program over a
//! whole tile, so every step loads its operands from an L1 tile and stores
//! its value back. On `exp(x*2+1)*x-(x*2+1)` those loads and stores (a
//! 512-bit store takes two cycles on Zen 4) cost about as much as the
//! arithmetic, and the chain was compute-bound at twice the time of one
//! memory pass. Here the program is cut into *segments* — runs of steps
//! where each step reads the one before it — and a segment keeps that value
//! in registers from step to step, 128 elements (eight vectors) at a time. A
//! value is stored only where something else reads it (a later segment, the
//! other operand of a binary step) or where it is an output.
//!
//! Every supported step computes bitwise what its own kernel does: IEEE
//! `+ - * /` and `sqrt`, `maximum`/`minimum`/`clip` as `Arith::max_`/`min_`, sign-bit `neg`/`abs`, the eager kernels' `exp` and
//! `sigmoid` routines ([`crate::ops::unary::exp16`]), `relu` as the f32
//! kernel's select. A program with any other step, or any dtype but f32,
//! has no plan and runs tile by tile as before; so does each tile's tail
//! past its last whole block.

use super::exec::PStep;
use super::tile::{InRef, OutRef};
use super::{needed_by, Src, Step};
use crate::dtype::DType;
use crate::ops::{BinOp, UnaryOp};
use smallvec::SmallVec;

/// Elements per block: eight vectors of 16 lanes held in registers together,
/// so a step's dispatch is paid once per 128 elements (four vectors lost to
/// two-input programs on the dispatch; sixteen spilled registers: both slower).
pub(crate) const BLOCK: usize = 16 * VECS;
/// Vectors per block.
const VECS: usize = 8;

/// Where an operand lives.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Opnd {
    /// A program input.
    Ext(u8),
    /// A stored value (its slot in the arena).
    Slot(u8),
    /// The segment's running value (`x * x`).
    Acc,
}

/// Where a value is stored.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Dest {
    Slot(u8),
    Out(u8),
}

/// A step on the running value.
#[derive(Clone, Copy, Debug)]
enum LOp {
    /// `_copy`: the value itself.
    Id,
    /// `acc op c`, or `c op acc` when reversed.
    Scalar(BinOp, bool, f32),
    /// `acc op other`, or `other op acc` when reversed.
    Binary(BinOp, bool, Opnd),
    Unary(UnaryOp),
    /// `clip(acc, lo, hi)`.
    Clip(f32, f32),
}

#[derive(Debug)]
struct LStep {
    op: LOp,
    stores: SmallVec<[Dest; 2]>,
}

/// Steps that each read the previous one's value, starting from `start`.
#[derive(Debug)]
struct Seg {
    start: Opnd,
    steps: Vec<LStep>,
}

/// A program cut into segments, with the slots its stored values take.
#[derive(Debug)]
pub(crate) struct LanePlan {
    segs: Vec<Seg>,
    slots: usize,
}

/// Whether a step has a register form here.
fn supported(s: &PStep) -> bool {
    let arith = |op: BinOp| matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Max | BinOp::Min);
    match s.step {
        Step::Scalar(op, _, _) | Step::Binary(op) => arith(op),
        Step::Unary(u) => matches!(
            u,
            UnaryOp::Exp
                | UnaryOp::Sigmoid
                | UnaryOp::Relu
                | UnaryOp::Negative
                | UnaryOp::Abs
                | UnaryOp::Square
                | UnaryOp::Sqrt
        ),
        Step::Copy | Step::Clip(..) => true,
        _ => false,
    }
}

impl LanePlan {
    /// The plan of a program, or `None` where some step or dtype has no register form.
    pub(crate) fn new(ext: &[DType], steps: &[PStep], outs: &[usize]) -> Option<LanePlan> {
        if ext.iter().any(|d| *d != DType::F32) || steps.iter().any(|s| s.dtype != DType::F32) {
            return None;
        }
        let live = needed_by(outs, steps.len(), |j| &steps[j].args);
        let run: Vec<usize> = (0..steps.len()).filter(|&j| live[j]).collect();
        if run.iter().any(|&j| !supported(&steps[j])) {
            return None;
        }
        // Two cheap steps (`x*2+1`) do not repay the per-block dispatch: on tiles
        // they ran 0.225 ns per element, in registers 0.248 (one core, in cache).
        let heavy = |j: &usize| matches!(steps[*j].step, Step::Unary(UnaryOp::Exp | UnaryOp::Sigmoid));
        if run.len() < 3 && !run.iter().any(heavy) {
            return None;
        }
        // Which step each run step continues (its segment's previous step).
        let mut prev_of = vec![None; steps.len()];
        for w in run.windows(2) {
            let (p, j) = (w[0], w[1]);
            let reads_p = |a: &Src| *a == Src::Reg(p as u8);
            let s = &steps[j];
            let cont = match s.step {
                Step::Binary(_) => s.args.iter().any(reads_p),
                _ => s.args.first().is_some_and(reads_p),
            };
            if cont {
                prev_of[j] = Some(p);
            }
        }
        // A value needs a slot when some step reads it other than as its running value.
        let mut slot = vec![None; steps.len()];
        let mut slots = 0u8;
        for &j in &run {
            for a in &steps[j].args {
                if let Src::Reg(r) = *a {
                    let r = r as usize;
                    if prev_of[j] != Some(r) && slot[r].is_none() {
                        slot[r] = Some(slots);
                        slots += 1;
                    }
                }
            }
        }
        let opnd = |a: Src| match a {
            Src::Ext(i) => Opnd::Ext(i),
            Src::Reg(r) => Opnd::Slot(slot[r as usize].expect("a value read from a slot has one")),
        };
        let mut segs: Vec<Seg> = Vec::new();
        for &j in &run {
            let s = &steps[j];
            let op = match (s.step, prev_of[j]) {
                (Step::Binary(b), Some(p)) => {
                    let acc = Src::Reg(p as u8);
                    match (s.args[0] == acc, s.args[1] == acc) {
                        (true, true) => LOp::Binary(b, false, Opnd::Acc),
                        (true, false) => LOp::Binary(b, false, opnd(s.args[1])),
                        _ => LOp::Binary(b, true, opnd(s.args[0])),
                    }
                }
                (Step::Binary(b), None) if s.args[0] == s.args[1] => LOp::Binary(b, false, Opnd::Acc),
                (Step::Binary(b), None) => LOp::Binary(b, false, opnd(s.args[1])),
                (Step::Scalar(b, rev, c), _) => LOp::Scalar(b, rev, c as f32),
                (Step::Unary(u), _) => LOp::Unary(u),
                (Step::Clip(lo, hi), _) => LOp::Clip(lo as f32, hi as f32),
                _ => LOp::Id,
            };
            let mut stores: SmallVec<[Dest; 2]> = SmallVec::new();
            if let Some(k) = slot[j] {
                stores.push(Dest::Slot(k));
            }
            for (oi, _) in outs.iter().enumerate().filter(|(_, &o)| o == j) {
                stores.push(Dest::Out(oi as u8));
            }
            let step = LStep { op, stores };
            match prev_of[j] {
                Some(_) => segs.last_mut().expect("a continued step has a segment").steps.push(step),
                None => segs.push(Seg { start: opnd(s.args[0]), steps: vec![step] }),
            }
        }
        Some(LanePlan { segs, slots: slots as usize })
    }

    /// Vectors the arena holds for tiles of `tile` elements.
    pub(crate) fn arena_len(&self, tile: usize) -> usize {
        self.slots * tile.div_ceil(16)
    }
}

/// Runs `plan` on the whole blocks of elements `t..t + m` of a range (inputs
/// read at `start + t`, outputs written at `t`); returns how many elements it
/// did (a multiple of [`BLOCK`]; 0 without AVX-512). `arena` holds the slots,
/// `vpt` vectors each. `ahead` is the tile to prefetch meanwhile (its first
/// element and its length, as `exec::run_steps` takes it), spread over the blocks.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_tile(
    plan: &LanePlan,
    ins: &[InRef],
    outs: &mut [OutRef],
    arena: &mut [[f32; 16]],
    start: usize,
    t: usize,
    m: usize,
    ahead: (usize, usize),
) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let Some(v) = pulp::x86::V4::try_new() else { return 0 };
        let nb = m / BLOCK;
        if nb == 0 {
            return 0;
        }
        let ins: SmallVec<[&[f32]; 4]> = ins
            .iter()
            .map(|i| match i {
                InRef::F32(s) => &s[start..],
                _ => &[][..],
            })
            .collect();
        let mut outs: SmallVec<[&mut [f32]; 4]> = outs
            .iter_mut()
            .map(|o| match o {
                OutRef::F32(s) => &mut s[..],
                _ => &mut [][..],
            })
            .collect();
        let vpt = arena.len() / plan.slots.max(1);
        pulp::Simd::vectorize(v, v4::Blocks { v, plan, ins: &ins, outs: &mut outs, arena, vpt, t, nb, ahead });
        nb * BLOCK
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (plan, ins, outs, arena, start, t, m, ahead);
        0
    }
}

#[cfg(target_arch = "x86_64")]
mod v4 {
    use super::{Dest, LOp, LanePlan, Opnd, BLOCK, VECS};
    use crate::fusion::tile::window;
    use crate::ops::unary::{exp16, sigmoid16};
    use crate::ops::{BinOp, UnaryOp};
    use crate::storage::prefetch;
    use pulp::x86::V4;
    use pulp::{cast, WithSimd};
    use smallvec::SmallVec;
    use std::arch::x86_64::__m512;

    /// Four vectors: one block.
    type Quad = [__m512; VECS];

    /// The blocks of one tile, run through `Simd::vectorize` so everything
    /// inlined here is compiled with AVX-512 enabled.
    pub(super) struct Blocks<'a, 'b> {
        pub(super) v: V4,
        pub(super) plan: &'a LanePlan,
        pub(super) ins: &'a [&'b [f32]],
        pub(super) outs: &'a mut [&'b mut [f32]],
        pub(super) arena: &'a mut [[f32; 16]],
        /// Vectors per slot.
        pub(super) vpt: usize,
        /// The tile's first element (of the range; inputs are already offset by the range's start).
        pub(super) t: usize,
        pub(super) nb: usize,
        pub(super) ahead: (usize, usize),
    }

    impl WithSimd for Blocks<'_, '_> {
        type Output = ();

        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _: S) {
            let Blocks { v, plan, ins, outs, arena, vpt, t, nb, ahead } = self;
            let (ahead_at, n_ahead) = ahead;
            let all = ins;
            let ins: SmallVec<[&[f32]; 4]> = all.iter().map(|s| &s[t..t + nb * BLOCK]).collect();
            let per = n_ahead.div_ceil(nb);
            for b in 0..nb {
                if n_ahead > 0 {
                    // This block's share of the tile ahead (spread, as `exec::run_steps`
                    // spreads it over a tile's steps).
                    let lo = ahead_at + b * per;
                    let hi = lo + per;
                    for s in all {
                        prefetch(window(s, lo, hi - lo), false);
                    }
                    for o in outs.iter() {
                        prefetch(window(o, lo, hi - lo), true);
                    }
                }
                for seg in &plan.segs {
                    let mut acc = load(&ins, arena, vpt, seg.start, b, zero4(v));
                    for st in &seg.steps {
                        acc = apply(v, st.op, acc, &ins, arena, vpt, b);
                        for d in &st.stores {
                            store(outs, t, arena, vpt, *d, b, acc);
                        }
                    }
                }
            }
        }
    }

    #[inline(always)]
    fn zero4(v: V4) -> Quad {
        [v.avx512f._mm512_setzero_ps(); VECS]
    }

    #[inline(always)]
    fn load(ins: &[&[f32]], arena: &[[f32; 16]], vpt: usize, o: Opnd, b: usize, acc: Quad) -> Quad {
        match o {
            Opnd::Ext(i) => {
                let (c, _) = ins[i as usize][b * BLOCK..(b + 1) * BLOCK].as_chunks::<16>();
                std::array::from_fn(|k| cast(c[k]))
            }
            Opnd::Slot(k) => {
                let base = k as usize * vpt + b * VECS;
                let c = &arena[base..base + VECS];
                std::array::from_fn(|k| cast(c[k]))
            }
            Opnd::Acc => acc,
        }
    }

    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn store(outs: &mut [&mut [f32]], t: usize, arena: &mut [[f32; 16]], vpt: usize, d: Dest, b: usize, acc: Quad) {
        match d {
            Dest::Out(oi) => {
                let at = t + b * BLOCK;
                let (c, _) = outs[oi as usize][at..at + BLOCK].as_chunks_mut::<16>();
                for (ci, a) in c.iter_mut().zip(acc) {
                    *ci = cast(a);
                }
            }
            Dest::Slot(k) => {
                let base = k as usize * vpt + b * VECS;
                for (ci, a) in arena[base..base + VECS].iter_mut().zip(acc) {
                    *ci = cast(a);
                }
            }
        }
    }

    /// `a op b` on a block, or `b op a` when `rev`; one dispatch per block.
    #[inline(always)]
    fn arith4(v: V4, op: BinOp, rev: bool, a: Quad, b: Quad) -> Quad {
        let f = v.avx512f;
        let (a, b) = if rev { (b, a) } else { (a, b) };
        let mut r = a;
        match op {
            BinOp::Add => {
                for k in 0..VECS {
                    r[k] = f._mm512_add_ps(a[k], b[k]);
                }
            }
            BinOp::Sub => {
                for k in 0..VECS {
                    r[k] = f._mm512_sub_ps(a[k], b[k]);
                }
            }
            BinOp::Mul => {
                for k in 0..VECS {
                    r[k] = f._mm512_mul_ps(a[k], b[k]);
                }
            }
            BinOp::Max => {
                for k in 0..VECS {
                    r[k] = max1(v, a[k], b[k]);
                }
            }
            BinOp::Min => {
                for k in 0..VECS {
                    r[k] = min1(v, a[k], b[k]);
                }
            }
            _ => {
                for k in 0..VECS {
                    r[k] = f._mm512_div_ps(a[k], b[k]);
                }
            }
        }
        r
    }

    /// The kernels' float `max`: `a` where `a > b` or `a` is NaN, else `b` (so a
    /// NaN bound or an equal value gives `b`, as `Arith::max_`).
    #[inline(always)]
    fn max1(v: V4, a: __m512, b: __m512) -> __m512 {
        let f = v.avx512f;
        // Predicates 30 and 3: greater-than (ordered, quiet) and unordered.
        let m = f._mm512_cmp_ps_mask::<30>(a, b) | f._mm512_cmp_ps_mask::<3>(a, a);
        f._mm512_mask_blend_ps(m, b, a)
    }

    /// The kernels' float `min`: `a` where `a < b` or `a` is NaN, else `b`.
    #[inline(always)]
    fn min1(v: V4, a: __m512, b: __m512) -> __m512 {
        let f = v.avx512f;
        // Predicates 17 and 3: less-than (ordered, quiet) and unordered.
        let m = f._mm512_cmp_ps_mask::<17>(a, b) | f._mm512_cmp_ps_mask::<3>(a, a);
        f._mm512_mask_blend_ps(m, b, a)
    }

    /// `x` with its sign bit flipped (`xor`) or cleared.
    #[inline(always)]
    fn sign(v: V4, x: __m512, xor: bool) -> __m512 {
        let f = v.avx512f;
        let x = f._mm512_castps_si512(x);
        let r = if xor {
            f._mm512_xor_si512(x, f._mm512_set1_epi32(i32::MIN))
        } else {
            f._mm512_and_si512(x, f._mm512_set1_epi32(i32::MAX))
        };
        f._mm512_castsi512_ps(r)
    }

    /// One unary step on a block, one dispatch per block. No closures anywhere
    /// here: a closure's body is not compiled with AVX-512 enabled, and each
    /// intrinsic in it became a call (the chain ran 100 ms instead of 6).
    #[inline(always)]
    fn unary4(v: V4, u: UnaryOp, a: Quad) -> Quad {
        let f = v.avx512f;
        let mut r = a;
        macro_rules! each {
            ($x:ident => $e:expr) => {
                for k in 0..VECS {
                    let $x = a[k];
                    r[k] = $e;
                }
            };
        }
        match u {
            UnaryOp::Exp => each!(x => exp16(v, x)),
            UnaryOp::Sigmoid => each!(x => sigmoid16(v, x)),
            // `v > 0 || v is NaN ? v : +0`: "not less-or-equal, unordered".
            UnaryOp::Relu => each!(x => f._mm512_maskz_mov_ps(f._mm512_cmp_ps_mask::<6>(x, f._mm512_setzero_ps()), x)),
            UnaryOp::Negative => each!(x => sign(v, x, true)),
            UnaryOp::Abs => each!(x => sign(v, x, false)),
            UnaryOp::Square => each!(x => f._mm512_mul_ps(x, x)),
            _ => each!(x => f._mm512_sqrt_ps(x)),
        }
        r
    }

    #[inline(always)]
    fn apply(v: V4, op: LOp, acc: Quad, ins: &[&[f32]], arena: &[[f32; 16]], vpt: usize, b: usize) -> Quad {
        match op {
            LOp::Id => acc,
            LOp::Scalar(op, rev, c) => {
                let c = v.avx512f._mm512_set1_ps(c);
                arith4(v, op, rev, acc, [c; VECS])
            }
            LOp::Binary(op, rev, o) => arith4(v, op, rev, acc, load(ins, arena, vpt, o, b, acc)),
            LOp::Unary(u) => unary4(v, u, acc),
            LOp::Clip(lo, hi) => {
                let (lo, hi) = (v.avx512f._mm512_set1_ps(lo), v.avx512f._mm512_set1_ps(hi));
                let mut r = acc;
                for k in 0..VECS {
                    r[k] = min1(v, max1(v, acc[k], lo), hi);
                }
                r
            }
        }
    }
}

#[cfg(test)]
#[path = "lanes_tests.rs"]
mod tests;
