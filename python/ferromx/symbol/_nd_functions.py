"""The ``mx.sym`` functions whose ``nd`` forms ferromx writes in Python over table
operators (``arange``, ``linalg_gemm``, the ``random_*``/``sample_*`` samplers, the
optimizer updates ...): each is a function node running the ``nd`` function
(``symbol._np_symbol.nd_function``), so the graph computes exactly what ``nd`` computes
and differentiates through autograd. Also ``mx.sym.linalg``, ``mx.sym.image``, ``pow``
and the Symbol methods MXNet has for them.

The names are MXNet 1.9.1's ``mx.sym`` names (facts of its API, recorded once); ones the
operator table already provides keep their table operator.
"""

import types

from .. import ndarray as _nd
from ..base import MXNetError, NotImplementedForSymbol
from ._np_symbol import nd_function
from .symbol import Symbol, _is_scalar

ND_FUNCTIONS = (
    "L2Normalization", "SVMOutput", "SoftmaxActivation", "all_finite", "amp_cast",
    "amp_multicast", "arange", "cast_storage", "choose_element_0index", "cumsum",
    "depth_to_space", "eye", "fill_element_0index", "ftml_update", "ftrl_update",
    "hard_sigmoid", "histogram", "identity", "khatri_rao", "lamb_update_phase1",
    "lamb_update_phase2", "linalg_extractdiag", "linalg_extracttrian", "linalg_gemm",
    "linalg_makediag", "linalg_maketrian", "linalg_sumlogdiag", "linalg_syrk", "linalg_trmm",
    "linspace", "moments", "mp_lamb_update_phase1", "mp_lamb_update_phase2",
    "mp_nag_mom_update", "mp_sgd_mom_update", "mp_sgd_update", "multi_all_finite",
    "multi_lars", "multi_mp_sgd_mom_update", "multi_mp_sgd_update", "multi_sgd_mom_update",
    "multi_sgd_update", "multi_sum_sq", "normal", "preloaded_multi_mp_sgd_mom_update",
    "preloaded_multi_mp_sgd_update", "preloaded_multi_sgd_mom_update",
    "preloaded_multi_sgd_update", "random_exponential", "random_gamma",
    "random_generalized_negative_binomial", "random_negative_binomial", "random_normal",
    "random_poisson", "random_randint", "random_uniform", "ravel_multi_index",
    "reset_arrays", "sample_exponential", "sample_gamma",
    "sample_generalized_negative_binomial", "sample_multinomial", "sample_negative_binomial",
    "sample_normal", "sample_poisson", "sample_uniform", "shuffle", "signsgd_update",
    "signum_update", "smooth_l1", "space_to_depth", "split_v2", "uniform", "unravel_index",
)

# Symbol methods MXNet has whose operators are nd functions here
METHODS = ("broadcast_axes", "depth_to_space", "space_to_depth", "split_v2")


def _namespace(name, module, table, prefix):
    """``mx.sym.<name>``: ``module``'s functions, each the table operator ``prefix+fn``
    when ``table`` has it, else a function node."""
    ns = types.ModuleType(f"ferromx.symbol.{name}", f"``mx.sym.{name}``.")
    for fn in dir(module):
        value = getattr(module, fn)
        if fn.startswith("_") or not callable(value) or isinstance(value, type) or fn == "invoke":
            continue
        op = table.get(prefix + fn)
        setattr(ns, fn, op if op is not None else nd_function(f"{name}.{fn}", value))
    return ns


def pow(base, exp):
    """``base ** exp`` for Symbols and scalars (MXNet's ``mx.sym.pow``)."""
    if isinstance(base, Symbol):
        return base ** exp
    if isinstance(exp, Symbol) and _is_scalar(base):
        return exp.__rpow__(base)
    raise TypeError(f"pow: types ({type(base).__name__}, {type(exp).__name__}) not supported")


def _sparse_getattr(attr):
    raise MXNetError(f"mx.sym.sparse.{attr}: sparse storage is not supported (ferromx has "
                     "dense storage only)")


def install(ns):
    """Add the functions above to the ``mx.sym`` namespace dict ``ns``; returns their names."""
    added = []
    for fname in ND_FUNCTIONS:
        if fname not in ns and callable(getattr(_nd, fname, None)):
            ns[fname] = nd_function(fname, getattr(_nd, fname))
            added.append(fname)
    ns["linalg"] = _namespace("linalg", _nd.linalg, ns, "linalg_")
    ns["image"] = _namespace("image", _nd.image, ns, "_image_")
    sparse = types.ModuleType("ferromx.symbol.sparse", "Sparse symbols (not supported).")
    sparse.__getattr__ = _sparse_getattr
    ns["sparse"] = sparse
    ns["pow"] = pow
    ns["op"] = _op_namespace(ns)
    for meth in METHODS:
        if not hasattr(Symbol, meth):
            setattr(Symbol, meth, _method(ns[meth]))
    if not hasattr(Symbol, "diag"):
        Symbol.diag = _method(ns["diag"])
    for meth in ("backward", "detach", "as_in_context", "get_backend_symbol"):
        if not hasattr(Symbol, meth):
            setattr(Symbol, meth, _unsupported(meth))
    return added + ["linalg", "image", "op", "sparse", "pow"]


def _op_namespace(ns):
    """``mx.sym.op``: every operator function of ``mx.sym`` (MXNet's generated module)."""
    op = types.ModuleType("ferromx.symbol.op", "Every ``mx.sym`` operator function.")
    for k, v in list(ns.items()):
        if callable(v) and not k.startswith("__") and not isinstance(v, (type, types.ModuleType)):
            setattr(op, k, v)
    return op


def _method(fn):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def _unsupported(meth):
    def method(self, *args, **kwargs):
        raise NotImplementedForSymbol(method, None)

    method.__name__ = meth
    method.__doc__ = f"Not available on a Symbol (as in MXNet): ``{meth}`` needs arrays."
    return method
