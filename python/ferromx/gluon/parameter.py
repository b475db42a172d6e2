"""Gluon parameters: :class:`Parameter`, :class:`Constant` and :class:`ParameterDict`.

Follows MXNet 1.9.1 Gluon.  A parameter holds one NDArray per context (``_data``, a
list); its gradient buffer is the NDArray's own ``.grad`` (``attach_grad``).  A shape
with unknown dimensions (0 or -1) defers initialization until the first forward pass
fills it in.  Parameter files are NumPy ``.npz`` archives, written atomically.
"""

import warnings
from collections import OrderedDict

import numpy as np

from .. import autograd, initializer
from .. import ndarray as nd
from ..base import MXNetError
from ..context import Context, cpu, current_context
from ..ndarray import NDArray
from ..util import _as_np_mode
from ._param_io import (
    ParameterLoadError,
    _brief_print_list,
    _dtype_name,
    load_arrays,
    name_unnamed,
    save_arrays,
)

__all__ = [
    "Constant",
    "DeferredInitializationError",
    "Parameter",
    "ParameterDict",
    "ParameterLoadError",
]


class DeferredInitializationError(MXNetError):
    """A parameter was used before its deferred initialization finished."""


# ---- helpers -------------------------------------------------------------------------------
def shape_is_known(shape):
    """Return whether ``shape`` has no unknown (0 or negative) dimension."""
    if shape is None:
        return False
    return all(int(d) > 0 for d in shape)


def _as_ctx_list(ctx):
    if ctx is None:
        return [current_context()]
    if isinstance(ctx, Context):
        return [ctx]
    return list(ctx)


def _same_contexts(a, b):
    return len(a) == len(b) and all(any(x == y for y in b) for x in a)


def _to_nd_like(value, arr):
    """Convert ``value`` for assignment into ``arr`` (same context and dtype)."""
    if isinstance(value, NDArray):
        if value.context != arr.context:
            value = value.as_in_context(arr.context)
        if _dtype_name(value.dtype) != _dtype_name(arr.dtype):
            value = value.astype(arr.dtype)
        return value
    if isinstance(value, (np.ndarray, list, tuple)):
        return nd.array(np.asarray(value), ctx=arr.context, dtype=_dtype_name(arr.dtype))
    return value


# ---- Parameter ------------------------------------------------------------------------------
#: Bumped whenever any parameter's data list is replaced (hybridized graphs cache the
#: arrays they feed and re-fetch them when this changes).
DATA_GENERATION = [0]


