"""ResNet-18 (CIFAR variant) convolutions one by one: ferromx against MXNet 1.9.1 in one run.

Each of the network's convolution shapes at batch 64 is timed alone (best of ``--reps``):
forward, weight gradient (backward with only the weight attached), and data gradient (the
extra time when the input is attached too). The sums weight each shape by how often the
network has it, so they read as milliseconds per training step spent in convolutions.

    python benchmarks/bench_conv_layers.py            # about a minute
    python benchmarks/bench_conv_layers.py --reps 5   # quicker

MXNET_PYTHON names MXNet's interpreter (default .venv-mx/bin/python in the repository).
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N = 64
# (in channels, out channels, input side, stride, kernel, count in the network)
SHAPES = [(3, 64, 32, 1, 3, 1), (64, 64, 32, 1, 3, 4), (64, 128, 32, 2, 3, 1), (128, 128, 16, 1, 3, 3),
          (64, 128, 32, 2, 1, 1), (128, 256, 16, 2, 3, 1), (256, 256, 8, 1, 3, 3), (128, 256, 16, 2, 1, 1),
          (256, 512, 8, 2, 3, 1), (512, 512, 4, 1, 3, 3), (256, 512, 8, 2, 1, 1)]


def worker(backend, reps):
    """Times every shape in this process; returns {shape: [fwd, wgrad, dgrad]} in ms."""
    import numpy as np

    if backend == "mxnet":
        import mxnet as mx
    else:
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import ferromx as mx
    rng = np.random.RandomState(0)

    def best(f):
        f()
        mx.nd.waitall()
        ts = []
        for _ in range(reps):
            t = time.perf_counter()
            f()
            mx.nd.waitall()
            ts.append(time.perf_counter() - t)
        return min(ts)

    out = {}
    for c, o, h, s, k, _ in SHAPES:
        x = mx.nd.array(rng.rand(N, c, h, h).astype("float32"))
        w = mx.nd.array(rng.rand(o, c, k, k).astype("float32"))
        kw = {"kernel": (k, k), "stride": (s, s), "pad": (k // 2, k // 2), "num_filter": o, "no_bias": True}
        out[f"{c}-{o}-{h}-{s}-{k}"] = _time_shape(mx, best, x, w, kw)
    return out


def _time_shape(mx, best, x, w, kw):
    """[forward, weight gradient, data gradient] of one shape, in ms."""
    dy = mx.nd.ones_like(mx.nd.Convolution(x, w, **kw))
    fwd = best(lambda: mx.nd.Convolution(x, w, **kw))

    def bwd():
        with mx.autograd.record():
            y = mx.nd.Convolution(x, w, **kw)
        y.backward(dy)

    w.attach_grad()
    wgrad = best(bwd) - fwd
    x.attach_grad()
    dgrad = best(bwd) - fwd - wgrad
    return [fwd * 1e3, wgrad * 1e3, dgrad * 1e3]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--reps", type=int, default=12)
    ap.add_argument("--backend", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.backend:
        print(json.dumps(worker(args.backend, args.reps)))
        return
    res = {"ferromx": worker("ferromx", args.reps)}
    mxpy = os.environ.get("MXNET_PYTHON") or os.path.join(ROOT, ".venv-mx/bin/python")
    if os.path.exists(mxpy):
        p = subprocess.run([mxpy, os.path.abspath(__file__), "--backend", "mxnet", "--reps", str(args.reps)],
                           capture_output=True, text=True, check=False)
        if p.returncode == 0:
            res["mxnet"] = json.loads(p.stdout.strip().splitlines()[-1])
        else:
            print(f"MXNet run failed:\n{p.stderr[-2000:]}", file=sys.stderr)
    print(f"{'shape (c-o-side-stride-kernel) x count':40s} {'ferromx fwd/wgrad/dgrad ms':>28s} {'MXNet':>24s}")
    tot = {b: [0.0, 0.0, 0.0] for b in res}
    for c, o, h, s, k, cnt in SHAPES:
        key = f"{c}-{o}-{h}-{s}-{k}"
        cells = []
        for b in res:
            v = res[b][key]
            cells.append("/".join(f"{t:6.2f}" for t in v))
            for i in range(3):
                tot[b][i] += v[i] * cnt
        print(f"{key + ' x' + str(cnt):40s} " + "   ".join(f"{cell:>24s}" for cell in cells))
    print()
    for b, t in tot.items():
        print(f"{b:8s} per step: forward {t[0]:7.1f}  weight grad {t[1]:7.1f}  data grad {t[2]:7.1f}  "
              f"total {sum(t):7.1f} ms")
    if "mxnet" in tot:
        print(f"MXNet / ferromx total: {sum(tot['mxnet']) / sum(tot['ferromx']):.2f}")


if __name__ == "__main__":
    main()
