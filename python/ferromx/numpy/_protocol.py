"""NumPy's dispatch protocols on ``ferromx.np.ndarray`` (NEP 13 and NEP 18).

As in MXNet 1.9.1, official NumPy functions called with ``mx.np.ndarray`` arguments run
``mx.np``'s implementation and return ``mx.np.ndarray``s:

* ``__array_function__`` looks the NumPy function up in :data:`_NUMPY_ARRAY_FUNCTION_DICT`
  (filled by ``ferromx.numpy_dispatch_protocol``) and calls the ``mx.np`` function;
* ``__array_ufunc__`` looks the ufunc's ``__name__`` up in :data:`_NUMPY_ARRAY_UFUNC_DICT`
  (plain calls only: ``ufunc.reduce`` and the other methods are not overridden, so NumPy
  raises ``TypeError``, as with MXNet).

A function or ufunc with no ``mx.np`` implementation runs in NumPy on the host: array
arguments are read with ``asnumpy()`` and NumPy-array results come back as ``mx.np``
arrays on the inputs' context. That fallback has no gradient, so under
``autograd.record()`` it raises ``ValueError`` (as MXNet does).
"""

import numbers

import numpy as _onp

from .. import _native

#: NumPy function object -> the ``mx.np`` function that implements it
_NUMPY_ARRAY_FUNCTION_DICT = {}
#: NumPy ufunc name -> the ``mx.np`` function that implements it
_NUMPY_ARRAY_UFUNC_DICT = {}


def _to_host(obj):
    """``obj`` with ``mx.np`` arrays (also inside lists and tuples) read into NumPy, and the
    first array's context (``None`` when there is none)."""
    if isinstance(obj, _native.ndarray):
        return obj.asnumpy(), obj.context
    if isinstance(obj, (list, tuple)):
        ctx, items = None, []
        for v in obj:
            v, c = _to_host(v)
            items.append(v)
            if ctx is None:
                ctx = c
            elif c is not None and c != ctx:
                raise ValueError(f"NumPy fallback: inputs live on different devices ({ctx} and {c})")
        return _rebuild(obj, items), ctx
    return obj, None


def _rebuild(seq, items):
    """A list, tuple or named tuple (NumPy 2's ``QRResult``) of the same type as ``seq``."""
    items = list(items)
    return type(seq)(*items) if hasattr(seq, "_fields") else type(seq)(items)


def _to_device(obj, ctx):
    """NumPy results as ``mx.np`` arrays on ``ctx``; Python and NumPy scalars unchanged,
    but a NumPy bool scalar becomes a 0-d bool array (as in MXNet)."""
    from . import array

    if isinstance(obj, _onp.ndarray):
        if obj.dtype == object:
            raise TypeError("NumPy fallback: an object-dtype result cannot be an mx.np.ndarray")
        # not ascontiguousarray: it makes a 0-d result 1-d (np.cov of one variable is 0-d)
        obj = obj if obj.flags.c_contiguous else obj.copy(order="C")
        return array(obj, dtype=obj.dtype, ctx=ctx)
    if isinstance(obj, (list, tuple)):
        return _rebuild(obj, (_to_device(v, ctx) for v in obj))
    if isinstance(obj, _onp.bool_):
        return array(obj, dtype=_onp.bool_, ctx=ctx)
    if isinstance(obj, (numbers.Number, _onp.generic, _onp.dtype, str, type(None))):
        return obj
    raise TypeError(f"NumPy fallback: cannot convert a {type(obj).__name__} to mx.np.ndarray")


def _check_not_recording(what):
    from .. import autograd

    if autograd.is_recording():
        raise ValueError(f"Falling back to NumPy operator {what} with autograd active is not "
                         "supported. Please consider moving the operator to the outside of the "
                         "autograd scope.")


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """NEP 13: NumPy ufunc calls on ``mx.np.ndarray`` run ``mx.np``'s ufunc."""
    if method != "__call__":
        return NotImplemented
    out = kwargs.get("out")
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError("The `out` parameter must have exactly one ndarray")
        kwargs["out"] = out[0]
    name = ufunc.__name__
    mx_ufunc = _NUMPY_ARRAY_UFUNC_DICT.get(name)
    if mx_ufunc is not None:
        return mx_ufunc(*inputs, **kwargs)
    _check_not_recording(name)
    host_inputs, ctx = _to_host(tuple(inputs))
    if isinstance(kwargs.get("out"), _native.ndarray):
        target = kwargs.pop("out")
        target[...] = _to_device(ufunc(*host_inputs, **kwargs), ctx)
        return target
    return _to_device(ufunc(*host_inputs, **kwargs), ctx)


def _array_function(self, func, types, args, kwargs):
    """NEP 18: NumPy functions called on ``mx.np.ndarray`` run ``mx.np``'s function."""
    mx_func = _NUMPY_ARRAY_FUNCTION_DICT.get(func)
    if mx_func is not None:
        # a subclass that does not override __array_function__ still dispatches here
        if not all(issubclass(t, _native.ndarray) for t in types):
            return NotImplemented
        return mx_func(*args, **kwargs)
    _check_not_recording(getattr(func, "__name__", func))
    host_args, ctx = _to_host(tuple(args))
    host_kwargs = {}
    for k, v in kwargs.items():
        host_kwargs[k], c = _to_host(v)
        ctx = ctx or c
    return _to_device(func(*host_args, **host_kwargs), ctx)


_native.ndarray.__array_ufunc__ = _array_ufunc
_native.ndarray.__array_function__ = _array_function
