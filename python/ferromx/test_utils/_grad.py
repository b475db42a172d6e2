"""Gradient and consistency checks of ``mxnet.test_utils``.

ferromx has no symbols: :func:`check_numeric_gradient` takes a Python function of NDArrays
and checks its autograd gradient against central finite differences. The checks that need
a symbol and an executor (``check_symbolic_forward``, ``check_speed`` ...) raise
``MXNetError`` saying so.
"""

import numpy as np

from .. import autograd
from .. import ndarray as nd
from ..base import MXNetError
from ._compare import assert_almost_equal, default_numeric_eps, get_tolerance
from ._random import default_context

__all__ = [
    "check_consistency",
    "check_gluon_hybridize_consistency",
    "check_numeric_gradient",
    "check_speed",
    "check_symbolic_backward",
    "check_symbolic_forward",
    "compare_optimizer",
    "numeric_grad",
    "same_symbol_structure",
    "simple_forward",
]


def _needs_sym(name):
    return MXNetError(f"test_utils.{name} needs mx.sym (graph issue): ferromx has no symbolic "
                      "API yet; use the NDArray/autograd form (e.g. check_numeric_gradient with "
                      "a function of NDArrays)")


def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """Run a symbol forward; raises ``MXNetError`` (needs mx.sym)."""
    raise _needs_sym("simple_forward")


def check_symbolic_forward(sym, location, expected, *args, **kwargs):
    """Compare a symbol's forward outputs; raises ``MXNetError`` (needs mx.sym)."""
    raise _needs_sym("check_symbolic_forward")


def check_symbolic_backward(sym, location, out_grads, expected, *args, **kwargs):
    """Compare a symbol's backward gradients; raises ``MXNetError`` (needs mx.sym)."""
    raise _needs_sym("check_symbolic_backward")


def check_speed(sym, location=None, ctx=None, N=20, grad_req=None, typ="whole", **kwargs):
    """Time a symbol's executor; raises ``MXNetError`` (needs mx.sym)."""
    raise _needs_sym("check_speed")


def check_consistency(sym, ctx_list, *args, **kwargs):
    """Compare a symbol across contexts and dtypes; raises ``MXNetError`` (needs mx.sym)."""
    raise _needs_sym("check_consistency")


def same_symbol_structure(sym1, sym2):
    """Compare two symbols' graphs; raises ``MXNetError`` (needs mx.sym)."""
    raise _needs_sym("same_symbol_structure")


def numeric_grad(executor, location, aux_states=None, eps=1e-4, use_forward_train=True,
                 dtype=np.float32):
    """Finite differences through an executor; raises ``MXNetError`` (needs mx.sym)."""
    raise _needs_sym("numeric_grad")


def _parse_grad_nodes(grad_nodes, names):
    """``{position: grad_req}`` of the inputs to check."""
    if grad_nodes is None:
        return {i: "write" for i in range(len(names))}
    reqs = dict(grad_nodes) if isinstance(grad_nodes, dict) else dict.fromkeys(grad_nodes,
                                                                                 "write")
    out = {}
    for key, req in reqs.items():
        if key in names:
            pos = names.index(key)
        elif isinstance(key, int) and 0 <= key < len(names):
            pos = key
        else:
            raise ValueError(f"check_numeric_gradient: grad node {key!r} is not an input "
                             f"(inputs: {names})")
        if req not in ("write", "add", "null"):
            raise ValueError(f"Invalid grad_req {req} for argument {key}")
        out[pos] = req
    return out


