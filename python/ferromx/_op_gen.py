"""Python functions, fluent methods, docstrings and type stubs generated from the native
operator table (``_native.op_table()``): every operator is defined once, in Rust, and adding
one needs no Python edit.

``python -m ferromx._op_gen`` rewrites ``ndarray/_op.pyi``; a test checks that it is current.
"""

import inspect
import math
import operator
import os

import numpy as _onp

from . import _native

TABLE = _native.op_table()
BY_NAME = {d["name"]: d for d in TABLE}

# What MXNet's ``nd.<binary>`` returns for two Python scalars, by the operator's function.
_SCALAR_FNS = {
    "Add": operator.add,
    "Sub": operator.sub,
    "Mul": operator.mul,
    "Div": operator.truediv,
    "Mod": operator.mod,
    "Pow": operator.pow,
    "Max": lambda x, y: x if x > y else y,  # noqa: FURB136
    "Min": lambda x, y: x if x < y else y,  # noqa: FURB136
    "Hypot": math.hypot,
    "Eq": lambda x, y: 1 if x == y else 0,
    "Ne": lambda x, y: 1 if x != y else 0,
    "Gt": lambda x, y: 1 if x > y else 0,
    "Ge": lambda x, y: 1 if x >= y else 0,
    "Lt": lambda x, y: 1 if x < y else 0,
    "Le": lambda x, y: 1 if x <= y else 0,
    "And": lambda x, y: 1 if x and y else 0,
    "Or": lambda x, y: 1 if x or y else 0,
    "Xor": lambda x, y: 1 if bool(x) ^ bool(y) else 0,
    "Arctan2": math.atan2,
    "Copysign": math.copysign,
    "Ldexp": lambda x, y: x * 2.0 ** y,
    "Fmax": lambda x, y: _onp.fmax(x, y).item(),
    "Fmin": lambda x, y: _onp.fmin(x, y).item(),
    "Fmod": lambda x, y: _onp.fmod(x, y).item(),
    "Gcd": lambda x, y: _onp.gcd(x, y).item(),
    "Lcm": lambda x, y: _onp.lcm(x, y).item(),
}
_SCALAR_TYPES = (int, float, _onp.generic)
# NumPy's function for a legacy comparison whose np name belongs to the bool-valued
# ``_npi_*`` operator (``nd.lesser`` of a NumPy array runs ``numpy.less``)
_LEGACY_NUMPY_NAMES = {"Eq": "equal", "Ne": "not_equal", "Gt": "greater",
                       "Ge": "greater_equal", "Lt": "less", "Le": "less_equal"}


def is_binary(d):
    """Whether ``d`` is a broadcasting binary operator (its ``nd`` names take scalars too)."""
    return d["scalar"] is not None and d["scalar"][0] == "binary"


def nd_names(d):
    """The names an operator has in ``nd``: its own (unless internal) and its aliases."""
    own = [] if d["name"].startswith("_") else [d["name"]]
    return own + list(d["nd"])


def contrib_names(d):
    """The names an operator has in ``nd.contrib``: its own or aliases named ``_contrib_*``
    (``_contrib_div_sqrt_dim`` is ``contrib.div_sqrt_dim``; ``CTCLoss`` is also
    ``contrib.CTCLoss``)."""
    return [n[len("_contrib_"):] for n in [d["name"], *d["nd"]] if n.startswith("_contrib_")]


def docstring(d, public):
    """MXNet-style docstring: description, parameters with types and defaults, returns."""
    lines = [d["doc"], "", "Parameters", "----------"]
    for i in d["inputs"]:
        lines += [f"{i.lstrip('*')} : NDArray" + (" (any number)" if i.startswith("*") else ""),
                  "    Input."]
    for name, typ, default, doc in d["params"]:
        req = "required" if default is None else f"default {default}"
        lines += [f"{name} : {typ}, {req}", f"    {doc}"]
    lines += ["out : NDArray, optional", "    The output array (written in place).", "",
              "Returns", "-------"]
    outs = d["outputs"]
    lines += ["NDArray" if len(outs) == 1 and not outs[0].startswith("*") else "list of NDArray"]
    if d["grad"].startswith("none"):
        lines += ["", f"Not differentiable ({d['grad'][6:]})."]
    lines += ["", f"Operator ``{d['name']}``; runs on the engine."]
    if public != d["name"]:
        lines[0] = f"{lines[0]} (``{public}`` is ``{d['name']}``.)"
    return "\n".join(lines)


