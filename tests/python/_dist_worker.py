"""Run under ``mpirun -np 2`` by test_distributed.py: ``python _dist_worker.py MODE OUT``."""

import os
import signal
import sys
import time

import ferromx as mx
import numpy as np
from ferromx import autograd, gluon, nd
from ferromx.gluon import nn

BATCH, STEPS = 32, 4


def make_net():
    mx.random.seed(3)
    net = nn.Sequential()
    net.add(nn.Dense(16, activation="relu", in_units=10), nn.Dense(4, in_units=16))
    net.initialize(mx.init.Xavier())
    return net


def batches():
    rng = np.random.default_rng(0)
    for _ in range(STEPS):
        x = rng.standard_normal((BATCH, 10)).astype(np.float32)
        y = rng.integers(0, 4, BATCH).astype(np.float32)
        yield x, y


def train(trainer_factory, part, nparts, step_batch):
    net = make_net()
    trainer = trainer_factory(net)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    n = BATCH // nparts
    for x, y in batches():
        xs, ys = nd.array(x[part * n : (part + 1) * n]), nd.array(y[part * n : (part + 1) * n])
        with autograd.record():
            loss = loss_fn(net(xs), ys)
        loss.backward()
        trainer.step(step_batch)
    return [p.data().asnumpy() for p in net.collect_params().values()]


def opt():
    return {"learning_rate": 0.5, "momentum": 0.9}


def main():
    mode, out = sys.argv[1], sys.argv[2]
    import ferromx.distributed as dist

    dist.init()
    r = dist.rank()
    if mode == "all":
        if r == 0:  # the single-process reference, here so the test process keeps its seed
            np.savez(f"{out}.ref", *reference())
        for sub in ("horovod", "dist_sync", "horovod_buckets", "dist_sync_buckets",
                    "collectives"):
            np.savez(f"{out}.{sub}.{r}", *run(sub, dist))
        np.savez(f"{out}.overlap.{r}", *overlap(dist))
    elif mode in ("kill", "stop"):
        fail(mode, dist)
    elif mode == "kill_train":
        kill_train(dist)
    elif mode == "watchdog":
        watchdog(dist)
    else:
        raise SystemExit(f"unknown mode {mode}")


def reference():
    """Single process, whole batch."""
    return train(lambda net: gluon.Trainer(net.collect_params(), "sgd", opt()), 0, 1, BATCH)


