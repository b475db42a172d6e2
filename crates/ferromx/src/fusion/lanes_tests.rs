//! Register programs against the tile executor: bitwise the same values.

use super::super::exec::{run_range, PStep, Program};
use super::super::tile::{InRef, OutRef};
use super::super::{Src, Step};
use super::LanePlan;
use crate::dtype::DType;
use crate::ops::{BinOp, UnaryOp};
use smallvec::SmallVec;

fn step(step: Step, args: &[Src]) -> PStep {
    PStep { step, args: SmallVec::from_slice(args), dtype: DType::F32 }
}

/// `x*2+1`.
fn affine() -> Vec<PStep> {
    vec![
        step(Step::Scalar(BinOp::Mul, false, 2.0), &[Src::Ext(0)]),
        step(Step::Scalar(BinOp::Add, false, 1.0), &[Src::Reg(0)]),
    ]
}

/// `exp(x*2+1)*x - (x*2+1)` as the frontend's fusion builds it.
fn chain() -> Vec<PStep> {
    let mut p = affine();
    p.extend([
        step(Step::Unary(UnaryOp::Exp), &[Src::Reg(1)]),
        step(Step::Binary(BinOp::Mul), &[Src::Reg(2), Src::Ext(0)]),
        step(Step::Binary(BinOp::Sub), &[Src::Reg(3), Src::Reg(1)]),
    ]);
    p
}

/// Runs `steps` on `ins` both ways; the outputs of each.
fn both(steps: &dyn Fn() -> Vec<PStep>, outs: &[usize], ins: &[Vec<f32>]) -> (Vec<Vec<f32>>, Vec<Vec<f32>>, bool) {
    let n = ins[0].len();
    let ext = vec![DType::F32; ins.len()];
    let run = |p: &Program| {
        let mut o: Vec<Vec<f32>> = outs.iter().map(|_| vec![0.0; n]).collect();
        let refs: Vec<InRef> = ins.iter().map(|v| InRef::F32(v)).collect();
        let outr: Vec<OutRef> = o.iter_mut().map(|v| OutRef::F32(v)).collect();
        run_range(p, &refs, outr, 0, n);
        o
    };
    let lanes = Program::new(ext.clone(), steps(), outs.to_vec(), n);
    let has = lanes.has_lanes();
    let tiles = Program::new(ext, steps(), outs.to_vec(), n).without_lanes();
    (run(&lanes), run(&tiles), has)
}

fn same_bits(a: &[Vec<f32>], b: &[Vec<f32>]) {
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        for (i, (p, q)) in x.iter().zip(y).enumerate() {
            assert!(p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()), "output {k}[{i}]: {p} against {q}");
        }
    }
}

/// Values with every special a kernel might treat apart, then ordinary ones.
fn values(n: usize, seed: u32) -> Vec<f32> {
    let special = [0.0, -0.0, 1.0, -1.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e-40, -1e-40, 88.8, -104.5, 3e38];
    let mut s = seed.wrapping_mul(2_654_435_761).max(1);
    (0..n)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            if i % 7 == 0 {
                special[(s as usize) % special.len()]
            } else {
                (s as f32 / u32::MAX as f32 - 0.5) * 16.0
            }
        })
        .collect()
}

#[test]
fn the_chain_is_one_segment_with_one_stored_value() {
    let p = LanePlan::new(&[DType::F32], &chain(), &[4]).expect("every step has a register form");
    assert_eq!(p.segs.len(), 1, "each step reads the one before it: {p:?}");
    assert_eq!(p.slots, 1, "only x*2+1 is read again: {p:?}");
}

#[test]
fn the_chain_in_registers_is_bitwise_the_tiles_values() {
    // Lengths: under one block, a block and a bit, past a tile with a tail.
    for n in [10, 64, 128, 200, 1024, 1024 * 3 + 77] {
        let x = values(n, n as u32);
        let (a, b, has) = both(&chain, &[4, 1], &[x]);
        assert!(has);
        same_bits(&a, &b);
    }
}

