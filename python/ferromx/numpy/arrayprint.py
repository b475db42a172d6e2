"""``mx.np.arrayprint``: ``set_printoptions`` for ``ndarray`` printing."""

import numpy as _onp

__all__ = ["set_printoptions"]


def set_printoptions(precision=None, threshold=None, **kwarg):
    """Sets how arrays print (``precision`` digits, summarise above ``threshold`` elements),
    as MXNet's, which supports only these two options."""
    if kwarg:
        raise NotImplementedError(f"set_printoptions: only precision and threshold are "
                                  f"supported, got {sorted(kwarg)}")
    _onp.set_printoptions(precision=precision, threshold=threshold)
