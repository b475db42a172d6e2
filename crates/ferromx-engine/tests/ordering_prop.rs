//! Property tests of the engine's ordering guarantee: ops sharing a var, one of
//! them writing it, take effect in push order; reads between two writes see
//! exactly the writes pushed before them.
//!
//! Random programs (seeded xorshift; `FERROMX_PROP_SEED` overrides the base
//! seed) push ops with random read/write sets over 2–6 vars. Each op appends
//! its key to the log of every var it writes, snapshots the log length of
//! every var it reads, records how many reads of each written var had
//! completed when it started, and checks no conflicting op runs at the same
//! time. Checks:
//! * one pusher, or several pushers serialised by a lock (so the engine's
//!   global push order is known): observations equal a sequential replay;
//! * several free pushers: per-thread push order is respected in every var
//!   log, and the observations admit a serialisation (no cycle in the
//!   happens-before graph they imply).
mod common;

use common::*;
use ferromx_engine::{Engine, EngineConfig, EngineMode, Op, Var};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn base_seed() -> u64 {
    std::env::var("FERROMX_PROP_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_F00D)
}

const MAX_OPS_PER_THREAD: usize = 48;

#[derive(Clone, Debug)]
struct OpSpec {
    key: usize,
    reads: Vec<usize>,
    writes: Vec<usize>,
    /// Also pass a written var among the reads (the engine must treat it as a write).
    dup_read: bool,
    /// Busy-spin this long inside the op, to widen race windows.
    spin_us: u64,
}

#[derive(Clone, Debug)]
enum Step {
    Push(OpSpec),
    WaitRead(usize),
    WaitWrite(usize),
}

#[derive(Debug)]
struct Program {
    nvars: usize,
    threads: Vec<Vec<Step>>,
    /// Spec of every op by key (`thread * MAX_OPS_PER_THREAD + index`).
    specs: Vec<Option<OpSpec>>,
}

fn gen_program(rng: &mut Rng, max_threads: usize, min_threads: usize) -> Program {
    let nvars = rng.range(2, 6);
    let nthreads = rng.range(min_threads, max_threads);
    let mut specs = vec![None; nthreads * MAX_OPS_PER_THREAD];
    let mut threads = Vec::new();
    for t in 0..nthreads {
        let nops = rng.range(1, MAX_OPS_PER_THREAD);
        let mut steps = Vec::new();
        for i in 0..nops {
            let (mut reads, mut writes) = (Vec::new(), Vec::new());
            for v in 0..nvars {
                match rng.next_u64() % 6 {
                    0 | 1 => reads.push(v),
                    2 => writes.push(v),
                    _ => {}
                }
            }
            let spec = OpSpec {
                key: t * MAX_OPS_PER_THREAD + i,
                dup_read: !writes.is_empty() && rng.chance(1, 5),
                spin_us: if rng.chance(1, 8) { rng.range(1, 20) as u64 } else { 0 },
                reads,
                writes,
            };
            specs[spec.key] = Some(spec.clone());
            steps.push(Step::Push(spec));
            if rng.chance(1, 12) {
                let v = rng.range(0, nvars - 1);
                steps.push(if rng.chance(1, 2) { Step::WaitRead(v) } else { Step::WaitWrite(v) });
            }
        }
        threads.push(steps);
    }
    Program { nvars, threads, specs }
}

#[derive(Default)]
struct Probe {
    log: Mutex<Vec<usize>>,
    reads_done: AtomicUsize,
    readers: AtomicUsize,
    writers: AtomicUsize,
}

#[derive(Clone, Debug, Default)]
struct Obs {
    /// (var, log length seen) per var read.
    snaps: Vec<(usize, usize)>,
    /// (var, reads of it completed when this op started) per var written.
    reads_done: Vec<(usize, usize)>,
}

struct State {
    probes: Vec<Probe>,
    obs: Vec<Mutex<Option<Obs>>>,
    violations: Mutex<Vec<String>>,
}

impl State {
    fn violation(&self, s: String) {
        self.violations.lock().unwrap().push(s);
    }
}

fn body(st: &State, spec: &OpSpec) {
    let mut obs = Obs::default();
    for &v in &spec.reads {
        let p = &st.probes[v];
        if p.writers.load(Ordering::SeqCst) != 0 {
            st.violation(format!("op {} reads var {v} while a writer runs", spec.key));
        }
        p.readers.fetch_add(1, Ordering::SeqCst);
        obs.snaps.push((v, p.log.lock().unwrap().len()));
    }
    for &v in &spec.writes {
        let p = &st.probes[v];
        if p.writers.fetch_add(1, Ordering::SeqCst) != 0 || p.readers.load(Ordering::SeqCst) != 0 {
            st.violation(format!("op {} writes var {v} concurrently with another op", spec.key));
        }
        obs.reads_done.push((v, p.reads_done.load(Ordering::SeqCst)));
        p.log.lock().unwrap().push(spec.key);
    }
    if spec.spin_us > 0 {
        let t = Instant::now();
        while t.elapsed() < Duration::from_micros(spec.spin_us) {
            std::hint::spin_loop();
        }
    }
    for &v in &spec.writes {
        st.probes[v].writers.fetch_sub(1, Ordering::SeqCst);
    }
    for &v in &spec.reads {
        let p = &st.probes[v];
        p.readers.fetch_sub(1, Ordering::SeqCst);
        p.reads_done.fetch_add(1, Ordering::SeqCst);
    }
    *st.obs[spec.key].lock().unwrap() = Some(obs);
}

fn make_op(st: &Arc<State>, vars: &[Var], spec: &OpSpec) -> Op {
    let reads: Vec<&Var> = spec.reads.iter().map(|&v| &vars[v]).collect();
    let writes: Vec<&Var> = spec.writes.iter().map(|&v| &vars[v]).collect();
    let (st2, spec2) = (st.clone(), spec.clone());
    let mut op = Op::new("prop", move || {
        body(&st2, &spec2);
        Ok(())
    })
    .reads(reads)
    .writes(writes);
    if spec.dup_read {
        // A var both read and written counts as written; duplicates merge.
        op = op.reads([&vars[spec.writes[0]]]).writes([&vars[spec.writes[0]]]);
    }
    op
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Pushes (and wait-ticket creation) under one lock, recording the global order.
    Serialized,
    /// Pushers race each other.
    Free,
}

/// Counts of writes and reads of `v` among `keys`.
fn counts(prog: &Program, keys: &[usize], v: usize) -> (usize, usize) {
    let spec = |k: usize| prog.specs[k].as_ref().expect("pushed op has a spec");
    let w = keys.iter().filter(|&&k| spec(k).writes.contains(&v)).count();
    let r = keys.iter().filter(|&&k| spec(k).reads.contains(&v)).count();
    (w, r)
}

/// Runs one program; returns the global push order in `Serialized` mode.
fn run_program(engine: &Arc<Engine>, prog: &Arc<Program>, mode: Mode) -> (Arc<State>, Vec<usize>) {
    let st = Arc::new(State {
        probes: (0..prog.nvars).map(|_| Probe::default()).collect(),
        obs: (0..prog.specs.len()).map(|_| Mutex::new(None)).collect(),
        violations: Mutex::new(Vec::new()),
    });
    let vars: Arc<Vec<Var>> = Arc::new((0..prog.nvars).map(|_| engine.new_var()).collect());
    let order = Arc::new(Mutex::new(Vec::new()));
    let run_thread = {
        let (engine, prog, st, vars, order) = (engine.clone(), prog.clone(), st.clone(), vars.clone(), order.clone());
        move |t: usize| {
            let mut mine: Vec<usize> = Vec::new();
            for step in &prog.threads[t] {
                match step {
                    Step::Push(spec) => {
                        let op = make_op(&st, &vars, spec);
                        if mode == Mode::Serialized {
                            let mut g = order.lock().unwrap();
                            g.push(spec.key);
                            engine.push(op);
                        } else {
                            engine.push(op);
                        }
                        mine.push(spec.key);
                    }
                    Step::WaitRead(v) | Step::WaitWrite(v) => {
                        let write = matches!(step, Step::WaitWrite(_));
                        let (ticket, pushed) = {
                            let g = order.lock().unwrap();
                            let t = if write {
                                engine.write_ticket(&vars[*v], None)
                            } else {
                                engine.read_ticket(&vars[*v], None)
                            };
                            let pushed = if mode == Mode::Serialized { g.clone() } else { mine.clone() };
                            (t.expect("wait outside an op is allowed"), pushed)
                        };
                        ticket.finish().expect("no op of the program fails");
                        let (w, r) = counts(&prog, &pushed, *v);
                        let p = &st.probes[*v];
                        let log = p.log.lock().unwrap().clone();
                        let seen = if mode == Mode::Serialized {
                            log.len()
                        } else {
                            log.iter().filter(|k| mine.contains(k)).count()
                        };
                        if seen < w {
                            st.violation(format!(
                                "thread {t}: wait on var {v} returned with {seen} of {w} writes done"
                            ));
                        }
                        if write && mode == Mode::Serialized && p.reads_done.load(Ordering::SeqCst) < r {
                            st.violation(format!("thread {t}: wait_to_write on var {v} returned before {r} reads"));
                        }
                    }
                }
            }
        }
    };
    let n = prog.threads.len();
    if n == 1 {
        run_thread(0);
    } else {
        let run_thread = Arc::new(run_thread);
        let hs: Vec<_> = (0..n)
            .map(|t| {
                let f = run_thread.clone();
                std::thread::spawn(move || f(t))
            })
            .collect();
        for h in hs {
            h.join().expect("pusher thread panicked");
        }
    }
    engine.wait_all().expect("no op of the program fails");
    let order = order.lock().unwrap().clone();
    (st, order)
}

/// Compares observations with a sequential replay of `order`.
fn check_exact(prog: &Program, st: &State, order: &[usize]) -> Result<(), String> {
    let nv = prog.nvars;
    let (mut writes, mut reads) = (vec![0usize; nv], vec![0usize; nv]);
    let mut expect_log: Vec<Vec<usize>> = vec![Vec::new(); nv];
    for &k in order {
        let spec = prog.specs[k].as_ref().unwrap();
        let obs = st.obs[k].lock().unwrap().clone().ok_or(format!("op {k} never ran"))?;
        for &(v, snap) in &obs.snaps {
            if snap != writes[v] {
                return Err(format!("op {k} read var {v} after {snap} writes, sequentially {}", writes[v]));
            }
        }
        for &(v, rd) in &obs.reads_done {
            if rd != reads[v] {
                return Err(format!("op {k} wrote var {v} after {rd} reads done, sequentially {}", reads[v]));
            }
        }
        for &v in &spec.reads {
            reads[v] += 1;
        }
        for &v in &spec.writes {
            writes[v] += 1;
            expect_log[v].push(k);
        }
    }
    for (v, exp) in expect_log.iter().enumerate() {
        let got = st.probes[v].log.lock().unwrap().clone();
        if &got != exp {
            return Err(format!("var {v}: write log {got:?}, sequentially {exp:?}"));
        }
    }
    Ok(())
}

/// Checks what holds for any push interleaving: every op ran once; each
/// thread's writes appear in its push order; every write saw exactly the
/// reads that came before it; and the implied happens-before graph is acyclic.
fn check_serializable(prog: &Program, st: &State) -> Result<(), String> {
    let n = prog.specs.len();
    let mut obs: Vec<Option<Obs>> = Vec::with_capacity(n);
    for (k, s) in prog.specs.iter().enumerate() {
        let o = st.obs[k].lock().unwrap().clone();
        if s.is_some() != o.is_some() {
            return Err(format!("op {k}: ran = {}, pushed = {}", o.is_some(), s.is_some()));
        }
        obs.push(o);
    }
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); n];
    for steps in &prog.threads {
        let keys: Vec<usize> =
            steps.iter().filter_map(|s| if let Step::Push(p) = s { Some(p.key) } else { None }).collect();
        for w in keys.windows(2) {
            edges[w[0]].push(w[1]);
        }
    }
    for v in 0..prog.nvars {
        let log = st.probes[v].log.lock().unwrap().clone();
        let writers: Vec<usize> =
            (0..n).filter(|&k| prog.specs[k].as_ref().is_some_and(|s| s.writes.contains(&v))).collect();
        let mut sorted = log.clone();
        sorted.sort_unstable();
        if sorted != writers {
            return Err(format!("var {v}: log {log:?} is not exactly its writers {writers:?}"));
        }
        for w in log.windows(2) {
            let (a, b) = (w[0], w[1]);
            if a / MAX_OPS_PER_THREAD == b / MAX_OPS_PER_THREAD && a > b {
                return Err(format!("var {v}: writes {a} and {b} of one thread ran out of push order"));
            }
            edges[a].push(b);
        }
        let mut snaps: Vec<usize> = Vec::new();
        for (k, o) in obs.iter().enumerate() {
            let Some(o) = o else { continue };
            for &(_, snap) in o.snaps.iter().filter(|(x, _)| *x == v) {
                snaps.push(snap);
                if snap > 0 {
                    edges[log[snap - 1]].push(k);
                }
                if snap < log.len() {
                    edges[k].push(log[snap]);
                }
            }
        }
        for (pos, &k) in log.iter().enumerate() {
            let o = obs[k].as_ref().unwrap();
            let rd = o.reads_done.iter().find(|(x, _)| *x == v).unwrap().1;
            let expected = snaps.iter().filter(|&&s| s <= pos).count();
            if rd != expected {
                return Err(format!("var {v}: write {k} (#{pos}) started after {rd} reads, expected {expected}"));
            }
        }
    }
    // Kahn's algorithm over the ops that ran.
    let mut indeg = vec![0usize; n];
    for e in edges.iter().flatten() {
        indeg[*e] += 1;
    }
    let mut q: VecDeque<usize> = (0..n).filter(|&k| obs[k].is_some() && indeg[k] == 0).collect();
    let mut seen = 0;
    while let Some(k) = q.pop_front() {
        seen += 1;
        for &e in &edges[k] {
            indeg[e] -= 1;
            if indeg[e] == 0 {
                q.push_back(e);
            }
        }
    }
    let ran = obs.iter().filter(|o| o.is_some()).count();
    if seen != ran {
        return Err("observations imply a happens-before cycle: no push order explains them".into());
    }
    Ok(())
}

