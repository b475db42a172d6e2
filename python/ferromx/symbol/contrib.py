"""``mx.sym.contrib``: the table's ``_contrib_*`` operators under their short names, and
``rand_zipfian``."""

from .symbol import _FNS

globals().update({k[len("_contrib_"):]: v for k, v in _FNS.items() if k.startswith("_contrib_")})


def rand_zipfian(true_classes, num_sampled, range_max):
    """Log-uniform candidate sampling (see :mod:`ferromx._zipfian`); three symbols."""
    import sys

    from .._zipfian import rand_zipfian as _rz

    return list(_rz(sys.modules[__package__], true_classes, num_sampled, range_max))
