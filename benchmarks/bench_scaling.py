"""Data-parallel scaling of the MLP (784-512-512-10, batch 256 per rank) on MPI: 1 rank
against 2 ranks on this machine, where the time goes (profiler), and a ring-allreduce
projection to 8, 64 and 256 ranks from the measured per-step compute and allreduce costs.

    .venv/bin/python benchmarks/bench_scaling.py            # runs everything (~1-2 min)

It launches itself three times: 1 rank with the default threads (both cores), 1 rank with
one thread (one core), and ``mpirun -np 2`` with one thread per rank (one core each), so
the 2-rank run is compared with twice the one-core rank (weak scaling per core) and with
the whole machine in one process. ``--buckets-mb X`` sets ``FERROMX_DIST_BUCKET_MB`` (and
the first bucket) for the distributed run; ``--trace PATH`` keeps rank 0's Chrome trace of
one profiled step (and ``PATH.svg``, its timeline).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH = 256


def _net(mx, nn):
    mx.random.seed(1)
    net = nn.Sequential()
    net.add(nn.Dense(512, activation="relu", in_units=784, prefix="fc0_"),
            nn.Dense(512, activation="relu", in_units=512, prefix="fc1_"),
            nn.Dense(10, in_units=512, prefix="fc2_"))
    net.initialize(mx.init.Xavier())
    return net


def _overlap_stats(evs):
    """From one profiled step: total time the allreduce ops ran, the part of it before
    backward's last gemm ended (hidden behind compute), and backward's length."""
    ops = [e for e in evs if e["ph"] == "X" and e["cat"] == "operator"]
    ar = [(e["ts"], e["ts"] + e["dur"]) for e in ops
          if e["name"].startswith("allreduce(") and not e["name"].endswith(".status")]
    loss = [e for e in ops if e["name"] == "softmax_ce_loss"]
    bw_end = max(e["ts"] + e["dur"] for e in ops
                 if e["name"] == "dot" and f"({BATCH}, 784)" in e["args"].get("detail", ""))
    bw_start = loss[0]["ts"] + loss[0]["dur"] if loss else bw_end
    busy = sum(b - a for a, b in ar)
    hidden = sum(max(0.0, min(b, bw_end) - a) for a, b in ar)
    return {"buckets": len(ar), "comm_busy_ms": busy / 1e3, "comm_hidden_ms": hidden / 1e3,
            "backward_ms": (bw_end - bw_start) / 1e3}


def worker(args):
    import ferromx as mx
    import ferromx.distributed as dist
    from ferromx import autograd, gluon, nd, profiler
    from ferromx.gluon import nn

    dist.init()
    rank, size = dist.rank(), dist.size()
    rng = np.random.default_rng(rank)
    x = nd.array(rng.standard_normal((BATCH, 784)).astype(np.float32))
    y = nd.array(rng.integers(0, 10, BATCH).astype(np.float32))
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    opt = {"learning_rate": 0.05, "momentum": 0.9}

    def run(trainer, net, steps, per_step=False):
        times = []
        mx.nd.waitall()
        t0 = time.perf_counter()
        for _ in range(steps):
            t = time.perf_counter()
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(BATCH)
            if per_step:
                mx.nd.waitall()
                times.append(time.perf_counter() - t)
        mx.nd.waitall()
        return (time.perf_counter() - t0) / steps, times

    res = {"ranks": size}
    # compute only (a local Trainer, no communication) and data parallel training
    # (DistributedTrainer), both pipelined (one wait per round), rounds alternating so
    # that load from other work hits both alike; medians over the rounds
    net_l = _net(mx, nn)
    local = gluon.Trainer(net_l.collect_params(), "sgd", opt)
    net = _net(mx, nn)
    dist.broadcast_parameters(net.collect_params(), root_rank=0)
    trainer = dist.DistributedTrainer(net.collect_params(), "sgd", opt)
    run(local, net_l, 3)
    run(trainer, net, 3)
    loc, par = [], []
    for _ in range(args.rounds):
        loc.append(run(local, net_l, args.steps)[0])
        par.append(run(trainer, net, args.steps)[0])
    res["compute_ms"] = statistics.median(loc) * 1e3
    res["step_ms"] = statistics.median(par) * 1e3
    res["local_samples_per_s"] = BATCH / statistics.median(loc)
    res["samples_per_s"] = size * BATCH / statistics.median(par)
    nparams = sum(int(np.prod(p.shape)) for p in net.collect_params().values())
    res["grad_bytes"] = nparams * 4
    if size > 1:
        # allreduce alone: the gradient's size and a tiny message (latency)
        for key, n in (("allreduce_grad_ms", nparams), ("allreduce_small_ms", 1)):
            a = nd.ones((n,))
            ts = []
            for _ in range(5):
                a.wait_to_read()
                dist._S["comm"].Barrier()
                t = time.perf_counter()
                for _ in range(20):
                    dist.allreduce_(a, average=False)
                a.wait_to_read()
                ts.append((time.perf_counter() - t) / 20)
            res[key] = min(ts) * 1e3
        profiler.set_config(profile_all=True)
        profiler.set_state("run")
        run(trainer, net, 1)
        profiler.set_state("stop")
        evs = profiler.events()
        res.update(_overlap_stats(evs))
        if args.trace and rank == 0:
            profiler.set_config(filename=args.trace)
            profiler.dump()
            profiler.timeline(args.trace, args.trace + ".svg")
    if rank == 0:
        print("RESULT " + json.dumps(res), flush=True)


def _launch(np_, threads, extra, args):
    env = dict(os.environ)
    env.update(extra)
    if threads:
        env["FERROMX_CPU_WORKER_NTHREADS"] = env["RAYON_NUM_THREADS"] = str(threads)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--steps", str(args.steps),
           "--rounds", str(args.rounds)]
    if args.trace and np_ > 1:
        cmd += ["--trace", args.trace]
    if np_ > 1:
        mpirun = shutil.which("mpirun", path=os.path.dirname(sys.executable)) or "mpirun"
        cmd = [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(np_)] + cmd
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"worker failed ({' '.join(cmd)}):\n{r.stdout}\n{r.stderr}")
    return json.loads(line[7:])


def _ring_ms(p, nbytes, alpha_ms, beta_ms_per_byte):
    """Ring allreduce: 2(p-1) steps, each moving nbytes/p (reduce-scatter + allgather)."""
    return 2 * (p - 1) * alpha_ms + 2 * (p - 1) / p * nbytes * beta_ms_per_byte


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--steps", type=int, default=10, help="steps per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--trace", default=None)
    ap.add_argument("--buckets-mb", type=float, default=None)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    extra = {}
    if args.buckets_mb is not None:
        extra = {"FERROMX_DIST_BUCKET_MB": str(args.buckets_mb),
                 "FERROMX_DIST_FIRST_BUCKET_MB": str(args.buckets_mb)}
    one_full = _launch(1, None, {}, args)
    one_core = _launch(1, 1, {}, args)
    two = _launch(2, 1, extra, args)
    print(f"MLP 784-512-512-10, batch {BATCH} per rank, {args.rounds} rounds x {args.steps} steps, "
          f"gradients {two['grad_bytes'] / 2**20:.2f} MiB")
    print(f"  1 rank, 2 threads : {one_full['local_samples_per_s']:8.0f} samples/s "
          f"({one_full['compute_ms']:.2f} ms/step, gluon.Trainer)")
    print(f"  1 rank, 1 thread  : {one_core['local_samples_per_s']:8.0f} samples/s "
          f"({one_core['compute_ms']:.2f} ms/step, gluon.Trainer; DistributedTrainer "
          f"{one_core['step_ms']:.2f} ms/step)")
    print(f"  2 ranks, 1 thread : {two['samples_per_s']:8.0f} samples/s "
          f"({two['step_ms']:.2f} ms/step)")
    print(f"  efficiency vs 2 x (1 rank, 1 thread): "
          f"{two['samples_per_s'] / (2 * one_core['local_samples_per_s']):.2f}; "
          f"speed-up vs 1 rank on both cores: "
          f"{two['samples_per_s'] / one_full['local_samples_per_s']:.2f}")
    print(f"  per step at 2 ranks: compute (no communication) {two['compute_ms']:.2f} ms; "
          f"allreduce of the gradients alone {two['allreduce_grad_ms']:.2f} ms, of 4 bytes "
          f"{two['allreduce_small_ms']:.3f} ms")
    print(f"  profiled step: {two['buckets']} buckets, allreduce ops ran "
          f"{two['comm_busy_ms']:.2f} ms, {two['comm_hidden_ms']:.2f} ms of it while "
          f"backward ({two['backward_ms']:.2f} ms) was still computing")
    # ring model fitted to the 2-rank measurements: A(2) = 2 alpha + S beta
    alpha = two["allreduce_small_ms"] / 2
    beta = max(two["allreduce_grad_ms"] - 2 * alpha, 1e-9) / two["grad_bytes"]
    c, bw, s = two["compute_ms"], two["backward_ms"], two["grad_bytes"]
    print(f"  ring model: alpha {alpha * 1e3:.1f} us per step, "
          f"{1 / beta / 1e6:.2f} GB/s; compute {c:.2f} ms/step (per rank, 2 ranks running), "
          f"backward {bw:.2f} ms")
    print("  ranks | allreduce ms | step ms (no overlap / overlap with backward) "
          "| efficiency | samples/s")
    for p in (2, 8, 64, 256):
        a = _ring_ms(p, s, alpha, beta)
        t_no, t_ov = c + a, c + max(0.0, a - bw)
        print(f"  {p:5d} | {a:12.2f} | {t_no:8.2f} / {t_ov:8.2f} | {c / t_no:.2f} / "
              f"{c / t_ov:.2f} | {p * BATCH / t_no * 1e3:9.0f} / {p * BATCH / t_ov * 1e3:9.0f}")
    return None


if __name__ == "__main__":
    main()
