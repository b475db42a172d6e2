"""Errors and small shared helpers (MXNet's ``mxnet.base``)."""

from . import _native

__all__ = ["MXNetError", "MXNetValueError", "MXNetTypeError", "MXNetIndexError", "numeric_types",
           "integer_types", "string_types"]


class MXNetError(RuntimeError):
    """Error raised by ferromx operators and by the engine (MXNet's ``MXNetError``)."""


class MXNetValueError(MXNetError, ValueError):
    """A bad value or shape; also a ``ValueError`` as NumPy would raise."""


class MXNetTypeError(MXNetError, TypeError):
    """A bad dtype; also a ``TypeError``."""


class MXNetIndexError(MXNetError, IndexError):
    """An index out of range; also an ``IndexError``."""


_native._set_error_types(MXNetError, MXNetValueError, MXNetTypeError, MXNetIndexError)

numeric_types = (float, int)
integer_types = (int,)
string_types = (str,)
