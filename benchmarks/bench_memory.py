"""Where a ResNet-18 training step's memory goes (ferromx only; issue 12, peak RSS).

Runs the same step as ``bench_convnets.py --only resnet_train`` and prints, per step, the
storage pool's counters (``engine.memory_info()``): bytes of live arrays' buffers, freed
buffers kept in the pool, and the high-water marks of live and live + pooled bytes since
the step began, beside the process's ``ru_maxrss``.

    python benchmarks/bench_memory.py            # 4 steps, no wait inside a step
    SYNC=1 python benchmarks/bench_memory.py     # waitall() after forward and backward too
    STEPS=2 HYB=0 python benchmarks/bench_memory.py   # imperative, 2 steps
"""

import os
import resource
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import ferromx as mx
from ferromx import engine
from ferromx.gluon.model_zoo import vision

MB = 1 << 20


def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def show(tag):
    m = engine.memory_info()
    print(f"{tag:16s} live {m['live'] / MB:7.1f}  pooled {m['pooled'] / MB:7.1f}  "
          f"peak_live {m['peak_live'] / MB:7.1f}  peak_held {m['peak_held'] / MB:7.1f}  "
          f"maxrss {rss():7.1f} MB", flush=True)


def main():
    net = vision.resnet18_v1(thumbnail=True, classes=10)
    net.initialize(mx.init.Xavier())
    if os.environ.get("HYB", "1") == "1":
        net.hybridize()
    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.rand(64, 3, 32, 32).astype("float32"))
    y = mx.nd.array(rng.randint(0, 10, 64).astype("float32"))
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9})
    sync = os.environ.get("SYNC", "0") == "1"
    show("start")
    loss = None
    for i in range(int(os.environ.get("STEPS", "4"))):
        engine.reset_memory_peaks()
        with mx.autograd.record():
            loss = loss_fn(net(x), y)
        if sync:
            mx.nd.waitall()
            show(f"step {i} forward")
        loss.backward()
        if sync:
            mx.nd.waitall()
            show(f"step {i} backward")
        trainer.step(64)
        mx.nd.waitall()
        show(f"step {i} done")
    print("loss", float(loss.mean().asscalar()))


if __name__ == "__main__":
    main()