def signature(d):
    """The Python signature of a generated function."""
    P = inspect.Parameter
    params = []
    for i in d["inputs"]:
        if i.startswith("*"):
            params.append(P(i[1:], P.VAR_POSITIONAL))
        else:
            params.append(P(i, P.POSITIONAL_OR_KEYWORD, default=None))
    kind = P.KEYWORD_ONLY if any(i.startswith("*") for i in d["inputs"]) else P.POSITIONAL_OR_KEYWORD
    for name, _typ, default, _doc in d["params"]:
        params.append(P(name, kind, default=_eval_default(default)))
    params.append(P("out", P.KEYWORD_ONLY, default=None))
    params.append(P("name", P.KEYWORD_ONLY, default=None))
    return inspect.Signature(params)


def _eval_default(default):
    if default is None:
        return None
    return eval(default, {"__builtins__": {}})


_SEQ_ATTR_TYPES = (range, _onp.ndarray)


def make_op(d, public, env):
    """The ``nd`` function of an operator: inputs first (positional or by name), then
    parameters in MXNet's order (positional or keyword), ``out=`` and ``name=``.

    ``env`` supplies ``invoke``, ``finish`` (``out=`` handling), ``NDArray``, ``ctx_str``
    (context to its native spelling; ``None``: the current context) and ``dtype_name``.
    """
    inputs, attrs = d["inputs"], [p[0] for p in d["params"]]
    variadic = bool(inputs) and inputs[0].startswith("*")
    name_, invoke, finish, NDArray = d["name"], env.invoke, env.finish, env.NDArray
    has_ctx, has_dtype = "ctx" in attrs, "dtype" in attrs
    ctx_str, dtype_name = env.ctx_str, env.dtype_name

    def fn(*args, out=None, name=None, **kwargs):
        if variadic:
            if args and isinstance(args[0], (list, tuple)):
                ins, rest = list(args[0]), args[1:]
            else:
                ins = [a for a in args if isinstance(a, NDArray)]
                rest = [a for a in args if not isinstance(a, NDArray)]
            # MXNet's count of the inputs: optional, checked when given.
            num_args = kwargs.pop("num_args", None) if "num_args" not in attrs else None
            if num_args is not None and int(num_args) != len(ins):
                raise ValueError(f"{public}: num_args={num_args}, but {len(ins)} inputs were given")
        else:
            ins, rest = list(args[: len(inputs)]), args[len(inputs):]
            for nm in inputs[len(ins):]:
                ins.append(kwargs.pop(nm, None))
            for a in ins:
                if a is not None and not isinstance(a, NDArray):
                    raise TypeError(f"{public}: input must be an NDArray, got {type(a).__name__}")
        if len(rest) > len(attrs):
            raise TypeError(f"{public}: takes {len(attrs)} parameters, got {len(rest)} positional")
        for nm, v in zip(attrs, rest):
            kwargs[nm] = v
        for nm, v in kwargs.items():
            if type(v) in _SEQ_ATTR_TYPES:  # MXNet takes range / NumPy arrays as tuples
                kwargs[nm] = tuple(int(i) for i in v)
        if has_ctx:
            kwargs["ctx"] = ctx_str(kwargs.get("ctx"))
        if has_dtype and kwargs.get("dtype") is not None:
            kwargs["dtype"] = dtype_name(kwargs["dtype"])
        return finish(invoke(name_, ins, **kwargs), out)

    fn.__name__ = public
    fn.__qualname__ = public
    fn.__doc__ = docstring(d, public)
    fn.__signature__ = signature(d)
    return fn


