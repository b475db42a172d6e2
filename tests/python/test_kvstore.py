"""``mx.kv``: push/pull semantics against MXNet 1.9.1 (recorded in tests/fixtures/kvstore)."""

import json
import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import _native, nd

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "kvstore", "kvstore.json")
with open(FIX) as _f:
    REF = json.load(_f)
CTXS = [mx.cpu(0), mx.cpu(1)]


@pytest.mark.parametrize("name", ["local", "device"])
def test_push_pull_semantics_match_mxnet(name):
    ref = REF[name]
    kv = mx.kv.create(name)
    assert (kv.type, kv.rank, kv.num_workers) == (ref["type"], ref["rank"], ref["num_workers"])
    kv.init(3, nd.ones((2, 3)))
    o = nd.zeros((2, 3))
    kv.pull(3, out=o)
    np.testing.assert_allclose(o.asnumpy(), ref["pull_init"])
    kv.push(3, [nd.ones((2, 3), ctx=c) * (i + 2) for i, c in enumerate(CTXS)])
    outs = [nd.zeros((2, 3), ctx=c) for c in CTXS]
    kv.pull(3, out=outs)
    for x, r in zip(outs, ref["pull_after_push"]):
        np.testing.assert_allclose(x.asnumpy(), r)
    assert outs[1].context == mx.cpu(1)

    kv2 = mx.kv.create(name)
    kv2.init(["a", "b"], [nd.ones((2,)), nd.ones((3,)) * 2])
    kv2.push(["a", "b"], [nd.ones((2,)) * 5, nd.ones((3,)) * 7])
    oa, ob = nd.zeros((2,)), nd.zeros((3,))
    kv2.pull(["a", "b"], out=[oa, ob])
    np.testing.assert_allclose(oa.asnumpy(), ref["str_keys"][0])
    np.testing.assert_allclose(ob.asnumpy(), ref["str_keys"][1])


@pytest.mark.parametrize("name", ["local", "device"])
def test_optimizer_runs_inside_the_store(name):
    ref = REF[name]
    kv = mx.kv.create(name)
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, rescale_grad=1.0))
    kv.init(0, nd.ones((4,)))
    kv.push(0, [nd.ones((4,), ctx=c) * (i + 1) for i, c in enumerate(CTXS)])
    o = nd.zeros((4,))
    kv.pull(0, out=o)
    np.testing.assert_allclose(o.asnumpy(), ref["sgd_after_push"], rtol=1e-6)
    kv.push(0, nd.ones((4,)))
    kv.pull(0, out=o)
    np.testing.assert_allclose(o.asnumpy(), ref["sgd_after_second_push"], rtol=1e-6)


@pytest.mark.parametrize("name", ["local", "device"])
def test_pushpull_and_broadcast(name):
    ref = REF[name]
    kv = mx.kv.create(name)
    kv.init(1, nd.zeros((3,)))
    po = [nd.zeros((3,), ctx=c) for c in CTXS]
    kv.pushpull(1, [nd.ones((3,), ctx=c) * (i + 1) for i, c in enumerate(CTXS)], out=po)
    for x, r in zip(po, ref["pushpull"]):
        np.testing.assert_allclose(x.asnumpy(), r)
    vals = [nd.ones((3,), ctx=c) * (i + 1) for i, c in enumerate(CTXS)]
    kv.pushpull(1, vals)  # out=None: pulled back into the values
    np.testing.assert_allclose(vals[1].asnumpy(), ref["pushpull"][1])
    bo = [nd.zeros((2,), ctx=c) for c in CTXS]
    kv.broadcast(7, nd.array([1.5, -2.0]), out=bo)
    for x, r in zip(bo, ref["broadcast"]):
        np.testing.assert_allclose(x.asnumpy(), r)


def test_push_is_asynchronous_and_ordered():
    kv = mx.kv.create("device")
    kv.init(0, nd.zeros((4,)))
    g = nd.ones((4,), ctx=mx.cpu(1))
    _native._sleep_op(g, 200)
    g += 1  # 2 once the sleep is done
    kv.push(0, [g, nd.ones((4,))])  # returns while g is still being written
    out = nd.zeros((4,))
    kv.pull(0, out=out)
    assert not out.is_ready()
    np.testing.assert_allclose(out.asnumpy(), np.full(4, 3.0))


