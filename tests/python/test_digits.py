"""Proof on a real data set: the UCI handwritten digits (scikit-learn's ``load_digits``,
offline). An MLP trained with Gluon (``examples/digits.py``) and the same loop written
against the Rust API (``crates/ferromx/examples/digits.rs``) both reach >= 95% test
accuracy on the same fixed split."""

import importlib.util
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = 0.95


def _load_example():
    path = os.path.join(ROOT, "examples", "digits.py")
    spec = importlib.util.spec_from_file_location("ferromx_example_digits", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


digits = _load_example()


def test_split_is_fixed_and_scaled():
    x_tr, y_tr, x_te, y_te = digits.load_split()
    assert x_tr.shape == (1437, 64) and x_te.shape == (360, 64)
    assert y_tr.shape == (1437,) and y_te.shape == (360,)
    assert x_tr.dtype == np.float32 and x_tr.min() >= 0.0 and x_tr.max() <= 1.0
    assert set(np.unique(y_te)) == set(range(10))
    again = digits.load_split()
    assert np.array_equal(again[0], x_tr) and np.array_equal(again[3], y_te)


def test_gluon_mlp_reaches_95_percent():
    acc = digits.train(epochs=10, seed=0)
    assert acc >= TARGET, f"Gluon MLP test accuracy {acc:.4f} < {TARGET:.2f}"


def test_export_csv_matches_split(tmp_path):
    train_csv, test_csv = digits.export_csv(str(tmp_path) + os.sep)
    x_tr, y_tr, x_te, y_te = digits.load_split()
    for path, x, y in ((train_csv, x_tr, y_tr), (test_csv, x_te, y_te)):
        rows = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
        assert rows.shape == (len(y), 65)
        assert np.array_equal(rows[:, 0].astype(np.int32), y)
        assert np.array_equal(rows[:, 1:].astype(np.float32), x)


@pytest.mark.timeout(960)
def test_rust_example_reaches_95_percent(tmp_path):
    cargo = shutil.which("cargo")
    if cargo is None:
        pytest.skip("cargo is not on PATH: cannot build the Rust example crates/ferromx/examples/digits.rs")
    train_csv, test_csv = digits.export_csv(str(tmp_path) + os.sep)
    # No `-p`: the workspace default members resolve features exactly as `cargo test --release`
    # did before pytest, so the example built there is reused instead of rebuilt.
    cmd = [cargo, "run", "--release", "-q", "--example", "digits", "--", train_csv, test_csv]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900,
                          check=False)
    report = f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-4000:]}"
    m = re.search(r"final test accuracy ([0-9.]+)", proc.stdout)
    assert m is not None, "the Rust example printed no final accuracy\n" + report
    acc = float(m.group(1))
    assert acc >= TARGET, f"Rust MLP test accuracy {acc:.4f} < {TARGET:.2f}\n{report}"
    assert proc.returncode == 0, report
