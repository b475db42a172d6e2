"""MXNet 1.9.1's NumPy graph operators (``_npi_*``, ``_np_*``, ``_npx_*``) as ``mx.np``
function nodes, in both directions.

MXNet exports a block written with ``F.np`` calls as graph JSON whose nodes are its
``_npi_*`` operators (``_npi_tanh``, ``_npi_multiply_scalar`` with ``scalar``/``is_int``,
``_np_sum`` with ``axis``/``keepdims`` ...). ferromx's ``mx.np`` is Python over the
operator table, not one table operator per NumPy function, so each of these MXNet
operators is described here as data: which ``mx.np`` function computes it, which inputs
it takes and how its string attributes become that function's arguments.

- Loading (:func:`node`): ``fromjson`` makes such a node a
  :class:`~ferromx.symbol._np_symbol.FunctionNode` that calls the function, keeping
  MXNet's operator name and attributes, so it is written back unchanged.
- Writing (``_npi_write.encode``, from this table): a function node built by
  ``mx.sym.np``/``mx.sym.npx`` (or an np symbol's method) gets the MXNet operator and
  attributes MXNet's own ``mx.sym.np`` writes for the same call, so ``tojson`` can
  serialise it.

Names MXNet registers as aliases of legacy operators (``_npi_maximum`` is written
``broadcast_maximum``, ``_npx_fully_connected`` ``FullyConnected``) are table operators
already (``_spec.RESOLVE``); only the canonical ``_np*`` names are here.
"""

import ast

from ..base import MXNetError

# MXNet operator -> (function, input names, {MXNet attribute: keyword}); the function is
# a path under ``ferromx.numpy`` ("tanh", "linalg.det") or "npx.<name>".
_UNARY = ["absolute", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "cbrt",
          "ceil", "cos", "cosh", "degrees", "exp", "expm1", "fix", "floor", "log", "log10",
          "log1p", "log2", "negative", "radians", "reciprocal", "rint", "sign", "sin", "sinh",
          "sqrt", "square", "tan", "tanh", "trunc", "bitwise_not"]
_BINARY = ["add", "subtract", "multiply", "true_divide", "power", "mod", "hypot"]
# binary functions whose scalar form with the scalar on the left is its own operator
_REVERSED = {"subtract", "true_divide", "power", "mod"}
_REDUCE = {"_np_sum": "sum", "_npi_mean": "mean", "_np_max": "max", "_np_min": "min",
           "_np_prod": "prod"}

SPEC = {}


def _add(op, func, ins=("a",), attrs=(), **extra):
    SPEC[op] = dict(func=func, ins=tuple(ins), attrs=dict(attrs), **extra)


for _f in _UNARY:
    _add(f"_npi_{_f}", _f, ("x",))
_add("_npi_around", "around", ("x",), {"decimals": "decimals"})
for _f in _BINARY:
    _add(f"_npi_{_f}", _f, ("lhs", "rhs"))
    _add(f"_npi_{_f}_scalar", _f, ("data",), scalar="right")
    if _f in _REVERSED:
        _add(f"_npi_r{_f}_scalar", _f, ("data",), scalar="left")
for _op, _f in _REDUCE.items():
    _add(_op, _f, ("a",), {"axis": "axis", "dtype": "dtype", "keepdims": "keepdims"},
         initial=_f)
for _f in ("all", "any"):
    _add(f"_np_{_f}", _f, ("data",), {"axis": "axis", "keepdims": "keepdims"})
for _f in ("std", "var"):
    _add(f"_npi_{_f}", _f, ("a",), {"axis": "axis", "dtype": "dtype", "ddof": "ddof",
                                    "keepdims": "keepdims"})
for _f in ("argmax", "argmin"):
    _add(f"_npi_{_f}", _f, ("data",), {"axis": "axis"}, keepdims_after=True)
_add("_np_reshape", "reshape", ("a",), {"newshape": "newshape", "order": "order"})
_add("_npx_reshape", "npx.reshape", ("a",), {"newshape": "newshape", "reverse": "reverse",
                                             "order": "order"})
_add("_np_transpose", "transpose", ("a",), {"axes": "axes"})
_add("_np_squeeze", "squeeze", ("a",), {"axis": "axis"})
_add("_np_moveaxis", "moveaxis", ("a",), {"source": "source", "destination": "destination"})
_add("_npi_broadcast_to", "broadcast_to", ("array",), {"shape": "shape"})
_add("_npi_flip", "flip", ("data",), {"axis": "axis"})
_add("_np_roll", "roll", ("data",), {"shift": "shift", "axis": "axis"})
_add("_np_copy", "copy", ("a",))
_add("_npi_rot90", "rot90", ("data",), {"k": "k", "axes": "axes"})
_add("_np_diag", "diag", ("data",), {"k": "k"})
_add("_np_diagflat", "diagflat", ("data",), {"k": "k"})
for _f in ("diagonal", "trace"):
    _add(f"_np_{_f}", _f, ("data",), {"offset": "offset", "axis1": "axis1", "axis2": "axis2"})
