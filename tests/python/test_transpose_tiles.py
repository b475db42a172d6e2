"""Transposes that swap two groups of trailing axes (``.T``, ``swapaxes`` of the last two,
NCHW <-> NHWC) run as tiled plane transposes split over the cores; every other
permutation keeps the strided gather. Both must equal NumPy, on ragged sizes (not
multiples of the 16-element tile), large arrays (split across threads), every dtype, and
under autograd (the gradient of a transpose is the inverse transpose)."""

import numpy as np
import pytest
from ferromx import autograd, nd

CASES = [
    ((17, 33), (1, 0)),
    ((512, 512), (1, 0)),
    ((3, 1000, 7), (0, 2, 1)),
    ((2, 5, 6, 7), (0, 2, 3, 1)),  # NCHW -> NHWC: (batch 2, rows 5, cols 42)
    ((2, 6, 7, 5), (0, 3, 1, 2)),  # NHWC -> NCHW
    ((4, 3, 2), (1, 2, 0)),  # rows 4, cols 6
    ((300, 70, 9), (2, 0, 1)),  # large enough to split over the cores
    ((2, 3, 4, 5), (0, 1, 3, 2)),
    ((2, 3, 4, 5), (1, 0, 3, 2)),  # not a plane transpose: the gather
    ((1, 1), (1, 0)),
    ((0, 5), (1, 0)),
]


@pytest.mark.parametrize("shape,perm", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8", "float16"])
def test_transpose_matches_numpy(shape, perm, dtype):
    x = (np.arange(int(np.prod(shape))) % 251).reshape(shape).astype(dtype)
    got = nd.transpose(nd.array(x, dtype=dtype), axes=perm).asnumpy()
    np.testing.assert_array_equal(got, np.transpose(x, perm))


def test_matrix_T_and_swapaxes_use_the_same_result():
    x = np.random.default_rng(0).standard_normal((65, 130)).astype(np.float32)
    a = nd.array(x)
    np.testing.assert_array_equal(a.T.asnumpy(), x.T)
    np.testing.assert_array_equal(nd.swapaxes(a, 0, 1).asnumpy(), x.T)


def test_gradient_of_a_plane_transpose_is_the_inverse_transpose():
    x = nd.array(np.random.default_rng(1).standard_normal((2, 5, 6, 7)).astype(np.float32))
    x.attach_grad()
    w = np.random.default_rng(2).standard_normal((2, 6, 7, 5)).astype(np.float32)
    with autograd.record():
        y = nd.transpose(x, axes=(0, 2, 3, 1)) * nd.array(w)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), np.transpose(w, (0, 3, 1, 2)), rtol=1e-6)
