"""ferromx optimizers against recorded MXNet 1.9.1 updates (tests/fixtures/optimizer)."""

import importlib.util
import json
import math
import os
import pickle
import warnings

import ferromx as mx
import numpy as np
import pytest
from ferromx import nd
from ferromx import optimizer as opt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXDIR = os.path.join(ROOT, "fixtures", "optimizer")


def _load_recorder():
    spec = importlib.util.spec_from_file_location(
        "record_optimizers", os.path.join(FIXDIR, "record_optimizers.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REC = _load_recorder()
with open(os.path.join(FIXDIR, "optimizers.json")) as _f:
    FIXTURE = json.load(_f)["cases"]


def _tol(case):
    if case[3] == "float16":
        return {"rtol": 2e-3, "atol": 2e-3}
    return {"rtol": 2e-5, "atol": 1e-6}


@pytest.mark.parametrize("case", REC.CASES, ids=[c[0] for c in REC.CASES])
def test_matches_mxnet(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        steps = REC.run_case(mx, case)
    expected = FIXTURE[case[0]]
    assert len(steps) == len(expected)
    for k, (got, want) in enumerate(zip(steps, expected)):
        assert len(got["weights"]) == len(want["weights"])
        assert len(got["states"]) == len(want["states"]), f"{case[0]} step {k}: state count"
        for a, b in zip(got["weights"], want["weights"]):
            np.testing.assert_allclose(a, np.asarray(b), err_msg=f"{case[0]} step {k}",
                                       **_tol(case))  # fmt: skip
        for a, b in zip(got["states"], want["states"]):
            np.testing.assert_allclose(a, np.asarray(b), err_msg=f"{case[0]} step {k} state",
                                       **_tol(case))  # fmt: skip


def test_mxnet_names_present():
    names = [
        "AdaDelta", "AdaGrad", "Adam", "Adamax", "DCASGD", "FTML", "Ftrl", "LARS", "LBSGD",
        "NAG", "NDabs", "Nadam", "Optimizer", "RMSProp", "SGD", "SGLD", "Signum", "LAMB",
        "Test", "Updater", "ccSGD", "create", "get_updater", "register", "contrib",
    ]  # fmt: skip
    for name in names:
        assert hasattr(mx.optimizer, name), name
    assert mx.optimizer.contrib.GroupAdaGrad is opt.Optimizer.opt_registry["groupadagrad"]
    registered = set(opt.Optimizer.opt_registry)
    for key in ("adadelta", "adamax", "ccsgd", "dcasgd", "ftml", "ftrl", "groupadagrad",
                "lamb", "lars", "lbsgd", "nadam", "sgld", "signum", "test"):  # fmt: skip
        assert key in registered
        assert isinstance(opt.create(key), opt.Optimizer)
    assert mx.optimizer.optimizer.Optimizer is opt.Optimizer


def test_multi_precision_keeps_float32_master():
    w16 = nd.array(np.full((4,), 1.0), dtype="float16")
    sgd = opt.SGD(learning_rate=1e-4, multi_precision=True)
    state = sgd.create_state_multi_precision(0, w16)
    mom, master = state
    assert mom is None and np.dtype(master.dtype) == np.float32
    grad = nd.array(np.ones(4), dtype="float16")
    for _ in range(10):
        sgd.update_multi_precision(0, w16, grad, state)
    # 1e-4 steps are below float16 resolution at 1.0, but the master copy accumulates them.
    np.testing.assert_allclose(master.asnumpy(), 1.0 - 10e-4, rtol=1e-6)
    assert np.dtype(w16.dtype) == np.float16
    np.testing.assert_allclose(w16.asnumpy(), np.float16(1.0 - 10e-4), rtol=1e-3)
    # Without the master copy every step rounds back to 1.0.
    plain = nd.array(np.full((4,), 1.0), dtype="float16")
    sgd2 = opt.SGD(learning_rate=1e-4)
    with pytest.warns(UserWarning, match="multi_precision"):
        st = sgd2.create_state_multi_precision(0, plain)
    for _ in range(10):
        sgd2.update_multi_precision(0, plain, grad, st)
    assert np.all(plain.asnumpy() == 1.0)


def test_multi_precision_generic_layout():
    w16 = nd.array(np.linspace(-1, 1, 6), dtype="float16")
    adamax = opt.Adamax(multi_precision=True)
    state = adamax.create_state_multi_precision(0, w16)
    master, (m, _u) = state
    assert np.dtype(master.dtype) == np.float32 and np.dtype(m.dtype) == np.float32
    adamax.update_multi_precision(0, w16, nd.array(np.ones(6), dtype="float16"), state)
    np.testing.assert_allclose(w16.asnumpy(), master.asnumpy().astype(np.float16))
    assert not np.allclose(master.asnumpy(), np.linspace(-1, 1, 6))


def test_lamb_multi_precision_tracks_float32():
    # MXNet 1.9.1's mp LAMB never updates its master copy; ferromx does, so float16 with
    # multi_precision follows the float32 run.
    rng = np.random.RandomState(5)
    w0 = rng.uniform(-1, 1, size=(3, 4))
    grads = [rng.uniform(-1, 1, size=(3, 4)) for _ in range(3)]
    runs = {}
    for dtype in ("float32", "float16"):
        o = opt.LAMB(learning_rate=0.05, wd=0.01, multi_precision=True)
        w = nd.array(w0, dtype=dtype)
        state = o.create_state_multi_precision(0, w)
        for g in grads:
            o.update_multi_precision(0, w, nd.array(g, dtype=dtype), state)
        runs[dtype] = (w.asnumpy().astype(np.float64), state)
    np.testing.assert_allclose(runs["float16"][0], runs["float32"][0], atol=2e-3)
    master = runs["float16"][1][0].asnumpy()
    np.testing.assert_allclose(master, runs["float32"][0], atol=5e-4)
    assert np.abs(master - w0).max() > 0.05


def test_dcasgd_momentum_numpy():
    # MXNet 1.9.1's DCASGD with momentum tests ``if mom:`` on an NDArray and raises;
    # ferromx follows the documented rule, checked against NumPy.
    rng = np.random.RandomState(3)
    w0 = rng.normal(size=(5,)).astype(np.float32)
    grads = [rng.normal(size=(5,)).astype(np.float32) for _ in range(3)]
    lr, mom_c, lamda, wd = 0.1, 0.9, 0.2, 0.01
    o = opt.DCASGD(learning_rate=lr, momentum=mom_c, lamda=lamda, wd=wd)
    w = nd.array(w0)
    state = o.create_state(0, w)
    ref, prev, mom = w0.astype(np.float64), w0.astype(np.float64), np.zeros(5)
    for g in grads:
        o.update(0, w, nd.array(g), state)
        mom = mom_c * mom - lr * (g + wd * ref + lamda * g * g * (ref - prev))
        prev = ref.copy()
        ref = ref + mom
    np.testing.assert_allclose(w.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state[0].asnumpy(), mom, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state[1].asnumpy(), prev, rtol=1e-5, atol=1e-6)


def test_sgld_noise_statistics():
    mx.random.seed(7)
    lr, wd = 0.04, 0.1
    o = opt.SGLD(learning_rate=lr, wd=wd)
    w0 = np.full((200, 100), 0.5, np.float32)
    g = np.full((200, 100), 2.0, np.float32)
    w = nd.array(w0)
    o.update(0, w, nd.array(g), o.create_state(0, w))
    noise = w.asnumpy() - (w0 - lr / 2 * (g + wd * w0))
    assert abs(noise.mean()) < 0.01
    assert abs(noise.std() - math.sqrt(lr)) < 0.01


def test_groupadagrad_rejects_bad_input():
    with pytest.raises(ValueError, match="GroupAdaGrad.*2-D.*\\(4,\\)"):
        opt.contrib.GroupAdaGrad().create_state(0, nd.zeros((4,)))
    o = opt.contrib.GroupAdaGrad(wd=0.1)
    w = nd.zeros((2, 2))
    with pytest.raises(ValueError, match="weight decay"):
        o.update(0, w, nd.ones((2, 2)), o.create_state(0, w))


def test_updater_pickles_new_optimizer_states():
    o = opt.LAMB(learning_rate=0.01)
    up = opt.get_updater(o)
    w = nd.array(np.linspace(-1, 1, 6).reshape(2, 3))
    up(0, nd.ones((2, 3)), w)
    blob = up.get_states(dump_optimizer=True)
    other = opt.get_updater(opt.SGD())
    other.set_states(blob)
    assert isinstance(other.optimizer, opt.LAMB)
    np.testing.assert_allclose(other.states[0][0], up.states[0][0].asnumpy())
    assert pickle.loads(pickle.dumps(o)).beta1 == 0.9


def test_trainer_with_new_optimizers():
    net = mx.gluon.nn.Dense(2, in_units=3)
    net.initialize(mx.init.Constant(0.5))
    for name in ("nadam", "ftml", "lamb", "signum", "adadelta", "lars"):
        trainer = mx.gluon.Trainer(net.collect_params(), name, {"learning_rate": 0.01})
        before = net.weight.data().asnumpy().copy()
        with mx.autograd.record():
            loss = net(nd.ones((4, 3))).sum()
        loss.backward()
        trainer.step(4)
        assert not np.allclose(net.weight.data().asnumpy(), before), name
