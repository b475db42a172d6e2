"""Helpers of the Estimator: metric checks and suggestions."""

from ....metric import Accuracy, CompositeEvalMetric, EvalMetric
from ...loss import SoftmaxCrossEntropyLoss


def _check_metrics(metrics):
    """A list of simple metrics from a metric, a composite metric, a list or ``None``."""
    if isinstance(metrics, CompositeEvalMetric):
        return [m for metric in metrics.metrics for m in _check_metrics(metric)]
    if isinstance(metrics, EvalMetric):
        return [metrics]
    metrics = list(metrics or [])
    if not all(isinstance(m, EvalMetric) for m in metrics):
        raise ValueError(f"metrics must be a Metric or a list of Metric, refer to "
                         f"mxnet.metric.EvalMetric: {metrics}")
    return metrics


def _check_handler_metric_ref(handler, known_metrics):
    """Raise if ``handler``'s ``metrics`` are not ones the estimator updates (as MXNet, which
    checks the attributes named like ``metric``, not ``monitor``)."""
    for attr in [a for a in dir(handler) if "metric" in a and not a.startswith("__")]:
        ref = getattr(handler, attr, None)
        if not ref:
            continue
        for metric in ref if isinstance(ref, list) else [ref]:
            if not any(metric is m for m in known_metrics):
                raise ValueError(
                    f"Event handler {type(handler).__name__} refers to a metric instance "
                    f"{metric} outside of the known training and validation metrics. Please "
                    "use the metrics from estimator.train_metrics and estimator.val_metrics "
                    "instead.")


def _suggest_metric_for_loss(loss):
    if isinstance(loss, SoftmaxCrossEntropyLoss):
        return Accuracy()
    return None
