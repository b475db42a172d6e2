"""``nd._internal``: the operator table's internal (``_``-prefixed) operators under their
MXNet names (``_sample_unique_zipfian``, ``_random_normal``, ``_backward_*`` ...), as
MXNet's ``mxnet.ndarray._internal`` exposes them."""

from .. import _op_gen
from ._op import _Env


def _build():
    fns = {}
    for d in _op_gen.TABLE:
        if not d["name"].startswith("_") or _op_gen.is_binary(d):
            continue
        try:
            fns[d["name"]] = _op_gen.make_op(d, d["name"], _Env)
        except ValueError:  # a signature Python cannot spell (a repeated name): skipped
            continue
    return fns


_FNS = _build()
globals().update(_FNS)
__all__ = sorted(_FNS)  # noqa: PLE0605 - generated names
