"""Data iterators (``mx.io``), following MXNet 1.9.1.

``ImageRecordIter`` (and its uint8/int8 forms) are provided by the image package: they are
looked up lazily in :mod:`ferromx.io.image_record_iter` on first use.
"""

import importlib

from . import io, utils
from .csv_iter import CSVIter
from .io import DataBatch, DataDesc, DataIter, NDArrayIter, PrefetchingIter, ResizeIter

__all__ = [
    "CSVIter",
    "DataBatch",
    "DataDesc",
    "DataIter",
    "NDArrayIter",
    "PrefetchingIter",
    "ResizeIter",
    "io",
    "utils",
]

_LAZY = ("ImageRecordIter", "ImageRecordUInt8Iter", "ImageRecordInt8Iter", "ImageDetRecordIter")


def __getattr__(name):
    if name in _LAZY:
        try:
            module = importlib.import_module(".image_record_iter", __name__)
        except ImportError as err:
            raise AttributeError(
                f"ferromx.io.{name} needs the image package (ferromx.io.image_record_iter), "
                f"which is not available: {err}"
            ) from err
        if hasattr(module, name):
            return getattr(module, name)
        raise AttributeError(f"ferromx.io.image_record_iter does not define {name}")
    raise AttributeError(f"module 'ferromx.io' has no attribute {name!r}")