def _outputs(res):
    return list(res) if isinstance(res, (list, tuple)) else [res]


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=np.float64, eps=None):
    """Compare the autograd gradient of ``sym`` with central finite differences.

    Parameters
    ----------
    sym : callable
        A function of NDArrays returning an NDArray (or a tuple of them); ferromx has no
        symbols, and a Symbol raises ``MXNetError`` (needs mx.sym).
    location : array, list/tuple of arrays, or dict of name -> array
        The point; a dict calls ``sym(**location)``, a list ``sym(*location)``.
    aux_states : list or dict, optional
        Extra, not differentiated inputs: appended to the positional arguments (list) or
        passed as keyword arguments (dict).
    numeric_eps, eps : float, optional
        The finite-difference step (default: by output dtype, float64 2**-14).
    rtol, atol : float, optional
        Tolerances of the comparison (default 1e-2 and 1e-4).
    grad_nodes : list of names/positions, or dict of name -> grad_req, optional
        The inputs to check (all by default); ``'add'`` checks that the gradient is added to
        the existing one, ``'null'`` that none is computed.
    use_forward_train : bool
        Whether the finite-difference evaluations run in training mode.
    dtype : float16, float32 or float64
        The dtype of the arrays (default float64, unlike MXNet's float32: finite differences
        in float32 need loose tolerances).

    Every output element contributes through a fixed random projection (values in
    [0.1, 1.1)); raises ``AssertionError`` on a mismatch.
    """
    if not callable(sym):
        raise _needs_sym("check_numeric_gradient with a Symbol")
    if np.dtype(dtype) not in (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"check_numeric_gradient: dtype must be a float type, got {dtype!r}")
    if grad_stype_dict and any(v != "default" for v in grad_stype_dict.values()):
        raise MXNetError("check_numeric_gradient: sparse gradients are not supported "
                         "(ferromx has dense storage only)")
    ctx = default_context() if ctx is None else ctx
    if isinstance(location, dict):
        names = list(location)
        values = [location[k] for k in names]
    else:
        values = list(location) if isinstance(location, (list, tuple)) else [location]
        names = list(range(len(values)))
    points = [np.array(v.asnumpy() if hasattr(v, "asnumpy") else v, dtype=dtype) for v in values]
    reqs = _parse_grad_nodes(grad_nodes, names)
    aux_args, aux_kwargs = [], {}
    if isinstance(aux_states, dict):
        aux_kwargs = {k: nd.array(v, ctx=ctx, dtype=dtype) for k, v in aux_states.items()}
    elif aux_states is not None:
        aux_args = [nd.array(v, ctx=ctx, dtype=dtype) for v in aux_states]

    def call(arrays):
        if isinstance(location, dict):
            return sym(**dict(zip(names, arrays)), **aux_kwargs)
        return sym(*arrays, *aux_args, **aux_kwargs)

    analytic, orig, proj_np = _autograd_pass(call, points, reqs, ctx, dtype)
    step = numeric_eps if numeric_eps is not None else eps
    step = get_tolerance(np.zeros((), dtype=dtype), step, default_numeric_eps())
    if np.dtype(dtype) != np.float64 and step < 1e-5:
        raise ValueError("check_numeric_gradient: eps below 1e-5 needs dtype float64")
    rtol = 1e-2 if rtol is None else rtol
    atol = 1e-4 if atol is None else atol

    def f(arrays_np):
        arrays = [nd.array(a, ctx=ctx, dtype=dtype) for a in arrays_np]
        with autograd.pause(train_mode=use_forward_train):
            outs = _outputs(call(arrays))
        return sum(float(np.sum(o.asnumpy().astype(np.float64) * p))
                   for o, p in zip(outs, proj_np))

    for i, req in reqs.items():
        label = (f"NUMERICAL_{names[i]} (numeric gradient)",
                 f"BACKWARD_{names[i]} (autograd gradient of input {names[i]})")
        if req == "null":
            if analytic[i] is not None:
                raise AssertionError(f"grad_req 'null' input {names[i]} got a gradient")
            continue
        numeric = _finite_differences(f, points, i, step)
        got = analytic[i] - orig[i] if req == "add" else analytic[i]
        assert_almost_equal(numeric, got, rtol=rtol, atol=atol, names=label)


def _autograd_pass(call, points, reqs, ctx, dtype):
    """Record ``call`` once; returns (gradients, initial gradients for 'add', projections)."""
    inputs = [nd.array(p, ctx=ctx, dtype=dtype) for p in points]
    rng = np.random.RandomState(1234)
    orig = {}
    for i, req in reqs.items():
        inputs[i].attach_grad(grad_req=req)
        if req == "add":
            orig[i] = rng.normal(0, 0.01, size=points[i].shape)
            inputs[i].grad[:] = nd.array(orig[i], ctx=ctx, dtype=dtype)
    with autograd.record():
        outs = _outputs(call(inputs))
        proj_np = [np.asarray(rng.rand(*o.shape) + 0.1, dtype=dtype) for o in outs]
        total = None
        for o, p in zip(outs, proj_np):
            term = (o * nd.array(p, ctx=ctx, dtype=dtype)).sum()
            total = term if total is None else total + term
    total.backward()
    analytic = {}
    for i, req in reqs.items():
        grad = inputs[i].grad
        analytic[i] = None if (req == "null" or grad is None) else \
            grad.asnumpy().astype(np.float64)
    return analytic, orig, proj_np


