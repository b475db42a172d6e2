"""MXNet 1.9.1's graph JSON: ``nodes`` (op, name, string attrs, inputs ``[id, index,
version]``), ``arg_nodes``, ``node_row_ptr``, ``heads`` and ``attrs.mxnet_version``."""

import json

from ..base import MXNetError
from . import _npi, _spec
from .symbol import Symbol, _Node

MXNET_VERSION = 10901


def tojson(sym):
    """The JSON text of ``sym``'s graph."""
    nodes = sym._nodes()
    fn_nodes = [n for n in nodes if hasattr(n, "call") and n.json_attrs is None]
    if fn_nodes:
        raise MXNetError(f"Symbol.tojson: the graph has mx.np function nodes "
                         f"({', '.join(f'{n.op} {n.name!r}' for n in fn_nodes[:3])}) that "
                         "no MXNet operator computes (a Python function, or arguments "
                         "MXNet's operator does not take), so they have no graph JSON form")
    index = {id(n): i for i, n in enumerate(nodes)}
    out_nodes, row_ptr = [], [0]
    for node in nodes:
        entry = {"op": "null" if node.op is None else node.json_op, "name": node.name}
        inputs = list(enumerate(node.inputs))
        function = hasattr(node, "call")  # a function node, in MXNet's spelling (_npi)
        if function:
            attrs = dict(node.json_attrs)
            if node.json_order is not None:
                inputs = [inputs[k] for k in node.json_order]
        else:
            attrs = dict(node.attrs)
        if node.op is not None and not function and _spec.is_variadic(node.op):
            attrs["num_args"] = str(len(node.inputs))
        if attrs:
            entry["attrs"] = {k: attrs[k] for k in sorted(attrs)}
        aux = node.aux_positions()  # MXNet marks inputs an operator mutates with version 1
        entry["inputs"] = [[index[id(n)], i, int(k in aux)] for k, (n, i) in inputs]
        out_nodes.append(entry)
        if node.op is None:
            total = 1
        elif function:
            total = node.num_outputs()
        else:
            total = _spec.total_outputs(node.op, node.attrs)
        row_ptr.append(row_ptr[-1] + total)
    doc = {
        "nodes": out_nodes,
        "arg_nodes": [i for i, n in enumerate(nodes) if n.op is None],
        "node_row_ptr": row_ptr,
        "heads": [[index[id(n)], i, 0] for n, i in sym._heads],
        "attrs": {"mxnet_version": ["int", MXNET_VERSION]},
    }
    from ..util import is_np_shape

    if is_np_shape():
        doc["attrs"]["is_np_shape"] = ["int", 1]
    return _dump(doc)


def _dump(doc):
    """MXNet's layout: one node per block, inner lists on one line."""
    def node(e):
        parts = [f'      "op": {json.dumps(e["op"])}', f'      "name": {json.dumps(e["name"])}']
        if "attrs" in e:
            parts.append(f'      "attrs": {json.dumps(e["attrs"])}')
        parts.append(f'      "inputs": {json.dumps(e["inputs"])}')
        return "    {\n" + ", \n".join(parts) + "\n    }"

    body = ", \n".join(node(e) for e in doc["nodes"])
    rest = [f'  "{k}": {json.dumps(doc[k])}' for k in ("arg_nodes", "node_row_ptr", "heads",
                                                       "attrs")]
    return '{\n  "nodes": [\n' + body + "\n  ], \n" + ", \n".join(rest) + "\n}"


def _legacy_attrs(entry):
    attrs = {}
    for key in ("param", "attr", "attrs"):  # older MXNet files use "param" / "attr"
        attrs.update(entry.get(key) or {})
    return {str(k): str(v) for k, v in attrs.items()}


def fromjson(text):
    """A :class:`Symbol` from graph JSON text."""
    try:
        doc = json.loads(text)
        raw_nodes, heads = doc["nodes"], doc["heads"]
    except (ValueError, KeyError, TypeError) as err:
        raise MXNetError(f"load_json: not an MXNet graph JSON ({err})") from None
    nodes = []
    for k, entry in enumerate(raw_nodes):
        try:
            op_name = entry["op"]
            inputs = [(nodes[e[0]], int(e[1])) for e in entry.get("inputs", [])]
        except (KeyError, IndexError, TypeError) as err:
            raise MXNetError(f"load_json: node {k} is malformed ({err})") from None
        attrs = _legacy_attrs(entry)
        if op_name == "null":
            nodes.append(_Node(None, entry["name"], attrs))
        elif op_name not in _spec.RESOLVE and _npi.is_known(op_name):
            nodes.append(_npi.node(op_name, entry["name"], attrs, inputs))
        else:
            op = _spec.resolve(op_name)
            nodes.append(_Node(op, entry["name"], attrs, inputs, json_op=op_name))
    return Symbol([(nodes[h[0]], int(h[1])) for h in heads])


def debug_str(sym):
    """``Symbol.debug_str``: outputs, variables, then each operator with its inputs and
    attributes, in MXNet's layout."""
    lines = ["Symbol Outputs:"] + [f"\toutput[{i}]={n.name}({k})"
                                   for i, (n, k) in enumerate(sym._heads)]
    for node in sym._nodes():
        if node.op is None:
            lines.append(f"Variable:{node.name}")
            continue
        lines += ["--------------------", f"Op:{node.op}, Name={node.name}", "Inputs:"]
        lines += [f"\targ[{j}]={n.name}({k}) version=0" for j, (n, k) in enumerate(node.inputs)]
        if node.attrs:
            lines += ["Attrs:"] + [f"\t{k}={v}" for k, v in sorted(node.attrs.items())]
    return "\n".join(lines) + "\n"
