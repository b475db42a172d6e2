"""Writing ``mx.np`` function nodes as MXNet 1.9.1's graph operators: for a call made
through ``mx.sym.np`` / ``mx.sym.npx`` or an np symbol's method, the operator and string
attributes MXNet's own ``mx.sym.np`` writes for the same call (``np.tanh(x)`` is
``_npi_tanh``; ``2 - x`` is ``_npi_rsubtract_scalar`` with ``scalar="2.0"``;
``np.maximum(x, y)`` is ``broadcast_maximum``; ``np.split(x, 2, axis=1)`` is
``_split_v2``). :func:`encode` returns ``None`` where MXNet has no single operator for the
call (an index, a Python callable), and ``tojson`` then names the node it cannot write.

The reading direction, and the table of ``_npi`` operators both directions share, is
``_npi``. One deliberate difference from MXNet: a scalar on the left of a binary function
keeps ``is_int="True"`` when it is an int (MXNet 1.9.1 tests the other operand, so it
writes ``"False"`` and a loaded graph computes ``2 - int_array`` in floating point).
"""

import inspect
import numbers

from . import _npi

# binary functions: (both arrays, array and scalar, scalar and array)
_BINARY = {
    "add": ("_npi_add", "_npi_add_scalar", "_npi_add_scalar"),
    "subtract": ("_npi_subtract", "_npi_subtract_scalar", "_npi_rsubtract_scalar"),
    "multiply": ("_npi_multiply", "_npi_multiply_scalar", "_npi_multiply_scalar"),
    "true_divide": ("_npi_true_divide", "_npi_true_divide_scalar",
                    "_npi_rtrue_divide_scalar"),
    "power": ("_npi_power", "_npi_power_scalar", "_npi_rpower_scalar"),
    "mod": ("_npi_mod", "_npi_mod_scalar", "_npi_rmod_scalar"),
    "hypot": ("_npi_hypot", "_hypot_scalar", "_hypot_scalar"),
    "maximum": ("broadcast_maximum", "_maximum_scalar", "_maximum_scalar"),
    "minimum": ("broadcast_minimum", "_minimum_scalar", "_minimum_scalar"),
    "equal": ("_npi_equal", "_npi_equal_scalar", "_npi_equal_scalar"),
    "not_equal": ("_npi_not_equal", "_npi_not_equal_scalar", "_npi_not_equal_scalar"),
    "greater": ("_npi_greater", "_npi_greater_scalar", "_npi_less_scalar"),
    "greater_equal": ("_npi_greater_equal", "_npi_greater_equal_scalar",
                      "_npi_less_equal_scalar"),
    "less": ("_npi_less", "_npi_less_scalar", "_npi_greater_scalar"),
    "less_equal": ("_npi_less_equal", "_npi_less_equal_scalar",
                   "_npi_greater_equal_scalar"),
    "arctan2": ("_npi_arctan2", "_npi_arctan2_scalar", "_npi_rarctan2_scalar"),
    "copysign": ("_npi_copysign", "_npi_copysign_scalar", "_npi_rcopysign_scalar"),
    "ldexp": ("_npi_ldexp", "_npi_ldexp_scalar", "_npi_rldexp_scalar"),
    "fmod": ("_npi_fmod", "_npi_fmod_scalar", "_npi_rfmod_scalar"),
    "fmax": ("_npi_fmax", "_npi_fmax_scalar", "_npi_fmax_scalar"),
    "fmin": ("_npi_fmin", "_npi_fmin_scalar", "_npi_fmin_scalar"),
    "bitwise_and": ("_npi_bitwise_and", "_npi_bitwise_and_scalar",
                    "_npi_bitwise_and_scalar"),
    "bitwise_or": ("_npi_bitwise_or", "_npi_bitwise_or_scalar", "_npi_bitwise_or_scalar"),
    "bitwise_xor": ("_npi_bitwise_xor", "_npi_bitwise_xor_scalar",
                    "_npi_bitwise_xor_scalar"),
    "lcm": ("_npi_lcm", "_npi_lcm_scalar", "_npi_lcm_scalar"),
    "gcd": ("_npi_gcd", "_npi_gcd_scalar", "_npi_gcd_scalar"),
}
# np symbol methods (the node label's last part) -> (function, operands swapped)
_METHODS = {"radd": ("add", True), "sub": ("subtract", False), "rsub": ("subtract", True),
            "mul": ("multiply", False), "rmul": ("multiply", True),
            "truediv": ("true_divide", False), "rtruediv": ("true_divide", True),
            "pow": ("power", False), "rpow": ("power", True), "rmod": ("mod", True),
            "neg": ("negative", False), "abs": ("absolute", False),
            "rmatmul": ("matmul", True), "gt": ("greater", False),
            "ge": ("greater_equal", False), "lt": ("less", False),
            "le": ("less_equal", False), "eq": ("equal", False), "ne": ("not_equal", False),
            "and": ("bitwise_and", False), "rand": ("bitwise_and", True),
            "or": ("bitwise_or", False), "ror": ("bitwise_or", True),
            "xor": ("bitwise_xor", False), "rxor": ("bitwise_xor", True),
            "invert": ("bitwise_not", False)}
