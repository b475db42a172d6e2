"""Helpers of ``mx.io``: canonical forms of the data handed to the iterators."""

from collections import OrderedDict

import numpy as np

from .. import ndarray as nd
from ..ndarray import NDArray

__all__ = []


def _init_data(data, allow_empty, default_name):
    """Return ``[(name, NDArray), ...]`` sorted by name, as MXNet's ``_init_data``.

    ``data`` may be an array, a list of arrays (named ``_<i>_<default_name>`` when there are
    several) or a dict of name to array.  NumPy arrays and lists become float32 NDArrays
    (MXNet's ``nd.array`` default); NDArrays keep their dtype.
    """
    if data is None:
        if not allow_empty:
            raise ValueError(f"NDArrayIter: {default_name} must not be None")
        data = []
    if isinstance(data, (np.ndarray, NDArray)):
        data = [data]
    if isinstance(data, (list, tuple)):
        if not allow_empty and not data:
            raise ValueError(f"NDArrayIter: {default_name} must not be an empty list")
        if len(data) == 1:
            data = OrderedDict([(default_name, data[0])])
        else:
            data = OrderedDict((f"_{i}_{default_name}", d) for i, d in enumerate(data))
    if not isinstance(data, dict):
        raise TypeError(
            "Input must be NDArray, numpy.ndarray, a list of them or dict with them as values"
        )
    out = {}
    for k, v in data.items():
        if isinstance(v, NDArray):
            out[k] = v
            continue
        try:
            out[k] = nd.array(np.asarray(v), dtype="float32")
        except Exception as err:
            raise TypeError(
                f"Invalid type '{type(v)}' for {k}, should be NDArray or numpy.ndarray"
            ) from err
    return sorted(out.items())


def _getdata_by_idx(data, idx):
    """Reorder every array of ``[(name, NDArray)]`` along axis 0 by ``idx`` (one gather)."""
    if not data:
        return []
    index = nd.array(np.asarray(idx, dtype=np.int64), dtype="int64")
    return [(k, nd.take(v, index.as_in_context(v.context), axis=0)) for k, v in data]