fn engines() -> Vec<Arc<Engine>> {
    (1..=4)
        .map(|w| {
            Arc::new(Engine::new(EngineConfig {
                mode: EngineMode::Threaded,
                cpu_workers: w,
                // Odd worker counts park at once (exercising wake-ups), even ones spin first.
                spin: if w % 2 == 1 { Duration::ZERO } else { Duration::from_micros(50) },
                ..EngineConfig::default()
            }))
        })
        .collect()
}

fn run_many(
    label: &str,
    seed_salt: u64,
    programs: usize,
    threads: (usize, usize),
    mode: Mode,
    engines: Vec<Arc<Engine>>,
) {
    let seed = base_seed() ^ seed_salt;
    let label = label.to_string();
    with_deadline(Duration::from_secs(120), move || {
        let mut rng = Rng::new(seed);
        for i in 0..programs {
            let prog_seed = rng.next_u64();
            let mut prng = Rng::new(prog_seed);
            let prog = Arc::new(gen_program(&mut prng, threads.1, threads.0));
            let engine = &engines[i % engines.len()];
            let (st, order) = run_program(engine, &prog, mode);
            let v = st.violations.lock().unwrap().clone();
            let res = if !v.is_empty() {
                Err(v.join("; "))
            } else if mode == Mode::Serialized {
                check_exact(&prog, &st, &order).and_then(|_| check_serializable(&prog, &st))
            } else {
                check_serializable(&prog, &st)
            };
            if let Err(e) = res {
                panic!(
                    "{label}: program {i} (seed {prog_seed:#x}, base seed {seed:#x}, {} workers) failed: {e}\n{prog:#?}",
                    engine.config().cpu_workers
                );
            }
        }
    });
}

