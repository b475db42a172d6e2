"""Convolutional networks: ferromx against MXNet 1.9.1 (oneDNN) in one run.

Workloads (issue 12, "Speed"):

* ``conv``: one ``Convolution`` 3x3, 64->64, on 8x64x56x56 float32, forward GFLOP/s, against
  NumPy's 1000x1000 sgemm GFLOP/s measured in the same process;
* ``resnet_train``: ResNet-18 v1, CIFAR variant (``model_zoo.vision.resnet18_v1(thumbnail=True,
  classes=10)``: 3x3 stem, no max-pool), 3x32x32, batch 64, one training step (forward,
  softmax cross-entropy, backward, ``Trainer.step`` with SGD + momentum), samples/s;
* ``resnet_infer``: the same network under ``autograd.predict_mode``, samples/s;
* ``lenet_train``: D2L's LeNet (sigmoid, AvgPool) on 1x28x28, batch 256, training samples/s;
* peak RSS: resident memory high-water mark (``ru_maxrss``) of the ``resnet_train`` process,
  which only builds ResNet-18 and trains it (each framework in its own fresh process).

The same network code runs under both frameworks (``import ferromx as mx`` or ``import mxnet as
mx``); every workload runs in its own subprocess so peak RSS and warm-up are per workload. Both
networks are hybridized (MXNet's fast path); ``--no-hybridize`` runs them imperatively.

    python benchmarks/bench_convnets.py           # about 2-3 minutes on 2 cores
    python benchmarks/bench_convnets.py --quick   # fewer steps (under a minute or so)

MXNET_PYTHON names MXNet's interpreter (default /work/main/.venv-mx/bin/python or
.venv-mx/bin/python in the repository).
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOADS = ["conv", "resnet_train", "resnet_infer", "lenet_train"]


def _import(backend):
    if backend == "mxnet":
        import mxnet as mx
    else:
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import ferromx as mx
    return mx


def _resnet(mx, hybridize):
    from importlib import import_module

    vision = import_module(mx.__name__ + ".gluon.model_zoo.vision")
    net = vision.resnet18_v1(thumbnail=True, classes=10)
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    return net


def _lenet(mx, hybridize):
    nn = mx.gluon.nn
    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, kernel_size=5, padding=2, activation="sigmoid"),
            nn.AvgPool2D(pool_size=2, strides=2),
            nn.Conv2D(16, kernel_size=5, activation="sigmoid"),
            nn.AvgPool2D(pool_size=2, strides=2),
            nn.Dense(120, activation="sigmoid"),
            nn.Dense(84, activation="sigmoid"),
            nn.Dense(10))
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    return net


def _train_rate(mx, net, shape, steps, warm):
    import numpy as np

    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.rand(*shape).astype("float32"))
    y = mx.nd.array(rng.randint(0, 10, shape[0]).astype("float32"))
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd",
                               {"learning_rate": 0.01, "momentum": 0.9})

    def step():
        with mx.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(shape[0])
        return loss

    for _ in range(warm):
        step().wait_to_read()
    mx.nd.waitall()
    t = time.perf_counter()
    for _ in range(steps):
        loss = step()
    loss.wait_to_read()
    mx.nd.waitall()
    return shape[0] * steps / (time.perf_counter() - t)


def _infer_rate(mx, net, shape, steps, warm):
    import numpy as np

    x = mx.nd.array(np.random.RandomState(0).rand(*shape).astype("float32"))
    with mx.autograd.predict_mode():
        for _ in range(warm):
            net(x).wait_to_read()
        t = time.perf_counter()
        for _ in range(steps):
            out = net(x)
        out.wait_to_read()
    return shape[0] * steps / (time.perf_counter() - t)


def _conv(mx, q):
    import numpy as np

    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.rand(8, 64, 56, 56).astype(np.float32))
    w = mx.nd.array(rng.rand(64, 64, 3, 3).astype(np.float32))
    b = mx.nd.array(rng.rand(64).astype(np.float32))
    mx.nd.Convolution(x, w, b, kernel=(3, 3), pad=(1, 1), num_filter=64).wait_to_read()
    ts = []
    for _ in range(5 if q else 9):
        t = time.perf_counter()
        mx.nd.Convolution(x, w, b, kernel=(3, 3), pad=(1, 1), num_filter=64).wait_to_read()
        ts.append(time.perf_counter() - t)
    flops = 2.0 * 8 * 64 * 56 * 56 * 64 * 9
    # NumPy's sgemm runs after the convolution: OpenBLAS's threads spin for about
    # 0.1 s after each product, and a convolution timed inside that window ran on
    # half the machine (measured: 8 ms instead of 4 for its first ten calls).
    a = rng.rand(1000, 1000).astype(np.float32)
    ts_mm = []
    for _ in range(5 if q else 9):
        t = time.perf_counter()
        a @ a
        ts_mm.append(time.perf_counter() - t)
    sgemm = 2e9 / min(ts_mm) / 1e9
    return {"conv_gflops": flops / min(ts) / 1e9, "sgemm_gflops": sgemm}


def worker(backend, workload, q, hybridize):
    """Runs one workload in this process and returns its numbers."""
    mx = _import(backend)
    if workload == "conv":
        return _conv(mx, q)
    if workload == "resnet_train":
        net = _resnet(mx, hybridize)
        rate = _train_rate(mx, net, (64, 3, 32, 32), 2 if q else 5, 1)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        return {"resnet_train": rate, "rss_mb": rss}
    if workload == "resnet_infer":
        net = _resnet(mx, hybridize)
        return {"resnet_infer": _infer_rate(mx, net, (64, 3, 32, 32), 3 if q else 8, 1)}
    if workload == "lenet_train":
        net = _lenet(mx, hybridize)
        return {"lenet_train": _train_rate(mx, net, (256, 1, 28, 28), 8 if q else 30, 2)}
    raise SystemExit(f"unknown workload {workload}")


def _mx_python():
    env = os.environ.get("MXNET_PYTHON")
    for cand in [env, "/work/main/.venv-mx/bin/python", os.path.join(ROOT, ".venv-mx/bin/python")]:
        if cand and os.path.exists(cand):
            return cand
    return None


def _run(python, backend, workload, args):
    cmd = [python, os.path.abspath(__file__), "--backend", backend, "--workload", workload]
    if args.quick:
        cmd.append("--quick")
    if args.no_hybridize:
        cmd.append("--no-hybridize")
    env = dict(os.environ)
    if backend == "ferromx":
        env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        print(f"  {backend} {workload} failed:\n{p.stderr[-2000:]}", file=sys.stderr)
        return {}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer steps")
    ap.add_argument("--no-hybridize", action="store_true", help="run both networks imperatively")
    ap.add_argument("--backend", help=argparse.SUPPRESS)
    ap.add_argument("--workload", help=argparse.SUPPRESS)
    ap.add_argument("--only", nargs="*", choices=WORKLOADS, help="run only these workloads")
    args = ap.parse_args()
    if args.backend:
        print(json.dumps(worker(args.backend, args.workload, args.quick, not args.no_hybridize)))
        return
    mxpy = _mx_python()
    fm, mxr = {}, {}
    for wl in args.only or WORKLOADS:
        fm.update(_run(sys.executable, "ferromx", wl, args))
        if mxpy:
            mxr.update(_run(mxpy, "mxnet", wl, args))
    rows = [
        ("Convolution 3x3 64->64 8x64x56x56 fwd", "conv_gflops", "GFLOP/s", True),
        ("NumPy sgemm 1000^2 (same process)", "sgemm_gflops", "GFLOP/s", True),
        ("ResNet-18 CIFAR train, batch 64", "resnet_train", "samples/s", True),
        ("ResNet-18 CIFAR inference, batch 64", "resnet_infer", "samples/s", True),
        ("LeNet train, batch 256", "lenet_train", "samples/s", True),
        ("peak RSS, ResNet-18 training", "rss_mb", "MB", False),
    ]
    print(f"{'workload':42s} {'ferromx':>10s} {'MXNet':>10s} {'ratio':>7s}  unit")
    for label, key, unit, _ in rows:
        a, b = fm.get(key), mxr.get(key)
        if a is None and b is None:
            continue
        ratio = f"{a / b:7.2f}" if a and b else "      -"
        sa = f"{a:10.1f}" if a is not None else "         -"
        sb = f"{b:10.1f}" if b is not None else "         -"
        print(f"{label:42s} {sa} {sb} {ratio}  {unit}")
    goals = []
    if "conv_gflops" in fm:
        goals.append(("conv / NumPy sgemm (ferromx)", fm["conv_gflops"] / fm["sgemm_gflops"], 0.8))
    if "conv_gflops" in mxr:
        goals.append(("conv / NumPy sgemm (MXNet)", mxr["conv_gflops"] / mxr["sgemm_gflops"], None))
    for key, goal in [("resnet_train", 2.0), ("resnet_infer", 2.0), ("lenet_train", 3.0)]:
        if key in fm and key in mxr:
            goals.append((f"{key} ferromx / MXNet", fm[key] / mxr[key], goal))
    if "rss_mb" in fm and "rss_mb" in mxr:
        goals.append(("peak RSS MXNet / ferromx", mxr["rss_mb"] / fm["rss_mb"], 1.0))
    print()
    for label, v, goal in goals:
        mark = "" if goal is None else ("  ok" if v >= goal else f"  below goal {goal}")
        print(f"{label:42s} {v:7.2f}{mark}")


if __name__ == "__main__":
    main()
