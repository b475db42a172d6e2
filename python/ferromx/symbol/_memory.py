"""What an executor's arrays occupy, for ``Executor.debug_str``'s "Total N MB allocated"
line (MXNet prints its memory plan's total there, and its tests compare the figures).

ferromx allocates at run time rather than from a static plan, so the figure models what
a run keeps alive: the argument and auxiliary arrays; the gradient arrays of arguments a
gradient reaches (none through ``BlockGrad``/``stop_gradient`` or operators without a
gradient: MXNet's zero-gradient propagation leaves those unallocated too); and the
operator outputs. Without a gradient a run frees each output after its last reader (the
plan's release points), so the peak of the live set counts; with one, backward keeps the
forward's outputs, so all of them count.
"""

import math

import numpy as np

from . import _infer, _spec

# operators whose output carries no gradient back to their inputs
_BLOCKING = {"BlockGrad", "stop_gradient", "zeros_like", "ones_like"}


def _blocks(node):
    if node.op in _BLOCKING:
        return True
    if hasattr(node, "call"):  # a function node: autograd differentiates it
        return False
    grad = _spec.BY_NAME.get(node.op, {}).get("grad", "")
    return isinstance(grad, str) and grad.startswith("none")


def _reached(sym):
    """Names of the variables a head's gradient reaches."""
    reach, seen = set(), set()
    stack = [n for n, _ in sym._heads]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.op is None:
            reach.add(node.name)
        elif not _blocks(node):
            stack.extend(n for n, _ in node.inputs)
    return reach


def _nbytes(shape, dtype):
    if shape is None:
        return 0
    return math.prod(shape) * np.dtype(dtype or np.float32).itemsize


def total_bytes(ex):
    """The modelled allocation of executor ``ex`` (see the module docstring)."""
    sym = ex._optimized
    arrays = ex.arg_arrays + ex.aux_arrays
    total = sum(_nbytes(a.shape, a.dtype) for a in arrays)
    reached = _reached(sym)
    needs_grad = False
    for name, g, req in zip(ex._arg_names, ex.grad_arrays, ex._grad_req):
        if g is not None and req != "null" and name in reached:
            total += _nbytes(g.shape, g.dtype)
            needs_grad = True
    names = ex._arg_names + ex._aux_names
    shapes = _infer.shape_pass(sym, {n: a.shape for n, a in zip(names, arrays)})
    types = _infer.type_pass(sym, {n: a.dtype for n, a in zip(names, arrays)})
    outs = [[_nbytes(shapes.get((id(n), i)), types.get((id(n), i)))
             for i in range(n.num_outputs())] for n in sym._nodes() if n.op is not None]
    if needs_grad:
        return total + sum(sum(o) for o in outs)
    plan = ex._plan
    size = {}
    for (_, _, out, nout, _), node_outs in zip(plan.steps, outs):
        for k in range(nout):
            size[out + k] = node_outs[k] if k < len(node_outs) else 0
    live = peak = 0
    for (_, _, out, nout, _), done in zip(plan.steps, plan.release):
        live += sum(size.get(out + k, 0) for k in range(nout))
        peak = max(peak, live)
        live -= sum(size.get(i, 0) for i in done if i >= len(names))
    return total + peak
