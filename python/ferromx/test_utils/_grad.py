"""Gradient and consistency checks of ``mxnet.test_utils``.

``check_symbolic_forward``/``check_symbolic_backward`` bind a Symbol to an executor;
:func:`check_numeric_gradient` takes a Symbol or a Python function of NDArrays and checks
its autograd gradient against central finite differences. ``check_speed``,
``check_consistency`` and ``numeric_grad`` still raise ``MXNetError``.
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
    return MXNetError(f"test_utils.{name} is not available in ferromx")


def _is_symbol(x):
    from ..symbol import Symbol

    return isinstance(x, Symbol)


def _location_dict(sym, location, what):
    names = sym.list_arguments()
    if isinstance(location, dict):
        missing = set(names) - set(location)
        if missing:
            raise ValueError(f"{what}: location is missing arguments {sorted(missing)} "
                             f"(symbol arguments: {names})")
        return {k: location[k] for k in names}
    location = list(location) if isinstance(location, (list, tuple)) else [location]
    if len(location) != len(names):
        raise ValueError(f"{what}: {len(location)} location arrays for arguments {names}")
    return dict(zip(names, location))


def _aux_list(sym, aux_states):
    names = sym.list_auxiliary_states()
    if aux_states is None:
        return [None] * len(names)
    if isinstance(aux_states, dict):
        return [aux_states.get(n) for n in names]
    return list(aux_states)


def _nd(v, ctx, dtype):
    if isinstance(v, nd.NDArray):
        return v.copyto(ctx) if dtype is None else v.astype(np.dtype(dtype).name).copyto(ctx)
    return nd.array(np.asarray(v, dtype=dtype), ctx=ctx)


def _bind(sym, location, aux_states, ctx, dtype, grad_req="null", what="bind"):
    ctx = default_context() if ctx is None else ctx
    loc = _location_dict(sym, location, what)
    args = {k: _nd(v, ctx, dtype) for k, v in loc.items()}
    aux = [_nd(v, ctx, dtype) if v is not None else None for v in _aux_list(sym, aux_states)]
    if any(a is None for a in aux):
        shapes = {k: a.shape for k, a in args.items()}
        _, _, aux_shapes = sym.infer_shape(**shapes)
        aux = [a if a is not None else nd.zeros(s, ctx=ctx) for a, s in zip(aux, aux_shapes)]
    grads = None
    if grad_req != "null":
        grads = {k: nd.zeros(a.shape, ctx=ctx, dtype=np.dtype(a.dtype).name)
                 for k, a in args.items()}
    return sym.bind(ctx, args, args_grad=grads, grad_req=grad_req, aux_states=aux)


def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """Bind ``sym`` to the NumPy ``inputs`` and run forward; NumPy output(s)."""
    ex = _bind(sym, inputs, None, ctx, None)
    outs = [o.asnumpy() for o in ex.forward(is_train=is_train)]
    return outs[0] if len(outs) == 1 else outs


def _expected_list(sym, expected, names_fn):
    if isinstance(expected, dict):
        return [expected[k] for k in names_fn() if k in expected], \
            [k for k in names_fn() if k in expected]
    return list(expected), names_fn()


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=np.float32):
    """Bind ``sym`` at ``location`` (list in ``list_arguments`` order or dict), run forward
    and compare with ``expected`` (list, or dict by output name); returns the outputs."""
    ex = _bind(sym, location, aux_states, ctx, dtype, what="check_symbolic_forward")
    outs = ex.forward(is_train=False)
    exp, names = _expected_list(sym, expected, sym.list_outputs)
    if isinstance(expected, dict):
        outs = [ex.output_dict[n] for n in names]
    for name, want, got in zip(names, exp, outs):
        assert_almost_equal(want, got.asnumpy(), rtol, atol,
                            (f"EXPECTED_{name}", f"FORWARD_{name}"), equal_nan=equal_nan)
    return [o.asnumpy() for o in ex.outputs]


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None,
                            aux_states=None, grad_req="write", ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=np.float32):
    """Bind, run forward (training) and backward with ``out_grads``; compare the argument
    gradients with ``expected`` (list or dict by name). ``grad_req='add'`` adds to random
    initial gradients, as MXNet checks it. Returns the gradients (dict of NumPy)."""
    ex = _bind(sym, location, aux_states, ctx, dtype, grad_req=grad_req,
               what="check_symbolic_backward")
    names = sym.list_arguments()
    exp = expected if isinstance(expected, dict) else dict(zip(names, expected))
    reqs = {k: grad_req for k in names} if isinstance(grad_req, str) else \
        (dict(grad_req) if isinstance(grad_req, dict) else dict(zip(names, grad_req)))
    rng = np.random.RandomState(7)
    init = {}
    for k, g in ex.grad_dict.items():
        if reqs.get(k) == "add":
            init[k] = rng.normal(size=g.shape).astype(np.dtype(g.dtype))
            g[:] = nd.array(init[k], ctx=g.context)
    ex.forward(is_train=True)
    if isinstance(out_grads, dict):
        out_grads = [out_grads[k] for k in sym.list_outputs()]
    elif out_grads is not None and not isinstance(out_grads, (list, tuple)):
        out_grads = [out_grads]
    if out_grads is not None:
        out_grads = [_nd(g, ex._ctx, dtype) for g in out_grads]
    ex.backward(out_grads)
    grads = {k: g.asnumpy() for k, g in ex.grad_dict.items()}
    for name, want in exp.items():
        req = reqs.get(name, "write")
        if req == "null":
            continue
        got = grads[name] - init[name] if req == "add" else grads[name]
        assert_almost_equal(want, got, rtol, atol,
                            (f"EXPECTED_{name}", f"BACKWARD_{name}"), equal_nan=equal_nan)
    return grads


def check_speed(sym, location=None, ctx=None, N=20, grad_req=None, typ="whole", **kwargs):
    """Time a symbol's executor; raises ``MXNetError`` (needs mx.sym)."""
    raise _needs_sym("check_speed")


