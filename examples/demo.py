"""`make demo`: the seed's training loop, three ways of reading the loss, and the
D2L blocking measurements, with the frontend's blocked time taken from the profiler.

Writes out/trace.json (Chrome trace / Perfetto) and out/timeline.svg.
"""

import os
import runpy
import sys
import time

import ferromx as mx
import numpy as np
from ferromx import autograd, gluon, nd, profiler
from ferromx.engine import LaggedReader

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "out")
EPOCHS = int(os.environ.get("DEMO_EPOCHS", "30"))


class LossBuffer:
    """The seed's hand-written buffer: returns the previous step's loss."""

    def __init__(self):
        self._loss = None

    def new_loss(self, loss):
        ret, self._loss = self._loss, loss
        return ret

    @property
    def loss(self):
        return self._loss


def make_problem():
    mx.random.seed(0)
    np.random.seed(0)
    data = nd.random.uniform(shape=(1024, 100))
    label = nd.array(np.random.randint(0, 10, (1024,)), dtype="int32")
    return data, label


def train(mode, epochs):
    """Trains the seed's model; returns (samples/s, blocked ms, first loss, last loss)."""
    data, label = make_problem()
    net = gluon.nn.Dense(10)
    net.initialize()
    ce = gluon.loss.SoftmaxCELoss()
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(data, label), batch_size=128,
                                   shuffle=True, num_workers=0)
    trainer = gluon.Trainer(net.collect_params(), optimizer="sgd",
                            optimizer_params={"learning_rate": 0.5})
    buf, lag, seen = LossBuffer(), LaggedReader(reduce=np.mean), []
    mx.waitall()
    profiler.events(reset=True)
    profiler.set_state("run")
    t0 = time.perf_counter()
    n = 0
    for _ in range(epochs):
        for x, y in loader:
            with autograd.record():
                out = net(x)
                loss = ce(out, y)
                prev = buf.new_loss(loss) if mode == "lossbuffer" else None
            loss.backward()
            trainer.step(x.shape[0])
            n += x.shape[0]
            if mode == "asnumpy":
                seen.append(float(np.mean(loss.asnumpy())))
            elif mode == "lossbuffer":
                if prev is not None:
                    seen.append(float(np.mean(prev.asnumpy())))
            else:
                v = lag.push(loss)
                if v is not None:
                    seen.append(float(v))
    if mode == "lossbuffer":
        seen.append(float(np.mean(buf.loss.asnumpy())))
    elif mode == "lagged":
        seen.append(float(lag.flush()))
    mx.waitall()
    dt = time.perf_counter() - t0
    profiler.set_state("stop")
    waits = profiler.wait_summary()
    blocked = sum(t for _, t in waits.values())
    return n / dt, blocked, seen[0], seen[-1], dt


def d2l_measurements():
    """The D2L section's measurements: dot then a blocking read, vs NumPy."""
    rows = []
    a_np = np.random.normal(size=(1000, 1000)).astype(np.float32)
    a = nd.array(a_np)
    mx.waitall()
    reps = 10
    t = time.perf_counter()
    for _ in range(reps):
        b = np.dot(a_np, a_np)
    rows.append(("numpy: b = np.dot(a, a)", (time.perf_counter() - t) / reps))
    t = time.perf_counter()
    for _ in range(reps):
        b = nd.dot(a, a)
    push = (time.perf_counter() - t) / reps
    mx.waitall()
    rows.append(("ferromx: b = nd.dot(a, a)  (push only, returns at once)", push))
    t = time.perf_counter()
    for _ in range(reps):
        b = nd.dot(a, a)
        b.asnumpy()
    rows.append(("ferromx: b = nd.dot(a, a); b.asnumpy()  (blocks)", (time.perf_counter() - t) / reps))
    t = time.perf_counter()
    for _ in range(reps):
        b = nd.dot(a, a)
        b.sum().item()
    rows.append(("ferromx: b = nd.dot(a, a); b.sum().item()  (blocks)", (time.perf_counter() - t) / reps))
    return rows


def lenet_training(steps=30, batch=256):
    """D2L's LeNet (sigmoid, average pooling) on synthetic 1x28x28 data: samples/s and loss."""
    from ferromx.gluon import nn

    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, kernel_size=5, padding=2, activation="sigmoid"),
            nn.AvgPool2D(pool_size=2, strides=2),
            nn.Conv2D(16, kernel_size=5, activation="sigmoid"),
            nn.AvgPool2D(pool_size=2, strides=2),
            nn.Dense(120, activation="sigmoid"), nn.Dense(84, activation="sigmoid"), nn.Dense(10))
    net.initialize(mx.init.Xavier())
    rng = np.random.RandomState(0)
    labels = rng.randint(0, 10, size=batch)
    images = rng.rand(batch, 1, 28, 28).astype(np.float32) * 0.2
    images[np.arange(batch), 0, labels * 2 + 4, 4:24] += 1.0  # a learnable stripe per class
    x, y = nd.array(images), nd.array(labels)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
    losses = []
    for step in range(steps + 1):
        if step == 1:
            nd.waitall()
            t0 = time.perf_counter()  # the first step includes deferred initialization
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch)
        if step in (0, steps):
            losses.append(loss.mean().asscalar())
    nd.waitall()
    return steps * batch / (time.perf_counter() - t0), losses[0], losses[-1]


def main():
    os.makedirs(OUT, exist_ok=True)
    print("=" * 78)
    print("1. The seed's training loop, verbatim (imports changed to ferromx)")
    print("=" * 78)
    runpy.run_path(os.path.join(HERE, "seed_loop.py"), run_name="__main__")

    print()
    print("=" * 78)
    print(f"2. Reading the loss three ways ({EPOCHS} epochs of 1024 samples, batch 128)")
    print("=" * 78)
    results = []
    for mode, title in [("asnumpy", "asnumpy() every step"),
                        ("lossbuffer", "seed's LossBuffer"),
                        ("lagged", "built-in engine.LaggedReader")]:
        train(mode, 2)  # warm-up
        sps, blocked, first, last, dt = train(mode, EPOCHS)
        results.append((title, sps, blocked, dt, first, last))
    print(f"{'how the loss is read':<32}{'samples/s':>12}{'blocked ms':>12}{'wall ms':>10}"
          f"{'first loss':>12}{'last loss':>11}")
    for title, sps, blocked, dt, first, last in results:
        print(f"{title:<32}{sps:>12,.0f}{blocked:>12.1f}{dt * 1000:>10.1f}{first:>12.4f}{last:>11.4f}")
    print("(blocked ms: total time the Python thread waited on the engine, from the profiler)")

    print()
    print("=" * 78)
    print("3. Implicit blockers (D2L 'Asynchronous Computation'), 1000x1000 float32")
    print("=" * 78)
    for what, secs in d2l_measurements():
        print(f"{what:<62}{secs * 1000:>10.3f} ms")

    print()
    print("=" * 78)
    print("4. A convolutional network: D2L's LeNet, batch 256 of 1x28x28, Adam")
    print("=" * 78)
    sps, first, last = lenet_training()
    print(f"training: {sps:,.0f} samples/s; loss {first:.4f} -> {last:.4f}")

    profiler.set_config(filename=os.path.join(OUT, "trace.json"))
    profiler.events(reset=True)
    profiler.set_state("run")
    train("asnumpy", 1)
    profiler.set_state("stop")
    trace = profiler.dump()
    svg = profiler.timeline(trace, os.path.join(OUT, "timeline.svg"))
    print()
    print(f"Trace of one epoch (asnumpy every step): {trace}")
    print(f"Timeline picture: {svg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
