"""Graph fusion for inference: ``Convolution`` chains into ``_fused_convolution``.

A hybridized block runs a second plan when it is called outside ``autograd.record()`` in
predict mode (``CachedGraph``): in it each channel-first ``Convolution`` whose output
feeds only ``BatchNorm`` (then, optionally, only an addition of an array of the same
shape, then only ``relu``) — or only ``relu`` — is one ``_fused_convolution`` node. The
kernel applies those steps to each output row while it is in cache, with the unfused
operators' arithmetic in their order, so results are bitwise the same (MXNet's oneDNN
backend fuses the same patterns into ``_sg_mkldnn_conv``), except on Winograd layers whose
transformed filter the kernel keeps across calls (``conv/prepared.rs``) and, for 512 x 512
channels, takes as F(4x4) where eager calls use F(2x2): float32 rounding apart. The graph
users see, export and differentiate is never rewritten; ``FERROMX_CONV_FUSION=0`` turns the
pass off.
"""

import os

from . import _infer

_ADDS = frozenset({"broadcast_add", "elemwise_add", "_plus", "_Plus", "_add"})
_FALSE = ("0", "false", "False")


def enabled():
    """Whether the inference plans fuse (``FERROMX_CONV_FUSION=0`` turns them off)."""
    return os.environ.get("FERROMX_CONV_FUSION", "1") not in _FALSE


def has_candidates(sym):
    """Whether ``sym`` has a convolution the pass could fuse (a cheap pre-check)."""
    return any(n.op == "Convolution" for n in sym._nodes())


def _uses(nodes, heads):
    """``{(id(node), index): count}`` of reads of each entry (heads count)."""
    uses = {}
    for node in nodes:
        for src, i in node.inputs:
            uses[(id(src), i)] = uses.get((id(src), i), 0) + 1
    for h, i in heads:
        uses[(id(h), i)] = uses.get((id(h), i), 0) + 1
    return uses


def _is_true(v, default):
    if v is None:
        return default
    return str(v) not in _FALSE


def _is_relu(node):
    if node.op == "relu":
        return True
    return node.op == "Activation" and str(node.attrs.get("act_type", "")) == "relu"


def _chain(conv, consumers, uses, shapes, absorbed):
    """The nodes after ``conv`` that fuse into it: ``(bn, add, other, relu, last)``
    (none of them already part of another chain: the two branches of a residual block
    both end in the same addition, which only the first one visited takes)."""
    def only(node):
        if uses.get((id(node), 0), 0) != 1:
            return None
        users = consumers.get(id(node), [])
        return users[0] if len(users) == 1 and id(users[0]) not in absorbed else None

    bn = add = other = relu = None
    last = conv
    nxt = only(last)
    if (nxt is not None and nxt.op == "BatchNorm" and nxt.inputs[0] == (conv, 0)
            and int(nxt.attrs.get("axis", 1)) == 1
            and not _is_true(nxt.attrs.get("output_mean_var"), False)):
        bn, last = nxt, nxt
        nxt = only(last)
    if nxt is not None and nxt.op in _ADDS and len(nxt.inputs) == 2:
        mine = [k for k, e in enumerate(nxt.inputs) if e == (last, 0)]
        if len(mine) == 1:
            cand = nxt.inputs[1 - mine[0]]
            out_shape = shapes.get((id(conv), 0))
            if out_shape is not None and shapes.get((id(cand[0]), cand[1])) == out_shape:
                add, other, last = nxt, cand, nxt
                nxt = only(last)
    if nxt is not None and _is_relu(nxt) and nxt.inputs[0] == (last, 0):
        relu, last = nxt, nxt
    return bn, add, other, relu, last


def _fusable_conv(node):
    layout = node.attrs.get("layout")
    return (node.op == "Convolution"
            and (layout is None or str(layout) in ("None", "NCW", "NCHW", "NCDHW")))


def fuse_for_inference(sym, given_shapes):
    """A copy of ``sym`` with convolution chains fused, or ``None`` when nothing fuses.
    ``given_shapes``: ``{input name: shape}`` (the add fuses only when both operands are
    known to have the convolution's output shape)."""
    from .symbol import Symbol, _Node

    nodes = sym._nodes()
    uses = _uses(nodes, sym._heads)
    consumers = {}
    for node in nodes:
        for src, _ in node.inputs:
            consumers.setdefault(id(src), []).append(node)
    shapes = _infer.shape_pass(sym, given_shapes)
    replaced = {}  # id(last node of a chain) -> (conv, bn, other, relu)
    absorbed = set()
    for node in nodes:
        if not _fusable_conv(node):
            continue
        bn, add, other, relu, last = _chain(node, consumers, uses, shapes, absorbed)
        if bn is None and relu is None:
            continue
        replaced[id(last)] = (node, bn, other, relu)
        absorbed.update(id(n) for n in (node, bn, add, relu) if n is not None)
    if not replaced:
        return None
    canon = {}
    for node in nodes:
        if node.op is None:
            canon[id(node)] = node
            continue
        if id(node) in replaced:
            canon[id(node)] = _fused_node(_Node, canon, *replaced[id(node)])
        elif id(node) not in absorbed:
            canon[id(node)] = node.with_inputs([(canon[id(n)], i) for n, i in node.inputs])
    return Symbol([(canon[id(n)], i) for n, i in sym._heads])


def _fused_node(node_cls, canon, conv, bn, other, relu):
    """The ``_fused_convolution`` node for one chain (inputs taken from ``canon``)."""
    def entry(e):
        return (canon[id(e[0])], e[1])

    attrs = dict(conv.attrs)
    inputs = [entry(e) for e in conv.inputs]
    if bn is not None:
        attrs.update(with_bn="True", eps=str(bn.attrs.get("eps", "0.001")),
                     fix_gamma=str(_is_true(bn.attrs.get("fix_gamma"), True)))
        inputs.extend(entry(e) for e in bn.inputs[1:5])
    if other is not None:
        attrs["with_sum"] = "True"
        inputs.append(entry(other))
    if relu is not None:
        attrs["with_relu"] = "True"
    return node_cls("_fused_convolution", f"{conv.name}_fused", attrs, inputs)
