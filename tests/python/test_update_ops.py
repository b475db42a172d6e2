"""Optimizer update operators keep MXNet 1.9.1's state conventions (the formulas of its
``optimizer_op-inl.h`` kernels, evaluated with NumPy)."""

import numpy as np
from ferromx import nd


def test_nag_mom_update_matches_mxnet_kernel():
    rng = np.random.default_rng(0)
    w, g = rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=(4, 3)).astype(np.float32)
    m = rng.normal(size=(4, 3)).astype(np.float32)
    lr, mu, wd, rescale, clip = 0.1, 0.9, 0.01, 0.5, 0.3
    W, G, M = nd.array(w), nd.array(g), nd.array(m)
    for _ in range(3):
        nd.nag_mom_update(W, G, M, lr=lr, momentum=mu, wd=wd, rescale_grad=rescale,
                          clip_gradient=clip, out=W)
        d = lr * (np.clip(rescale * g, -clip, clip) + wd * w)
        m = mu * m - d
        w = w + mu * m - d
    np.testing.assert_allclose(W.asnumpy(), w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(M.asnumpy(), m, rtol=1e-5, atol=1e-6)


def test_creation_writes_into_out():
    x = nd.array([[5.0, 6.0], [7.0, 8.0]])
    assert nd.zeros((2, 2), out=x) is x
    np.testing.assert_array_equal(x.asnumpy(), np.zeros((2, 2)))
    assert nd.ones((2, 2), out=x) is x
    np.testing.assert_array_equal(x.asnumpy(), np.ones((2, 2)))
    assert nd.full((2, 2), 3.5, out=x) is x
    np.testing.assert_array_equal(x.asnumpy(), np.full((2, 2), 3.5))


def test_naive_engine_raises_at_the_pushing_line(tmp_path):
    import os
    import subprocess
    import sys

    script = tmp_path / "naive.py"
    script.write_text(
        "from ferromx import nd\n"
        "x = nd.array([1.0, 2.0])\n"
        "try:\n"
        "    y = nd.take(x, nd.array([5.0]), mode='raise')\n"
        "except Exception as e:\n"
        "    print('raised at push:', type(e).__name__, e)\n"
        "else:\n"
        "    print('not raised at push')\n"
    )
    env = dict(os.environ, FERROMX_ENGINE_TYPE="NaiveEngine")
    p = subprocess.run([sys.executable, str(script)], check=False, capture_output=True, text=True,
                       env=env,
                       timeout=120)
    assert "raised at push:" in p.stdout, p.stdout + p.stderr
    assert "take" in p.stdout and "naive.py:4" in p.stdout, p.stdout
