"""Build features of ferromx (MXNet's ``mxnet.runtime``).

MXNet lists the features its C++ library was compiled with. ferromx reports, under the same
names, what *it* has: the CPU backend with a multi-threaded engine worker pool (reported as
``OPENMP``), the profiler, int64 tensor sizes and a signal-free runtime. There is no CUDA,
cuDNN, NCCL, TensorRT, MKL-DNN, BLAS/LAPACK library, OpenCV, TVM or distributed kvstore.
The SIMD flags report only what every x86-64 build has (SSE, SSE2): ferromx is built for the
baseline target, and its kernels do not depend on newer instruction sets being compiled in.
"""

import collections
import platform

from .base import check_call  # noqa: F401 - MXNet's module exposes it

__all__ = ["Feature", "Features", "feature_list"]

_X86 = platform.machine().lower() in ("x86_64", "amd64")

# MXNet 1.9.1's feature names, in its order, with whether ferromx has each.
_FEATURES = (
    ("CUDA", False),
    ("CUDNN", False),
    ("NCCL", False),
    ("CUDA_RTC", False),
    ("TENSORRT", False),
    ("CPU_SSE", _X86),
    ("CPU_SSE2", _X86),
    ("CPU_SSE3", False),
    ("CPU_SSE4_1", False),
    ("CPU_SSE4_2", False),
    ("CPU_SSE4A", False),
    ("CPU_AVX", False),
    ("CPU_AVX2", False),
    ("OPENMP", True),
    ("SSE", False),
    ("F16C", False),
    ("JEMALLOC", False),
    ("BLAS_OPEN", False),
    ("BLAS_ATLAS", False),
    ("BLAS_MKL", False),
    ("BLAS_APPLE", False),
    ("LAPACK", False),
    ("MKLDNN", False),
    ("OPENCV", False),
    ("CAFFE", False),
    ("PROFILER", True),
    ("DIST_KVSTORE", False),
    ("CXX14", False),
    ("INT64_TENSOR_SIZE", True),
    ("SIGNAL_HANDLER", False),
    ("DEBUG", False),
    ("TVM_OP", False),
)


class Feature:
    """One build feature: ``name`` and whether it is ``enabled``."""

    def __init__(self, name, enabled):
        self.name = name
        self.enabled = bool(enabled)

    def __repr__(self):
        return ("✔ " if self.enabled else "✖ ") + self.name


def feature_list():
    """The list of :class:`Feature` objects, in MXNet's order."""
    return [Feature(name, enabled) for name, enabled in _FEATURES]


class Features(collections.OrderedDict):
    """An ordered ``{name: Feature}`` mapping of all features (one shared instance)."""

    instance = None

    def __new__(cls):
        if cls.instance is None:
            cls.instance = super().__new__(cls)
            super(Features, cls.instance).__init__(
                [(f.name, f) for f in feature_list()]
            )
        return cls.instance

    def __init__(self):  # pylint: disable=super-init-not-called
        # filled once in __new__; OrderedDict.__init__ would otherwise run again
        pass

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        """Whether ``feature_name`` (case-insensitive) is enabled.

        Raises ``RuntimeError`` for a name that is not a known feature.
        """
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError(
                f"Feature '{name}' is unknown, known features are: {list(self.keys())}"
            )
        return self[name].enabled
