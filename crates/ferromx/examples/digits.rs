//! Trains a 64-64-10 MLP on the UCI handwritten digits with the Rust API only:
//! NDArray parameters with `attach_grad`, the `FullyConnected`/`relu`/`softmax_ce_loss`
//! operators under autograd recording, `backward`, and in-place Adam updates.
//!
//! The data come from `examples/digits.py --export-csv PREFIX` (the same fixed split the
//! Python/Gluon example trains on): one sample per line, the label (0..9) first and then
//! the 64 features scaled to [0, 1], no header.
//!
//! ```text
//! python examples/digits.py --export-csv /tmp/digits
//! cargo run --release -p ferromx --example digits -- /tmp/digits_train.csv /tmp/digits_test.csv [EPOCHS [SEED]]
//! ```
//!
//! Everything is pushed to the engine asynchronously: mini-batches are gathered with
//! `take` from an engine-side shuffled index array, and the only read of each epoch is
//! one 2-element array holding the mean training loss and the test-set hit count.
//! Prints the test accuracy each epoch and exits non-zero when the final one is below 0.95.

use std::fmt;
use std::path::Path;
use std::time::Instant;

use ferromx::autograd::{self, GradReq};
use ferromx::ops::optim::{update, Update, UpdateParams};
use ferromx::ops::{self, nn, random, BinOp, IndexMode, ReduceOp, UnaryOp};
use ferromx::{Context, DType, NDArray, Shape};

const FEATURES: usize = 64;
const HIDDEN: usize = 64;
const CLASSES: usize = 10;
const BATCH: usize = 32;
const DEFAULT_EPOCHS: usize = 10;
const LR: f64 = 0.01;
const BETA1: f64 = 0.9;
const BETA2: f64 = 0.999;
const EPS: f64 = 1e-8;
const TARGET: f64 = 0.95;
const DEFAULT_SEED: u64 = 0;

/// An error whose `Debug` (what `main` prints when it returns `Err`) is its message.
struct AppError(String);

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl fmt::Debug for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for AppError {}

fn fail(msg: impl Into<String>) -> Box<dyn std::error::Error> {
    Box::new(AppError(msg.into()))
}

/// A labelled data set: features (n, 64) float32 and labels (n,) float32 (integer valued).
struct Data {
    x: NDArray,
    y: NDArray,
    n: usize,
}

fn load_csv(path: &Path, ctx: Context) -> Result<Data, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read {}: {e}", path.display())))?;
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let at = || format!("{}:{}", path.display(), i + 1);
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != 1 + FEATURES {
            return Err(fail(format!(
                "{}: expected {} comma-separated values (label, then {FEATURES} features), got {}",
                at(),
                1 + FEATURES,
                fields.len()
            )));
        }
        let label: usize = fields[0]
            .parse()
            .ok()
            .filter(|&l| l < CLASSES)
            .ok_or_else(|| fail(format!("{}: label '{}' is not an integer in 0..{CLASSES}", at(), fields[0])))?;
        ys.push(label as f32);
        for (j, f) in fields[1..].iter().enumerate() {
            let v: f32 = f
                .parse()
                .ok()
                .filter(|v: &f32| v.is_finite())
                .ok_or_else(|| fail(format!("{}: feature {} '{f}' is not a finite number", at(), j + 1)))?;
            xs.push(v);
        }
    }
    let n = ys.len();
    if n == 0 {
        return Err(fail(format!("{}: no samples", path.display())));
    }
    Ok(Data {
        x: NDArray::from_vec(xs, [n, FEATURES].as_slice(), ctx)?,
        y: NDArray::from_vec(ys, [n].as_slice(), ctx)?,
        n,
    })
}

/// A trainable parameter with its Adam state.
struct Param {
    w: NDArray,
    m: NDArray,
    v: NDArray,
}

impl Param {
    fn new(w: NDArray) -> ferromx::Result<Param> {
        w.attach_grad(GradReq::Write)?;
        Ok(Param { m: ops::zeros_like(&w)?, v: ops::zeros_like(&w)?, w })
    }
    /// Xavier-uniform (out, in) weight.
    fn xavier(out: usize, inp: usize, ctx: Context) -> ferromx::Result<Param> {
        let a = (6.0 / (out + inp) as f64).sqrt();
        Param::new(random::uniform(-a, a, Shape::new(&[out, inp]), DType::F32, ctx)?)
    }
    fn zeros(n: usize, ctx: Context) -> ferromx::Result<Param> {
        Param::new(ops::zeros([n].as_slice(), DType::F32, ctx)?)
    }
}

struct Mlp {
    w1: Param,
    b1: Param,
    w2: Param,
    b2: Param,
}

