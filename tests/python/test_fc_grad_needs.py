"""FullyConnected's backward computes only the gradients something reads: the first layer's
data gradient (a whole gemm per step) is skipped when the data is not a variable."""

import ferromx as mx
import numpy as np
from ferromx import autograd, nd, profiler


def _backward_dots(data_needs_grad):
    """Runs one recorded FC forward+backward; returns (dot ops in the trace, grads)."""
    x = nd.array(np.arange(12).reshape(3, 4) / 10)
    w = nd.array(np.arange(8).reshape(2, 4) / 10)
    b = nd.array([0.5, -0.5])
    for v in (w, b) + ((x,) if data_needs_grad else ()):
        v.attach_grad()
    mx.nd.waitall()
    saved = dict(profiler._config)
    profiler.set_state("stop")
    profiler.events(reset=True)
    profiler.set_state("run")
    try:
        with autograd.record():
            y = nd.FullyConnected(x, w, b, num_hidden=2)
        y.backward(nd.ones((3, 2)))
        mx.nd.waitall()
    finally:
        profiler.set_state("stop")
        evs = profiler.events(reset=True)
        profiler.set_config(**saved)
    dots = sum(1 for e in evs if e.get("ph") == "X" and e.get("cat") == "operator"
               and e["name"] == "dot")
    return dots, x, w, b


def test_data_gradient_is_skipped_when_data_is_not_a_variable():
    dots, x, w, b = _backward_dots(False)
    assert dots == 1  # only dW = dYᵀ·X
    assert x.grad is None
    np.testing.assert_allclose(w.grad.asnumpy(), np.ones((3, 2)).T @ x.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(b.grad.asnumpy(), [3.0, 3.0])


def test_data_gradient_is_computed_when_data_is_a_variable():
    dots, x, w, _b = _backward_dots(True)
    assert dots == 2
    np.testing.assert_allclose(x.grad.asnumpy(), np.ones((3, 2)) @ w.asnumpy(), rtol=1e-6)
