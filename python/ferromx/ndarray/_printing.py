"""Printing ``NDArray``: ``repr``/``str`` formatted as NumPy 1.23 (MXNet 1.9.1's) does."""

import numpy as np

from .ndarray import _to_numpy

_NUMPY2 = int(np.__version__.split(".")[0]) >= 2


def _f32_exp_formatter(a, opts):
    """NumPy 1.23 (MXNet 1.9.1's) float formatter where NumPy 2 would choose differently.

    NumPy 1.23 tests the smallest nonzero magnitude against ``0.0001`` in float64;
    NumPy 2 compares in the array's dtype, so float32 ``1e-4`` (slightly below
    ``0.0001``) prints ``0.0001`` instead of ``1.e-04``. That value is the only case
    left once ``legacy='1.25'`` restores the ``1e8`` cutoff: returns a formatter
    forcing scientific notation for it, else None.
    """
    if a.dtype != np.float32 or a.size == 0 or opts["suppress"] or opts["formatter"]:
        return None
    from numpy._core import arrayprint as _ap

    data = _ap._leading_trailing(a, opts["edgeitems"]) if a.size > opts["threshold"] else a
    finite = data[np.isfinite(data)]
    mags = np.abs(finite[finite != 0])
    if mags.size == 0 or mags.min() != np.float32(0.0001):
        return None

    class _Exp(_ap.FloatingFormat):
        def fillFormat(self, data):
            self.exp_format = True
            super().fillFormat(data)

    return _Exp(data, opts["precision"], opts["floatmode"], False, opts["sign"], legacy=125)


def _np_str(a):
    """``str(a)`` as NumPy 1.23, which MXNet 1.9.1 prints with, formats it (NumPy 2 picks
    scientific notation differently: ``1e6`` in float32 prints ``1.e+06``, not ``1000000.``).
    Other print options (precision, threshold, a legacy mode set by the user) apply."""
    opts = np.get_printoptions()
    if opts["legacy"] is not False or not _NUMPY2:  # NumPy 1.x prints like 1.23
        return str(a)
    with np.printoptions(legacy="1.25"):
        fmt = _f32_exp_formatter(a, opts) if a.ndim else None
        if fmt is None:
            return str(a)
        return np.array2string(a, separator=" ", formatter={"float_kind": fmt})


def _fmt(self):
    a = _to_numpy(self, "print")
    shape = "x".join(str(d) for d in self.shape)  # empty for 0-d arrays, as in MXNet
    return f"\n{_np_str(a)}\n<NDArray {shape} @{self.context}>"
