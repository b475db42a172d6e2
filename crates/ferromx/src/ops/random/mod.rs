//! Random sampling. Each op draws its own seed on the pushing thread from a
//! per-context counter (so results are reproducible after `seed`) and then
//! runs independently: unlike MXNet, random ops share no engine var and never
//! serialise unrelated work. Definitions, inference and frontends here;
//! kernels over [`OpCall`]s in `cpu.rs`.

mod cpu;
pub mod domain;
#[cfg(test)]
mod tests;
mod zipfian;

use cpu::{multinomial_kernel, per_element_kernel, sample_kernel, shuffle_kernel};

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{push_call, Attrs, KernelSlot, Meta, OpCall};
use crate::shape::Shape;
use crate::Context;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::OnceLock;

fn seeds() -> &'static Mutex<HashMap<Context, (u64, u64)>> {
    static S: OnceLock<Mutex<HashMap<Context, (u64, u64)>>> = OnceLock::new();
    S.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Seeds the generator of `ctx` (all contexts when `None`).
pub fn seed(s: u64, ctx: Option<Context>) {
    let mut m = seeds().lock();
    match ctx {
        Some(c) => {
            m.insert(c, (s, 0));
        }
        None => {
            m.clear();
            m.insert(Context::default(), (s, 0));
            GLOBAL_SEED.store(s, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

static GLOBAL_SEED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0x5eed);

thread_local! {
    static DRAWN_HERE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many seeds this thread has drawn: a recorded graph run that drew one is
/// not replayable (its calls would repeat the same random numbers).
pub(crate) fn seeds_drawn_here() -> u64 {
    DRAWN_HERE.with(std::cell::Cell::get)
}

/// The next seed of `ctx`'s generator (drawn at push time).
pub(crate) fn next_seed(ctx: Context) -> u64 {
    DRAWN_HERE.with(|c| c.set(c.get() + 1));
    let mut m = seeds().lock();
    let e =
        m.entry(ctx).or_insert((GLOBAL_SEED.load(std::sync::atomic::Ordering::Relaxed) ^ ((ctx.id as u64) << 32), 0));
    e.1 += 1;
    splitmix(e.0 ^ splitmix(e.1))
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// xoshiro256++ generator.
pub struct Rng([u64; 4]);

impl Rng {
    /// Seeded generator.
    pub fn new(seed: u64) -> Self {
        let mut s = seed;
        let mut st = [0u64; 4];
        for v in st.iter_mut() {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            *v = splitmix(s);
        }
        Rng(st)
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.0;
        let r = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        r
    }
    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
    /// Gamma(shape k, scale 1) by Marsaglia–Tsang.
    pub fn gamma(&mut self, k: f64) -> f64 {
        if k < 1.0 {
            let u = self.uniform().max(1e-300);
            return self.gamma(k + 1.0) * u.powf(1.0 / k);
        }
        let d = k - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = (1.0 + c * x).powi(3);
            if v <= 0.0 {
                continue;
            }
            let u = self.uniform();
            if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
                return d * v;
            }
        }
    }
    /// Failures before `k` successes with success probability `p`, as a
    /// Gamma(k, (1-p)/p)–Poisson mixture (as MXNet samples it).
    pub fn neg_binomial(&mut self, k: f64, p: f64) -> f64 {
        let lam = if p >= 1.0 { 0.0 } else { self.gamma(k) * (1.0 - p) / p };
        self.poisson(lam)
    }
    /// Negative binomial by mean `mu` and dispersion `alpha` (`alpha = 0`: Poisson(mu)).
    pub fn gen_neg_binomial(&mut self, mu: f64, alpha: f64) -> f64 {
        let lam = if alpha == 0.0 { mu } else { self.gamma(1.0 / alpha) * alpha * mu };
        self.poisson(lam)
    }
    /// Poisson(λ) (Knuth for small λ, normal approximation with correction above 30).
    pub fn poisson(&mut self, lam: f64) -> f64 {
        if lam < 30.0 {
            let l = (-lam).exp();
            let mut k = 0.0;
            let mut p = 1.0;
            loop {
                p *= self.uniform();
                if p <= l {
                    return k;
                }
                k += 1.0;
            }
        }
        (lam + lam.sqrt() * self.normal() + 0.5).floor().max(0.0)
    }
}

/// Distribution to sample.
#[derive(Clone, Copy, Debug)]
pub enum Dist {
    /// U[low, high)
    Uniform(f64, f64),
    /// N(loc, scale)
    Normal(f64, f64),
    /// integers in [low, high)
    RandInt(i64, i64),
    /// Exp(rate λ) with scale 1/λ
    Exponential(f64),
    /// Gamma(alpha, beta=scale)
    Gamma(f64, f64),
    /// Poisson(λ)
    Poisson(f64),
    /// Failures before `k` successes with success probability `p` (a
    /// Gamma(k, (1-p)/p)–Poisson mixture, as MXNet samples it).
    NegBinomial(f64, f64),
    /// Negative binomial by mean `mu` and dispersion `alpha`
    /// (Gamma(1/alpha, alpha·mu)–Poisson; `alpha = 0` is Poisson(mu)).
    GenNegBinomial(f64, f64),
}

/// Samples a new array from `dist`.
///
/// A parameter value outside the distribution's domain (`scale < 0`, ...) is
/// checked by the kernel, as in MXNet: the error marks the output and raises
/// at the next read or `waitall` (at the call under `NaiveEngine`). Dtypes
/// and `randint`'s range are checked here, at the call.
pub fn sample(dist: Dist, shape: Shape, dtype: DType, ctx: Context) -> Result<NDArray> {
    let name = dist.op_name();
    if let Dist::RandInt(l, h) = dist {
        check_randint(l, h, dtype)?;
    }
    let int_dist =
        matches!(dist, Dist::RandInt(..) | Dist::Poisson(_) | Dist::NegBinomial(..) | Dist::GenNegBinomial(..));
    if dtype == DType::Bool || (!int_dist && !dtype.is_float()) {
        return Err(Error::dtype(name, format!("dtype {dtype} is not supported (use a float dtype)")));
    }
    if matches!(dist, Dist::RandInt(..)) && dtype.is_float() {
        return Err(Error::dtype(name, format!("dtype {dtype} is not supported (use an integer dtype)")));
    }
    let out = NDArray::empty(shape, dtype, ctx)?;
    let seed = next_seed(ctx);
    if out.size() > 0 {
        let (code, a, b) = dist.code();
        let def = &DEFS[code as usize];
        let call = OpCall::new(def, &[], &[&out]).with_nums(&[a, b]);
        let ints = match dist {
            Dist::RandInt(l, h) => vec![seed as i64, l, h],
            _ => vec![seed as i64],
        };
        push_call(call.with_ints(&ints))?;
    }
    Ok(out)
}

/// `randint`'s range: non-empty and within `dtype`.
fn check_randint(l: i64, h: i64, dtype: DType) -> Result<()> {
    if h <= l {
        return Err(Error::value("random_randint", format!("low {l} >= high {h}")));
    }
    let (lo, hi) = match dtype {
        DType::I32 => (i32::MIN as i64, i32::MAX as i64 + 1),
        DType::I8 => (i8::MIN as i64, i8::MAX as i64 + 1),
        DType::U8 => (0, 256),
        _ => (i64::MIN, i64::MAX),
    };
    if l < lo || h > hi {
        return Err(Error::value("random_randint", format!("range [{l}, {h}) does not fit in dtype {dtype}")));
    }
    Ok(())
}

impl Dist {
    /// The sampler's operator name (in error messages).
    fn op_name(self) -> &'static str {
        match self {
            Dist::Uniform(..) => "random_uniform",
            Dist::Normal(..) => "random_normal",
            Dist::RandInt(..) => "random_randint",
            Dist::Exponential(_) => "random_exponential",
            Dist::Gamma(..) => "random_gamma",
            Dist::Poisson(_) => "random_poisson",
            Dist::NegBinomial(..) => "random_negative_binomial",
            Dist::GenNegBinomial(..) => "random_generalized_negative_binomial",
        }
    }

    /// Why the parameters are outside the distribution's domain, if they are.
    pub(super) fn invalid(self) -> Option<String> {
        let fin = |v: f64| v.is_finite();
        match self {
            Dist::Uniform(l, h) => {
                (!(fin(l) && fin(h)) || h < l).then(|| format!("need finite low <= high, got low={l}, high={h}"))
            }
            Dist::Normal(m, s) => (!(fin(m) && fin(s) && s >= 0.0))
                .then(|| format!("need a finite loc and scale >= 0, got loc={m}, scale={s}")),
            Dist::RandInt(..) => None,
            Dist::Exponential(lam) => {
                (!(fin(lam) && lam > 0.0)).then(|| format!("lam must be positive and finite, got {lam}"))
            }
            Dist::Gamma(a, b) => (!(fin(a) && fin(b) && a > 0.0 && b > 0.0))
                .then(|| format!("alpha and beta must be positive and finite, got {a}, {b}")),
            Dist::Poisson(l) => {
                (!(fin(l) && l >= 0.0)).then(|| format!("lam must be non-negative and finite, got {l}"))
            }
            Dist::NegBinomial(k, p) => (!(fin(k) && k > 0.0 && p > 0.0 && p <= 1.0))
                .then(|| format!("need k > 0 and 0 < p <= 1, got k={k}, p={p}")),
            Dist::GenNegBinomial(mu, alpha) => (!(fin(mu) && fin(alpha) && mu >= 0.0 && alpha >= 0.0))
                .then(|| format!("need mu >= 0 and alpha >= 0, got mu={mu}, alpha={alpha}")),
        }
    }

    /// Its sampler's index in `DEFS` and its two parameters.
    fn code(self) -> (i64, f64, f64) {
        match self {
            Dist::Uniform(l, h) => (0, l, h),
            Dist::Normal(m, s) => (1, m, s),
            Dist::RandInt(l, h) => (2, l as f64, h as f64),
            Dist::Exponential(l) => (3, l, 0.0),
            Dist::Gamma(a, b) => (4, a, b),
            Dist::Poisson(l) => (5, l, 0.0),
            Dist::NegBinomial(k, p) => (6, k, p),
            Dist::GenNegBinomial(m, a) => (7, m, a),
        }
    }

    /// The distribution a sampler's call describes.
    pub(super) fn of_call(c: &OpCall) -> Dist {
        let (a, b) = (c.nums[0], c.nums[1]);
        let i = DEFS.iter().position(|d| std::ptr::eq(d, c.def)).unwrap_or(0);
        match i {
            0 => Dist::Uniform(a, b),
            1 => Dist::Normal(a, b),
            2 => Dist::RandInt(c.ints[1], c.ints[2]),
            3 => Dist::Exponential(a),
            4 => Dist::Gamma(a, b),
            5 => Dist::Poisson(a),
            6 => Dist::NegBinomial(a, b),
            _ => Dist::GenNegBinomial(a, b),
        }
    }
}

/// U[low, high).
pub fn uniform(low: f64, high: f64, shape: Shape, dtype: DType, ctx: Context) -> Result<NDArray> {
    sample(Dist::Uniform(low, high), shape, dtype, ctx)
}

/// N(loc, scale).
pub fn normal(loc: f64, scale: f64, shape: Shape, dtype: DType, ctx: Context) -> Result<NDArray> {
    sample(Dist::Normal(loc, scale), shape, dtype, ctx)
}

/// A random permutation of `x` along the first axis.
pub fn shuffle(x: &NDArray) -> Result<NDArray> {
    let out = x.empty_like()?;
    if x.size() == 0 {
        return Ok(out);
    }
    let seed = next_seed(x.ctx());
    push_call(OpCall::new(&DEFS[8], &[x], &[&out]).with_ints(&[seed as i64]))?;
    Ok(out)
}

/// Draws `num` category indices per row of probabilities `p` (last axis).
pub fn multinomial(p: &NDArray, num: usize, dtype: DType) -> Result<NDArray> {
    if p.ndim() == 0 {
        return Err(Error::shape("sample_multinomial", &[p.shape()], "probabilities need at least one axis"));
    }
    let k = p.dims()[p.ndim() - 1];
    if k == 0 {
        return Err(Error::shape("sample_multinomial", &[p.shape()], "the distribution has no categories"));
    }
    if dtype == DType::Bool {
        return Err(Error::dtype("sample_multinomial", "dtype bool is not supported"));
    }
    // Every category index must be exact in the output dtype (as MXNet checks).
    let max_index: u64 = match dtype {
        DType::U8 => 255,
        DType::I8 => 127,
        DType::F16 => 2048,
        DType::BF16 => 256,
        DType::F32 => 1 << 24,
        DType::I32 => i32::MAX as u64,
        _ => u64::MAX,
    };
    if (k - 1) as u64 > max_index {
        return Err(Error::dtype(
            "sample_multinomial",
            format!("{k} categories do not fit in dtype {dtype} (largest exact index {max_index})"),
        ));
    }
    let mut od = p.dims()[..p.ndim() - 1].to_vec();
    if num > 1 {
        od.push(num);
    }
    let out = NDArray::empty(Shape::new(&od), dtype, p.ctx())?;
    let seed = next_seed(p.ctx());
    if out.size() > 0 {
        push_call(OpCall::new(&DEFS[9], &[p], &[&out]).with_ints(&[seed as i64, num as i64]))?;
    }
    Ok(out)
}

/// Samples with one distribution per element of the parameter arrays (MXNet's
/// `_sample_*` ops): the result has shape `params[0].shape + extra`, and row `i`
/// draws from the parameters at flat position `i`. `kind` is `gamma`
/// (alpha, beta), `poisson` (lam), `negative_binomial` (k, p) or
/// `generalized_negative_binomial` (mu, alpha). Parameter values are only
/// known on the engine, so a bad value fails the result at its next read.
pub fn sample_per_element(kind: &str, params: &[NDArray], extra: Shape, dtype: DType) -> Result<NDArray> {
    let name = format!("sample_{kind}");
    let want = match kind {
        "poisson" => 1,
        "gamma" | "negative_binomial" | "generalized_negative_binomial" => 2,
        _ => return Err(Error::value("sample", format!("unknown distribution '{kind}'"))),
    };
    if params.len() != want {
        return Err(Error::value(&name, format!("expected {want} parameter arrays, got {}", params.len())));
    }
    let first = &params[0];
    for p in &params[1..] {
        if p.shape() != first.shape() {
            return Err(Error::shape(&name, &[first.shape(), p.shape()], "parameter arrays must have the same shape"));
        }
        crate::ops::check_ctx(&name, first, p)?;
    }
    if dtype == DType::Bool {
        return Err(Error::dtype(&name, "dtype bool is not supported"));
    }
    let mut od = first.dims().to_vec();
    od.extend_from_slice(extra.dims());
    let out = NDArray::empty(Shape::new(&od), dtype, first.ctx())?;
    if out.size() == 0 {
        return Ok(out);
    }
    let seed = next_seed(first.ctx());
    let code = ["gamma", "poisson", "negative_binomial", "generalized_negative_binomial"]
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(0) as i64;
    let refs: Vec<&NDArray> = params.iter().collect();
    push_call(OpCall::new(&DEFS[10], &refs, &[&out]).with_ints(&[seed as i64, code]))?;
    Ok(out)
}

use crate::opdef::{one, param, Grad, Invocation, OpDef, ParamDef, ParamKind as K};

const RANDOM: Grad = Grad::None("random samples");
const TAIL: [ParamDef; 3] = [
    param("shape", K::Shape, Some("()"), "Shape of the result."),
    param("ctx", K::Context, Some("None"), "Context of the result."),
    param("dtype", K::DType, Some("None"), "Element type (default float32; int32 for randint)."),
];

fn forward_sample(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let f = |k| i.f64(k);
    let dist = match i.def.name {
        "_random_uniform" => Dist::Uniform(f("low")?, f("high")?),
        "_random_normal" => Dist::Normal(f("loc")?, f("scale")?),
        "_random_randint" => Dist::RandInt(i.i64("low")?, i.i64("high")?),
        "_random_exponential" => Dist::Exponential(f("lam")?),
        "_random_gamma" => Dist::Gamma(f("alpha")?, f("beta")?),
        "_random_negative_binomial" => Dist::NegBinomial(f("k")?, f("p")?),
        "_random_generalized_negative_binomial" => Dist::GenNegBinomial(f("mu")?, f("alpha")?),
        _ => Dist::Poisson(f("lam")?),
    };
    let default_dt = if i.def.name == "_random_randint" { DType::I32 } else { DType::F32 };
    one(sample(dist, i.shape("shape")?, i.dtype("dtype", default_dt)?, i.ctx("ctx")?))
}

macro_rules! samplers {
    ($( $name:literal [$($p:expr),*] $doc:literal; )*) => {
        /// The random samplers.
        pub static DEFS: &[OpDef] = &[
            $( OpDef {
                name: $name,
                params: &[$($p,)* TAIL[0], TAIL[1], TAIL[2]],
                doc: $doc,
                forward: forward_sample,
                cpu: KernelSlot::Call(sample_kernel),
                infer: Some(infer_sample),
                grad: RANDOM,
                ..OpDef::BASE
            }, )*
            OpDef {
                name: "_shuffle",
                inputs: &["data"],
                doc: "A copy with the first axis randomly permuted.",
                forward: |i| one(shuffle(i.x(0)?)),
                cpu: KernelSlot::Call(shuffle_kernel),
                infer: Some(infer_shuffle),
                grad: RANDOM,
                ..OpDef::BASE
            },
            OpDef {
                name: "_sample_multinomial",
                inputs: &["data"],
                params: &[
                    param("shape", K::Ints, Some("()"), "Samples per distribution."),
                    param("dtype", K::DType, Some("'int32'"), "Element type of the samples."),
                ],
                doc: "Samples from the categorical distributions in the last axis of `data`.",
                forward: forward_multinomial,
                cpu: KernelSlot::Call(multinomial_kernel),
                infer: Some(infer_multinomial),
                grad: RANDOM,
                ..OpDef::BASE
            },
            OpDef {
                name: "_sample_per_element",
                inputs: &["p0", "p1"],
                params: &[
                    param("kind", K::Str, None, "The distribution."),
                    param("shape", K::Shape, Some("()"), "Samples per parameter element."),
                    param("dtype", K::DType, Some("'float32'"), "Element type."),
                ],
                doc: "One distribution per element of the parameter arrays.",
                forward: |i| {
                    let dt = i.dtype("dtype", DType::F32)?;
                    one(sample_per_element(&i.str("kind")?, &i.all(), i.shape("shape")?, dt))
                },
                cpu: KernelSlot::Call(per_element_kernel),
                infer: Some(infer_per_element),
                grad: RANDOM,
                ..OpDef::BASE
            },
            OpDef {
                name: "_sample_unique_zipfian",
                outputs: &["output", "num_tries"],
                params: &[
                    param("range_max", K::Int, None, "Classes are drawn from [0, range_max)."),
                    param("shape", K::Shape, None, "(batch_size, num_sampled)."),
                    TAIL[1],
                ],
                doc: "Per row, `num_sampled` distinct classes from the log-uniform distribution \
                      `P(c) = log((c+2)/(c+1)) / log(range_max+1)` (int64), and the draws each row took.",
                forward: zipfian::forward,
                cpu: KernelSlot::Call(zipfian::kernel),
                infer: Some(zipfian::infer),
                grad: RANDOM,
                ..OpDef::BASE
            },
        ];
    };
}

fn infer_sample(def: &'static OpDef, a: &Attrs, _ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let default_dt = if def.name == "_random_randint" { DType::I32 } else { DType::F32 };
    Ok(vec![Meta { shape: i.shape("shape")?, dtype: i.dtype("dtype", default_dt)?, ctx: i.ctx("ctx")? }])
}

fn infer_shuffle(_d: &'static OpDef, _a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    Ok(vec![ins[0].clone()])
}

fn infer_multinomial(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let p = &ins[0].shape;
    if p.ndim() == 0 {
        return Err(Error::shape(def.name, &[p], "probabilities need at least one axis"));
    }
    let mut od = p.dims()[..p.ndim() - 1].to_vec();
    od.extend(i.ints("shape")?.unwrap_or_default().iter().map(|&d| d.max(0) as usize));
    Ok(vec![Meta { shape: Shape::new(&od), dtype: i.dtype("dtype", DType::I32)?, ctx: ins[0].ctx }])
}

fn infer_per_element(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let mut od = ins[0].shape.dims().to_vec();
    od.extend_from_slice(i.shape("shape")?.dims());
    Ok(vec![Meta { shape: Shape::new(&od), dtype: i.dtype("dtype", DType::F32)?, ctx: ins[0].ctx }])
}

fn forward_multinomial(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let s = i.ints("shape")?.unwrap_or_default();
    let num = s.iter().product::<i64>().max(1) as usize;
    let p = i.x(0)?;
    let r = multinomial(p, num, i.dtype("dtype", DType::I32)?)?;
    // Output shape: data.shape[:-1] + shape (MXNet).
    let mut od = p.dims()[..p.ndim().saturating_sub(1)].to_vec();
    od.extend(s.iter().map(|&d| d.max(0) as usize));
    one(crate::ops::reshape_to(&r, Shape::new(&od)))
}

samplers! {
    "_random_uniform" [param("low", K::Float, Some("0.0"), "Lower bound."), param("high", K::Float, Some("1.0"), "Upper bound.")]
        "Uniform samples in [low, high).";
    "_random_normal" [param("loc", K::Float, Some("0.0"), "Mean."), param("scale", K::Float, Some("1.0"), "Standard deviation.")]
        "Normal samples.";
    "_random_randint" [param("low", K::Int, Some("0"), "Lower bound."), param("high", K::Int, Some("1"), "Upper bound (exclusive).")]
        "Uniform integers in [low, high).";
    "_random_exponential" [param("lam", K::Float, Some("1.0"), "Rate.")] "Exponential samples.";
    "_random_gamma" [param("alpha", K::Float, Some("1.0"), "Shape."), param("beta", K::Float, Some("1.0"), "Scale.")]
        "Gamma samples.";
    "_random_poisson" [param("lam", K::Float, Some("1.0"), "Rate.")] "Poisson samples.";
    "_random_negative_binomial" [param("k", K::Float, Some("1.0"), "Successes."), param("p", K::Float, Some("1.0"), "Success probability.")]
        "Negative binomial samples.";
    "_random_generalized_negative_binomial" [param("mu", K::Float, Some("1.0"), "Mean."), param("alpha", K::Float, Some("1.0"), "Dispersion.")]
        "Generalized negative binomial samples.";
}