impl Mlp {
    fn new(ctx: Context) -> ferromx::Result<Mlp> {
        Ok(Mlp {
            w1: Param::xavier(HIDDEN, FEATURES, ctx)?,
            b1: Param::zeros(HIDDEN, ctx)?,
            w2: Param::xavier(CLASSES, HIDDEN, ctx)?,
            b2: Param::zeros(CLASSES, ctx)?,
        })
    }
    fn forward(&self, x: &NDArray) -> ferromx::Result<NDArray> {
        let h = nn::fully_connected(x, &self.w1.w, Some(&self.b1.w), HIDDEN, true)?;
        let h = ops::unary(UnaryOp::Relu, &h)?;
        nn::fully_connected(&h, &self.w2.w, Some(&self.b2.w), CLASSES, true)
    }
    fn params(&self) -> [&Param; 4] {
        [&self.w1, &self.b1, &self.w2, &self.b2]
    }
    /// One Adam step (`t` counts from 1); the loss is a batch mean, so no rescaling.
    fn adam_step(&self, t: i32) -> ferromx::Result<()> {
        // MXNet's Adam: the caller bias-corrects the learning rate.
        let lr = LR * (1.0 - BETA2.powi(t)).sqrt() / (1.0 - BETA1.powi(t));
        let p = UpdateParams { lr, wd: 0.0, rescale_grad: 1.0, clip_gradient: -1.0 };
        for prm in self.params() {
            let g = prm.w.grad().ok_or_else(|| ferromx::Error::value("digits", "parameter without gradient"))?;
            update(Update::Adam { beta1: BETA1, beta2: BETA2, epsilon: EPS }, &prm.w, &g, &[&prm.m, &prm.v], p)?;
        }
        Ok(())
    }
}

/// Turns autograd recording on for its lifetime (restored even when `?` returns early).
struct Recording(bool);
impl Recording {
    fn start() -> Recording {
        Recording(autograd::set_recording(true))
    }
}
impl Drop for Recording {
    fn drop(&mut self) {
        autograd::set_recording(self.0);
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 || args.len() > 5 {
        return Err(fail(format!(
            "usage: {} TRAIN.csv TEST.csv [EPOCHS [SEED]]\n(make the CSVs with: python examples/digits.py --export-csv PREFIX)",
            args.first().map_or("digits", String::as_str)
        )));
    }
    let epochs: usize = match args.get(3) {
        None => DEFAULT_EPOCHS,
        Some(s) => s
            .parse()
            .ok()
            .filter(|&e| e > 0)
            .ok_or_else(|| fail(format!("EPOCHS must be a positive integer, got '{s}'")))?,
    };
    let seed: u64 = match args.get(4) {
        None => DEFAULT_SEED,
        Some(s) => s.parse().map_err(|_| fail(format!("SEED must be a non-negative integer, got '{s}'")))?,
    };
    let ctx = Context::default();
    let train = load_csv(Path::new(&args[1]), ctx)?;
    let test = load_csv(Path::new(&args[2]), ctx)?;
    println!(
        "digits: {} training and {} test samples, {epochs} epochs of Adam (lr {LR}, batch {BATCH}, seed {seed})",
        train.n, test.n
    );

    let start = Instant::now();
    random::seed(seed, None);
    let net = Mlp::new(ctx)?;
    let all_rows = ops::arange(0.0, Some(train.n as f64), 1.0, 1, DType::I32, ctx)?;
    let mut t = 0;
    let mut acc = 0.0;
    for epoch in 1..=epochs {
        let tic = Instant::now();
        let order = random::shuffle(&all_rows)?; // engine-side permutation, never read here
        let mut loss_sum = ops::zeros(Shape::scalar(), DType::F32, ctx)?;
        let mut batches = 0usize;
        for b in (0..train.n).step_by(BATCH) {
            let idx = ops::slice_axis(&order, 0, b as i64, Some((b + BATCH).min(train.n) as i64))?;
            let xb = ops::take(&train.x, &idx, 0, IndexMode::Clip)?;
            let yb = ops::take(&train.y, &idx, 0, IndexMode::Clip)?;
            let loss = {
                let _rec = Recording::start();
                let out = net.forward(&xb)?;
                let l = nn::softmax_ce_loss(&out, &yb)?;
                ops::reduce(ReduceOp::Mean, &l, None, false, false)?
            };
            loss.backward(None, false)?;
            t += 1;
            net.adam_step(t)?;
            loss_sum = ops::add(&loss_sum, &loss.detach())?;
            batches += 1;
        }
        // Test accuracy: argmax of the logits against the labels, counted on the engine.
        let pred = ops::argmax(&net.forward(&test.x)?, Some(1), false, false, DType::F32)?;
        let hits = ops::reduce(ReduceOp::Sum, &ops::binary(BinOp::Eq, &pred, &test.y)?, None, false, false)?;
        let stats = ops::stack(&[loss_sum, hits], 0)?.to_vec::<f64>()?; // the epoch's one read
        acc = stats[1] / test.n as f64;
        println!(
            "epoch {epoch:2}  loss {:.4}  test acc {acc:.4}  ({:.2}s)",
            stats[0] / batches as f64,
            tic.elapsed().as_secs_f64()
        );
    }
    println!("final test accuracy {acc:.4} in {:.2}s", start.elapsed().as_secs_f64());
    if acc < TARGET {
        return Err(fail(format!("test accuracy {acc:.4} is below {TARGET}")));
    }
    Ok(())
}
