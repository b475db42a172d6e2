"""``nd.image`` (and ``npx.image``): the image operators (``_image_*`` in the operator
table, MXNet's ``src/operator/image``), generated from the table like the rest of ``nd``.

Images are HWC (or NHWC batches) as :func:`ferromx.image.imdecode` returns them;
``to_tensor`` turns them into CHW float32 in [0, 1].
"""

from .. import _op_gen
from ._op import _Env

_PREFIX = "_image_"


def _build():
    fns = {}
    for d in _op_gen.TABLE:
        if d["name"].startswith(_PREFIX):
            public = d["name"][len(_PREFIX):]
            fns[public] = _op_gen.make_op(d, public, _Env)
    return fns


_FNS = _build()
globals().update(_FNS)
__all__ = sorted(_FNS)  # noqa: PLE0605 - names generated from the table
