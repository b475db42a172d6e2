"""Large products are cut into one single-threaded gemm per core, along the longer of m and
n: every transpose combination and ragged split must equal NumPy's product."""

import itertools

import numpy as np
import pytest
from ferromx import nd


@pytest.mark.parametrize("m,n,k", [(300, 70, 130), (20, 517, 64), (129, 129, 3), (1000, 1, 200)])
@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
def test_split_products_match_numpy(m, n, k, ta, tb):
    rng = np.random.default_rng(m * 7 + n)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    want = (a.T if ta else a) @ (b.T if tb else b)
    got = nd.dot(nd.array(a), nd.array(b), transpose_a=ta, transpose_b=tb).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_split_accumulates_into_the_gradient():
    """FullyConnected's weight gradient with grad_req='add' accumulates through the split."""
    from ferromx import autograd
    rng = np.random.default_rng(0)
    x = nd.array(rng.standard_normal((256, 300)).astype(np.float32))
    w = nd.array(rng.standard_normal((200, 300)).astype(np.float32))
    w.attach_grad(grad_req="add")
    for _ in range(2):
        with autograd.record():
            y = nd.FullyConnected(x, w, None, num_hidden=200, no_bias=True)
        y.backward(nd.ones((256, 200)))
    want = 2 * np.ones((256, 200), np.float32).T @ x.asnumpy()
    np.testing.assert_allclose(w.grad.asnumpy(), want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("m,n,k", [(256, 512, 512), (33, 40, 1024), (200, 96, 512), (64, 300, 256)])
@pytest.mark.parametrize("accumulate", [False, True])
def test_transposed_rhs_with_a_2k_row_stride_is_repacked_exactly(m, n, k, accumulate):
    """A transposed rhs whose rows are a multiple of 2 KiB apart is copied untransposed
    before the product (cache-set conflicts in the crate's packing): split along n and
    along m, ragged pieces, and accumulation into the destination still give NumPy's
    product."""
    rng = np.random.default_rng(m + n + k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((n, k)).astype(np.float32)
    want = a @ b.T
    if accumulate:  # FullyConnected accumulates the product onto the broadcast bias
        bias = rng.standard_normal(n).astype(np.float32)
        got = nd.FullyConnected(nd.array(a), nd.array(b), nd.array(bias), num_hidden=n).asnumpy()
        want = want + bias
    else:
        got = nd.dot(nd.array(a), nd.array(b), transpose_b=True).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    g = nd.dot(nd.array(a64, dtype="float64"), nd.array(b64, dtype="float64"), transpose_b=True)
    np.testing.assert_allclose(g.asnumpy(), a64 @ b64.T, rtol=1e-9, atol=1e-9)