_CONSISTENCY_TOL = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4,
                    np.dtype(np.float64): 1e-5, np.dtype(np.uint8): 0, np.dtype(np.int32): 0,
                    np.dtype(np.int64): 0}


def check_consistency(sym, ctx_list, scale=1.0, grad_req="write", arg_params=None,
                      aux_params=None, rtol=None, atol=None, raise_on_err=True,
                      ground_truth=None, equal_nan=False, use_uniform=False,
                      rand_type=np.float64):
    """Run ``sym`` (or one symbol per entry) for each ``ctx_list`` entry (``{'ctx': ...,
    <arg>: shape, 'type_dict': {...}}``) on the same random arguments and compare outputs
    (and gradients unless ``grad_req='null'``) with the most precise run; returns its
    outputs and gradients."""
    syms = list(sym) if isinstance(sym, (list, tuple)) else [sym] * len(ctx_list)
    if len(syms) == 1:
        syms *= len(ctx_list)
    names = syms[0].list_arguments()
    exes = []
    for s, spec in zip(syms, ctx_list):
        if s.list_arguments() != names:
            raise AssertionError(f"check_consistency: symbols have different arguments "
                                 f"{s.list_arguments()} and {names}")
        shapes = {k: v for k, v in spec.items() if k not in ("ctx", "type_dict")}
        exes.append(s.simple_bind(spec.get("ctx"), grad_req=grad_req,
                                  type_dict=spec.get("type_dict"), **shapes))
    rng = np.random
    arg_params = dict(arg_params or {})
    aux_params = dict(aux_params or {})
    for name, arr in exes[0].arg_dict.items():
        if name not in arg_params:
            arg_params[name] = (rng.uniform(-scale, scale, arr.shape) if use_uniform else
                                rng.normal(0, scale, arr.shape)).astype(rand_type)
    for name, arr in exes[0].aux_dict.items():
        aux_params.setdefault(name, np.zeros(arr.shape, dtype=rand_type))
    for exe in exes:
        for name, arr in exe.arg_dict.items():
            arr[:] = nd.array(np.asarray(arg_params[name]).astype(np.dtype(arr.dtype)))
        for name, arr in exe.aux_dict.items():
            arr[:] = nd.array(np.asarray(aux_params[name]).astype(np.dtype(arr.dtype)))
    for exe in exes:
        exe.forward(is_train=False)
    dtypes = [np.dtype(exe.outputs[0].dtype) for exe in exes]
    gt_i = max(range(len(exes)), key=lambda i: np.dtype(dtypes[i]).itemsize)
    gt = ground_truth or {n: o.asnumpy() for n, o in
                          zip(syms[gt_i].list_outputs(), exes[gt_i].outputs)}

    def compare(got, want, dt, label):
        tol_r = rtol if rtol is not None else _CONSISTENCY_TOL.get(dt, 1e-4)
        tol_a = atol if atol is not None else _CONSISTENCY_TOL.get(dt, 1e-4)
        try:
            assert_almost_equal(want, got, rtol=tol_r, atol=tol_a, equal_nan=equal_nan,
                                names=(f"GT_{label}", label))
        except AssertionError:
            if raise_on_err:
                raise

    for i, exe in enumerate(exes):
        if i == gt_i:
            continue
        for name, out in zip(syms[i].list_outputs(), exe.outputs):
            want = gt[syms[gt_i].list_outputs()[syms[i].list_outputs().index(name)]]
            compare(out.asnumpy(), want, dtypes[i], name)
    if grad_req != "null":
        heads = [o.copy() for o in exes[gt_i].forward(is_train=True)]
        grads = []
        for exe in exes:
            exe.forward(is_train=True)
            exe.backward([h.astype(np.dtype(o.dtype).name) for h, o in zip(heads, exe.outputs)])
            grads.append({k: g.asnumpy() for k, g in exe.grad_dict.items()})
        for i, g in enumerate(grads):
            if i == gt_i:
                continue
            for name, value in g.items():
                compare(value, grads[gt_i][name], dtypes[i], name)
        gt.update({k: v for k, v in grads[gt_i].items()})
    return gt


