"""``mx.np.utils``: the dtypes and constants ``mx.np`` re-exports from NumPy."""

import numpy as _onp

__all__ = [
           "NAN",
           "NINF",
           "NZERO",
           "PINF",
           "PZERO",
           "NaN",
           "bool",
           "bool_",
           "e",
           "finfo",
           "float16",
           "float32",
           "float64",
           "inf",
           "int8",
           "int32",
           "int64",
           "nan",
           "newaxis",
           "pi",
           "uint8",
]

float16, float32, float64 = _onp.float16, _onp.float32, _onp.float64
uint8, int32, int8, int64 = _onp.uint8, _onp.int32, _onp.int8, _onp.int64
bool = bool_ = _onp.bool_
pi, inf, nan, e, newaxis = _onp.pi, _onp.inf, _onp.nan, _onp.e, None
PZERO, NZERO = 0.0, -0.0
NINF, PINF = -_onp.inf, _onp.inf
NAN = NaN = _onp.nan
finfo = _onp.finfo