def make_ufunc(d, public, env):
    """MXNet's scalar-dispatching binary function (``nd.add``): two arrays run the
    broadcasting operator, an array and a Python scalar run its scalar form."""
    op, sop, rop = d["name"], d["scalar_op"], d["rscalar_op"]
    scalar_fn = _SCALAR_FNS[d["scalar"][1]]
    np_name = d["np"][0] if d["np"] else _LEGACY_NUMPY_NAMES.get(d["scalar"][1])
    invoke, finish, NDArray, array = env.invoke, env.finish, env.NDArray, env.array

    def fn(lhs, rhs, out=None, name=None, **kwargs):
        # MXNet's binary operators have no parameters and ignore extra keywords
        # (``broadcast_maximum(a, b, axis=1)`` runs in MXNet 1.9.1); so does ferromx.
        if isinstance(lhs, NDArray):
            if isinstance(rhs, NDArray):
                return finish(invoke(op, [lhs, rhs]), out)
            return finish(invoke(sop, [lhs], scalar=float(rhs)), out)
        if isinstance(rhs, NDArray):
            return finish(invoke(rop, [rhs], scalar=float(lhs)), out)
        if isinstance(lhs, _SCALAR_TYPES) and isinstance(rhs, _SCALAR_TYPES):
            return scalar_fn(lhs, rhs)
        if np_name is None:
            raise TypeError(f"{public}: arguments must be NDArrays or scalars")
        return array(getattr(_onp, np_name)(lhs, rhs))

    fn.__name__ = public
    fn.__qualname__ = public
    fn.__doc__ = (f"{d['doc']}\n\nEither side may be a Python scalar (then ``{sop}`` / "
                  f"``{rop}`` runs). Operator ``{op}``; runs on the engine.")
    return fn


def build(env):
    """Every generated ``nd`` function, by public name."""
    fns = {}
    for d in TABLE:
        for public in nd_names(d):
            fns[public] = make_ufunc(d, public, env) if is_binary(d) else make_op(d, public, env)
    return fns


def build_contrib(env):
    """The generated ``nd.contrib`` functions (operators named ``_contrib_*``), by name."""
    return {public: make_op(d, public, env) for d in TABLE for public in contrib_names(d)}


def _np_unary(fn, onp_fn, NDArray):
    """``mx.np``'s unary ufunc around a hand-written ``nd`` function: an array runs it, a
    Python or NumPy scalar is computed by NumPy's ufunc of the same name (as MXNet 1.9.1's
    np returns a NumPy scalar)."""
    def unary(x, *args, **kwargs):
        if isinstance(x, _SCALAR_TYPES) and not isinstance(x, NDArray):
            if kwargs.get("out") is not None:
                raise TypeError(f"{fn.__name__}: out= needs an array input, got a scalar")
            kwargs.pop("out", None)
            return onp_fn(x, *args, **kwargs)
        return fn(x, *args, **kwargs)

    unary.__name__ = unary.__qualname__ = fn.__name__
    unary.__doc__ = fn.__doc__
    return unary


def make_np_unary(d, public, nd, onp_fn, check):
    """``mx.np``'s unary ufunc of a parameterless elementwise operator, in one function:
    NumPy's ufunc keywords are checked as MXNet 1.9.1 does (``check`` pops them and raises
    for non-default values), an array runs the operator, and a Python or NumPy scalar is
    computed by NumPy's ufunc of the same name (MXNet's np returns a NumPy scalar).
    ``check(name, kwargs)`` raises for any keyword MXNet refuses."""
    op, invoke, finish, NDArray = d["name"], nd.invoke, nd._finish, nd.NDArray
    bool_result = d["scalar"][0] == "test"

    def fn(x, out=None, **kwargs):
        if kwargs:  # the common call passes none: skip the check
            check(public, kwargs)
        if isinstance(x, NDArray):
            res = invoke(op, [x])
            if out is None:
                return res
            if bool_result and out.dtype != _onp.bool_:
                # MXNet 1.9.1 does not cast a test's result into another dtype
                raise TypeError(f"{public}: out must be a bool array, got {out.dtype}")
            return finish(res, out)
        if isinstance(x, _SCALAR_TYPES) and onp_fn is not None:
            if out is not None:
                raise TypeError(f"{public}: out= needs an array input, got a scalar")
            return onp_fn(x)
        raise TypeError(f"{public}: input must be an ndarray or a scalar, got {type(x).__name__}")

    fn.__name__ = fn.__qualname__ = public
    fn.__doc__ = (f"{d['doc']}\n\nElementwise on an ``ndarray`` (operator ``{op}``, on the "
                  f"engine); a Python or NumPy scalar gives NumPy's scalar result. NumPy's ufunc "
                  f"keywords are accepted at their default values only, as in MXNet.")
    fn._ferromx_ufunc = True
    return fn


