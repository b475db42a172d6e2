"""Evaluation metrics, following ``mxnet.metric`` (MXNet 1.9.1).

The base class, registry (:func:`create`, :func:`register`, :func:`alias`) and the
accuracy/regression/loss metrics live in :mod:`.base`; F1, MCC, PCC, Perplexity,
NegativeLogLikelihood, PearsonCorrelation, Torch and Caffe in :mod:`.stats`.
"""

from .. import ndarray, registry  # noqa: F401 - MXNet's metric module exposes both
from ..base import numeric_types, string_types  # noqa: F401 - as MXNet's metric module
from .base import (
    MAE,
    MSE,
    RMSE,
    Accuracy,
    CompositeEvalMetric,
    CrossEntropy,
    CustomMetric,
    EvalMetric,
    Loss,
    TopKAccuracy,
    alias,
    check_label_shapes,
    create,
    np,
    register,
)
from .stats import (
    F1,
    MCC,
    PCC,
    Caffe,
    NegativeLogLikelihood,
    PearsonCorrelation,
    Perplexity,
    Torch,
)

__all__ = [
    "F1",
    "MAE",
    "MCC",
    "MSE",
    "PCC",
    "RMSE",
    "Accuracy",
    "Caffe",
    "CompositeEvalMetric",
    "CrossEntropy",
    "CustomMetric",
    "EvalMetric",
    "Loss",
    "NegativeLogLikelihood",
    "PearsonCorrelation",
    "Perplexity",
    "TopKAccuracy",
    "Torch",
    "alias",
    "check_label_shapes",
    "create",
    "np",
    "register",
]
