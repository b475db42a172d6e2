"""Side-by-side benchmarks: ferromx vs NumPy (same process), MXNet 1.9.1 and JAX when available.

MXNet lives in its own virtual environment (it needs numpy 1.23): set MXNET_PYTHON to its
interpreter (default: .venv-mx/bin/python if present). This script re-runs itself there with
``--backend mxnet`` and merges the numbers into one table. JAX likewise: JAX_PYTHON (default
.venv-jax/bin/python) runs ``--backend jax``. ``--baseline PYTHON`` (or FERROMX_BASELINE_PYTHON)
runs ferromx again under another interpreter, e.g. a venv holding the previous commit's wheel,
so a change is measured against its parent in the same run ("vs base" column).

    python benchmarks/bench.py            # all
    python benchmarks/bench.py --quick    # fewer repetitions
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def best(fn, reps=5, number=1):
    """Best-of-`reps` seconds per call of fn (called `number` times per rep)."""
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        ts.append((time.perf_counter() - t) / number)
    return min(ts)


# ----------------------------------------------------------------------------- per backend


def bench_numpy(q):
    r = {}
    x = np.zeros((1, 2), np.float32)

    def chain():
        y = x
        for _ in range(10000):
            y = y + 1
        return y

    r["dispatch_us"] = best(chain, 3 if q else 5) / 10000 * 1e6
    r["dispatch_sync_us"] = r["dispatch_us"]
    a = np.random.rand(1000, 1000).astype(np.float32)
    r["sgemm_gflops"] = 2e9 / best(lambda: a @ a, 3 if q else 7) / 1e9
    big = np.random.rand(16 << 20).astype(np.float32)
    big2 = np.random.rand(16 << 20).astype(np.float32)
    out = np.empty_like(big)
    r["add16m_ms"] = best(lambda: np.add(big, big2, out=out), 3 if q else 7) * 1e3
    r["exp16m_ms"] = best(lambda: np.exp(big, out=out), 3 if q else 7) * 1e3
    m = np.random.rand(1 << 20).astype(np.float32)
    r["sum1m_us"] = best(lambda: m.sum(), 5, 20) * 1e6
    c = np.random.rand(1 << 20).astype(np.float32)
    r["copyout4mb_us"] = best(lambda: c.copy(), 5, 20) * 1e6
    big3 = np.random.rand(16 << 20).astype(np.float32)
    r["chain16m_ms"] = best(lambda: np.exp(big * 2.0 + big3) - 1.0, 3 if q else 5) * 1e3
    return r


def bench_nd(nd, mx, q, name):
    """ferromx and MXNet share the nd API."""
    r = {}
    x = nd.zeros((1, 2))
    x.wait_to_read()

    def chain():
        y = x
        for _ in range(10000):
            y = y + 1
        y.wait_to_read()

    def chain_sync():
        y = x
        for _ in range(10000):
            y = y + 1
            y.wait_to_read()

    chain()
    r["dispatch_us"] = best(chain, 3 if q else 5) / 10000 * 1e6
    r["dispatch_sync_us"] = best(chain_sync, 3 if q else 5) / 10000 * 1e6
    # the same chain on an np.ndarray (x.as_np_ndarray(): zero-copy), in the same run
    xn = x
    x = xn.as_np_ndarray()
    chain()
    r["np_dispatch_us"] = best(chain, 3 if q else 5) / 10000 * 1e6
    r["np_dispatch_sync_us"] = best(chain_sync, 3 if q else 5) / 10000 * 1e6

    def ufuncs():
        # np ufuncs that were Python compositions in ferromx before session 16
        for _ in range(1000):
            mx.np.arctan2(x, x)
            mx.np.equal(x, x)
            mx.np.isnan(x)
            mx.np.fmod(x, 1.5) if hasattr(mx.np, "fmod") else mx.np.mod(x, 1.5)
        mx.nd.waitall()

    ufuncs()
    r["np_ufunc_us"] = best(ufuncs, 3 if q else 5) / 4000 * 1e6
    x = xn
    a = nd.random.uniform(shape=(1000, 1000))
    nd.waitall()

    def gemm():
        nd.dot(a, a).wait_to_read()

    gemm()
    r["sgemm_gflops"] = 2e9 / best(gemm, 3 if q else 7) / 1e9
    big = nd.random.uniform(shape=(16 << 20,))
    big2 = nd.random.uniform(shape=(16 << 20,))
    nd.waitall()

    def add():
        (big + big2).wait_to_read()

    def exp():
        nd.exp(big).wait_to_read()

    add(), exp()
    r["add16m_ms"] = best(add, 3 if q else 7) * 1e3
    r["exp16m_ms"] = best(exp, 3 if q else 7) * 1e3
    m = nd.random.uniform(shape=(1 << 20,))
    nd.waitall()

    def s():
        nd.sum(m).wait_to_read()

    s()
    r["sum1m_us"] = best(s, 5, 20) * 1e6
    c = nd.random.uniform(shape=(1 << 20,))
    c.wait_to_read()
    c.asnumpy()
    r["copyout4mb_us"] = best(lambda: c.asnumpy(), 5, 20) * 1e6
    big3 = nd.random.uniform(shape=(16 << 20,))
    nd.waitall()

    def chain16():
        (nd.exp(big * 2.0 + big3) - 1.0).wait_to_read()

    chain16()
    r["chain16m_ms"] = best(chain16, 3 if q else 5) * 1e3
    return r


def bench_jax(q):
    import jax.numpy as jnp

    r = {}
    x = jnp.zeros((1, 2), jnp.float32)

    def chain():
        y = x
        for _ in range(10000):
            y = y + 1
        y.block_until_ready()

    def chain_sync():
        y = x
        for _ in range(2000):
            y = (y + 1).block_until_ready()

    chain()
    r["dispatch_us"] = best(chain, 3) / 10000 * 1e6
    r["dispatch_sync_us"] = best(chain_sync, 3) / 2000 * 1e6
    a = jnp.asarray(np.random.rand(1000, 1000).astype(np.float32))
    (a @ a).block_until_ready()
    r["sgemm_gflops"] = 2e9 / best(lambda: (a @ a).block_until_ready(), 5) / 1e9
    return r


def mlp_train(mx, nd, gluon, autograd, q):
    """784-512-512-10 MLP, batch 256, SGD with momentum: training samples/s."""
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(512, activation="relu"), gluon.nn.Dense(512, activation="relu"),
            gluon.nn.Dense(10))
    net.initialize(mx.init.Xavier())
    ce = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9})
    x = nd.random.uniform(shape=(256, 784))
    y = nd.array(np.random.randint(0, 10, (256,)))
    steps = 20 if q else 60

    def step():
        with autograd.record():
            loss = ce(net(x), y)
        loss.backward()
        trainer.step(256)

    for _ in range(5):
        step()
    nd.waitall()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    nd.waitall()
    return steps * 256 / (time.perf_counter() - t)


def mlp_train_jax(q):
    """The same MLP step in JAX (jitted, optax SGD with momentum)."""
    import jax
    import jax.numpy as jnp
    import optax

    k = jax.random.PRNGKey(0)
    ks = jax.random.split(k, 3)
    sizes = [(784, 512), (512, 512), (512, 10)]
    params = [(jax.random.normal(kk, s) * (2.0 / sum(s)) ** 0.5, jnp.zeros(s[1]))
              for kk, s in zip(ks, sizes)]
    opt = optax.sgd(0.01, momentum=0.9)
    state = opt.init(params)
    x = jnp.asarray(np.random.rand(256, 784).astype(np.float32))
    y = jnp.asarray(np.random.randint(0, 10, (256,)))

    def loss_fn(p):
        h = x
        for i, (w, b) in enumerate(p):
            h = h @ w + b
            if i < 2:
                h = jax.nn.relu(h)
        return optax.softmax_cross_entropy_with_integer_labels(h, y).mean()

    @jax.jit
    def step(p, s):
        g = jax.grad(loss_fn)(p)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s

    for _ in range(5):
        params, state = step(params, state)
    jax.block_until_ready(params)
    steps = 20 if q else 60
    t = time.perf_counter()
    for _ in range(steps):
        params, state = step(params, state)
    jax.block_until_ready(params)
    return steps * 256 / (time.perf_counter() - t)


def seed_loop(mx, nd, gluon, autograd, epochs, workers):
    """The seed's loop, `epochs` epochs, reading the loss one step late; samples/s."""
    net = gluon.nn.Dense(10)
    ce = gluon.loss.SoftmaxCELoss()
    net.initialize()
    data = nd.random.uniform(shape=(1024, 100))
    label = nd.array(np.random.randint(0, 10, (1024,)), dtype="int32")
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(data, label), batch_size=128,
                                   shuffle=True, num_workers=workers)
    trainer = gluon.Trainer(net.collect_params(), optimizer="sgd")
    prev = None
    n = 0
    t = time.perf_counter()
    for _ in range(epochs):
        for x, y in loader:
            with autograd.record():
                loss = ce(net(x), y)
            loss.backward()
            trainer.step(x.shape[0])
            if prev is not None:
                float(prev.asnumpy().mean())
            prev = loss
            n += x.shape[0]
    nd.waitall()
    return n / (time.perf_counter() - t)


