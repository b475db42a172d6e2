"""``mx.np.function_base``: ``meshgrid`` (as in MXNet's module of that name)."""

from ._shape import meshgrid

__all__ = ["meshgrid"]
