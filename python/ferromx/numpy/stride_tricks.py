"""``mx.np.stride_tricks``: ``broadcast_arrays`` (as in MXNet's module of that name)."""

from ._shape import broadcast_arrays

__all__ = ["broadcast_arrays"]
