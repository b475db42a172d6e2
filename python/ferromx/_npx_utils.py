"""``ferromx.npx.utils``: ``save`` and ``load`` (as MXNet's ``numpy_extension.utils``)."""

__all__ = ["load", "save"]


def save(file, arr):
    """Saves arrays (see ``npx.save``)."""
    from .numpy_extension import save as _save

    _save(file, arr)


def load(file):
    """Loads arrays (see ``npx.load``)."""
    from .numpy_extension import load as _load

    return _load(file)