def make_np_binary(d, public, nd, check):
    """``mx.np``'s binary ufunc (``np.add``) in one function: the ufunc keyword check, then
    two arrays run the broadcasting operator, an array and a scalar its scalar form, two
    Python scalars give MXNet's Python result."""
    op, sop, rop = d["name"], d["scalar_op"], d["rscalar_op"]
    np_name = d["np"][0] if d["np"] else None
    # a bool-valued comparison (``_npi_equal``) of two scalars gives NumPy's bool, as MXNet
    scalar_fn = getattr(_onp, np_name) if d["scalar"][2] else _SCALAR_FNS[d["scalar"][1]]
    invoke, finish, NDArray, array = nd.invoke, nd._finish, nd.NDArray, nd.array

    def fn(x1, x2, out=None, **kwargs):
        if kwargs:  # the common call passes none: skip the check
            check(public, kwargs)
        if isinstance(x1, NDArray):
            if isinstance(x2, NDArray):
                res = invoke(op, [x1, x2])
            else:
                res = invoke(sop, [x1], scalar=float(x2))
        elif isinstance(x2, NDArray):
            res = invoke(rop, [x2], scalar=float(x1))
        elif isinstance(x1, _SCALAR_TYPES) and isinstance(x2, _SCALAR_TYPES):
            return scalar_fn(x1, x2)
        else:
            return array(getattr(_onp, np_name)(x1, x2))
        return res if out is None else finish(res, out)

    fn.__name__ = fn.__qualname__ = public
    fn.__doc__ = (f"{d['doc']}\n\nBroadcasting operator ``{op}`` on the engine; either side "
                  f"may be a scalar (then ``{sop}`` / ``{rop}`` runs). NumPy's ufunc keywords "
                  f"are accepted at their default values only, as in MXNet.")
    fn._ferromx_ufunc = True
    return fn


def install_aliases(ns, namespace, nd, ufunc_check=None, also=()):
    """Binds the table's ``np`` or ``npx`` aliases (``namespace``) in module dict ``ns``
    to the ``nd`` (or ``nd.contrib``) functions, where the module does not define the
    name itself. ``np`` aliases named like a NumPy ufunc become one-function ufuncs
    (:func:`make_np_unary`, :func:`make_np_binary`) with the keyword check ``ufunc_check``
    (so are the names in ``also``); the unary ufuncs take scalars too."""
    generated = nd._op._FNS
    for d in TABLE:
        for alias in d[namespace]:
            if alias in ns:
                continue
            names = nd_names(d)
            contrib = contrib_names(d)
            # an np-only operator (``_npi_arctan2``) has no nd function to start from
            fn = (getattr(nd, names[0]) if names
                  else getattr(nd.contrib, contrib[0]) if contrib else None)
            scalar = d["scalar"]
            onp_fn = getattr(_onp, alias, None)
            if namespace == "np" and scalar is not None:
                ufunc = isinstance(onp_fn, _onp.ufunc)
                from_table = fn is None or (names and fn is generated.get(names[0]))
                own = (from_table and not d["params"]
                       and ufunc_check is not None and (ufunc or alias in also))
                if scalar[0] in ("unary", "test") and own:
                    fn = make_np_unary(d, alias, nd, onp_fn if ufunc else None, ufunc_check)
                elif scalar[0] == "binary" and own:
                    fn = make_np_binary(d, alias, nd, ufunc_check)
                elif scalar[0] == "unary" and ufunc:
                    fn = _np_unary(fn, onp_fn, nd.NDArray)
            if fn is None:
                raise RuntimeError(f"{d['name']}: no function to bind as {namespace}.{alias}")
            ns[alias] = fn


def _method_name(d):
    """A fluent operator's method name: its own, or for a capitalised MXNet name (``Pad``)
    its first lowercase ``nd`` alias (``x.pad()``), as MXNet's methods are named."""
    if d["name"][:1].isupper():
        return next((a for a in d["nd"] if a[:1].islower()), d["name"])
    return d["name"]


