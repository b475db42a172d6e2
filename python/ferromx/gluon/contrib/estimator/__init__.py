"""The Gluon Estimator (``gluon.contrib.estimator``), following MXNet 1.9.1."""

from .batch_processor import BatchProcessor
from .estimator import Estimator
from .event_handler import (
    BatchBegin,
    BatchEnd,
    CheckpointHandler,
    EarlyStoppingHandler,
    EpochBegin,
    EpochEnd,
    EventHandler,
    GradientUpdateHandler,
    LoggingHandler,
    MetricHandler,
    StoppingHandler,
    TrainBegin,
    TrainEnd,
    ValidationHandler,
)

__all__ = [
    "BatchBegin",
    "BatchEnd",
    "BatchProcessor",
    "CheckpointHandler",
    "EarlyStoppingHandler",
    "EpochBegin",
    "EpochEnd",
    "Estimator",
    "EventHandler",
    "GradientUpdateHandler",
    "LoggingHandler",
    "MetricHandler",
    "StoppingHandler",
    "TrainBegin",
    "TrainEnd",
    "ValidationHandler",
]
