"""A graph recorded and never differentiated is freed with its outputs.

Each backward closure keeps what its gradient reads, often the operation's own
output; the output points at the node holding that closure. Were the closure to
hold the output itself, every graph not reached by a backward (evaluation under
`record()`, a metric, the part of a forward the loss ignores) would stay alive:
MXNet frees it when its outputs go. Checked for every differentiable operator of
the table and for the common Gluon path."""

import gc

import numpy as np
import pytest
from ferromx import autograd, engine, gluon, nd
from test_op_table import DIFFERENTIABLE, _call, _example_inputs, _kwargs


def _live():
    gc.collect()
    nd.waitall()
    return engine.memory_info()["live"]


def _record_and_drop(d, arrs, kwargs):
    with autograd.record():
        out = _call(d, arrs, kwargs)
    del out


@pytest.mark.parametrize("d", DIFFERENTIABLE, ids=lambda d: d["name"])
def test_an_undifferentiated_graph_is_freed(d):
    rng = np.random.default_rng(0)
    arrs = [nd.array(x, dtype="float32") for x in _example_inputs(d, rng, "float32")]
    for a in arrs:
        a.attach_grad()
    kwargs = _kwargs(d["example"][1])
    _record_and_drop(d, arrs, kwargs)  # first call: lazily built caches, if any
    before = _live()
    for _ in range(3):
        _record_and_drop(d, arrs, kwargs)
    assert _live() == before, d["name"]


def test_a_gluon_forward_under_record_without_backward_is_freed():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(64, activation="relu"), gluon.nn.Dense(10))
    net.initialize()
    x = nd.random.uniform(shape=(32, 100))
    with autograd.record():
        net(x).softmax()
    before = _live()
    for _ in range(5):
        with autograd.record():
            out = net(x).softmax()
        del out
    assert _live() == before


def test_create_graph_still_differentiates_through_saved_outputs():
    # d/dx of d/dx exp(x) * 2 = 2 exp(x): exp's output, dropped by Python, is read by
    # its gradient and must stay in the graph for the second derivative.
    x = nd.array([0.5, 1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = nd.exp(x) * 2
        (g,) = autograd.grad(y, [x], create_graph=True)
    g.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * np.exp([0.5, 1.0, 2.0]), rtol=1e-6)
    x2 = nd.array([0.3, -0.4])
    x2.attach_grad()
    with autograd.record():
        s = nd.sigmoid(x2)
        (g2,) = autograd.grad(s, [x2], create_graph=True)
    g2.backward()
    sv = 1 / (1 + np.exp(-np.array([0.3, -0.4])))
    np.testing.assert_allclose(x2.grad.asnumpy(), sv * (1 - sv) * (1 - 2 * sv), rtol=1e-5)
