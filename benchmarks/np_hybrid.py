"""An np-mode block written with ``F.np``/``F.npx`` (a 2-layer MLP with its own parameters,
D2L style, batch 32, 128 -> 256 -> 10, plus a softmax): forward µs per call, ferromx eager,
ferromx hybridized (the np calls recorded into table operators) and MXNet 1.9.1
hybridized (its ``_npi_*`` graph), in a subprocess of the same run when its venv exists.

    PYTHONPATH=python .venv/bin/python benchmarks/np_hybrid.py [--mxnet-python PATH]
"""

import argparse
import json
import os
import subprocess
import sys

CODE = """
import time, json
import {mod} as mx
from {mod} import np, npx, gluon
npx.set_np()

class MLP(gluon.HybridBlock):
    def __init__(self):
        super().__init__()
        self.w1 = self.params.get("w1", shape=(128, 256))
        self.b1 = self.params.get("b1", shape=(256,))
        self.w2 = self.params.get("w2", shape=(256, 10))

    def hybrid_forward(self, F, x, w1, b1, w2):
        h = F.npx.relu(F.np.dot(x, w1) + b1)
        return F.npx.softmax(F.np.dot(h, w2) * 0.5)

def best(fn, n=1000, reps=7):
    times = []
    for _ in range(reps):
        mx.nd.waitall()
        t = time.perf_counter()
        for _ in range(n):
            fn()
        mx.nd.waitall()
        times.append((time.perf_counter() - t) / n * 1e6)
    return min(times)

net = MLP()
net.initialize(mx.init.Uniform(0.1))
x = np.ones((32, 128))
res = {{}}
if {eager}:
    net(x)
    res["eager"] = best(lambda: net(x))
net.hybridize()
net(x)
res["hybridized"] = best(lambda: net(x))
print(json.dumps(res))
"""


def run(python, mod, eager):
    out = subprocess.run([python, "-c", CODE.format(mod=mod, eager=eager)], capture_output=True,
                         text=True, check=True, env=dict(os.environ)).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mxnet-python", default=os.environ.get("MXNET_PYTHON", ".venv-mx/bin/python"))
    args = ap.parse_args()
    ours = run(sys.executable, "ferromx", True)
    print(f"ferromx eager      {ours['eager']:8.1f} µs/call")
    print(f"ferromx hybridized {ours['hybridized']:8.1f} µs/call "
          f"({ours['eager'] / ours['hybridized']:.2f}x eager)")
    if os.path.exists(args.mxnet_python):
        theirs = run(args.mxnet_python, "mxnet", False)
        print(f"MXNet hybridized   {theirs['hybridized']:8.1f} µs/call "
              f"(ferromx hybridized {theirs['hybridized'] / ours['hybridized']:.2f}x faster)")


if __name__ == "__main__":
    main()