def same_symbol_structure(sym1, sym2):
    """Whether two symbols' graphs have the same operators wired the same way."""
    import json

    n1, n2 = json.loads(sym1.tojson())["nodes"], json.loads(sym2.tojson())["nodes"]
    return len(n1) == len(n2) and all(a["op"] == b["op"] and a["inputs"] == b["inputs"]
                                      for a, b in zip(n1, n2))


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
    if _is_symbol(sym):
        sym, location, aux_states = _symbol_function(sym, location, aux_states)
    if not callable(sym):
        raise TypeError("check_numeric_gradient: sym must be a Symbol or a function of "
                        "NDArrays")
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


def _symbol_function(sym, location, aux_states):
    """A Symbol as a function of its arguments (by name), auxiliary states fixed."""
    from ..symbol.executor import Plan

    loc = _location_dict(sym, location, "check_numeric_gradient")
    names = sym.list_arguments()
    plan = Plan(sym, names + sym.list_auxiliary_states())
    aux = _aux_list(sym, aux_states)

    def fn(**arrays):
        aux_nd = []
        for a, name in zip(aux, sym.list_auxiliary_states()):
            if a is None:
                raise ValueError(f"check_numeric_gradient: auxiliary state {name} needs a value")
            aux_nd.append(a if isinstance(a, nd.NDArray) else nd.array(a))
        outs = plan.run([arrays[n] for n in names] + aux_nd)
        return outs[0] if len(outs) == 1 else outs

    return fn, loc, None


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
    """Run one update of two optimizers on the same weights and gradients (uniform in
    [0, 1), drawn with ``mx.random`` on the engine, as MXNet does) and assert that the
    weights (and, if ``compare_states``, the states) agree. Dense storage only.

    ``shape`` a list: multi-tensor mode, ``opt2`` updates all ``ntensors`` arrays in one
    ``update_multi_precision`` call and ``opt1`` updates them one by one.
    """
    if w_stype != "default" or g_stype != "default":
        raise MXNetError("compare_optimizer: sparse storage is not supported (dense only)")
    ctx = default_context()

    def draw(s):
        return nd.random.uniform(shape=s, ctx=ctx, dtype=np.dtype(dtype).name)

    if not isinstance(shape, list):
        w2, g2 = draw(shape), draw(shape)
        w1, g1 = w2.copy(), g2.copy()
        s1 = opt1.create_state_multi_precision(0, w1)
        s2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            _compare_states(s1, s2, None, None)
        opt1.update_multi_precision(0, w1, g1, s1)
        opt2.update_multi_precision(0, w2, g2, s2)
        if compare_states:
            _compare_states(s1, s2, rtol, atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    w1, g1 = [], []
    for s in shape:
        w1.append(draw(s))
        g1.append(draw(s))
    w2, g2 = [w.copy() for w in w1], [g.copy() for g in g1]
    s2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, s2)
    for i in range(ntensors):
        s1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], s1)
        if compare_states:
            _compare_states(s1, s2[i], rtol, atol)
        assert_almost_equal(w1[i], w2[i], rtol=rtol, atol=atol)


def _compare_states(a, b, rtol, atol):
    if a is None or b is None:
        return
    if isinstance(a, (tuple, list)):
        for x, y in zip(a, b):
            _compare_states(x, y, rtol, atol)
    else:
        assert_almost_equal(a, b, rtol=rtol, atol=atol)
