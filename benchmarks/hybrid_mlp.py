"""Forward of a 3-layer MLP (64 -> 256 -> 256 -> 10, batch 1): ferromx eager, ferromx
hybridized, and MXNet 1.9.1 hybridized (in a subprocess of the same run, when its venv
exists), in microseconds per call (best of several repetitions, one sync per repetition).

    PYTHONPATH=python .venv/bin/python benchmarks/hybrid_mlp.py [--mxnet-python PATH]
"""

import argparse
import json
import os
import subprocess
import sys
import time

CODE = """
import time, json, sys
import {mod} as mx
from {mod} import gluon, nd

def build():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(256, activation="relu", in_units=64),
            gluon.nn.Dense(256, activation="relu", in_units=256),
            gluon.nn.Dense(10, in_units=256))
    net.initialize()
    return net

def best(fn, n=2000, reps=7):
    times = []
    for _ in range(reps):
        nd.waitall()
        t = time.perf_counter()
        for _ in range(n):
            fn()
        nd.waitall()
        times.append((time.perf_counter() - t) / n * 1e6)
    return min(times)

x = nd.ones((1, 64))
net = build()
res = {{}}
if {eager}:
    net(x)
    res["eager"] = best(lambda: net(x))
net.hybridize(static_alloc=True, static_shape=True)
net(x)
res["hybridized"] = best(lambda: net(x))
print(json.dumps(res))
"""


def run(python, mod, eager):
    env = dict(os.environ)
    out = subprocess.run([python, "-c", CODE.format(mod=mod, eager=eager)], capture_output=True,
                         text=True, check=True, env=env).stdout.strip().splitlines()[-1]
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mxnet-python", default=os.environ.get(
        "MXNET_PYTHON", "/work/main/.venv-mx/bin/python"))
    opts = ap.parse_args()
    fm = run(sys.executable, "ferromx", True)
    print(f"ferromx eager       {fm['eager']:8.1f} us")
    print(f"ferromx hybridized  {fm['hybridized']:8.1f} us  "
          f"({fm['eager'] / fm['hybridized']:.2f}x eager)")
    if os.path.exists(opts.mxnet_python):
        mxr = run(opts.mxnet_python, "mxnet", False)
        print(f"MXNet hybridized    {mxr['hybridized']:8.1f} us  "
              f"(ferromx hybridized is {mxr['hybridized'] / fm['hybridized']:.2f}x faster)")
    print(time.strftime("%Y-%m-%d %H:%M"))


if __name__ == "__main__":
    main()
