"""Fluent NDArray methods (``x.sum(axis=1)``, ``x.exp()``, ...), installed on the class."""

from .ndarray import NDArray

_FLUENT = [
    "abs", "sign", "square", "relu", "sqrt", "rsqrt", "cbrt", "exp", "expm1", "log", "log2",
    "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
    "arcsinh", "arccosh", "arctanh", "floor", "ceil", "round", "rint", "fix", "trunc",
    "reciprocal", "sigmoid", "softsign", "erf", "gamma", "gammaln", "logical_not", "degrees",
    "radians", "negative",
    "sum", "mean", "prod", "max", "min", "nansum", "nanprod", "norm", "argmax", "argmin",
    "flatten", "expand_dims", "squeeze", "broadcast_to", "broadcast_like", "transpose",
    "swapaxes", "slice_axis", "take", "pick", "one_hot", "clip", "softmax", "log_softmax",
    "reshape_like", "split", "tile", "repeat", "flip", "pad", "topk", "sort", "argsort",
    "zeros_like", "ones_like", "dot", "maximum", "minimum", "slice", "slice_like", "split_v2",
]


def install(ns):
    """Adds each function in ``_FLUENT`` found in namespace ``ns`` as an NDArray method."""
    for name in _FLUENT:
        fn = ns.get(name)
        if fn is None or hasattr(NDArray, name) and name in ("reshape",):
            continue

        def method(self, *args, _fn=fn, **kwargs):
            return _fn(self, *args, **kwargs)

        method.__name__ = name
        method.__doc__ = fn.__doc__
        setattr(NDArray, name, method)
