"""Recurrent workloads, ferromx and MXNet 1.9.1 side by side in one run (issue 14, "Speed").

1. word LM: Embedding(10000, 256) -> 2-layer LSTM(256) -> Dense(10000), seq 35 x batch 32,
   one SGD training step (forward, softmax cross-entropy, backward, update): tokens/s;
2. LSTM inference, one step, batch 1, hidden 512: latency (us);
3. GRU and LSTM layer forward+backward at seq 100, batch 64, hidden 256: ms per pass.

Each workload runs in a fresh subprocess per framework (MXNet from its own venv), best of
several repetitions, one sync per repetition.

    PYTHONPATH=python .venv/bin/python benchmarks/bench_rnn.py [--quick] [--mxnet-python PATH]
"""

import argparse
import json
import os
import subprocess
import sys

CODE = r"""
import json, sys, time
import numpy as np
import {mod} as mx
from {mod} import autograd, gluon, nd
from {mod}.gluon import nn, rnn

QUICK = {quick}
np.random.seed(0)

def best(fn, n, reps):
    fn(); nd.waitall()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        nd.waitall()
        times.append((time.perf_counter() - t) / n)
    return min(times)

class LM(gluon.Block):
    def __init__(self):
        super().__init__()
        with self.name_scope():
            self.emb = nn.Embedding(10000, 256)
            self.rnn = rnn.LSTM(256, num_layers=2, input_size=256)
            self.out = nn.Dense(10000, flatten=False, in_units=256)
    def forward(self, x, h):
        y, h = self.rnn(self.emb(x), h)
        return self.out(y), h

def word_lm():
    T, N = 35, 32
    net = LM(); net.initialize(mx.init.Uniform(0.1))
    tr = gluon.Trainer(net.collect_params(), "sgd", {{"learning_rate": 0.1}})
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    x = nd.array(np.random.randint(0, 10000, (T, N)))
    y = nd.array(np.random.randint(0, 10000, (T, N)))
    h = net.rnn.begin_state(batch_size=N)
    def step():
        with autograd.record():
            out, _ = net(x, h)
            l = loss(out.reshape((-1, 10000)), y.reshape((-1,)))
        l.backward()
        tr.step(N)
    s = best(step, 2 if QUICK else 5, 2 if QUICK else 3)
    return T * N / s

def lstm_step():
    layer = rnn.LSTM(512, input_size=512); layer.initialize()
    x = nd.array(np.random.randn(1, 1, 512))
    h = layer.begin_state(batch_size=1)
    def f():
        layer(x, h)
    return best(f, 20 if QUICK else 50, 3 if QUICK else 5) * 1e6

def layer_fb(kind):
    T, N, H = 100, 64, 256
    cls = rnn.LSTM if kind == "lstm" else rnn.GRU
    layer = cls(H, input_size=H); layer.initialize()
    x = nd.array(np.random.randn(T, N, H)); x.attach_grad()
    def f():
        with autograd.record():
            y = layer(x)
        y.backward()
    return best(f, 2 if QUICK else 5, 2 if QUICK else 3) * 1e3

which = sys.argv[1]
res = {{"word_lm": word_lm, "lstm_step": lstm_step,
        "gru_fb": lambda: layer_fb("gru"), "lstm_fb": lambda: layer_fb("lstm")}}[which]()
print(json.dumps(res))
"""

WORKLOADS = [
    ("word_lm", "word LM training (tokens/s)", "higher", "goal >= 2x MXNet"),
    ("lstm_step", "LSTM 1 step b1 h512 (us)", "lower", "goal <= 0.5x MXNet"),
    ("gru_fb", "GRU fwd+bwd T100 N64 H256 (ms)", "lower", "goal <= 1x MXNet"),
    ("lstm_fb", "LSTM fwd+bwd T100 N64 H256 (ms)", "lower", "goal <= 1x MXNet"),
]


def run(python, mod, which, quick):
    env = dict(os.environ)
    if mod == "mxnet":
        env.pop("PYTHONPATH", None)
    p = subprocess.run([python, "-c", CODE.format(mod=mod, quick=quick), which],
                       check=False, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-2000:])
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--mxnet-python", default="/work/main/.venv-mx/bin/python")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    a = ap.parse_args()
    have_mx = os.path.exists(a.mxnet_python)
    only = set(filter(None, a.only.split(",")))
    print(f"{'workload':34s} {'ferromx':>10s} {'mxnet':>10s} {'ratio':>7s}  goal")
    for key, label, better, goal in WORKLOADS:
        if only and key not in only:
            continue
        fx = run(sys.executable, "ferromx", key, a.quick)
        mx = run(a.mxnet_python, "mxnet", key, a.quick) if have_mx else None
        ratio = ""
        if fx and mx:
            r = fx / mx
            ratio = f"{r:.2f}x"
        fxs = f"{fx:.1f}" if fx else "failed"
        mxs = f"{mx:.1f}" if mx else "-"
        print(f"{label:34s} {fxs:>10s} {mxs:>10s} {ratio:>7s}  {goal} ({better} is better)",
              flush=True)


if __name__ == "__main__":
    main()