_ALIASES = {"abs": "absolute", "divide": "true_divide", "amax": "max", "amin": "min",
            "product": "prod",
            "invert": "bitwise_not", "round": "around", "round_": "around"}
# functions MXNet writes as legacy operators: (operator, array parameters,
# {parameter: attribute})
_LEGACY = {
    "clip": ("clip", 1, {"a_min": "a_min", "a_max": "a_max"}),
    "expand_dims": ("expand_dims", 1, {"axis": "axis"}),
    "swapaxes": ("SwapAxis", 1, {"axis1": "dim1", "axis2": "dim2"}),
    "full": ("_full", 0, {"shape": "shape", "fill_value": "value", "dtype": "dtype"}),
    "npx.softmax": ("softmax", 1, {"axis": "axis", "temperature": "temperature"}),
    "npx.log_softmax": ("log_softmax", 1, {"axis": "axis",
                                           "temperature": "temperature"}),
}
# parameters that never become attributes (where they hold their default)
_DEFAULTS = {"out": None, "name": None, "ctx": None, "device": None, "order": "C"}


def _is_default(param, value):
    """Whether ``param=value`` is a parameter that never becomes an attribute, at its
    default (compared without ``==``, which builds a node on a symbol)."""
    if param not in _DEFAULTS:
        return False
    default = _DEFAULTS[param]
    return value is None if default is None else isinstance(value, str) and value == default


def _writable():
    """``{function: (operator, array parameters, {parameter: attribute})}`` from the
    reading table: each function's first plain entry."""
    table = {}
    for op, spec in _npi.SPEC.items():
        if any(spec.get(k) for k in ("scalar", "where", "split", "axes_pair", "spread")):
            continue
        if any(isinstance(kw, int) for kw in spec["attrs"].values()):
            continue
        ins = spec["ins"]
        n = "*" if ins[:1] == ("*data",) else len(ins)
        attrs = {kw: key for key, kw in spec["attrs"].items()}
        table.setdefault(spec["func"], (op, n, attrs))
    table.update(_LEGACY)
    return table


_WRITABLE = _writable()


def _fmt(value):
    """MXNet's attribute spelling of ``value`` (``(1, 4)``, ``True``, ``2.0``, ``float32``)."""
    import numpy as onp

    if isinstance(value, list):
        value = tuple(value)
    if isinstance(value, (type, onp.dtype)):
        return onp.dtype(value).name
    if isinstance(value, str):
        return value
    if isinstance(value, onp.generic):
        value = value.item()
    return str(value)


def _symbolic(value):
    from .symbol import Symbol

    return isinstance(value, Symbol)


def _number(value):
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


def _scalar_attrs(value):
    return {"is_int": str(isinstance(value, numbers.Integral)), "scalar": str(float(value))}


def _binary(func, lhs, rhs):
    """``(op, attrs, inputs)`` of a binary call, or ``None``."""
    both, with_scalar, scalar_first = _BINARY[func]
    if _symbolic(lhs) and _symbolic(rhs):
        return both, {}, [lhs, rhs]
    if _symbolic(lhs) and _number(rhs):
        return with_scalar, _scalar_attrs(rhs), [lhs]
    if _symbolic(rhs) and _number(lhs):
        return scalar_first, _scalar_attrs(lhs), [rhs]
    return None


def encode(label, args, kwargs):
    """``(MXNet operator, string attributes, symbol inputs in MXNet's order)`` for the
    function node ``label(*args, **kwargs)`` (``np.tanh``, ``np.ndarray.add``), or
    ``None`` where MXNet has no single operator for the call."""
    parts = label.split(".")
    name, method, swapped = parts[-1], parts[:2] == ["np", "ndarray"], False
    if method and name in _METHODS:
        name, swapped = _METHODS[name]
    name = _ALIASES.get(name, name)
    if parts[0] == "npx":
        name = f"npx.{name}"
    elif len(parts) > 2 and not method:
        name = ".".join(parts[1:])  # np.linalg.det -> linalg.det
    kwargs = {k: v for k, v in kwargs.items() if not _is_default(k, v)}
    if name in _BINARY:
        if kwargs or len(args) != 2:
            return None
        lhs, rhs = (args[1], args[0]) if swapped else args
        return _binary(name, lhs, rhs)
    if method and name == "getitem" and len(args) == 2 and not kwargs:
        return _getitem(args[0], args[1])
    if method and name in ("reshape", "transpose") and len(args) > 2:  # x.reshape(2, 3)
        args = (args[0], tuple(args[1:]))
    special = _SPECIAL.get(name)
    if special is not None:
        return _bind_and(name, args, kwargs, special)
    if name not in _WRITABLE:
        return None
    return _bind_and(name, args, kwargs, _general(*_WRITABLE[name]))


