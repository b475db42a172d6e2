"""Gluon blocks: :class:`Block`, :class:`HybridBlock` and the sequential containers.

Follows MXNet 1.9.1 Gluon.  Blocks get name prefixes like MXNet 1.x (``dense0_``, and
``sequential0_dense0_`` for a child created inside its parent's ``name_scope()``).
``hybridize()`` traces ``hybrid_forward`` with ``F = mx.sym`` once per input signature
and runs the cached graph afterwards (``_hybrid.py``); ``export`` writes it in MXNet's
formats and :class:`SymbolBlock` loads such pairs.
"""

import re
import threading
import warnings
from collections import OrderedDict, defaultdict
from typing import ClassVar

from .. import initializer
from .. import name as _name
from .. import ndarray as nd
from .. import symbol as _symbol
from ..ndarray import NDArray
from ..symbol.symbol import _NP_TRACE, Symbol
from . import _hybrid
from ._param_io import (
    ParameterLoadError,
    _brief_print_list,
    load_arrays,
    name_unnamed,
    save_arrays,
)
from .parameter import DeferredInitializationError, Parameter, ParameterDict, shape_is_known

__all__ = ["Block", "HookHandle", "HybridBlock", "HybridSequential", "Sequential",
           "SymbolBlock"]


class _NameCounter(threading.local):
    """Per-thread counters giving top-level blocks unique names (``dense0``, ``dense1``)."""

    def __init__(self):
        super().__init__()
        self.counts = {}

    def get(self, hint):
        count = self.counts.get(hint, 0)
        self.counts[hint] = count + 1
        return f"{hint}{count}"


_NAMES = _NameCounter()


class _BlockScope:
    """The name scope of a block: children created inside it get the block's prefix."""

    _current = threading.local()

    def __init__(self, block):
        self._block = block
        self._counter = {}
        self._old_scope = None

    @staticmethod
    def create(prefix, params, hint):
        """Return ``(prefix, ParameterDict)`` for a new block with alias ``hint``."""
        current = getattr(_BlockScope._current, "value", None)
        if current is None:
            if prefix is None:
                prefix = _NAMES.get(hint) + "_"
            if params is None:
                params = ParameterDict(prefix)
            else:
                params = ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = f"{hint}{count}_"
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self):
        if self._block._empty_prefix:
            return self
        self._old_scope = getattr(_BlockScope._current, "value", None)
        _BlockScope._current.value = self
        # As MXNet: names made inside the scope (NameManager.current) carry the prefix.
        self._name_scope = _name.Prefix(self._block.prefix)
        self._name_scope.__enter__()
        return self

    def __exit__(self, ptype, value, trace):
        if self._block._empty_prefix:
            return
        name_scope = getattr(self, "_name_scope", None)
        if name_scope is not None:
            name_scope.__exit__(ptype, value, trace)
            self._name_scope = None
        _BlockScope._current.value = self._old_scope


def _indent(text, num_spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * num_spaces + line for line in lines[1:])


class HookHandle:
    """Handle returned by ``register_forward_hook``; :meth:`detach` removes the hook."""

    _next_id: ClassVar[list] = [0]

    def __init__(self):
        self._hooks = None
        self._id = None

    def attach(self, hooks_dict, hook):
        """Add ``hook`` to ``hooks_dict`` (once per handle)."""
        if self._hooks is not None:
            raise RuntimeError("The same handle cannot be attached twice.")
        HookHandle._next_id[0] += 1
        self._id = HookHandle._next_id[0]
        hooks_dict[self._id] = hook
        self._hooks = hooks_dict

    def detach(self):
        """Remove the hook (idempotent)."""
        if self._hooks is not None:
            self._hooks.pop(self._id, None)

    def __enter__(self):
        return self

    def __exit__(self, ptype, value, trace):
        self.detach()


def _shape_str(obj):
    """Describe the shapes inside ``obj`` (arrays, nested lists/tuples) like MXNet's summary."""

    def shapes(o):
        if isinstance(o, (list, tuple)):
            return [shapes(i) for i in o]
        return o.shape if isinstance(o, NDArray) else o

    result = shapes(obj)
    if isinstance(result, list):
        return str(result)[1:-1]
    return str(result)