def run(mode, dist):
    r, n = dist.rank(), dist.size()
    if mode.endswith("_buckets"):
        # several fused buckets for this small net (reverse order: dense1 weight+bias
        # (272 bytes), then dense0 weight+bias (704 bytes))
        saved = dist.BUCKET_BYTES, dist.FIRST_BUCKET_BYTES
        dist.BUCKET_BYTES, dist.FIRST_BUCKET_BYTES = 800, 300
        try:
            return run(mode[: -len("_buckets")], dist)
        finally:
            dist.BUCKET_BYTES, dist.FIRST_BUCKET_BYTES = saved
    if mode == "horovod":

        def factory(net):
            dist.broadcast_parameters(net.collect_params(), root_rank=0)
            return dist.DistributedTrainer(net.collect_params(), "sgd", opt())

        params = train(factory, r, n, BATCH // n)
    elif mode == "dist_sync":
        # MXNet's rule: the optimizer scales the sum over workers by 1/batch_size
        def factory(net):
            return gluon.Trainer(net.collect_params(), "sgd", opt(), kvstore="dist_sync")

        params = train(factory, r, n, BATCH)
    elif mode == "collectives":
        a = nd.array(np.full((3,), r + 1.0, dtype=np.float32))
        s = dist.allreduce(a, average=False)
        m = dist.allreduce(a)
        dist.allreduce_(a, average=True)
        g = dist.allgather(nd.array([[r * 10.0, r * 10.0 + 1]]))
        b = dist.broadcast(nd.array([r + 5.0]), root_rank=1)
        params = [s.asnumpy(), m.asnumpy(), a.asnumpy(), g.asnumpy(), b.asnumpy()]
        kv = mx.kv.create("dist_sync")
        assert (kv.rank, kv.num_workers, kv.type) == (r, n, "dist_sync")
        try:
            kv.pull(3, out=nd.zeros((2,)))
        except mx.MXNetError as e:
            params.append(np.array([1.0 if "has not been initialized" in str(e) else 0.0]))
        bad = nd.zeros((2 + r,))
        dist.allreduce_(bad)
        try:
            bad.asnumpy()
            params.append(np.array([0.0]))
        except mx.MXNetError as e:
            params.append(np.array([1.0 if "differ across ranks" in str(e) else 0.0]))
    return params


def fail(mode, dist):
    r = dist.rank()
    a = nd.ones((4,))
    dist.allreduce_(a)
    a.wait_to_read()
    if r == 1:
        os.kill(os.getpid(), signal.SIGKILL if mode == "kill" else signal.SIGSTOP)
    t0 = time.monotonic()
    dist.allreduce_(a)
    try:
        a.asnumpy()
        print(f"rank {r}: no error", flush=True)
    except mx.MXNetError as e:
        print(f"rank {r}: failed after {time.monotonic() - t0:.1f}s: {e}", flush=True)
        os._exit(3)


def kill_train(dist):
    """Bucketed training; rank 1 dies after its backward of step 2 (its bucket allreduces
    are posted, its update is not): rank 0's next collectives must fail with a clear
    error within the timeout instead of hanging."""
    r = dist.rank()
    dist.BUCKET_BYTES, dist.FIRST_BUCKET_BYTES = 800, 300
    net = make_net()
    dist.broadcast_parameters(net.collect_params(), root_rank=0)
    trainer = dist.DistributedTrainer(net.collect_params(), "sgd", opt())
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    n = BATCH // dist.size()
    t0 = time.monotonic()
    try:
        for step, (x, y) in enumerate(batches()):
            xs, ys = nd.array(x[r * n : (r + 1) * n]), nd.array(y[r * n : (r + 1) * n])
            with autograd.record():
                loss = loss_fn(net(xs), ys)
            t0 = time.monotonic()
            loss.backward()
            if r == 1 and step == 2:
                os.kill(os.getpid(), signal.SIGKILL)
            trainer.step(n)
        for p in net.collect_params().values():
            p.data().asnumpy()
        print(f"rank {r}: no error", flush=True)
    except mx.MXNetError as e:
        print(f"rank {r}: failed after {time.monotonic() - t0:.1f}s: {e}", flush=True)
        os._exit(3)


def overlap(dist):
    """One profiled DistributedTrainer step of a 784-1024-1024-10 MLP. Returns the
    profiler times (engine clock, us): start and end of each bucket's allreduce, end of
    the op computing the first layer's weight gradient (backward's last gemm: it needs
    every later layer's backward), and when ``step`` returned to the frontend."""
    from ferromx import profiler

    # Samples per step. The first bucket's allreduce starts a few ms into backward; at
    # 96 samples backward's last gemm ended 0.9-12 ms after that, and a scheduling hiccup
    # on a loaded 2-core machine once let it end first. 384 samples make the gemms after
    # that point four times longer without changing what is checked.
    BATCH = 384

    mx.random.seed(5)
    net = nn.Sequential()
    # fixed names: rank 0 built more blocks before (the reference), and parameters are
    # broadcast in sorted name order
    net.add(nn.Dense(1024, activation="relu", in_units=784, prefix="ov0_"),
            nn.Dense(1024, activation="relu", in_units=1024, prefix="ov1_"),
            nn.Dense(10, in_units=1024, prefix="ov2_"))

    net.initialize(mx.init.Xavier())
    dist.broadcast_parameters(net.collect_params(), root_rank=0)
    trainer = dist.DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    rng = np.random.default_rng(dist.rank())
    x = nd.array(rng.standard_normal((BATCH, 784)).astype(np.float32))
    y = nd.array(rng.integers(0, 10, BATCH).astype(np.float32))
    stepped = profiler.Marker(profiler.Domain("test"), "step returned")

    def step(mark):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(BATCH)
        if mark:
            stepped.mark()

    step(False)
    mx.nd.waitall()
    profiler.set_config(profile_all=True)
    profiler.set_state("run")
    step(True)
    mx.nd.waitall()
    profiler.set_state("stop")
    evs = profiler.events(reset=True)
    ar = sorted((e["ts"], e["ts"] + e["dur"]) for e in evs
                if e["ph"] == "X" and e["name"].startswith("allreduce(grads")
                and not e["name"].endswith(".status"))
    # dW of dense0 = dot(dY (BATCH, 1024), x (BATCH, 784)): the one gemm reading x in backward
    last_bw = max(e["ts"] + e["dur"] for e in evs if e["ph"] == "X" and e["name"] == "dot"
                  and f"({BATCH}, 784)" in e["args"].get("detail", ""))
    mark = next(e["ts"] for e in evs if e["ph"] == "i" and e["name"] == "step returned")
    params = [p.data().asnumpy() for p in net.collect_params().values()]
    return [np.array(ar), np.array([last_bw, mark])] + params


def watchdog(dist):
    """Rank 1 meets rank 0 in the shape exchange, then stops: rank 0 is left inside the
    blocking MPI_Allreduce, which only the watchdog can end (by aborting the job)."""
    a = nd.ones((4,))
    if dist.rank() == 1:
        dist._check_same(a, "allreduce")
        os.kill(os.getpid(), signal.SIGSTOP)
    dist.allreduce_(a)
    a.wait_to_read()
    print(f"rank {dist.rank()}: no error", flush=True)


if __name__ == "__main__":
    main()
