"""NumPy's ufunc keywords on ``mx.np``'s elementwise functions, as MXNet 1.9.1 takes them.

A ufunc of NumPy (``np.add``, ``np.isnan`` ...) also accepts ``where``, ``casting``,
``order``, ``dtype`` and ``subok``. MXNet accepts each at its default value only: another
value NumPy allows raises ``NotImplementedError``, one it does not allow ``TypeError``, and
an unknown keyword ``TypeError``. The ufuncs generated from the operator table
(``_op_gen.make_np_unary`` / ``make_np_binary``: ``np.exp``, ``np.add`` ...) call
:func:`check_ufunc_kwargs` themselves, in the one function that runs the operator;
:func:`wrap_ufuncs` adds the check to the hand-written functions of the ``np`` module whose
NumPy namesake is a ``numpy.ufunc`` (``isnan``, ``equal``, ``arctan2`` ...).
"""

import functools

import numpy as _onp

_DEFAULTS = {"where": True, "casting": "same_kind", "order": "K", "dtype": None, "subok": True}
_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")
#: not NumPy ufuncs, but MXNet gives them the same keyword check
_ALSO = ("fix", "isposinf", "isneginf")
_DTYPES = ("int8", "uint8", "int32", "int64", "float16", "float32", "float64")


def _legal(key, value):
    if key == "where":
        return True
    if key == "casting":
        return value in _CASTINGS
    if key == "order":
        return isinstance(value, str)
    if key == "dtype":
        try:
            return _onp.dtype(value).name in _DTYPES
        except TypeError:
            return False
    return key == "subok" and isinstance(value, bool)


def _is_default(key, value):
    default = _DEFAULTS[key]
    if default is None or isinstance(default, bool):
        return value is default or (isinstance(value, bool) and value == default)
    return isinstance(value, str) and value == default


def check_ufunc_kwargs(name, kwargs):
    """Pops NumPy's ufunc keywords from ``kwargs``; raises as MXNet for non-default ones."""
    for key in [k for k in kwargs if k in _DEFAULTS]:
        value = kwargs.pop(key)
        if _is_default(key, value):
            continue
        if _legal(key, value):
            raise NotImplementedError(f"{name}: {key}={value} is not implemented yet")
        raise TypeError(f"{name}: {key}={value} not understood")


def check_ufunc_call(name, kwargs):
    """:func:`check_ufunc_kwargs`, then any other keyword is a ``TypeError`` (MXNet 1.9.1:
    ``foo is an invalid keyword to function 'exp'``). For functions that take ``**kwargs``
    only for NumPy's ufunc keywords."""
    check_ufunc_kwargs(name, kwargs)
    if kwargs:
        raise TypeError(f"{next(iter(kwargs))} is an invalid keyword to function '{name}'")


def _wrap(fn, name):
    @functools.wraps(fn)
    def ufunc(*args, **kwargs):
        if kwargs:  # the common call passes none: skip the check
            check_ufunc_kwargs(name, kwargs)
        return fn(*args, **kwargs)

    ufunc._ferromx_ufunc = True
    return ufunc


def wrap_ufuncs(ns):
    """Wraps, in module dict ``ns``, each function named like a NumPy ufunc."""
    for name, fn in list(ns.items()):
        if (callable(fn) and not isinstance(fn, type) and not name.startswith("_")
                and (isinstance(getattr(_onp, name, None), _onp.ufunc) or name in _ALSO)
                and not getattr(fn, "_ferromx_ufunc", False)):
            ns[name] = _wrap(fn, name)