#[test]
fn every_register_step_is_bitwise_its_kernel() {
    let unary = [
        UnaryOp::Exp,
        UnaryOp::Sigmoid,
        UnaryOp::Relu,
        UnaryOp::Negative,
        UnaryOp::Abs,
        UnaryOp::Square,
        UnaryOp::Sqrt,
    ];
    let ops = [BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::Max, BinOp::Min];
    let x = values(2048 + 64 + 5, 7);
    let y = values(2048 + 64 + 5, 11);
    for (k, u) in unary.iter().enumerate() {
        for (m, op) in ops.iter().enumerate() {
            // u(x) op y, c op (that), y op (that), (that) op itself, a copy out.
            let steps = move || {
                vec![
                    step(Step::Unary(unary[k]), &[Src::Ext(0)]),
                    step(Step::Binary(ops[m]), &[Src::Reg(0), Src::Ext(1)]),
                    step(Step::Scalar(ops[m], true, 0.3), &[Src::Reg(1)]),
                    step(Step::Binary(ops[m]), &[Src::Ext(1), Src::Reg(2)]),
                    step(Step::Binary(ops[m]), &[Src::Reg(3), Src::Reg(3)]),
                    step(Step::Scalar(ops[m], false, -1.7), &[Src::Reg(4)]),
                    step(Step::Copy, &[Src::Reg(5)]),
                    step(Step::Binary(ops[m]), &[Src::Ext(0), Src::Ext(0)]),
                    step(Step::Clip(-0.5, 2.0), &[Src::Reg(7)]),
                    step(Step::Clip(f64::NAN, 0.0), &[Src::Reg(8)]),
                ]
            };
            let (a, b, has) = both(&steps, &[6, 2, 9], &[x.clone(), y.clone()]);
            assert!(has, "{u:?} {op:?}");
            same_bits(&a, &b);
        }
    }
}

#[test]
fn steps_reading_old_values_and_several_segments_agree() {
    // Two segments: the second starts from an input and reads the first's values.
    let steps = || {
        vec![
            step(Step::Unary(UnaryOp::Sigmoid), &[Src::Ext(0)]),
            step(Step::Scalar(BinOp::Sub, true, 1.0), &[Src::Reg(0)]),
            step(Step::Binary(BinOp::Mul), &[Src::Ext(1), Src::Ext(0)]),
            step(Step::Binary(BinOp::Mul), &[Src::Reg(2), Src::Reg(0)]),
            step(Step::Binary(BinOp::Mul), &[Src::Reg(3), Src::Reg(1)]),
            step(Step::Unary(UnaryOp::Relu), &[Src::Reg(4)]),
        ]
    };
    let p = LanePlan::new(&[DType::F32; 2], &steps(), &[5, 0]).expect("register forms");
    assert_eq!(p.segs.len(), 2, "{p:?}");
    let n = 1024 * 2 + 200;
    let (a, b, _) = both(&steps, &[5, 0], &[values(n, 3), values(n, 5)]);
    same_bits(&a, &b);
}

#[test]
fn other_steps_and_dtypes_have_no_register_plan() {
    let cast = [step(Step::Cast, &[Src::Ext(0)])];
    assert!(LanePlan::new(&[DType::F32], &cast, &[0]).is_none());
    let pow = [step(Step::Scalar(BinOp::Pow, false, 2.0), &[Src::Ext(0)])];
    assert!(LanePlan::new(&[DType::F32], &pow, &[0]).is_none());
    let tanh = [step(Step::Unary(UnaryOp::Tanh), &[Src::Ext(0)])];
    assert!(LanePlan::new(&[DType::F32], &tanh, &[0]).is_none());
    let f64s =
        [PStep { step: Step::Unary(UnaryOp::Exp), args: SmallVec::from_slice(&[Src::Ext(0)]), dtype: DType::F64 }];
    assert!(LanePlan::new(&[DType::F64], &f64s, &[0]).is_none());
    // Two cheap steps stay on tiles; with an `exp`, or three steps, they do not.
    let two = affine();
    assert!(LanePlan::new(&[DType::F32], &two, &[1]).is_none());
    let three = [two[0].clone(), two[1].clone(), step(Step::Unary(UnaryOp::Relu), &[Src::Reg(1)])];
    assert!(LanePlan::new(&[DType::F32], &three, &[2]).is_some());
    // A dead unsupported step does not matter: it is never run.
    let dead = [step(Step::Unary(UnaryOp::Tanh), &[Src::Ext(0)]), step(Step::Unary(UnaryOp::Exp), &[Src::Ext(0)])];
    assert!(LanePlan::new(&[DType::F32], &dead, &[1]).is_some());
}

