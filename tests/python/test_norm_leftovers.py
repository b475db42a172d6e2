"""GELU (erf and tanh forms), GroupNorm(output_mean_var=True) and float16 BatchNorm against
recorded MXNet 1.9.1 values (``tests/fixtures/norm_leftovers``), and the shared parameter
setup of the normalization layers."""

import os

import numpy as np
import pytest
from ferromx import autograd, gluon, nd

FIX = np.load(os.path.join(os.path.dirname(__file__), "..", "fixtures", "norm_leftovers",
                           "cases.npz"))


def test_gelu_erf_matches_recorded_mxnet():
    x = nd.array(FIX["gelu/x"], dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = gluon.nn.GELU()(x)
    y.backward(nd.array(FIX["gelu/head"], dtype="float64"))
    # MXNet 1.9.1 evaluates erf in float32 even for float64 data: agreement to float32
    # precision (ferromx's float64 GELU is exact to float64).
    np.testing.assert_allclose(y.asnumpy(), FIX["gelu/y"], rtol=1e-6, atol=2e-7)
    np.testing.assert_allclose(x.grad.asnumpy(), FIX["gelu/dx"], rtol=1e-5, atol=1e-6)


def test_gelu_tanh_is_the_tanh_formula_and_differs_from_erf():
    xs = FIX["gelu/x"]
    x = nd.array(xs, dtype="float64")
    x.attach_grad()
    layer = gluon.nn.GELU(approximation="tanh")
    with autograd.record():
        y = layer(x)
    y.backward()
    c = np.sqrt(2 / np.pi)
    t = np.tanh(c * (xs + 0.044715 * xs**3))
    np.testing.assert_allclose(y.asnumpy(), 0.5 * xs * (1 + t), rtol=1e-12, atol=1e-14)
    dref = 0.5 * (1 + t) + 0.5 * xs * (1 - t * t) * c * (1 + 3 * 0.044715 * xs**2)
    np.testing.assert_allclose(x.grad.asnumpy(), dref, rtol=1e-10, atol=1e-12)
    # Close to, but not equal to, the exact (erf) GELU that MXNet 1.9.1 computes.
    diff = np.abs(y.asnumpy() - FIX["gelu/y"])
    assert 1e-5 < diff.max() < 2e-3
    assert "tanh" in repr(layer)
    with pytest.raises(ValueError, match="approximation"):
        gluon.nn.GELU(approximation="fast")


def _gn_inputs():
    arrs = [nd.array(FIX[f"gn/{k}"], dtype="float64") for k in ("x", "gamma", "beta")]
    for a in arrs:
        a.attach_grad()
    return arrs


def test_group_norm_output_mean_var_matches_recorded_mxnet():
    arrs = _gn_inputs()
    with autograd.record():
        res = nd.GroupNorm(*arrs, num_groups=3, eps=1e-3, output_mean_var=True)
    assert isinstance(res, list) and len(res) == 3
    assert res[1].shape == res[2].shape == (2, 3)
    res[0].backward(nd.array(FIX["gn/head"], dtype="float64"))
    for k in range(3):
        np.testing.assert_allclose(res[k].asnumpy(), FIX[f"gn/out{k}"], rtol=1e-8, atol=1e-10,
                                   err_msg=f"out{k}")
        np.testing.assert_allclose(arrs[k].grad.asnumpy(), FIX[f"gn/grad{k}"], rtol=1e-7,
                                   atol=1e-9, err_msg=f"grad{k}")
    # Without the flag: one output, the same values.
    single = nd.GroupNorm(*arrs, num_groups=3, eps=1e-3)
    np.testing.assert_allclose(single.asnumpy(), FIX["gn/out0"], rtol=1e-8, atol=1e-10)


def test_batch_norm_float16_data_with_float32_parameters():
    x = nd.array(FIX["bn16/x"], dtype="float16")
    g, b = nd.array(FIX["bn16/gamma"]), nd.array(FIX["bn16/beta"])
    mm, mv = nd.zeros(3), nd.ones(3)
    for a in (x, g, b):
        a.attach_grad()
    with autograd.record():
        y = nd.BatchNorm(x, g, b, mm, mv, eps=1e-3, momentum=0.8, fix_gamma=False)
    assert y.dtype == np.float16
    y.backward(nd.array(FIX["bn16/head"], dtype="float16"))
    np.testing.assert_allclose(y.asnumpy().astype("float32"), FIX["bn16/y"].astype("float32"),
                               rtol=2e-3, atol=2e-3)
    assert x.grad.dtype == np.float16
    np.testing.assert_allclose(x.grad.asnumpy().astype("float32"),
                               FIX["bn16/dx"].astype("float32"), rtol=5e-3, atol=5e-3)
    np.testing.assert_allclose(g.grad.asnumpy(), FIX["bn16/dgamma"], rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(b.grad.asnumpy(), FIX["bn16/dbeta"], rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(mm.asnumpy(), FIX["bn16/moving_mean"], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(mv.asnumpy(), FIX["bn16/moving_var"], rtol=1e-3, atol=1e-4)
    with autograd.predict_mode():
        yp = nd.BatchNorm(x, g, b, mm, mv, eps=1e-3)
    np.testing.assert_allclose(yp.asnumpy().astype("float32"),
                               FIX["bn16/y_predict"].astype("float32"), rtol=2e-3, atol=2e-3)
    with pytest.raises(Exception, match="BatchNorm"):
        nd.BatchNorm(x, g.astype("float16"), b, mm, mv)


def test_gluon_batch_norm_runs_on_float16_input():
    layer = gluon.nn.BatchNorm(in_channels=3)
    layer.initialize()
    layer.cast("float16")  # the parameters stay float32, as in MXNet
    assert layer.gamma.data().dtype == np.float32
    x = nd.array(FIX["bn16/x"], dtype="float16")
    with autograd.record():
        y = layer(x)
    assert y.dtype == np.float16 and y.shape == x.shape


@pytest.mark.parametrize("cls, kwargs, shape", [
    (gluon.nn.BatchNorm, {"center": False}, (4,)),
    (gluon.nn.InstanceNorm, {"scale": True, "center": False}, (4,)),
    (gluon.nn.GroupNorm, {"num_groups": 2, "scale": False}, (2,)),
    (gluon.nn.LayerNorm, {"center": False}, (3,)),
])
def test_norm_layers_share_the_gamma_beta_setup(cls, kwargs, shape):
    layer = cls(**kwargs)
    layer.initialize()
    x = nd.array(np.random.default_rng(0).uniform(0.5, 1.5, (2, 4, 3)))
    with autograd.record():
        layer(x)
    scale, center = kwargs.get("scale", cls is not gluon.nn.InstanceNorm), kwargs.get("center", True)
    assert layer.gamma.shape == shape and layer.beta.shape == shape
    assert layer.gamma.grad_req == ("write" if scale else "null")
    assert layer.beta.grad_req == ("write" if center else "null")
    np.testing.assert_array_equal(layer.gamma.data().asnumpy(), 1)
    np.testing.assert_array_equal(layer.beta.data().asnumpy(), 0)
