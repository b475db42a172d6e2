"""``HybridBlock.optimize_for`` and ``Symbol.optimize_for``: MXNet's graph-backend API.

MXNet 1.9.1 partitions a graph for a registered *subgraph backend* (``"MKLDNN"`` on its
CPU builds, or a custom library's) and then runs or exports the partitioned graph.
ferromx has no pluggable backends: its own graph passes (the elementwise fusion of every
hybridized graph, and the convolution + BatchNorm + residual + ReLU fusion of inference
plans, ``symbol/_fuse.py``) are what MXNet's CPU backend does, and they run for every
hybridized block. So ``optimize_for`` accepts MXNet's CPU backend names and does what
MXNet documents for it, "the work of hybridize plus part of the forward pass": it
hybridizes the block, traces its graph for the given inputs and builds the inference plan
now, without running a forward. ``export`` afterwards writes the graph in MXNet's own
operators (not MXNet's ``_sg_mkldnn_*`` partition nodes), so MXNet without oneDNN loads it
as well.

An unknown backend name is what MXNet logs as an error and then ignores (the graph is
left as it is); ferromx warns and does the same.
"""

from ..symbol._optimize import check_backend


def optimize_block(block, x, args, backend, clear, static_alloc, static_shape, **kwargs):
    """``HybridBlock.optimize_for``: hybridize ``block`` and build its graph and inference
    plan for the inputs ``(x, *args)`` without running it."""
    from ..ndarray import NDArray
    from . import _hybrid

    flags = {k: kwargs.pop(k) for k in ("inline_limit", "forward_bulk_size",
                                        "backward_bulk_size") if k in kwargs}
    if kwargs:  # backend options (MXNet passes them to the partitioner)
        block._backend_opts = kwargs
    check_backend(backend, "optimize_for")
    full = (x, *args)
    arrays = [a for a in full if isinstance(a, NDArray)]
    if not arrays:
        raise ValueError("In HybridBlock, there must be one NDArray or one Symbol in the "
                         "input. Please check the type of the args.")
    ctxs = {str(a.context) for a in arrays}
    if len(ctxs) > 1:
        raise ValueError("Found multiple contexts in the input, After hybridized, the "
                         "HybridBlock only supports one input context. Find all contexts = "
                         f"{sorted(ctxs)}")
    block.hybridize(True, static_alloc=static_alloc, static_shape=static_shape,
                    backend=backend, clear=clear, **flags)
    entry = block._build(full)
    if isinstance(entry, _hybrid.CachedGraph):
        entry.prepare([a for a in full if a is not None], arrays[0]._ctx)
    return entry