def run_backend(backend, q, epochs):
    if backend == "jax":
        r = bench_jax(q)
        r["mlp_sps"] = mlp_train_jax(q)
        return r
    if backend == "mxnet":
        import mxnet as mx
        from mxnet import autograd, gluon, nd

        r = bench_nd(nd, mx, q, "mxnet")
    else:
        import ferromx as mx
        from ferromx import autograd, gluon, nd

        r = bench_nd(nd, mx, q, "ferromx")
    r["mlp_sps"] = mlp_train(mx, nd, gluon, autograd, q)
    r["seed_w0_sps"] = seed_loop(mx, nd, gluon, autograd, epochs, 0)
    r["seed_w2_sps"] = seed_loop(mx, nd, gluon, autograd, epochs, 2)
    r["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return r


ROWS = [
    ("dispatch_us", "x = x + 1 on 1x2, 10k ops, one sync (µs/op)", "lower"),
    ("dispatch_sync_us", "... with wait_to_read() every op (µs/op)", "lower"),
    ("np_dispatch_us", "x = x + 1 on a 1x2 np.ndarray, 10k ops (µs/op)", "lower"),
    ("np_dispatch_sync_us", "... with wait_to_read() every op (µs/op)", "lower"),
    ("np_ufunc_us", "np.arctan2/equal/isnan/fmod on 1x2, 4k calls (µs/call)", "lower"),
    ("sgemm_gflops", "sgemm 1000x1000 (GFLOP/s)", "higher"),
    ("add16m_ms", "add, 16M float32 (ms)", "lower"),
    ("exp16m_ms", "exp, 16M float32 (ms)", "lower"),
    ("chain16m_ms", "exp(x*2+y)-1, 16M float32 (ms)", "lower"),
    ("sum1m_us", "sum of 1M float32 (µs)", "lower"),
    ("copyout4mb_us", "copy-out of a ready 4 MB array (µs)", "lower"),
    ("mlp_sps", "MLP 784-512-512-10 training, batch 256 (samples/s)", "higher"),
    ("seed_w0_sps", "seed loop, num_workers=0 (samples/s)", "higher"),
    ("seed_w2_sps", "seed loop, num_workers=2 (samples/s)", "higher"),
    ("peak_rss_mb", "peak RSS of the process (MB)", "lower"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--json", default=None)
    ap.add_argument("--baseline", default=os.environ.get("FERROMX_BASELINE_PYTHON"))
    args = ap.parse_args()
    if args.backend:
        print(json.dumps(run_backend(args.backend, args.quick, args.epochs)))
        return
    results = {"ferromx": run_backend("ferromx", args.quick, args.epochs)}
    results["numpy"] = bench_numpy(args.quick)
    mxpy = os.environ.get("MXNET_PYTHON") or os.path.join(ROOT, ".venv-mx", "bin", "python")
    jaxpy = os.environ.get("JAX_PYTHON") or os.path.join(ROOT, ".venv-jax", "bin", "python")
    others = [("mxnet", mxpy, "mxnet"), ("jax", jaxpy, "jax")]
    if args.baseline:
        others.insert(0, ("base", args.baseline, "ferromx"))
    for col, py, backend in others:
        if not os.path.exists(py):
            continue
        env = dict(os.environ, PYTHONPATH="") if col == "base" else None
        p = subprocess.run([py, __file__, "--backend", backend, "--epochs", str(args.epochs)]
                           + (["--quick"] if args.quick else []),
                           capture_output=True, text=True, timeout=1800, env=env, check=False,
                           cwd="/" if col == "base" else None)
        if p.returncode == 0:
            results[col] = json.loads(p.stdout.strip().splitlines()[-1])
        else:
            print(f"{col} run failed:", p.stderr[-500:], file=sys.stderr)
    if "jax" not in results:
        try:
            results["jax"] = bench_jax(args.quick)
        except ImportError:
            pass
    cols = [c for c in ("ferromx", "base", "numpy", "mxnet", "jax") if c in results]
    vs = [c for c in ("base", "numpy", "mxnet", "jax") if c in results]
    print(f"{'benchmark':<52}" + "".join(f"{c:>12}" for c in cols)
          + "".join(f"{'vs ' + c:>10}" for c in vs))
    for key, label, better in ROWS:
        vals = [results[c].get(key) for c in cols]
        line = f"{label:<52}" + "".join(f"{v:>12.3f}" if v is not None else f"{'-':>12}" for v in vals)

        def ratio(other, key=key, better=better):
            f, o = results["ferromx"].get(key), results.get(other, {}).get(key)
            if f is None or o is None or f == 0 or o == 0:
                return f"{'-':>10}"
            x = (o / f) if better == "lower" else (f / o)
            return f"{x:>9.2f}x"

        line += "".join(ratio(c) for c in vs)
        print(line)
    print("(ratios: how many times better ferromx is; >1 means ferromx wins)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
