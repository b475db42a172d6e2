"""Train an MLP on the UCI handwritten digits (scikit-learn's ``load_digits``) with Gluon.

A fixed split: the 1797 8x8 images are shuffled once with a seeded NumPy generator
(``SPLIT_SEED``); the first 1437 are the training set and the last 360 the test set.
Features are scaled from 0..16 to [0, 1].

    python examples/digits.py                      # train, print test accuracy each epoch
    python examples/digits.py --epochs 20 --seed 3
    python examples/digits.py --export-csv /tmp/digits
        # writes /tmp/digits_train.csv and /tmp/digits_test.csv (the exact same split;
        # one sample per line: label, then the 64 scaled features; no header) for
        #   cargo run --release -p ferromx --example digits -- /tmp/digits_train.csv /tmp/digits_test.csv

``train(epochs, seed)`` returns the final test accuracy (importable, used by the tests).
"""

import argparse
import os
import sys
import time

import ferromx as mx
import numpy as np
from ferromx import autograd, gluon, nd
from ferromx import metric as _metric  # noqa: F401  (makes mx.metric available)
from ferromx.gluon import nn

SPLIT_SEED = 0
N_TRAIN = 1437  # the remaining 360 samples are the test set


def load_split():
    """The fixed split as float32 features in [0, 1] and int32 labels:
    ``(x_train, y_train, x_test, y_test)``."""
    from sklearn.datasets import load_digits  # shipped with scikit-learn, no download

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    perm = np.random.RandomState(SPLIT_SEED).permutation(len(y))
    x, y = x[perm], y[perm]
    return x[:N_TRAIN], y[:N_TRAIN], x[N_TRAIN:], y[N_TRAIN:]


def export_csv(prefix):
    """Writes ``PREFIX_train.csv`` and ``PREFIX_test.csv`` (label, then 64 features; no
    header) and returns their paths. ``prefix`` may also be a directory (ending in a path
    separator or already existing): the files are then ``train.csv`` and ``test.csv`` in it."""
    x_tr, y_tr, x_te, y_te = load_split()
    if prefix.endswith(os.sep) or os.path.isdir(prefix):
        os.makedirs(prefix, exist_ok=True)
        paths = (os.path.join(prefix, "train.csv"), os.path.join(prefix, "test.csv"))
    else:
        paths = (prefix + "_train.csv", prefix + "_test.csv")
    for path, x, y in zip(paths, (x_tr, x_te), (y_tr, y_te)):
        with open(path, "w") as f:
            # repr of a float32 round-trips exactly; the features are k/16 anyway
            f.writelines(str(int(label)) + "," + ",".join(repr(float(v)) for v in row) + "\n"
                         for label, row in zip(y, x))
    return paths


def build_net():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(64, activation="relu"), nn.Dense(10))
    return net


def evaluate(net, data_iter):
    acc = mx.metric.Accuracy()
    for data, label in data_iter:
        acc.update(label, net(data))
    return acc.get()[1]


def train(epochs=10, seed=0, batch_size=32, learning_rate=0.01, verbose=False):
    """Trains the MLP for ``epochs`` epochs and returns the final test accuracy."""
    mx.random.seed(seed)
    np.random.seed(seed)  # the DataLoader's shuffle uses NumPy's global generator
    x_tr, y_tr, x_te, y_te = load_split()

    train_data = gluon.data.DataLoader(
        gluon.data.ArrayDataset(nd.array(x_tr), nd.array(y_tr, dtype="int32")),
        batch_size=batch_size,
        shuffle=True,
    )
    test_data = gluon.data.DataLoader(
        gluon.data.ArrayDataset(nd.array(x_te), nd.array(y_te, dtype="int32")),
        batch_size=len(y_te),
    )

    net = build_net()
    net.initialize(mx.init.Xavier())
    loss_fn = gluon.loss.SoftmaxCELoss()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": learning_rate})

    test_acc = 0.0
    for epoch in range(epochs):
        tic = time.time()
        train_acc = mx.metric.Accuracy()
        total_loss = nd.zeros((1,))
        for data, label in train_data:
            with autograd.record():
                out = net(data)
                loss = loss_fn(out, label)
            loss.backward()
            trainer.step(data.shape[0])
            total_loss += loss.sum()
            train_acc.update(label, out)
        test_acc = evaluate(net, test_data)
        if verbose:
            mean_loss = total_loss.asscalar() / len(y_tr)
            print(f"epoch {epoch + 1:2d}  loss {mean_loss:.4f}  train acc {train_acc.get()[1]:.4f}  "
                  f"test acc {test_acc:.4f}  ({time.time() - tic:.2f}s)")
    return test_acc


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument(
        "--export-csv",
        metavar="PREFIX",
        help="write PREFIX_train.csv and PREFIX_test.csv (or DIR/train.csv and DIR/test.csv "
        "when PREFIX is a directory) and exit",
    )
    args = p.parse_args(argv)
    if args.export_csv:
        for path in export_csv(args.export_csv):
            print("wrote", path)
        return 0
    tic = time.time()
    acc = train(args.epochs, args.seed, args.batch_size, args.lr, verbose=True)
    print(f"final test accuracy {acc:.4f} in {time.time() - tic:.1f}s")
    return 0 if acc >= 0.95 else 1


if __name__ == "__main__":
    sys.exit(main())