def test_reduction_ops_show_in_the_profiler(tmp_path):
    kv = mx.kv.create("local")
    kv.init(5, nd.zeros((8,)))
    mx.profiler.set_config(filename=str(tmp_path / "kv.json"))
    mx.profiler.set_state("run")
    kv.push(5, [nd.ones((8,), ctx=c) for c in CTXS])
    out = nd.zeros((8,))
    kv.pull(5, out=out)
    out.wait_to_read()
    mx.profiler.set_state("stop")
    text = mx.profiler.dumps()
    assert "_copyto" in text and "broadcast_add" in text


def test_errors_match_mxnet_and_name_the_key():
    kv = mx.kv.create("local")
    with pytest.raises(mx.MXNetError, match="key 9 has not been initialized"):
        kv.pull(9, out=nd.zeros((2,)))
    with pytest.raises(mx.MXNetError, match="key 9 has not been initialized"):
        kv.push(9, nd.zeros((2,)))
    kv.init(1, nd.zeros((2,)))
    assert "duplicate init of key 1" in REF["local"]["err_init_twice"]
    with pytest.raises(mx.MXNetError, match="duplicate init of key 1"):
        kv.init(1, nd.zeros((2,)))
    # MXNet silently accepts a wrong shape here (err_push_shape is null); ferromx refuses.
    assert REF["local"]["err_push_shape"] is None
    with pytest.raises(mx.MXNetError, match=r"shape mismatch for key 1: stored \(2,\), got \(3,\)"):
        kv.push(1, nd.zeros((3,)))
    with pytest.raises(mx.MXNetError, match="cannot mix int and str keys"):
        kv.init("w", nd.zeros((2,)))
    with pytest.raises(mx.MXNetError, match="row_sparse"):
        kv.row_sparse_pull(1, out=nd.zeros((2,)), row_ids=nd.array([0]))
    with pytest.raises(mx.MXNetError, match="compression type '2bit'"):
        kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.set_gradient_compression({"type": "none"})


def test_create_names():
    # MXNet 1.9.1 creates a store for any name (REF: 'bogus' -> type 'bogus'); ferromx lists
    # the supported ones instead.
    assert REF["unknown_type_created"] == "bogus"
    with pytest.raises(mx.MXNetError, match="supported: local, device, dist_sync"):
        mx.kv.create("bogus")
    with pytest.raises(mx.MXNetError, match="NCCL needs GPUs"):
        mx.kv.create("nccl")
    assert mx.kvstore.create("device").type == "device"
    assert isinstance(mx.kv.create(), mx.kv.KVStoreBase)


def test_save_and_load_optimizer_states(tmp_path):
    def run(kv, steps):
        for _ in range(steps):
            kv.push(0, nd.ones((3,)) * 0.5)

    kv = mx.kv.create("local")
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    kv.init(0, nd.ones((3,)))
    run(kv, 2)
    fname = str(tmp_path / "kv.states")
    kv.save_optimizer_states(fname)
    w_saved = nd.zeros((3,))
    kv.pull(0, out=w_saved)
    run(kv, 1)
    expect = nd.zeros((3,))
    kv.pull(0, out=expect)

    def resumed(load):
        kv2 = mx.kv.create("local")
        kv2.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
        kv2.init(0, w_saved)
        if load:
            kv2.load_optimizer_states(fname)
        run(kv2, 1)
        got = nd.zeros((3,))
        kv2.pull(0, out=got)
        return got.asnumpy()

    np.testing.assert_allclose(resumed(True), expect.asnumpy(), rtol=1e-6)
    assert not np.allclose(resumed(False), expect.asnumpy())  # the momentum was restored
    with pytest.raises(mx.MXNetError, match="no optimizer set"):
        mx.kv.create("local").save_optimizer_states(fname)
