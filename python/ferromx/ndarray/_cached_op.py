"""``mx.nd.CachedOp``: a symbol compiled once and called on NDArrays, as MXNet's
``CachedOp`` (what hybridized Gluon blocks run). The graph becomes one
:class:`~ferromx.symbol.executor.Plan`; each call runs it on the engine, so under
``autograd.record()`` its operators are recorded and gradients flow to the inputs."""

__all__ = ["CachedOp"]


class CachedOp:
    """``CachedOp(sym, flags=())``: call with one NDArray per input of ``sym``
    (``sym.list_inputs()`` order: arguments and auxiliary states as the graph reaches
    them). Returns the output, or a list for several; ``out=`` receives the results."""

    def __init__(self, sym, flags=()):
        from ..symbol import Symbol
        from ..symbol.executor import Plan

        if not isinstance(sym, Symbol):
            raise TypeError(f"CachedOp: expected a Symbol, got {type(sym).__name__}")
        self._sym = sym
        self._flags = dict(flags) if flags else {}
        self._inputs = sym.list_inputs()
        self._plan = Plan(sym, self._inputs)

    def __call__(self, *args, out=None, default_ctx=None, name=None):
        from .ndarray import NDArray

        del default_ctx, name
        if len(args) != len(self._inputs):
            raise ValueError(f"CachedOp: expected {len(self._inputs)} inputs {self._inputs}, "
                             f"got {len(args)}")
        for i, a in enumerate(args):
            if not isinstance(a, NDArray):
                raise TypeError(f"CachedOp: input {i} ({self._inputs[i]!r}) is "
                                f"{type(a).__name__}, not an NDArray")
        res = self._plan.run(list(args))
        if out is not None:
            outs = [out] if isinstance(out, NDArray) else list(out)
            if len(outs) != len(res):
                raise ValueError(f"CachedOp: out= has {len(outs)} arrays, the graph has "
                                 f"{len(res)} outputs")
            for o, r in zip(outs, res):
                if o.shape != r.shape:
                    raise ValueError(f"CachedOp: out= has shape {o.shape}, the output has "
                                     f"{r.shape}")
                o[:] = r
            return out
        return res[0] if len(res) == 1 else res
