"""Regression tests for the fixes made while running MXNet 1.9.1's test_numpy_op.py."""

import inspect

import ferromx as mx
import numpy as _np
import pytest
from ferromx import np, npx


def test_numpy_op_signature_module_maps_op_names_to_functions():
    from ferromx import _numpy_op_doc, base, numpy_op_signature

    get = numpy_op_signature._get_builtin_op
    assert get("_np_sum") is np.sum
    # submodules are spelled with a leading underscore, as in MXNet (``_np__random_shuffle``)
    assert get("_np__random_shuffle") is np.random.shuffle
    assert get("_np__linalg_norm") is np.linalg.norm
    assert get("_npx_relu") is npx.relu
    assert get("sum") is None
    with pytest.raises(ValueError, match="no_such_op"):
        get("_np_no_such_op")
    with pytest.raises(ValueError, match="random_normal"):  # as MXNet 1.9.1
        get("_np_random_normal")
    assert base._get_op_submodule_name("_np__random_x", "_np_", base._NP_OP_SUBMODULE_LIST) == (
        "_random_"
    )
    assert inspect.ismodule(_numpy_op_doc)
    # every registered _np_ operator has a stub in _numpy_op_doc (MXNet's own check)
    for name in mx.operator.get_all_registered_operators():
        if name.startswith("_np_"):
            assert hasattr(_numpy_op_doc, name), name


class _Max(mx.gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return x.max(axis=(), keepdims=True) + x.flatten().sum()


def test_hybridized_np_block_keeps_numpy_semantics_of_array_methods():
    # axis=() reduces nothing and flatten is 1-d, as in NumPy, also when hybridized
    x = np.array(_np.arange(6.0).reshape(2, 3))
    blk = _Max()
    blk.hybridize()
    out = blk(x)
    assert out.shape == (2, 3)
    _np.testing.assert_allclose(out.asnumpy(), _np.arange(6.0).reshape(2, 3) + 15.0)
    # a layer using operators only still traces into a graph
    dense = mx.gluon.nn.Dense(3)
    dense.initialize()
    dense.hybridize()
    dense(np.ones((2, 4)))
    assert dense._cached_graph


@pytest.mark.parametrize("call", [
    lambda: np.random.exponential(scale=-1),
    lambda: np.random.rayleigh(scale=-1),
    lambda: np.random.weibull(a=0),
    lambda: np.random.pareto(a=-1),
    lambda: np.random.power(a=0),
    lambda: np.random.gamma(np.array(1), np.array(-1.0)),
    lambda: np.random.gamma(0, 1),
    lambda: npx.random.bernoulli(prob=np.array([3.0])),
])
def test_random_parameters_outside_the_domain_raise_value_error(call):
    with pytest.raises(ValueError):
        call().asnumpy()