class Parameter:
    """A weight of a Block: data on one or more contexts plus its gradient.

    Parameters
    ----------
    name : str
        Name, e.g. ``dense0_weight``.
    grad_req : {'write', 'add', 'null'}
        How backward stores gradients (``'null'``: no gradient).
    shape : int or tuple of int, optional
        Shape; 0 (or -1) marks a dimension inferred at the first forward pass.
    dtype : numpy dtype or str
        Data type (default float32).
    lr_mult, wd_mult : float
        Multipliers of the optimizer's learning rate and weight decay.
    init : Initializer or str, optional
        Initializer used instead of the global one passed to :meth:`initialize`.
    allow_deferred_init : bool
        Whether initialization may wait until the shape is known.
    differentiable : bool
        ``False`` forces ``grad_req='null'``.
    stype, grad_stype : str
        Only ``'default'`` (dense) storage exists in ferromx; a sparse ``grad_stype`` is
        accepted and gradients stay dense.
    """

    def __init__(
        self,
        name,
        grad_req="write",
        shape=None,
        dtype=np.float32,
        lr_mult=1.0,
        wd_mult=1.0,
        init=None,
        allow_deferred_init=False,
        differentiable=True,
        stype="default",
        grad_stype="default",
    ):
        if stype != "default":
            raise ValueError(f"ferromx supports only dense parameters, got stype={stype!r}")
        self._data = None
        self._ctx_list = None
        self._deferred_init = ()
        self._differentiable = differentiable
        self._allow_deferred_init = allow_deferred_init
        self._grad_req = None
        self._trainer = None
        if isinstance(shape, int):
            shape = (shape,)
        self._shape = tuple(int(d) for d in shape) if shape is not None else None
        self.name = name
        self._dtype = dtype
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.init = init
        self._stype = stype
        self._grad_stype = grad_stype
        self.grad_req = grad_req

    @property
    def _data(self):
        return self.__dict__["_data_list"]

    @_data.setter
    def _data(self, value):
        DATA_GENERATION[0] += 1
        self.__dict__["_data_list"] = value

    def __repr__(self):
        return f"Parameter {self.name} (shape={self.shape}, dtype={_dtype_name(self.dtype)})"

    # ---- attributes ----------------------------------------------------------------------
    @property
    def grad_req(self):
        """Gradient request: ``'write'``, ``'add'`` or ``'null'``."""
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        if req not in ("write", "add", "null"):
            raise ValueError(f"grad_req must be one of 'write', 'add', or 'null', but got '{req}'")
        if not self._differentiable:
            req = "null"
        if self._grad_req == req:
            return
        self._grad_req = req
        if self._data is None:
            return
        if req == "null":
            self._data = [d.detach() for d in self._data]
        else:
            self._init_grad()

    @property
    def dtype(self):
        """The data type."""
        return self._dtype

    @dtype.setter
    def dtype(self, dtype):
        self._dtype = dtype

    @property
    def shape(self):
        """The shape; unknown dimensions are 0 until inferred."""
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        new_shape = tuple(int(d) for d in new_shape)
        if self._shape is None:
            self._shape = new_shape
            return
        if len(self._shape) != len(new_shape) or not all(
            j in (-1, 0, i) for i, j in zip(new_shape, self._shape)
        ):
            raise ValueError(
                f"Parameter '{self.name}': expected shape {new_shape!s} is incompatible with given "
                f"shape {self._shape!s}."
            )
        self._shape = new_shape

    @property
    def stype(self):
        """Storage type (always ``'default'``)."""
        return self._stype

    def _set_trainer(self, trainer):
        self._trainer = trainer

    # ---- access --------------------------------------------------------------------------
    def _check_and_get(self, arr_list, ctx):
        if arr_list is not None:
            if ctx is list:
                return arr_list
            if ctx is None:
                if len(arr_list) == 1:
                    return arr_list[0]
                ctx = current_context()
            for c, arr in zip(self._ctx_list, arr_list):
                if c == ctx:
                    return arr
            raise RuntimeError(
                f"Parameter '{self.name}' was not initialized on context {ctx!s}. It was only "
                f"initialized on {self._ctx_list!s}."
            )
        if self._deferred_init:
            raise DeferredInitializationError(
                f"Parameter '{self.name}' has not been initialized yet because initialization was "
                "deferred. Actual initialization happens during the first forward pass. Please "
                "pass one batch of data through the network before accessing Parameters. You can "
                "also avoid deferred initialization by specifying in_units, num_features, etc., "
                "for network layers."
            )
        raise RuntimeError(
            f"Parameter '{self.name}' has not been initialized. Note that you should initialize "
            "parameters and create Trainer with Block.collect_params() instead of Block.params "
            "because the later does not include Parameters of nested child Blocks"
        )

    def data(self, ctx=None):
        """Return the data on ``ctx`` (the only copy when there is one context); an
        ``np.ndarray`` when NumPy-array semantics are on (``npx.set_np()``)."""
        return _as_np_mode(self._check_and_get(self._data, ctx))

    def list_data(self):
        """Return the data on every context, in :meth:`list_ctx` order."""
        return _as_np_mode(self._check_and_get(self._data, list))

    def _grad_list(self):
        datas = self._check_and_get(self._data, list)
        if self._grad_req == "null":
            raise RuntimeError(
                f"Cannot get gradient array for Parameter '{self.name}' because grad_req='null'"
            )
        return [d.grad for d in datas]

    def grad(self, ctx=None):
        """Return the gradient buffer on ``ctx`` (an ``np.ndarray`` in NumPy-array mode)."""
        grads = _as_np_mode(self._grad_list())
        if ctx is None and len(grads) == 1:
            return grads[0]
        ctx = current_context() if ctx is None else ctx
        for c, g in zip(self._ctx_list, grads):
            if c == ctx:
                return g
        raise RuntimeError(f"Parameter '{self.name}' was not initialized on context {ctx!s}.")

    def list_grad(self):
        """Return the gradient buffers on every context."""
        return _as_np_mode(self._grad_list())

    def list_ctx(self):
        """Return the contexts this parameter lives on (or will, when deferred)."""
        if self._data is None:
            if self._deferred_init:
                return self._deferred_init[1]
            raise RuntimeError(f"Parameter '{self.name}' has not been initialized")
        return list(self._ctx_list)

    def zero_grad(self):
        """Set the gradient buffers to 0 (needed with ``grad_req='add'``)."""
        if self._data is None or self._grad_req == "null":
            return
        for g in self._grad_list():
            g[:] = 0

    def var(self):
        """The variable (``mx.sym.var``) standing for this parameter in traced graphs,
        with its shape, dtype, initializer and multipliers as attributes (cached; the
        shape attribute follows later shape changes)."""
        from .. import symbol

        var = getattr(self, "_var", None)
        if var is None:
            var = symbol.var(self.name, shape=self.shape, dtype=self.dtype,
                             lr_mult=self.lr_mult, wd_mult=self.wd_mult, init=self.init,
                             stype=self._stype)
            self._var = var
        elif self.shape is not None:
            var._heads[0][0].attrs["__shape__"] = str(tuple(self.shape))
        return var

    # ---- initialization --------------------------------------------------------------------
    def initialize(self, init=None, ctx=None, default_init=None, force_reinit=False):
        """Initialize data and gradient on ``ctx`` (default: the current context).

        ``init`` overrides ``self.init``, which overrides ``default_init`` (Uniform).
        With an unknown shape, initialization is deferred to the first forward pass when
        ``allow_deferred_init`` is set; otherwise a ``ValueError`` is raised.
        """
        if default_init is None:
            default_init = initializer.Uniform()
        if self._data is not None and not force_reinit:
            warnings.warn(
                f"Parameter '{self.name}' is already initialized, ignoring. Set force_reinit=True "
                "to re-initialize.",
                stacklevel=2,
            )
            return
        self._data = None
        ctx = _as_ctx_list(ctx)
        if init is None:
            init = default_init if self.init is None else self.init
        if not shape_is_known(self.shape):
            if self._allow_deferred_init:
                self._deferred_init = (init, ctx, default_init, None)
                return
            raise ValueError(
                f"Cannot initialize Parameter '{self.name}' because it has invalid shape: "
                f"{self.shape!s}."
            )
        self._deferred_init = (init, ctx, default_init, None)
        self._finish_deferred_init()

    def _finish_deferred_init(self):
        """Run a deferred initialization now that the shape is known."""
        if not self._deferred_init:
            return
        init, ctx, default_init, data = self._deferred_init
        if not shape_is_known(self.shape):
            raise ValueError(
                f"Cannot initialize Parameter '{self.name}' because it has invalid shape: "
                f"{self.shape!s}. Please specify in_units, in_channels, etc for `Block`s."
            )
        self._deferred_init = ()
        with autograd.pause():
            owned = data is None
            if owned:
                data = nd.zeros(self.shape, ctx=ctx[0], dtype=_dtype_name(self.dtype))
                initializer.create(default_init)(
                    initializer.InitDesc(self.name, {"__init__": init}), data
                )
            self._init_impl(data, ctx, owned=owned)

    def _init_impl(self, data, ctx_list, owned=False):
        """Place ``data`` on every context of ``ctx_list`` and attach gradients."""
        if not isinstance(data, NDArray):
            data = nd.array(np.asarray(data), ctx=cpu(), dtype=_dtype_name(self.dtype))
        self._ctx_list = list(ctx_list)
        arrays = []
        for i, ctx in enumerate(self._ctx_list):
            if i == 0 and owned and data.context == ctx:
                arrays.append(data)
            else:
                arrays.append(data.copyto(ctx))
        self._data = _as_np_mode(arrays)
        self._init_grad()

    def _init_grad(self):
        if self._grad_req == "null" or self._data is None:
            return
        for arr in self._data:
            arr.attach_grad(grad_req=self._grad_req)

    def reset_ctx(self, ctx):
        """Move the data (or the pending initialization) to ``ctx``."""
        ctx = _as_ctx_list(ctx)
        trainer = self._trainer
        if trainer is not None and getattr(trainer, "_kv_initialized", False):
            trainer._reset_kvstore()  # the store was set up for the old contexts
        if self._data is not None:
            data = self._reduce()
            with autograd.pause():
                self._init_impl(data, ctx)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, ctx, default_init, data)
        else:
            raise ValueError(
                f"Cannot reset context for Parameter '{self.name}' because it has not been "
                "initialized."
            )

    def set_data(self, data):
        """Overwrite the data on every context with ``data`` (in place)."""
        self.shape = data.shape
        if self._data is None:
            if not self._deferred_init:
                raise RuntimeError(f"Parameter '{self.name}' has not been initialized")
            self._deferred_init = self._deferred_init[:3] + (data,)
            return
        trainer = self._trainer
        if (
            trainer is not None
            and getattr(trainer, "_kv_initialized", False)
            and trainer._update_on_kvstore
            and self not in trainer._params_to_init
        ):
            trainer._reset_kvstore()  # the store's copy must be refreshed from the new value
        with autograd.pause():
            for arr in self._data:
                arr[:] = _to_nd_like(data, arr)

    def cast(self, dtype):
        """Change the data type of the data and gradients."""
        self._dtype = dtype
        if self._data is None:
            return
        with autograd.pause():
            self._data = [d.astype(_dtype_name(dtype)) for d in self._data]
            self._init_grad()

    # ---- save / load -----------------------------------------------------------------------
    def _reduce(self):
        """Return the data averaged over contexts, on the CPU."""
        data = self.list_data()
        with autograd.pause():
            total = data[0].copyto(cpu())
            if len(data) == 1:
                return total
            for d in data[1:]:
                total = total + d.copyto(cpu())
            return total / len(data)

    def _load_init(self, data, ctx, cast_dtype=False, dtype_source="current"):
        """Initialize (or overwrite) from loaded ``data`` (a NumPy array or NDArray)."""
        if dtype_source not in ("current", "saved"):
            raise ValueError(f"dtype_source must be 'current' or 'saved', got {dtype_source!r}")
        data_shape = tuple(int(d) for d in data.shape)
        if self.shape is not None and (
            len(self.shape) != len(data_shape)
            or not all(s in (0, -1, d) for s, d in zip(self.shape, data_shape))
        ):
            raise ParameterLoadError(
                f"Failed loading Parameter '{self.name}' from saved params: shape incompatible "
                f"expected {self.shape!s} vs saved {data_shape!s}"
            )
        self._shape = data_shape
        saved = _dtype_name(data.dtype)
        if self.dtype is not None and saved != _dtype_name(self.dtype):
            if not cast_dtype:
                raise ParameterLoadError(
                    f"Failed loading Parameter '{self.name}' from saved params: dtype incompatible "
                    f"expected {_dtype_name(self.dtype)} vs saved {saved}. Set cast_dtype=True to "
                    "cast the dtype of saved params."
                )
            if dtype_source == "current":
                data = data.astype(_dtype_name(self.dtype))
            else:  # MXNet's ``self.dtype = data.dtype``: casts the current data too
                self.cast(saved)
        if not isinstance(data, NDArray):
            data = nd.array(data, ctx=cpu(), dtype=_dtype_name(data.dtype))
        if self._data is None:
            if self._deferred_init and ctx is None:
                ctx = self._deferred_init[1]
            ctx = [cpu()] if ctx is None else _as_ctx_list(ctx)
            self._deferred_init = ()
            with autograd.pause():
                self._init_impl(data, ctx)
        else:
            self.set_data(data)
            if ctx is not None and not _same_contexts(_as_ctx_list(ctx), self._ctx_list):
                self.reset_ctx(ctx)
        self._deferred_init = ()