#[test]
#[ignore = "a timing to read by hand: cargo test --release -- --ignored lanes_timing --nocapture"]
fn lanes_timing() {
    let exp = || vec![step(Step::Unary(UnaryOp::Exp), &[Src::Ext(0)])];
    let mul = || vec![step(Step::Scalar(BinOp::Mul, false, 2.0), &[Src::Ext(0)])];
    type Builder = fn() -> Vec<PStep>;
    let sgd = || {
        // A momentum update's elementwise part: m = 0.9 m - lr g; w += m (two outputs).
        vec![
            step(Step::Scalar(BinOp::Mul, false, 0.9), &[Src::Ext(0)]),
            step(Step::Scalar(BinOp::Mul, false, 0.01), &[Src::Ext(1)]),
            step(Step::Binary(BinOp::Sub), &[Src::Reg(0), Src::Reg(1)]),
            step(Step::Binary(BinOp::Add), &[Src::Ext(2), Src::Reg(2)]),
        ]
    };
    let expmul = || {
        vec![
            step(Step::Unary(UnaryOp::Exp), &[Src::Ext(0)]),
            step(Step::Binary(BinOp::Mul), &[Src::Reg(0), Src::Ext(1)]),
        ]
    };
    let sigmoid_grad = || {
        // sigmoid(x) * (1 - sigmoid(x)) * g
        vec![
            step(Step::Unary(UnaryOp::Sigmoid), &[Src::Ext(0)]),
            step(Step::Scalar(BinOp::Sub, true, 1.0), &[Src::Reg(0)]),
            step(Step::Binary(BinOp::Mul), &[Src::Reg(1), Src::Reg(0)]),
            step(Step::Binary(BinOp::Mul), &[Src::Reg(2), Src::Ext(1)]),
        ]
    };
    let progs: [(&str, Builder, usize); 7] = [
        ("chain", chain, 4),
        ("exp", exp, 0),
        ("mul", mul, 0),
        ("aff", affine, 1),
        ("sgd", sgd, 3),
        ("expmul", expmul, 1),
        ("sigmoid_grad", sigmoid_grad, 3),
    ];
    for n in [1usize << 16, 1 << 20, 16 << 20] {
        // Ordinary values (no subnormals): what a timing should see.
        let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.01 - 5.0).collect();
        let ext = vec![DType::F32; 3];
        let mut o = vec![0.0f32; n];
        for (lanes, (name, prog, out)) in [false, true].into_iter().flat_map(|l| progs.iter().map(move |p| (l, p))) {
            let p = Program::new(ext.clone(), prog(), vec![*out], n);
            let p = if lanes { p } else { p.without_lanes() };
            let mut best = f64::MAX;
            for _ in 0..(if n > 1 << 20 { 5 } else { 50 }) {
                let t = std::time::Instant::now();
                run_range(&p, &[InRef::F32(&x), InRef::F32(&x), InRef::F32(&x)], vec![OutRef::F32(&mut o)], 0, n);
                best = best.min(t.elapsed().as_secs_f64());
            }
            println!(
                "n {n} {name} lanes {lanes}: {:.3} ms, {:.3} ns/elem (one core)",
                best * 1e3,
                best * 1e9 / n as f64
            );
        }
    }
}
