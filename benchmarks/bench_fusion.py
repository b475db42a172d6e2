# ruff: noqa: B023  (closures are called inside the iteration that defines them)
"""Eager fusion benchmark: 16M float32 `exp(x*2+1)*x - (x*2+1)`, eager, side by side.

Prints, in one run: ferromx fused (default) and unfused (`set_fusion(False)`), one
`y = x * 2` pass over the same array (the memory-bandwidth floor the goal is measured
against: fused ≤ 1.5× that pass), the backward of the recorded chain, the dispatch of
`x = x + 1` on 1x2 (unfusable-code check: fusion on vs off), NumPy, and MXNet 1.9.1 /
JAX jit when their venvs exist (re-run as subprocesses: MXNET_PYTHON, JAX_PYTHON).

    python benchmarks/bench_fusion.py [--quick]
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N = 16 << 20


def best(fn, reps=7):
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return min(ts) * 1e3


def bench_ferromx(reps):
    from ferromx import _native, autograd, nd

    r = {}
    x = nd.random.uniform(shape=(N,))
    x.wait_to_read()
    r["pass_ms"] = best(lambda: (x * 2).wait_to_read(), reps)
    chain = lambda: (nd.exp(x * 2 + 1) * x - (x * 2 + 1)).wait_to_read()
    for on, key in ((True, "fused_ms"), (False, "unfused_ms")):
        _native.set_fusion(on)
        r[key] = best(chain, reps)
        xg = nd.random.uniform(shape=(N,))
        xg.attach_grad()
        nd.waitall()

        def bwd():
            with autograd.record():
                y = nd.exp(xg * 2 + 1) * xg - (xg * 2 + 1)
            y.backward()
            xg.grad.wait_to_read()

        r[key.replace("_ms", "_fwd_bwd_ms")] = best(bwd, max(3, reps // 2))

        def bwd_only():
            with autograd.record():
                y = nd.exp(xg * 2 + 1) * xg - (xg * 2 + 1)
            y.wait_to_read()
            t = time.perf_counter()
            y.backward()
            xg.grad.wait_to_read()
            return (time.perf_counter() - t) * 1e3

        bwd_only()
        r[key.replace("_ms", "_bwd_ms")] = min(bwd_only() for _ in range(max(3, reps // 2)))
        s = nd.zeros((1, 2))
        s.wait_to_read()

        def disp():
            y = s
            for _ in range(10000):
                y = y + 1
            y.wait_to_read()

        r[key.replace("_ms", "_dispatch_us")] = best(disp, 5) / 10000 * 1e3
    _native.set_fusion(True)
    return r


def bench_numpy(reps):
    x = np.random.rand(N).astype(np.float32)
    return {"pass_ms": best(lambda: x * 2, reps),
            "fused_ms": best(lambda: np.exp(x * 2 + 1) * x - (x * 2 + 1), reps)}


def bench_mxnet(reps):
    from mxnet import autograd, nd

    x = nd.random.uniform(shape=(N,))
    x.wait_to_read()
    r = {"pass_ms": best(lambda: (x * 2).wait_to_read(), reps),
         "fused_ms": best(lambda: (nd.exp(x * 2 + 1) * x - (x * 2 + 1)).wait_to_read(), reps)}
    x.attach_grad()

    def bwd():
        with autograd.record():
            y = nd.exp(x * 2 + 1) * x - (x * 2 + 1)
        y.backward()
        x.grad.wait_to_read()

    r["fused_fwd_bwd_ms"] = best(bwd, max(3, reps // 2))
    return r


def bench_jax(reps):
    import jax
    import jax.numpy as jnp

    x = jnp.asarray(np.random.rand(N).astype(np.float32))
    f = jax.jit(lambda x: jnp.exp(x * 2 + 1) * x - (x * 2 + 1))
    p = jax.jit(lambda x: x * 2)
    g = jax.jit(jax.grad(lambda x: jnp.sum(jnp.exp(x * 2 + 1) * x - (x * 2 + 1))))
    return {"pass_ms": best(lambda: p(x).block_until_ready(), reps),
            "fused_ms": best(lambda: f(x).block_until_ready(), reps),
            "fused_fwd_bwd_ms": best(lambda: g(x).block_until_ready(), max(3, reps // 2))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default=None)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    reps = 3 if a.quick else 7
    if a.backend:
        print(json.dumps({"mxnet": bench_mxnet, "jax": bench_jax}[a.backend](reps)))
        return
    res = {"ferromx": bench_ferromx(reps), "numpy": bench_numpy(reps)}
    for name, var, venv in (("mxnet", "MXNET_PYTHON", ".venv-mx"), ("jax", "JAX_PYTHON", ".venv-jax")):
        py = os.environ.get(var) or next((p for p in (os.path.join(ROOT, venv, "bin", "python"),
                                                      f"/work/main/{venv}/bin/python")
                                          if os.path.exists(p)), None)
        if not py:
            continue
        p = subprocess.run([py, __file__, "--backend", name] + (["--quick"] if a.quick else []),
                           capture_output=True, text=True, timeout=600, env=dict(os.environ, PYTHONPATH=""),
                           check=False)
        if p.returncode == 0:
            res[name] = json.loads(p.stdout.strip().splitlines()[-1])
        else:
            print(f"{name} failed: {p.stderr[-400:]}", file=sys.stderr)
    f = res["ferromx"]
    print(f"16M float32 exp(x*2+1)*x-(x*2+1), eager (ms, best of {reps}); machine may be loaded")
    print(f"  ferromx one pass y = x*2        {f['pass_ms']:8.2f}")
    print(f"  ferromx fused (default)         {f['fused_ms']:8.2f}   = {f['fused_ms'] / f['pass_ms']:.2f}x "
          "the one pass (goal <= 1.5x)")
    print(f"  ferromx unfused (fusion off)    {f['unfused_ms']:8.2f}   fusion speed-up "
          f"{f['unfused_ms'] / f['fused_ms']:.2f}x")
    for k in ("numpy", "mxnet", "jax"):
        if k in res:
            o = res[k]
            print(f"  {k:<31} {o['fused_ms']:8.2f}   ferromx fused is {o['fused_ms'] / f['fused_ms']:.2f}x "
                  f"faster (its own one pass: {o['pass_ms']:.2f})")
    print("forward + backward of the recorded chain (ms)")
    print(f"  ferromx fused {f['fused_fwd_bwd_ms']:8.2f}  unfused {f['unfused_fwd_bwd_ms']:8.2f}  "
          f"= {f['fused_fwd_bwd_ms'] / f['pass_ms']:.2f}x one pass")
    print(f"  backward alone: fused {f['fused_bwd_ms']:8.2f}  unfused {f['unfused_bwd_ms']:8.2f}  "
          f"= {f['fused_bwd_ms'] / f['pass_ms']:.2f}x one pass (goal <= 2)")
    for k in ("mxnet", "jax"):
        if k in res and "fused_fwd_bwd_ms" in res[k]:
            print(f"  {k:<13} {res[k]['fused_fwd_bwd_ms']:8.2f}  ratio {res[k]['fused_fwd_bwd_ms'] / f['fused_fwd_bwd_ms']:.2f}x")
    print("dispatch x = x + 1 on 1x2, 10k ops, one sync (µs/op)")
    print(f"  fusion on {f['fused_dispatch_us']:.3f}   off {f['unfused_dispatch_us']:.3f}")


if __name__ == "__main__":
    main()
