"""CTC loss forward + backward (``nd.CTCLoss``, activations (T, N, C) = (100, 32, 50),
labels of length 20): ferromx and MXNet 1.9.1 (in a subprocess of the same run, when its
venv exists), milliseconds per step (best of 5 × 20 steps, each step synced).

    PYTHONPATH=python .venv/bin/python benchmarks/bench_ctc.py [--mxnet-python PATH]
"""

import argparse
import json
import os
import subprocess
import sys
import time

CODE = """
import json, time
import numpy as np
import {mod} as mx
from {mod} import autograd, nd

rng = np.random.RandomState(0)
T, N, C, L = 100, 32, 50, 20
x = nd.array(rng.uniform(-1, 1, (T, N, C)).astype("float32"))
label = nd.array(rng.randint(1, C, (N, L)).astype("float32"))
x.attach_grad()

def step():
    with autograd.record():
        loss = nd.CTCLoss(x, label)
    loss.backward()
    x.grad.wait_to_read()

step()
times = []
for _ in range(5):
    t = time.perf_counter()
    for _ in range(20):
        step()
    times.append((time.perf_counter() - t) / 20 * 1e3)
print(json.dumps({{"ms": min(times)}}))
"""


def run(python, mod):
    out = subprocess.run([python, "-c", CODE.format(mod=mod)], capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()[-1]
    return json.loads(out)["ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mxnet-python", default=os.environ.get(
        "MXNET_PYTHON", "/work/main/.venv-mx/bin/python"))
    opts = ap.parse_args()
    fm = run(sys.executable, "ferromx")
    print(f"ferromx CTCLoss fwd+bwd  {fm:7.2f} ms")
    if os.path.exists(opts.mxnet_python):
        mx = run(opts.mxnet_python, "mxnet")
        print(f"MXNet   CTCLoss fwd+bwd  {mx:7.2f} ms  (ferromx is {mx / fm:.2f}x faster)")
    print(time.strftime("%Y-%m-%d %H:%M"))


if __name__ == "__main__":
    main()
