"""gamma, gammaln and erfinv are table operators with MXNet 1.9.1's gradients: the
digamma function (gamma, gammaln) and the output-based ``√π/2·e^(y²)`` (erfinv).
Values and gradients recorded from MXNet 1.9.1 (float32)."""

import ferromx as mx
import numpy as onp
import pytest
from ferromx import autograd, nd
from ferromx import numpy as np
from ferromx import numpy_extension as npx

# op: (inputs, MXNet outputs, MXNet gradients of sum(op(x)))
RECORDED = {
    "erfinv": ([0.5, 0.3, -0.9, 0.999],
               [0.4769362807, 0.2724627256, -1.1630871296, 2.3267562389],
               [1.1125849485, 0.9545204043, 3.4280424118, 198.9418029785]),
    "gamma": ([0.5, 0.3, 2.5, -0.7],
              [1.7724537849, 2.9915690422, 1.3293405771, -4.2736697197],
              [-3.4802320004, -10.4780416489, 0.9347348214, 8.8633880615]),
    "gammaln": ([0.5, 0.3, 2.5, -0.7],
                [0.5723649263, 1.0957980156, 0.2846828699, 1.4524729252],
                [-1.9635107517, -3.5025238991, 0.7031567693, -2.0739524364]),
}


@pytest.mark.parametrize("op", sorted(RECORDED))
@pytest.mark.parametrize("api", ["nd", "npx"])
def test_value_and_gradient_match_recorded_mxnet(op, api):
    xs, ys, gs = RECORDED[op]
    x = nd.array(xs) if api == "nd" else np.array(xs)
    x.attach_grad()
    with autograd.record():
        y = getattr(nd if api == "nd" else npx, op)(x)
    y.backward()
    assert type(y) is type(x)
    onp.testing.assert_allclose(y.asnumpy(), ys, rtol=2e-6)
    onp.testing.assert_allclose(x.grad.asnumpy(), gs, rtol=2e-5)


def test_gammaln_second_derivative_is_trigamma():
    # MXNet 1.9.1 raises here (no FGradient on _backward_gammaln); ψ₁ is the value
    x = nd.array([0.5, 1.0, 3.0], dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = nd.gammaln(x)
        (g,) = autograd.grad(y, [x], create_graph=True, retain_graph=True)
    g.backward()
    euler = 0.5772156649015329
    onp.testing.assert_allclose(g.asnumpy(), [-euler - 2 * onp.log(2), -euler, 1.5 - euler],
                                rtol=1e-13)
    onp.testing.assert_allclose(x.grad.asnumpy(),
                                [onp.pi**2 / 2, onp.pi**2 / 6, onp.pi**2 / 6 - 1.25], rtol=1e-13)


def test_erfinv_edges_and_float64_accuracy():
    y = nd.erfinv(nd.array([1.0, -1.0, 1.5, 0.0], dtype="float64")).asnumpy()
    assert y[0] == onp.inf and y[1] == -onp.inf and onp.isnan(y[2]) and y[3] == 0.0
    z = nd.erfinv(nd.array([0.5], dtype="float64")).asnumpy()[0]
    assert abs(z - 0.4769362762044699) < 1e-15
    # an integer input is computed in float32, as MXNet's float-only unary operators
    assert nd.erfinv(nd.array([0], dtype="int32")).dtype == onp.float32


def test_third_order_of_gammaln_is_a_clear_error():
    x = nd.array([0.5])
    x.attach_grad()
    with autograd.record():
        y = nd.gammaln(x)
        (g,) = autograd.grad(y, [x], create_graph=True, retain_graph=True)
        (h,) = autograd.grad(g, [x], create_graph=True, retain_graph=True)
    with pytest.raises(mx.MXNetError, match="_trigamma"):
        h.backward()
