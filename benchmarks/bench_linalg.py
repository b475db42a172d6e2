"""Dense factorizations: ferromx (np.linalg on the engine) against NumPy and MXNet 1.9.1 in one
run. MXNet runs as a subprocess in its own venv (``/work/main/.venv-mx``) when present.

    PYTHONPATH=python python benchmarks/bench_linalg.py

Prints the median wall time per call (ms) and the ratios ferromx/NumPy and ferromx/MXNet.
"""

import json
import os
import subprocess
import sys

CASES = [("inv", (256, 256)), ("cholesky", (256, 256)), ("svd", (128, 256)),
         ("eigh", (256, 256)), ("det", (64, 16, 16)), ("inv", (64, 16, 16)),
         ("solve", (256, 256))]
REPS = 15

CODE = r"""
import json, sys, time
import numpy as onp
mod = sys.argv[1]
if mod == "mxnet":
    import mxnet as mx
    from mxnet import np
elif mod == "ferromx":
    import ferromx as mx
    from ferromx import np
else:
    np = onp
cases = json.loads(sys.argv[2]); reps = int(sys.argv[3])
out = {}
for name, shape in cases:
    rng = onp.random.default_rng(0)
    a = rng.uniform(-1, 1, shape)
    a = a @ onp.swapaxes(a, -1, -2) + shape[-1] * onp.eye(shape[-1]) if name != "svd" else a
    x = np.array(a.astype("float32"))
    b = np.array(onp.ones(shape[:-1], dtype="float32"))
    f = {"solve": lambda: np.linalg.solve(x, b)}.get(name, lambda: getattr(np.linalg, name)(x))
    def run():
        r = f()
        r = r if isinstance(r, (tuple, list)) else [r]
        for v in r:
            if hasattr(v, "wait_to_read"):
                v.wait_to_read()
    run()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); run(); ts.append(time.perf_counter() - t0)
    out[f"{name} {tuple(shape)}"] = sorted(ts)[len(ts) // 2] * 1e3
print(json.dumps(out))
"""


def measure(python, mod, env=None):
    res = subprocess.run([python, "-c", CODE, mod, json.dumps(CASES), str(REPS)],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.path.join(here, "python"))
    fx = measure(sys.executable, "ferromx", env)
    npy = measure(sys.executable, "numpy")
    mxpy = "/work/main/.venv-mx/bin/python"
    mxr = measure(mxpy, "mxnet") if os.path.exists(mxpy) else {}
    print(f"{'case':26s} {'ferromx':>9s} {'numpy':>9s} {'mxnet':>9s} {'fx/np':>7s} {'fx/mx':>7s}")
    for k, v in fx.items():
        m = mxr.get(k, float("nan"))
        print(f"{k:26s} {v:9.3f} {npy[k]:9.3f} {m:9.3f} {v / npy[k]:7.2f} {v / m:7.2f}")


if __name__ == "__main__":
    main()