#[test]
fn single_pusher_matches_sequential_execution() {
    run_many("single pusher", 1, 3600, (1, 1), Mode::Serialized, engines());
}

#[test]
fn serialized_pushers_match_global_push_order() {
    run_many("serialized pushers", 2, 1200, (2, 4), Mode::Serialized, engines());
}

#[test]
fn free_pushers_are_serializable() {
    run_many("free pushers", 3, 1800, (2, 4), Mode::Free, engines());
}

#[test]
fn naive_engine_matches_sequential_execution() {
    run_many("naive", 4, 1500, (1, 1), Mode::Serialized, vec![Arc::new(naive())]);
}

#[test]
fn independent_ops_overlap_on_two_workers() {
    with_deadline(DEADLINE, || {
        const N: u32 = 12;
        const OP: Duration = Duration::from_millis(20);
        let engine = threaded(2);
        let active = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let vars: Vec<Var> = (0..N).map(|_| engine.new_var()).collect();
        let start = Instant::now();
        for v in &vars {
            let (active, peak) = (active.clone(), peak.clone());
            engine.push(
                Op::new("sleepy", move || {
                    let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(OP);
                    active.fetch_sub(1, Ordering::SeqCst);
                    Ok(())
                })
                .writes([v]),
            );
        }
        engine.wait_all().unwrap();
        let wall = start.elapsed();
        let serial = OP * N;
        assert_eq!(peak.load(Ordering::SeqCst), 2, "two workers must run two independent ops at once, never more");
        assert!(
            wall < serial.mul_f64(0.8),
            "{N} independent {OP:?} ops on 2 workers took {wall:?}; serial would be {serial:?}"
        );
    });
}

#[test]
fn rng_is_deterministic_and_spread() {
    let (mut a, mut b) = (Rng::new(7), Rng::new(7));
    assert!((0..100).all(|_| a.next_u64() == b.next_u64()));
    let mut hist = [0usize; 6];
    for _ in 0..6000 {
        hist[a.range(0, 5)] += 1;
    }
    assert!(hist.iter().all(|&c| (700..1300).contains(&c)), "{hist:?}");
}