def fluent_names():
    """Operators that are also NDArray methods (``x.exp()``), by method name."""
    return [_method_name(d) for d in TABLE if d["fluent"]]


# ----------------------------------------------------------------------------- stubs

_STUB_HEAD = '''"""Type stubs of the ``nd`` functions generated from the operator table.

Generated by ``python -m ferromx._op_gen``; do not edit by hand.
"""

from typing import Any

from .ndarray import NDArray
'''


def _stub_param(name, typ, default):
    d = "None" if default is None else default
    t = typ if default not in (None, "None") else f"{typ} | None"
    return f"{name}: {t} = {d}"


def stub_text():
    """The text of ``ndarray/_op.pyi``."""
    out = [_STUB_HEAD]
    for d in sorted(TABLE, key=lambda d: d["name"]):
        for public in nd_names(d):
            if is_binary(d):
                out.append(
                    f"def {public}(lhs: NDArray | float, rhs: NDArray | float, "
                    f"out: NDArray | None = None, name: str | None = None) -> Any: ..."
                )
                continue
            ps = []
            variadic = any(i.startswith("*") for i in d["inputs"])
            for i in d["inputs"]:
                ps.append(f"*{i[1:]}: NDArray" if i.startswith("*") else
                          f"{i}: NDArray | None = None")
            for name, typ, default, _doc in d["params"]:
                ps.append(_stub_param(name, typ, default))
            if not variadic:
                ps.append("*")
            ps += ["out: NDArray | None = None", "name: str | None = None"]
            multi = len(d["outputs"]) > 1 or d["outputs"][0].startswith("*")
            ret = "NDArray | list[NDArray]" if multi else "NDArray"
            out.append(f"def {public}({', '.join(ps)}) -> {ret}: ...")
    return "\n".join(out) + "\n"


_PKG = os.path.dirname(os.path.abspath(__file__))
STUB_PATH = os.path.join(_PKG, "ndarray", "_op.pyi")
NATIVE_STUB_PATH = os.path.join(_PKG, "_native.pyi")
_BEGIN = "    # BEGIN fluent methods (generated by `python -m ferromx._op_gen`; do not edit)\n"
_END = "    # END fluent methods\n"


def _method_stub(name, fn):
    params = list(inspect.signature(fn).parameters.values())[1:]
    parts, kw_only = ["self"], False
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            parts.append(f"*{p.name}: Any")
            kw_only = True
            continue
        if p.kind is p.VAR_KEYWORD:
            parts.append(f"**{p.name}: Any")
            continue
        if p.kind is p.KEYWORD_ONLY and not kw_only:
            parts.append("*")
            kw_only = True
        d = "" if p.default is p.empty else f" = {p.default!r}"
        parts.append(f"{p.name}: Any{d}")
    return f"    def {name}({', '.join(parts)}) -> Any: ..."


def fluent_stub_block():
    """The NDArray fluent-method stubs in ``_native.pyi`` (signatures of the ``nd``
    functions they call, minus the array)."""
    from . import ndarray as nd
    from .ndarray import _fluent

    names = sorted(set(fluent_names() + _fluent._PY_FLUENT) - {"reshape"})
    lines = [_method_stub(n, getattr(nd, n)) for n in names if hasattr(nd, n)]
    return _BEGIN + "\n".join(lines) + "\n" + _END


def native_stub_text():
    """``_native.pyi`` with its fluent block regenerated."""
    with open(NATIVE_STUB_PATH) as f:
        text = f.read()
    a, b = text.index(_BEGIN), text.index(_END) + len(_END)
    return text[:a] + fluent_stub_block() + text[b:]


def _write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def write_stubs():
    """Writes ``ndarray/_op.pyi`` and the fluent block of ``_native.pyi`` (atomically)."""
    _write(STUB_PATH, stub_text())
    _write(NATIVE_STUB_PATH, native_stub_text())


if __name__ == "__main__":
    write_stubs()
    print(f"wrote {STUB_PATH} and {NATIVE_STUB_PATH}")
