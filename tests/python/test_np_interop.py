"""NumPy's dispatch protocols on ``mx.np.ndarray`` (MXNet's ``numpy_dispatch_protocol``)."""

import ferromx as mx
import numpy as onp
import pytest
from ferromx import np
from ferromx.numpy_dispatch_protocol import (
    _NUMPY_ARRAY_FUNCTION_LIST,
    _NUMPY_ARRAY_UFUNC_LIST,
    with_array_function_protocol,
)


def test_lists_are_mxnets():
    assert len(_NUMPY_ARRAY_FUNCTION_LIST) == 105 and "linalg.norm" in _NUMPY_ARRAY_FUNCTION_LIST
    assert len(_NUMPY_ARRAY_UFUNC_LIST) == 57 and "ldexp" not in _NUMPY_ARRAY_UFUNC_LIST


def test_array_function_dispatches_to_mx_np():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    r = onp.sum(a, axis=0)
    assert isinstance(r, np.ndarray)
    onp.testing.assert_allclose(r.asnumpy(), [4.0, 6.0])
    r = onp.linalg.norm(a)
    assert isinstance(r, np.ndarray)
    onp.testing.assert_allclose(r.asnumpy(), onp.linalg.norm(a.asnumpy()), rtol=1e-6)


def test_array_ufunc_dispatches_to_mx_np():
    a = np.array([1.0, 4.0])
    for r, want in ((onp.sqrt(a), [1.0, 2.0]), (onp.add(a, 1), [2.0, 5.0]),
                    (onp.divide(a, a), [1.0, 1.0]), (onp.float32(2) * a, [2.0, 8.0])):
        assert isinstance(r, np.ndarray)
        onp.testing.assert_allclose(r.asnumpy(), want)
    with pytest.raises(TypeError):
        onp.add.reduce(a)  # only plain calls are overridden, as in MXNet


def test_unlisted_function_falls_back_to_host_numpy():
    a = np.array([[3.0, 1.0], [2.0, 5.0]])
    r = onp.cumprod(a)
    assert isinstance(r, np.ndarray)
    onp.testing.assert_allclose(r.asnumpy(), onp.cumprod(a.asnumpy()))
    q, r = onp.linalg.qr(a)  # a named tuple of arrays
    onp.testing.assert_allclose((q @ r).asnumpy(), a.asnumpy(), rtol=1e-5)
    assert onp.allclose(a, a) is True
    a.attach_grad()
    with mx.autograd.record(), pytest.raises(ValueError, match="autograd"):
        onp.cumprod(a)


def test_np_unary_takes_scalars():
    # MXNet 1.9.1: mx.np.sqrt(2) is numpy.float64(1.4142135623730951)
    r = np.sqrt(2)
    assert isinstance(r, onp.float64) and r == onp.sqrt(2)
    assert np.abs(-3) == 3 and isinstance(np.sin(onp.float32(1)), onp.float32)


def test_with_array_function_protocol_wraps_errors():
    @with_array_function_protocol
    def bad():
        raise KeyError("x")

    with pytest.raises(RuntimeError, match="bad"):
        bad()