def _finite_differences(f, points, i, step):
    """Central differences of the scalar ``f(points)`` with respect to ``points[i]``."""
    base = points[i]
    numeric = np.zeros(base.shape, dtype=np.float64)
    for idx in np.ndindex(*base.shape):
        orig = base[idx]
        base[idx] = orig + step
        f_plus = f(points)
        base[idx] = orig - step
        f_minus = f(points)
        base[idx] = orig
        numeric[idx] = (f_plus - f_minus) / (2.0 * step)
    return numeric


def check_gluon_hybridize_consistency(net_builder, data_l, numpy_func=None, test_grad=True,
                                      rtol=1e-4, atol=1e-4):
    """Check that a HybridBlock gives the same outputs (and input gradients) hybridized and not.

    ``net_builder(prefix=...)`` (or ``net_builder()``) builds the block; every run copies in
    the parameter values of the first (matched by order). ``numpy_func``, if given, gives the
    expected output from the data as NumPy arrays.
    """
    saved_out, saved_grads, saved_params = None, None, None
    for hybridize in (False, True):
        for use_autograd in ([False, True] if test_grad else [False]):
            try:
                net = net_builder(prefix="net_")
            except TypeError:
                net = net_builder()
            net.initialize()
            if saved_params is not None:  # every run uses the first run's parameter values
                with autograd.pause():
                    net(*[x.copy() for x in data_l])  # completes deferred initialization
                for p, value in zip(net.collect_params().values(), saved_params):
                    p.set_data(nd.array(value, dtype=value.dtype))
            if hybridize:
                net.hybridize()
            inputs = [x.copy() for x in data_l]
            if use_autograd:
                for x in inputs:
                    x.attach_grad()
                with autograd.record():
                    out = net(*inputs)
                out.backward(out)
            else:
                out = net(*inputs)
            if saved_params is None:
                saved_params = [p.data().asnumpy() for p in net.collect_params().values()]
            if saved_out is None:
                saved_out = out.asnumpy()
            else:
                assert_almost_equal(out.asnumpy(), saved_out, rtol=rtol, atol=atol)
            if use_autograd:
                grads = [x.grad.asnumpy() for x in inputs]
                if saved_grads is None:
                    saved_grads = grads
                else:
                    for g, s in zip(grads, saved_grads):
                        assert_almost_equal(g, s, rtol=rtol, atol=atol)
    if numpy_func is not None:
        expected = numpy_func(*[x.asnumpy() for x in data_l])
        assert_almost_equal(saved_out, expected, rtol=rtol, atol=atol)


def compare_optimizer(opt1, opt2, shape, dtype, w_stype="default", g_stype="default",
                      rtol=1e-4, atol=1e-5, compare_states=True, ntensors=1):
    """Run one update of two optimizers on the same random weights and gradients and assert
    that the weights (and, if ``compare_states``, the states) agree. Dense storage only."""
    if w_stype != "default" or g_stype != "default":
        raise MXNetError("compare_optimizer: sparse storage is not supported (dense only)")
    shapes = shape if ntensors > 1 else [shape]
    w1 = [nd.array(np.random.uniform(-1, 1, s), dtype=dtype) for s in shapes]
    g1 = [nd.array(np.random.uniform(-1, 1, s), dtype=dtype) for s in shapes]
    w2 = [w.copy() for w in w1]
    g2 = [g.copy() for g in g1]
    idx = list(range(ntensors)) if ntensors > 1 else 0
    if ntensors > 1:
        s1 = [opt1.create_state_multi_precision(i, w) for i, w in zip(idx, w1)]
        s2 = [opt2.create_state_multi_precision(i, w) for i, w in zip(idx, w2)]
        opt1.update_multi_precision(idx, w1, g1, s1)
        opt2.update_multi_precision(idx, w2, g2, s2)
    else:
        s1 = opt1.create_state_multi_precision(0, w1[0])
        s2 = opt2.create_state_multi_precision(0, w2[0])
        opt1.update_multi_precision(0, w1[0], g1[0], s1)
        opt2.update_multi_precision(0, w2[0], g2[0], s2)
        s1, s2 = [s1], [s2]
    if compare_states:
        for a, b in zip(s1, s2):
            _compare_states(a, b, rtol, atol)
    for a, b in zip(w1, w2):
        assert_almost_equal(a, b, rtol=rtol, atol=atol)


def _compare_states(a, b, rtol, atol):
    if a is None or b is None:
        return
    if isinstance(a, (tuple, list)):
        for x, y in zip(a, b):
            _compare_states(x, y, rtol, atol)
    else:
        assert_almost_equal(a, b, rtol=rtol, atol=atol)