class Block:
    """Base class of all layers and models.

    Subclasses create children and parameters in ``__init__`` (inside
    ``with self.name_scope():`` for MXNet-style names) and implement ``forward``.

    Parameters
    ----------
    prefix : str, optional
        Name prefix of the block and its parameters (auto-generated when omitted).
    params : ParameterDict, optional
        Share these parameters instead of creating new ones.
    """

    def __init__(self, prefix=None, params=None):
        self._empty_prefix = prefix == ""
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix.removesuffix("_")
        self._scope = _BlockScope(self)
        self._children = OrderedDict()
        self._reg_params = {}
        self._forward_hooks = OrderedDict()
        self._forward_pre_hooks = OrderedDict()

    def __repr__(self):
        mods = "\n".join(
            f"  ({key}): {_indent(repr(block), 2)}" for key, block in self._children.items()
        )
        return f"{self.__class__.__name__}(\n{mods}\n)"

    def __setattr__(self, name, value):
        """Register child blocks and parameters assigned as attributes."""
        if hasattr(self, name):
            existing = getattr(self, name)
            if isinstance(existing, (Parameter, Block)) and not isinstance(value, type(existing)):
                raise TypeError(
                    f"Changing attribute type for {name} from {type(existing)} to {type(value)} is "
                    "not allowed."
                )
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            if name in self._reg_params:
                raise ValueError(
                    f"Overriding Parameter attribute {name} is not allowed. If you want to share "
                    "parameters between blocks, please set 'params' at Block construction instead."
                )
            self._reg_params[name] = value
        super().__setattr__(name, value)

    def _alias(self):
        return self.__class__.__name__.lower()

    @property
    def prefix(self):
        """Prefix of this block's name and of its parameters' names."""
        return self._prefix

    @property
    def name(self):
        """Name of this block (the prefix without the trailing ``_``)."""
        return self._name

    def name_scope(self):
        """Return a context manager; blocks created inside get this block's prefix."""
        return self._scope

    @property
    def params(self):
        """This block's own :class:`ParameterDict` (children not included)."""
        return self._params

    def collect_params(self, select=None):
        """Return a :class:`ParameterDict` of this block's and all descendants' parameters.

        ``select`` is a regular expression matched (``re.match``) against full names,
        e.g. ``'.*weight'`` or ``'.*weight|.*bias'``.
        """
        ret = ParameterDict(self._params.prefix)
        if not select:
            ret.update(self.params)
        else:
            ret.update(_regex_filter(self.params, select))
        for child in self._children.values():
            ret.update(child.collect_params(select=select))
        return ret

    def _collect_params_with_prefix(self, prefix=""):
        if prefix:
            prefix += "."
        ret = {prefix + key: value for key, value in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def save_parameters(self, filename, deduplicate=False):
        """Save parameters under structural names (``0.weight``, ``encoder.1.bias``).

        The file is in MXNet's binary ``.params`` format (MXNet's ``load_parameters``
        reads it), written atomically.  With ``deduplicate``, a parameter shared by
        several blocks is stored once, under its last name (as MXNet does).
        """
        params = self._collect_params_with_prefix()
        if deduplicate:
            last = {}
            for key, param in params.items():
                last[id(param)] = (key, param)  # keeps first-seen order, last name
            params = dict(last.values())
        save_arrays(filename, {key: p._reduce() for key, p in params.items()})

    def load_parameters(
        self,
        filename,
        ctx=None,
        allow_missing=False,
        ignore_extra=False,
        cast_dtype=False,
        dtype_source="current",
    ):
        """Load parameters written by :meth:`save_parameters` (ferromx's or MXNet's).

        Also reads older ferromx ``.npz`` files and NumPy ``.npz`` files with structural
        names (a ``.npy`` file only for a block with a single parameter).

        Raises :class:`~ferromx.gluon.parameter.ParameterLoadError` (an ``MXNetError``) for
        a missing parameter (unless ``allow_missing``), a shape or dtype mismatch or an
        unreadable file, and ``ValueError`` for an unknown one (unless ``ignore_extra``).
        """
        params = self._collect_params_with_prefix()
        loaded = name_unnamed(load_arrays(filename), params.keys(), filename)
        if not loaded and not params:
            return
        if not any("." in key for key in loaded):
            # Names without structure: a single layer's file, or one from save_params().
            self.collect_params().load_dict(
                loaded,
                ctx,
                allow_missing,
                ignore_extra,
                self.prefix,
                filename,
                cast_dtype,
                dtype_source,
            )
            return
        if not allow_missing:
            names_of = defaultdict(list)
            for key, param in params.items():
                names_of[id(param)].append(key)
            for key, param in params.items():
                if not any(name in loaded for name in names_of[id(param)]):
                    raise ParameterLoadError(
                        f"Parameter '{key}' is missing in file '{filename}', which contains "
                        f"parameters: {_brief_print_list(loaded.keys())}. Set allow_missing=True "
                        "to ignore missing parameters."
                    )
        for key, value in loaded.items():
            if key not in params:
                if not ignore_extra:
                    raise ValueError(
                        f"Parameter '{key}' loaded from file '{filename}' is not present in "
                        "ParameterDict, which contains parameters "
                        f"{_brief_print_list(params.keys())}. Set ignore_extra=True to ignore."
                    )
                continue
            params[key]._load_init(value, ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)

    def save_params(self, filename):
        """Deprecated: save with full parameter names. Use :meth:`save_parameters`."""
        warnings.warn("save_params is deprecated. Please use save_parameters.", stacklevel=2)
        self.collect_params().save(filename, strip_prefix=self.prefix)

    def load_params(self, filename, ctx=None, allow_missing=False, ignore_extra=False):
        """Deprecated: use :meth:`load_parameters`."""
        warnings.warn("load_params is deprecated. Please use load_parameters.", stacklevel=2)
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    def register_child(self, block, name=None):
        """Register ``block`` as a child (named ``name``, by default its index)."""
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def register_forward_pre_hook(self, hook):
        """Call ``hook(block, inputs)`` before each forward; returns a :class:`HookHandle`."""
        handle = HookHandle()
        handle.attach(self._forward_pre_hooks, hook)
        return handle

    def register_forward_hook(self, hook):
        """Call ``hook(block, inputs, outputs)`` after each forward; returns a handle."""
        handle = HookHandle()
        handle.attach(self._forward_hooks, hook)
        return handle

    def apply(self, fn):
        """Call ``fn(block)`` on every descendant (children first), then on this block."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        """Initialize all parameters (see :meth:`ParameterDict.initialize`)."""
        if init is None:
            init = initializer.Uniform()
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def zero_grad(self):
        """Set the gradients of all parameters to 0."""
        self.collect_params().zero_grad()

    def reset_ctx(self, ctx):
        """Move all parameters to ``ctx``."""
        self.collect_params().reset_ctx(ctx)

    def hybridize(self, active=True, **kwargs):
        """Accepted for compatibility: ferromx always runs imperatively (same results)."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def cast(self, dtype):
        """Cast all parameters (and children) to ``dtype``."""
        for child in self._children.values():
            child.cast(dtype)
        for param in self._reg_params.values():
            param.cast(dtype)

    def __call__(self, *args):
        """Run forward hooks around :meth:`forward`."""
        for hook in list(self._forward_pre_hooks.values()):
            hook(self, args)
        out = self.forward(*args)
        for hook in list(self._forward_hooks.values()):
            hook(self, args, out)
        return out

    def forward(self, *args):
        """Compute the output; subclasses override this."""
        raise NotImplementedError(f"{type(self).__name__} must implement forward")

    def summary(self, *inputs):
        """Print each layer's output shape and parameter count for a forward of ``inputs``."""
        rows = [("Input", _shape_str(inputs), 0, 0, 0)]
        seen = set()
        handles = []

        def hook(block, _, outputs):
            n_params = trainable = shared = 0
            for param in block._reg_params.values():
                size = param.data().size
                n_params += size
                if param.grad_req != "null":
                    trainable += size
                if id(param) in seen:
                    shared += size
                seen.add(id(param))
            name = f"{block.__class__.__name__}-{len(rows)}"
            rows.append((name, _shape_str(outputs), n_params, trainable, shared))

        def register(block):
            if not isinstance(block, (Sequential, HybridSequential)):
                handles.append(block.register_forward_hook(hook))

        try:
            self.apply(register)
            self(*inputs)
        finally:
            for handle in handles:
                handle.detach()
        line = "{:>20}  {:>42} {:>15}"
        total = sum(r[2] for r in rows)
        trainable = sum(r[3] for r in rows)
        shared = sum(r[4] for r in rows)
        print("-" * 80)
        print(line.format("Layer (type)", "Output Shape", "Param #"))
        print("=" * 80)
        for name, shape, n_params, _, _ in rows:
            print(line.format(name, shape, n_params))
        print("=" * 80)
        print("Parameters in forward computation graph, duplicate included")
        print(f"   Total params: {total}")
        print(f"   Trainable params: {trainable}")
        print(f"   Non-trainable params: {total - trainable}")
        print(f"Shared params in forward computation graph: {shared}")
        print(f"Unique parameters in model: {total - shared}")
        print("-" * 80)


class _FModule:
    """``hybrid_forward``'s ``F``: the ``nd`` module, plus ``F.np`` and ``F.npx`` (MXNet's
    NumPy-semantics namespaces), as MXNet's imperative ``F`` has them."""

    def __getattr__(self, name):
        if name == "np":
            from .. import numpy as value
        elif name == "npx":
            from .. import numpy_extension as value
        else:
            value = getattr(nd, name)
        self.__dict__[name] = value  # later lookups are plain attribute reads
        return value

    def __repr__(self):
        return "<module 'ferromx.ndarray' (hybrid_forward F)>"


_F = _FModule()


def _check_output_kinds(block, out):
    """MXNet refuses a block whose outputs mix ``np.ndarray`` and legacy ``NDArray``."""
    if isinstance(out, (list, tuple)) and len(out) > 1:
        kinds = {o._is_np for o in out if isinstance(o, NDArray)}
        if len(kinds) > 1:
            raise TypeError(
                f"{type(block).__name__}: block outputs mix mx.np.ndarray and mx.nd.NDArray; "
                "all outputs must be of the same type (use as_np_ndarray()/as_nd_ndarray())"
            )
    return out


class HybridBlock(Block):
    """A block whose computation is written once against ``F`` (``nd`` or ``sym``).

    Subclasses implement ``hybrid_forward(self, F, x, *args, **params)``; the block's own
    parameters are passed as keyword arguments (their data on ``x``'s context, or their
    variables when ``x`` is a Symbol). Parameters with unknown dimensions are initialized
    on the first call: eagerly after :meth:`infer_shape` (which built-in layers implement),
    hybridized from the traced graph's shape inference.
    ``hybridize()`` traces ``hybrid_forward`` with ``F = mx.sym`` once per input signature
    and later calls run the cached graph (native operator calls only).
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._active = False
        self._flags = []
        self._cached_graphs = {}
        self._cached_graph = ()

    def register_child(self, block, name=None):
        if not isinstance(block, HybridBlock):
            raise ValueError(  # noqa: TRY004 - MXNet raises ValueError
                f"Children of HybridBlock must also be HybridBlock, but {block!s} has type "
                f"{type(block)!s}. If you are using Sequential, please try HybridSequential "
                "instead."
            )
        super().register_child(block, name)
        self._clear_cached_op()

    def __call__(self, x, *args):
        """Hooks around :meth:`forward`; a hybridized block without hooks goes straight
        to its cached graph."""
        if (self._active and type(x) is NDArray and not self._forward_hooks
                and not self._forward_pre_hooks and type(self).forward is HybridBlock.forward):
            return _hybrid.call_cached(self, x, args)
        return super().__call__(x, *args)

    def _clear_cached_op(self):
        self._cached_graphs = {}
        self._cached_graph = ()

    def hybridize(self, active=True, static_alloc=False, static_shape=False, **kwargs):
        """Trace ``hybrid_forward`` into a cached graph at the next call (``active``), or go
        back to eager execution. ``static_alloc``/``static_shape`` are accepted (the graph
        runs on the engine's pooled allocator either way)."""
        self._active = active
        self._flags = [("static_alloc", static_alloc), ("static_shape", static_shape),
                       *kwargs.items()]
        self._clear_cached_op()
        super().hybridize(active, static_alloc=static_alloc, static_shape=static_shape,
                          **kwargs)

    def cast(self, dtype):
        self._clear_cached_op()
        super().cast(dtype)

    def infer_shape(self, *args):
        """Fill in unknown parameter dimensions from the inputs; layers override this."""
        unknown = [p.name for p in self._reg_params.values() if not shape_is_known(p.shape)]
        raise ValueError(
            "{} '{}' has parameters with unknown shape ({}) and does not implement "
            "infer_shape(); give their full shapes (e.g. in_units) instead.".format(
                type(self).__name__, self.name, ", ".join(unknown)
            )
        )

    def infer_type(self, *args):
        """Accepted for compatibility (dtypes are given explicitly)."""
        return

    def _deferred_infer_shape(self, *args):
        try:
            self.infer_shape(*args)
        except Exception as err:
            raise ValueError(
                f"Deferred initialization failed because shape cannot be inferred. {err}"
            ) from err

    def _param_data(self, ctx):
        return {key: param.data(ctx) for key, param in self._reg_params.items()}

    def forward(self, x, *args):
        """Run ``hybrid_forward``: on Symbols it builds a graph; hybridized, the cached
        graph runs; else eagerly (finishing deferred initialization first)."""
        if isinstance(x, Symbol):
            return self._symbolic_forward(x, *args)
        if self._active:
            return _hybrid.call_cached(self, x, args)
        return self._eager_forward(x, *args)

    def _eager_forward(self, x, *args):
        ctx = x.context if isinstance(x, NDArray) else None
        try:
            params = self._param_data(ctx)
        except DeferredInitializationError:
            self._deferred_infer_shape(x, *args)
            for param in self._reg_params.values():
                param._finish_deferred_init()
            params = self._param_data(ctx)
        return _check_output_kinds(self, self.hybrid_forward(_F, x, *args, **params))

    def _symbolic_call(self, *args):
        """Call the block (hooks included) on Symbols: builds its graph."""
        return Block.__call__(self, *args)

    def _symbolic_forward(self, x, *args):
        params = {key: param.var() for key, param in self._reg_params.items()}
        if getattr(_NP_TRACE, "value", False):  # np mode: parameters are np symbols too
            params = {key: p.as_np_ndarray() for key, p in params.items()}
        F = _symbol._F_HOOK[0]()
        if self._empty_prefix:
            return self.hybrid_forward(F, x, *args, **params)
        with _name.Prefix(self.prefix):
            return self.hybrid_forward(F, x, *args, **params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """Compute the output with operators from ``F``; subclasses override this."""
        raise NotImplementedError(f"{type(self).__name__} must implement hybrid_forward")

    def export(self, path, epoch=0, remove_amp_cast=True):
        """Write ``path-symbol.json`` (the traced graph, MXNet's JSON) and
        ``path-NNNN.params`` (``arg:``/``aux:`` arrays, MXNet's format). Needs
        ``hybridize()`` and one forward first. Returns the two file names."""
        return _hybrid.export(self, path, epoch)

    def _build(self, full):
        """The cached entry for the signature of arguments ``full``, traced now if there
        is none (``optimize_for``; ``SymbolBlock`` builds from its own graph)."""
        return _hybrid.build(self, full)

    def optimize_for(self, x, *args, backend=None, clear=False, static_alloc=False,
                     static_shape=False, **kwargs):
        """Hybridize and build the graph for inputs ``(x, *args)`` now, without running
        it, for ``backend`` (MXNet's CPU names: ``"MKLDNN"``; ferromx's own fusions are
        its backend, see ``gluon/_optimize.py``). ``export`` or inference may follow."""
        from ._optimize import optimize_block

        optimize_block(self, x, args, backend, clear, static_alloc, static_shape, **kwargs)


def _sequential_forward(children, x, args):
    for block in children:
        x = block(x, *args)
        args = []
        if isinstance(x, (tuple, list)):
            args = x[1:]
            x = x[0]
    if args:
        x = tuple([x] + list(args))
    return x


def _sequential_repr(self):
    mods = "\n".join(
        f"  ({key}): {_indent(repr(block), 2)}" for key, block in self._children.items()
    )
    return f"{self.__class__.__name__}(\n{mods}\n)"


def _sequential_getitem(self, key):
    layers = list(self._children.values())[key]
    if isinstance(layers, list):
        net = type(self)(prefix=self._prefix)
        with net.name_scope():
            net.add(*layers)
        return net
    return layers


class Sequential(Block):
    """Stack blocks; the output of each is the input of the next.

    A block returning a tuple passes its first element as input and the rest as extra
    arguments to the next block.
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def add(self, *blocks):
        """Append blocks."""
        for block in blocks:
            self.register_child(block)

    def forward(self, x, *args):
        return _sequential_forward(self._children.values(), x, args)

    __repr__ = _sequential_repr
    __getitem__ = _sequential_getitem

    def __len__(self):
        return len(self._children)

    def hybridize(self, active=True, **kwargs):
        """Hybridize the children (a no-op in ferromx)."""
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warnings.warn(
                f"All children of this Sequential layer '{self.prefix}' are HybridBlocks. Consider "
                "using HybridSequential for the best performance.",
                stacklevel=2,
            )
        super().hybridize(active, **kwargs)


class HybridSequential(HybridBlock):
    """Stack HybridBlocks; like :class:`Sequential` but hybridizable."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def add(self, *blocks):
        """Append blocks."""
        for block in blocks:
            self.register_child(block)

    def hybrid_forward(self, F, x, *args):
        return _sequential_forward(self._children.values(), x, args)

    __repr__ = _sequential_repr
    __getitem__ = _sequential_getitem

    def __len__(self):
        return len(self._children)


def _regex_filter(params, select):
    """Return the items of ``params`` whose names match regex ``select`` (``re.match``)."""
    pattern = re.compile(select)
    return {name: value for name, value in params.items() if pattern.match(name)}


SymbolBlock = _hybrid._make_symbol_block()