_add("_npi_tril", "tril", ("data",), {"k": "k"})
_add("_npi_diff", "diff", ("a",), {"n": "n", "axis": "axis"})
_add("_npi_pad", "pad", ("data",), {"pad_width": "pad_width", "mode": "mode",
                                   "constant_value": "constant_values"})
_add("_npi_concatenate", "concatenate", ("*data",), {"dim": "axis", "axis": "axis"})
_add("_npi_stack", "stack", ("*data",), {"axis": "axis"})
for _f in ("vstack", "hstack", "dstack", "column_stack"):
    _add(f"_npi_{_f}", _f, ("*data",))
for _op, _f in (("_split_v2", "split"), ("_npi_hsplit", "hsplit"), ("_npi_dsplit", "dsplit")):
    _add(_op, _f, ("data",), {"axis": "axis"}, split=True)
for _f in ("zeros", "ones"):
    _add(f"_npi_{_f}", _f, (), {"shape": "shape", "dtype": "dtype"})
_add("_npi_full_like", "full_like", ("a",), {"fill_value": "fill_value", "dtype": "dtype"})
_add("_npi_identity", "identity", (), {"shape": "n", "dtype": "dtype"}, first_of="shape")
_add("_npi_eye", "eye", (), {"N": "N", "M": "M", "k": "k", "dtype": "dtype"})
_add("_npi_arange", "arange", (), {"start": "start", "stop": "stop", "step": "step",
                                   "dtype": "dtype"}, repeat=True)
_add("_npi_indices", "indices", (), {"dimensions": "dimensions", "dtype": "dtype"})
_add("_np_dot", "dot", ("a", "b"))
_add("_npi_matmul", "matmul", ("a", "b"))
_add("_npi_tensordot_int_axes", "tensordot", ("a", "b"), {"axes": "axes"})
_add("_npi_tensordot", "tensordot", ("a", "b"), {"a_axes_summed": 0, "b_axes_summed": 1},
     axes_pair=True)
_add("_npi_einsum", "einsum", ("*data",), {"subscripts": 0}, spread=True)
_add("_npi_where", "where", ("condition", "x", "y"))
# MXNet's "lscalar": x (the left value) is the scalar; the array input is y
_add("_npi_where_lscalar", "where", ("condition", "x"), where="left")
_add("_npi_where_rscalar", "where", ("condition", "x"), where="right")
_add("_npi_where_scalar2", "where", ("condition",), {"x": 1, "y": 2})
_add("_npi_cholesky", "linalg.cholesky", ("A",))
_add("_npi_eigvals", "linalg.eigvals", ("A",))
_add("_npi_eigvalsh", "linalg.eigvalsh", ("A",), {"UPLO": "UPLO"})
_add("_npi_tensorinv", "linalg.tensorinv", ("a",), {"ind": "ind"})
_add("_npi_tensorsolve", "linalg.tensorsolve", ("a", "b"), {"a_axes": "axes"})
_add("_npx_relu", "npx.relu", ("data",))
_add("_npx_sigmoid", "npx.sigmoid", ("data",))
for _f in ("uniform", "normal"):
    _lo, _hi = ("low", "high") if _f == "uniform" else ("loc", "scale")
    _add(f"_npi_{_f}", f"random.{_f}", (), {_lo: _lo, _hi: _hi, "size": "size",
                                           "dtype": "dtype"})

