"""Data parallel on cpu(0..n): split_and_load, parameters on several contexts, Trainer
reducing gradients through a KVStore. Two contexts each on half of the batch must give
the parameters of one context on the whole batch."""

import json

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, gluon, nd
from ferromx.gluon import nn

CTX2 = [mx.cpu(0), mx.cpu(1)]


def _data(n=32, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 10)).astype(np.float32)
    y = rng.integers(0, 4, n).astype(np.float32)
    return nd.array(x), nd.array(y)


def _net(ctx):
    mx.random.seed(7)
    net = nn.Sequential()
    net.add(nn.Dense(16, activation="relu", in_units=10), nn.Dense(4, in_units=16))
    net.initialize(mx.init.Xavier(), ctx=ctx)
    return net


def _train(ctx_list, steps=4, **trainer_kw):
    net = _net(ctx_list)
    trainer = gluon.Trainer(
        net.collect_params(), "sgd", {"learning_rate": 0.5, "momentum": 0.9}, **trainer_kw
    )
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for step in range(steps):
        x, y = _data(seed=step)
        xs = gluon.utils.split_and_load(x, ctx_list)
        ys = gluon.utils.split_and_load(y, ctx_list)
        with autograd.record():
            losses = [loss_fn(net(a), b) for a, b in zip(xs, ys)]
        for loss in losses:
            loss.backward()
        trainer.step(x.shape[0])
    return net, trainer


def _params(net, ctx):
    # by position: the names' numeric prefixes differ between network instances
    return {i: p.data(ctx).asnumpy() for i, p in enumerate(net.collect_params().values())}


@pytest.mark.parametrize(
    "kw",
    [
        {},  # kvstore='device', update_on_kvstore chosen as MXNet does (True)
        {"kvstore": "local"},
        {"kvstore": "device", "update_on_kvstore": False},
        {"kvstore": "local", "update_on_kvstore": True},
    ],
)
def test_two_contexts_equal_one_context(kw):
    ref, _ = _train([mx.cpu(0)])
    net, trainer = _train(CTX2, **kw)
    want = _params(ref, mx.cpu(0))
    for ctx in CTX2:
        got = _params(net, ctx)
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-5, err_msg=k)
    assert trainer._kvstore is not None
    expect_update = kw.get("update_on_kvstore", True)
    assert trainer._update_on_kvstore is expect_update


def test_kvstore_object_and_none():
    kv = mx.kv.create("device")
    _, trainer = _train(CTX2, steps=2, kvstore=kv)
    assert trainer._kvstore is kv
    # one context: no store at all (MXNet's rule)
    _, t1 = _train([mx.cpu(0)], steps=1)
    assert t1._kvstore is None
    # None on two contexts: no reduction, each context steps with its own half-batch gradient
    net, trainer = _train(CTX2, steps=2, kvstore=None)
    assert trainer._kvstore is None
    p0, p1 = _params(net, mx.cpu(0)), _params(net, mx.cpu(1))
    assert any(not np.allclose(p0[k], p1[k]) for k in p0)


def test_update_and_allreduce_refuse_update_on_kvstore():
    _, trainer = _train(CTX2, steps=1)
    with pytest.raises(AssertionError, match="update_on_kvstore"):
        trainer.update(32)
    with pytest.raises(AssertionError, match="update_on_kvstore"):
        trainer.allreduce_grads()


def test_allreduce_then_update_with_manual_clip():
    net, trainer = _train(CTX2, steps=1, update_on_kvstore=False)
    x, y = _data(seed=9)
    xs, ys = gluon.utils.split_and_load(x, CTX2), gluon.utils.split_and_load(y, CTX2)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    with autograd.record():
        losses = [loss_fn(net(a), b) for a, b in zip(xs, ys)]
    autograd.backward(losses)
    trainer.allreduce_grads()
    w = net[0].weight
    g0, g1 = (g.asnumpy() for g in w.list_grad())
    np.testing.assert_allclose(g0, g1, rtol=1e-6)  # reduced: the same sum on both contexts
    trainer.update(32)
    np.testing.assert_allclose(w.data(mx.cpu(0)).asnumpy(), w.data(mx.cpu(1)).asnumpy())


def test_parameter_lists_and_reset_ctx():
    net = _net(CTX2)
    w = net[0].weight
    assert w.list_ctx() == CTX2
    assert [a.context for a in w.list_data()] == CTX2
    assert [g.context for g in w.list_grad()] == CTX2
    assert w.data(mx.cpu(1)).context == mx.cpu(1)
    with pytest.raises(RuntimeError, match="not initialized on context cpu\\(2\\)"):
        w.data(mx.cpu(2))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    x, y = _data()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    with autograd.record():
        loss = loss_fn(net(x.as_in_context(mx.cpu(0))), y)
    loss.backward()
    with pytest.raises(UserWarning, match="has not been updated"):
        trainer.step(32)  # cpu(1)'s gradient is stale
    net.collect_params().reset_ctx(mx.cpu(1))
    assert w.list_ctx() == [mx.cpu(1)]
    with autograd.record():
        loss = loss_fn(net(x.as_in_context(mx.cpu(1))), y.as_in_context(mx.cpu(1)))
    loss.backward()
    trainer.step(32)  # the trainer follows the new context
    assert trainer._kvstore is None


def test_split_and_load():
    x = nd.array(np.arange(10, dtype=np.float32).reshape(5, 2))
    parts = gluon.utils.split_and_load(x, CTX2, even_split=False)
    assert [p.shape for p in parts] == [(3, 2), (2, 2)]
    assert [p.context for p in parts] == CTX2
    np.testing.assert_allclose(parts[1].asnumpy(), [[6, 7], [8, 9]])
    with pytest.raises(ValueError, match="cannot be evenly split"):
        gluon.utils.split_and_load(x, CTX2)
    cols = gluon.utils.split_and_load(nd.ones((2, 4)), CTX2, batch_axis=1)
    assert [c.shape for c in cols] == [(2, 2), (2, 2)]


def test_each_context_runs_on_its_own_worker_pool(tmp_path):
    fname = str(tmp_path / "trace.json")
    mx.profiler.set_config(filename=fname)
    mx.profiler.set_state("run")
    _train(CTX2, steps=1)
    mx.waitall()
    mx.profiler.set_state("stop")
    mx.profiler.dump()
    with open(fname) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names = {
        e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"
    }
    ops_by_pool = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "operator":
            pool = names.get(e["tid"], "")
            ops_by_pool.setdefault(pool.split("-w")[0], set()).add(e["name"])
    assert "FullyConnected" in ops_by_pool.get("ferromx-cpu(0)", set())
    assert "FullyConnected" in ops_by_pool.get("ferromx-cpu(1)", set())