def _bind_and(name, args, kwargs, then):
    try:
        sig = inspect.signature(_npi._function(name))
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError, AttributeError):
        return None
    values = {k: v for k, v in bound.arguments.items() if not _is_default(k, v)}
    return then(list(sig.parameters), values)


def _general(op, n, attr_of):
    """The encoder of an operator whose leading ``n`` parameters are its array inputs
    (``"*"``: the first is a sequence of them) and whose others are attributes."""

    def then(params, values):
        if n == "*":
            first = values.get(params[0])
            if not isinstance(first, (list, tuple)) or not all(map(_symbolic, first)):
                return None
            inputs, used = list(first), set(params[:1])
        else:
            inputs, used = [values.get(p) for p in params[:n]], set(params[:n])
            if not all(map(_symbolic, inputs)):
                return None
        attrs = {}
        for param, value in values.items():
            if param in used or value is None:
                continue
            if param not in attr_of or _symbolic(value):
                return None
            attrs[attr_of[param]] = _fmt(value)
        if n == "*":
            attrs["num_args"] = str(len(inputs))
        return op, attrs, inputs

    return then


def _split(params, values):
    ary, sections = values.get(params[0]), values.get(params[1])
    if not _symbolic(ary):
        return None
    attrs = {"axis": _fmt(values.get("axis", 0)), "squeeze_axis": "False"}
    if isinstance(sections, numbers.Integral):
        attrs.update(indices="()", sections=str(int(sections)))
    elif isinstance(sections, (list, tuple)) and all(map(_number, sections)):
        attrs.update(indices=_fmt((0, *sections)), sections="0")
    else:
        return None
    return "_split_v2", attrs, [ary]


def _tensordot(params, values):
    a, b, axes = values.get("a"), values.get("b"), values.get("axes", 2)
    if not (_symbolic(a) and _symbolic(b)):
        return None
    if isinstance(axes, numbers.Integral):
        return "_npi_tensordot_int_axes", {"axes": str(int(axes))}, [a, b]
    if isinstance(axes, (list, tuple)) and len(axes) == 2:
        pair = [list(x) if isinstance(x, (list, tuple)) else [x] for x in axes]
        return "_npi_tensordot", {"a_axes_summed": _fmt(pair[0]),
                                  "b_axes_summed": _fmt(pair[1])}, [a, b]
    return None


def _arange(params, values):
    start, stop = values.get("start"), values.get("stop")
    if stop is None:
        start, stop = 0, start
    step = values.get("step", 1)
    if not all(map(_number, (start, stop, step))):
        return None
    attrs = {"start": _fmt(start), "stop": _fmt(stop), "step": _fmt(step)}
    if values.get("dtype") is not None:
        attrs["dtype"] = _fmt(values["dtype"])
    return "_npi_arange", attrs, []


def _where(params, values):
    cond, x, y = values.get("condition"), values.get("x"), values.get("y")
    if not _symbolic(cond):
        return None
    if _symbolic(x) and _symbolic(y):
        return "_npi_where", {}, [cond, x, y]
    if _number(x) and _symbolic(y):
        return "_npi_where_lscalar", {"scalar": str(float(x))}, [cond, y]
    if _symbolic(x) and _number(y):
        return "_npi_where_rscalar", {"scalar": str(float(y))}, [cond, x]
    if _number(x) and _number(y):
        return "_npi_where_scalar2", {"x": str(float(x)), "y": str(float(y))}, [cond]
    return None


def _int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def basic_key(key):
    """``key`` as slices only plus the axes its ints index (``x[0, 1:3]`` is
    ``x[0:1, 1:3]`` squeezed on axis 0), or ``None`` for other keys (arrays, ``...``,
    ``None``). ``NpSymbol.__getitem__`` builds such an index as a slice then a squeeze,
    so each node is one MXNet operator."""
    items = key if isinstance(key, tuple) else (key,)
    if not items:
        return None
    slices, ints = [], []
    for axis, item in enumerate(items):
        if _int(item):
            i = int(item)
            slices.append(slice(i, None if i == -1 else i + 1))
            ints.append(axis)
        elif isinstance(item, slice) and all(v is None or _int(v)
                                              for v in (item.start, item.stop, item.step)):
            if item.step == 0:
                return None
            slices.append(item)
        else:
            return None
    return tuple(slices), tuple(ints)


def _getitem(x, key):
    """A slices-only index as MXNet's ``slice`` (begin, end, step; ``None`` where open)."""
    got = basic_key(key)
    if not _symbolic(x) or got is None or got[1]:
        return None
    slices = got[0]
    attrs = {k: _fmt(tuple(getattr(sl, a) for sl in slices))
             for k, a in (("begin", "start"), ("end", "stop"), ("step", "step"))}
    if all(sl.step is None for sl in slices):
        del attrs["step"]
    return "slice", attrs, [x]


_SPECIAL = {"split": _split, "tensordot": _tensordot, "arange": _arange, "where": _where}