def parse(text):
    """An MXNet attribute string as a Python value: ``"(1, 4)"`` -> ``(1, 4)``,
    ``"None"`` -> ``None``, ``"True"``, numbers; anything else (a dtype name, a context)
    stays a string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _function(path):
    import importlib

    mod, _, name = path.rpartition(".")
    if mod.startswith("npx"):
        module = importlib.import_module("ferromx.numpy_extension")
    else:
        module = importlib.import_module("ferromx.numpy" + (f".{mod}" if mod else ""))
    return getattr(module, name)


def _scalar(attrs):
    value = float(parse(attrs.get("scalar", "0")))
    return int(value) if parse(attrs.get("is_int", "False")) is True else value


def _split_points(attrs):
    """``_split_v2``'s ``np.split`` argument: ``sections`` when given, else the split
    points (``indices`` without MXNet's leading 0)."""
    sections = int(parse(attrs.get("sections", "0")) or 0)
    return sections if sections > 0 else list(parse(attrs.get("indices", "()")))[1:]


def num_outputs(op, attrs):
    """The number of outputs of MXNet operator ``op`` for its (string) ``attrs``."""
    if not SPEC[op].get("split"):
        return 1
    points = _split_points(attrs)
    return points if isinstance(points, int) else len(points) + 1


def _kwargs(spec, attrs):
    kwargs, positional = {}, {}
    for key, target in spec["attrs"].items():
        if key not in attrs:
            continue
        value = parse(attrs[key])
        if key == "axes" and value == ():  # MXNet's default spelling of "reverse them all"
            continue
        if isinstance(target, int):
            positional[target] = value
        elif value is not None or key == "axis":
            kwargs[target] = value
    return kwargs, positional


def _caller(op, spec, attrs):
    """``call(arrays)`` for one loaded node: the function with the decoded arguments."""
    func = _function(spec["func"])
    kwargs, positional = _kwargs(spec, attrs)
    variadic = spec["ins"][:1] == ("*data",)
    if spec.get("scalar"):
        s = _scalar(attrs)
        if spec["scalar"] == "right":
            return lambda xs: func(xs[0], s)
        return lambda xs: func(s, xs[0])
    if spec.get("where"):
        s = _scalar(attrs)
        if spec["where"] == "right":
            return lambda xs: func(xs[0], xs[1], s)
        return lambda xs: func(xs[0], s, xs[1])
    if spec.get("split"):
        where = _split_points(attrs)
        squeeze = parse(attrs.get("squeeze_axis", "False")) is True
        axis = kwargs.get("axis", 0)

        def split(xs):
            parts = func(xs[0], where, **kwargs)
            return [p.squeeze(axis=axis) for p in parts] if squeeze else parts

        return split
    if spec.get("axes_pair"):
        axes = (positional.get(0, ()), positional.get(1, ()))
        return lambda xs: func(xs[0], xs[1], axes)
    if "first_of" in spec:  # identity(shape=(n, n)) -> identity(n)
        kwargs["n"] = next(iter(kwargs["n"]))
    if spec.get("repeat"):
        times = int(parse(attrs.get("repeat", "1")))
        if times != 1:
            base = func
            func = lambda *a, **k: _function("repeat")(base(*a, **k), times)
    lead = [positional[i] for i in sorted(positional)]
    if spec.get("keepdims_after") and parse(attrs.get("keepdims", "False")) is True:
        return _keepdims(func, kwargs.get("axis"))
    initial = parse(attrs.get("initial", "None")) if spec.get("initial") else None
    if initial is not None:
        return _with_initial(op, func, kwargs, initial, spec["initial"])
    if spec.get("spread"):  # einsum(subscripts, *operands)
        return lambda xs: func(*lead, *xs, **kwargs)
    if variadic:
        return lambda xs: func(list(xs), **kwargs)
    if lead and spec["ins"] == ("condition",):
        return lambda xs: func(xs[0], *lead)
    return lambda xs: func(*xs, *lead, **kwargs)


def _keepdims(func, axis):
    """``argmax(..., keepdims=True)``: the reduced axis kept as length 1."""
    expand, reshape = _function("expand_dims"), _function("reshape")

    def call(xs):
        out = func(xs[0], axis=axis)
        if axis is None:
            return reshape(out, (1,) * xs[0].ndim)
        return expand(out, axis)

    return call


def _with_initial(op, func, kwargs, initial, reduction):
    """A reduction's ``initial`` value folded in as NumPy does: added to a sum, multiplied
    into a product, a bound on a max/min."""
    combine = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum"}
    if reduction not in combine:
        raise MXNetError(f"{op}: initial is not supported")
    join = _function(combine[reduction])
    return lambda xs: join(func(xs[0], **kwargs), initial)


def node(op, name, attrs, inputs):
    """The :class:`FunctionNode` for MXNet operator ``op`` read from graph JSON."""
    from ._np_symbol import FunctionNode

    spec = SPEC[op]
    try:
        call = _caller(op, spec, attrs)
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        raise MXNetError(f"load_json: node {name!r} ({op}): cannot read its attributes "
                         f"{attrs} ({err})") from None
    ins = spec["ins"]

    def named(arrays):  # an error names the graph node and MXNet's operator
        try:
            return call(arrays)
        except (MXNetError, TypeError, ValueError, IndexError) as err:
            raise MXNetError(f"{op} (node {name!r}): {err}") from None

    in_names = ([f"data{i}" for i in range(len(inputs))] if ins[:1] == ("*data",)
                else list(ins[:len(inputs)]))
    fn = FunctionNode(op, name, named, inputs, num_outputs(op, attrs), attrs,
                      in_names=in_names)
    fn.json_op, fn.json_attrs = op, attrs  # written back as read
    return fn


def is_known(op):
    """Whether ``op`` is an MXNet NumPy operator this module can load."""
    return op in SPEC