class Constant(Parameter):
    """A parameter that is never trained (``grad_req`` is always ``'null'``).

    Parameters
    ----------
    name : str
        Name of the constant.
    value : array-like or NDArray
        Its value.
    """

    def __init__(self, name, value):
        if not isinstance(value, NDArray):
            value = nd.array(np.atleast_1d(np.asarray(value)))  # a scalar gives shape (1,)
        self.value = value
        const = value

        class _ConstInit(initializer.Initializer):
            def _init_weight(self, _, arr):
                arr[:] = _to_nd_like(const, arr)

        super().__init__(
            name, grad_req="null", shape=value.shape, dtype=value.dtype, init=_ConstInit()
        )

    def __repr__(self):
        return f"Constant {self.name} (shape={self.shape}, dtype={_dtype_name(self.dtype)})"

    @property
    def grad_req(self):
        return "null"

    @grad_req.setter
    def grad_req(self, req):
        if req != "null":
            warnings.warn(
                f'Constant parameter "{self.name}" does not support grad_req other than "null", '
                f'and new value "{req}" is ignored.',
                stacklevel=2,
            )
        self._grad_req = "null"


class ParameterDict:
    """An ordered dict of :class:`Parameter` sharing a name ``prefix``.

    Parameters
    ----------
    prefix : str
        Prepended to names passed to :meth:`get`.
    shared : ParameterDict, optional
        Parameters looked up here before new ones are created (parameter sharing).
    """

    def __init__(self, prefix="", shared=None):
        self._prefix = prefix
        self._params = OrderedDict()
        self._shared = shared

    def __repr__(self):
        body = "\n".join("  " + repr(v) for v in self.values())
        return f"{self._prefix} (\n{body}\n)"

    def __getitem__(self, key):
        return self._params[key]

    def __iter__(self):
        return iter(self._params)

    def __len__(self):
        return len(self._params)

    def __contains__(self, key):
        return key in self._params

    def items(self):
        """Return ``(name, Parameter)`` pairs."""
        return self._params.items()

    def keys(self):
        """Return the parameter names."""
        return self._params.keys()

    def values(self):
        """Return the parameters."""
        return self._params.values()

    @property
    def prefix(self):
        """The prefix prepended to names in :meth:`get`."""
        return self._prefix

    def _get_impl(self, name):
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._params[name]
        return None

    def get(self, name, **kwargs):
        """Return the parameter ``prefix + name``, creating it with ``kwargs`` if needed.

        For an existing parameter, ``kwargs`` must agree with its attributes (unknown
        shape dimensions are filled in).
        """
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            param = Parameter(name, **kwargs)
            self._params[name] = param
            return param
        for key, value in kwargs.items():
            if key in ("allow_deferred_init", "differentiable"):
                setattr(param, "_" + key, value)
                continue
            existing = getattr(param, key, None)
            if existing is None:
                setattr(param, key, value)
                continue
            if key == "shape" and value is not None:
                value = (value,) if isinstance(value, int) else tuple(value)
                if len(value) == len(existing):
                    inferred, matched = [], True
                    for dim1, dim2 in zip(value, existing):
                        if dim1 != dim2 and dim1 > 0 and dim2 > 0:
                            matched = False
                            break
                        inferred.append(max(dim1, dim2))
                    if matched:
                        param._shape = tuple(inferred)
                        continue
            elif key == "dtype" and _dtype_name(value) == _dtype_name(existing):
                continue
            if value is not None and value != existing:
                raise ValueError(
                    f"Cannot retrieve Parameter '{name}' because desired attribute does not match "
                    f"with stored for attribute '{key}': desired '{value!s}' vs stored "
                    f"'{existing!s}'."
                )
        return param

    def get_constant(self, name, value=None):
        """Return the constant ``prefix + name``, creating it from ``value`` if needed."""
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            if value is None:
                raise KeyError(
                    f"No constant named '{name}'. Please specify value if you want to create a new "
                    "constant."
                )
            param = Constant(name, value)
            self._params[name] = param
        elif value is not None and not isinstance(param, Constant):
            raise TypeError(f"Parameter '{name}' already exists and is not a Constant")
        return param

    def update(self, other):
        """Merge the parameters of ``other``; a name may not map to two parameters."""
        for key, value in other.items():
            if key in self._params:
                if self._params[key] is not value:
                    raise ValueError(
                        "Cannot update self with other because they have different Parameters "
                        f"with the same name '{key}'"
                    )
            else:
                self._params[key] = value

    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        """Initialize every parameter with ``init`` (default Uniform) unless it has its own."""
        if init is None:
            init = initializer.Uniform()
        if verbose and hasattr(init, "set_verbosity"):
            init.set_verbosity(verbose=verbose)
        for param in self.values():
            param.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self):
        """Set every gradient to 0."""
        for param in self.values():
            param.zero_grad()

    def reset_ctx(self, ctx):
        """Move every parameter to ``ctx``."""
        for param in self.values():
            param.reset_ctx(ctx)

    def list_ctx(self):
        """Return the union of the parameters' contexts."""
        out = []
        for param in self.values():
            for ctx in param.list_ctx():
                if not any(ctx == c for c in out):
                    out.append(ctx)
        return out

    def setattr(self, name, value):
        """Set attribute ``name`` (e.g. ``grad_req``, ``lr_mult``) on every parameter."""
        for param in self.values():
            setattr(param, name, value)

    def save(self, filename, strip_prefix=""):
        """Save the parameters, keyed by name without ``strip_prefix``, in MXNet's
        ``.params`` format (atomically)."""
        arrays = {}
        for param in self.values():
            if not param.name.startswith(strip_prefix):
                raise ValueError(
                    f"Prefix '{strip_prefix}' is to be striped before saving, but Parameter's name "
                    f"'{param.name}' does not start with '{strip_prefix}'. This may be due to your "
                    "Block sharing parameters from other Blocks or creating child blocks outside "
                    "'with name_scope()'."
                )
            arrays[param.name[len(strip_prefix) :]] = param._reduce()
        save_arrays(filename, arrays)

    def load(
        self,
        filename,
        ctx=None,
        allow_missing=False,
        ignore_extra=False,
        restore_prefix="",
        cast_dtype=False,
        dtype_source="current",
    ):
        """Load parameters saved by :meth:`save`, prepending ``restore_prefix`` to names."""
        if restore_prefix:
            for name in self.keys():
                if not name.startswith(restore_prefix):
                    raise ValueError(
                        f"restore_prefix is '{restore_prefix}' but Parameter name '{name}' does "
                        f"not start with '{restore_prefix}'"
                    )
        names = [name[len(restore_prefix) :] for name in self.keys()]
        loaded = name_unnamed(load_arrays(filename), names, filename)
        self.load_dict(
            loaded,
            ctx,
            allow_missing,
            ignore_extra,
            restore_prefix,
            filename,
            cast_dtype,
            dtype_source,
        )

    def load_dict(
        self,
        param_dict,
        ctx=None,
        allow_missing=False,
        ignore_extra=False,
        restore_prefix="",
        filename=None,
        cast_dtype=False,
        dtype_source="current",
    ):
        """Load parameters from a dict of name -> array (NumPy or NDArray)."""
        lprefix = len(restore_prefix)
        loaded = [
            (k[4:] if k.startswith(("arg:", "aux:")) else k, v) for k, v in param_dict.items()
        ]
        arg_dict = {restore_prefix + k: v for k, v in loaded}
        source = f"file '{filename}'" if filename else "param_dict"
        if not allow_missing:
            for name in self.keys():
                if name not in arg_dict:
                    raise ParameterLoadError(
                        f"Parameter '{name[lprefix:]}' is missing in {source}, which contains "
                        f"parameters: {_brief_print_list(arg_dict.keys())}. Please make sure "
                        "source and target networks have the same prefix. Set allow_missing=True "
                        "to ignore missing parameters."
                    )
        for name, value in arg_dict.items():
            if name not in self._params:
                if not ignore_extra:
                    raise ValueError(
                        f"Parameter '{name[lprefix:]}' loaded from {source} is not present in "
                        f"ParameterDict, choices are: {_brief_print_list(self._params.keys())}. "
                        "Set ignore_extra to True to ignore."
                    )
                continue
            self[name]._load_init(value, ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)
