"""Evaluation metrics, following ``mxnet.metric`` (MXNet 1.9.1).

Unlike MXNet (which calls ``asnumpy()`` in every ``update``), the built-in metrics
accumulate their running sums *on the engine*: ``update`` pushes a few native ops
and returns at once; only :meth:`EvalMetric.get` reads (and so waits for) the sum.
Sums are kept in float64.  Instance counts are plain Python ints (known from shapes).
"""

import numpy as _np

from .. import ndarray as nd
from ..ndarray import NDArray

__all__ = [
    "MAE",
    "MSE",
    "RMSE",
    "Accuracy",
    "CompositeEvalMetric",
    "CrossEntropy",
    "CustomMetric",
    "EvalMetric",
    "Loss",
    "TopKAccuracy",
    "alias",
    "check_label_shapes",
    "create",
    "np",
    "register",
]

_METRIC_REGISTRY = {}


def register(klass):
    """Register a metric class under its lower-cased class name (a decorator)."""
    _METRIC_REGISTRY[klass.__name__.lower()] = klass
    return klass


def alias(*aliases):
    """Class decorator registering additional names for a metric."""

    def _reg(klass):
        for name in aliases:
            _METRIC_REGISTRY[name.lower()] = klass
        return klass

    return _reg


def create(metric, *args, **kwargs):
    """Create a metric from a name, a list of metrics/names, a callable or an instance."""
    if isinstance(metric, EvalMetric):
        return metric
    if callable(metric) and not isinstance(metric, type):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, type) and issubclass(metric, EvalMetric):
        return metric(*args, **kwargs)
    if isinstance(metric, (list, tuple)):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    if isinstance(metric, dict):  # a config dict, as get_config() gives
        conf = dict(metric)
        return create(conf.pop("metric"), *args, **dict(conf, **kwargs))
    if isinstance(metric, str) and metric.lstrip()[:1] in ("[", "{"):
        # A JSON config, as ``get_config()``/``dumps`` give: ``["name", {kwargs}]`` or
        # ``{"metric": "name", ...kwargs}`` (MXNet's registry accepts both).
        import json

        conf = json.loads(metric)
        if isinstance(conf, list):
            metric, conf = conf[0], dict(conf[1]) if len(conf) > 1 else {}
        else:
            metric = conf.pop("metric")
        return create(metric, *args, **dict(conf, **kwargs))
    if isinstance(metric, str):
        key = metric.lower()
        if key not in _METRIC_REGISTRY:
            raise ValueError(
                "Metric {!r} is not registered. Known metrics: {}".format(
                    metric, ", ".join(sorted(_METRIC_REGISTRY))
                )
            )
        return _METRIC_REGISTRY[key](*args, **kwargs)
    raise TypeError(f"cannot create a metric from {metric!r}")


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Check that ``labels`` and ``preds`` match in length (or shape when ``shape=True``).

    With ``wrap=True`` a single array is wrapped into a one-element list; returns
    ``(labels, preds)``.
    """
    if wrap:
        if isinstance(labels, (NDArray, _np.ndarray)):
            labels = [labels]
        if isinstance(preds, (NDArray, _np.ndarray)):
            preds = [preds]
    if not shape:
        label_shape, pred_shape = len(labels), len(preds)
    else:
        label_shape, pred_shape = tuple(labels.shape), tuple(preds.shape)
    if label_shape != pred_shape:
        raise ValueError(
            f"Shape of labels {label_shape} does not match shape of predictions {pred_shape}"
        )
    return labels, preds


def _as_nd(x):
    if isinstance(x, NDArray):
        return x
    return nd.array(_np.asarray(x))


def _as_f64(x):
    """Cast an engine scalar to float64 (a no-op for Python numbers)."""
    if isinstance(x, NDArray):
        return x if _np.dtype(x.dtype) == _np.float64 else x.astype("float64")
    return float(x)


def _read(x):
    """Read a running sum (blocks only when it is an NDArray)."""
    if isinstance(x, NDArray):
        return float(x.asnumpy().sum())
    return float(x)


class EvalMetric:
    """Base class of evaluation metrics.

    Subclasses implement ``update(labels, preds)`` and call :meth:`_accumulate` with an
    engine scalar (or number) and an instance count.  :meth:`get` returns
    ``(name, sum / num_inst)``, NaN before any update.
    """

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return f"EvalMetric: {dict(self.get_name_value())}"

    def get_config(self):
        """Return a dict describing the metric (enough to re-create it)."""
        config = self._kwargs.copy()
        config.update(
            {
                "metric": self.__class__.__name__,
                "name": self.name,
                "output_names": self.output_names,
                "label_names": self.label_names,
            }
        )
        return config

    # Running sums: NDArrays (or Python numbers) that only get() reads.
    @property
    def sum_metric(self):
        """The local running sum as a float (reading it waits for the engine)."""
        return _read(self._sum)

    @sum_metric.setter
    def sum_metric(self, value):
        self._sum = value

    @property
    def global_sum_metric(self):
        """The global running sum as a float (reading it waits for the engine)."""
        return _read(self._global_sum)

    @global_sum_metric.setter
    def global_sum_metric(self, value):
        self._global_sum = value

    def _accumulate(self, value, num):
        """Add ``value`` (engine scalar or number) covering ``num`` instances, without waiting."""
        value = _as_f64(value)
        self._sum = self._sum + value
        self._global_sum = self._global_sum + value
        self.num_inst += int(num)
        self.global_num_inst += int(num)

    def update_dict(self, label, pred):
        """Update from dicts of named labels and predictions."""
        if self.output_names is not None:
            pred = [pred[name] for name in self.output_names]
        else:
            pred = list(pred.values())
        if self.label_names is not None:
            label = [label[name] for name in self.label_names]
        else:
            label = list(label.values())
        self.update(label, pred)

    def update(self, labels, preds):
        """Update the metric with a batch of labels and predictions."""
        raise NotImplementedError()

    def reset(self):
        """Reset local and global statistics."""
        self.num_inst = 0
        self._sum = 0.0
        self.global_num_inst = 0
        self._global_sum = 0.0

    def reset_local(self):
        """Reset the local statistics only."""
        self.num_inst = 0
        self._sum = 0.0

    def get(self):
        """Return ``(name, value)``; this is where the engine is waited on."""
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, _read(self._sum) / self.num_inst)

    def get_global(self):
        """Return ``(name, value)`` over all updates since :meth:`reset`."""
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, _read(self._global_sum) / self.global_num_inst)

    def get_name_value(self):
        """Return a list of ``(name, value)`` pairs."""
        name, value = self.get()
        if not isinstance(name, list):
            name, value = [name], [value]
        return list(zip(name, value))

    def get_global_name_value(self):
        """Return a list of global ``(name, value)`` pairs."""
        name, value = self.get_global()
        if not isinstance(name, list):
            name, value = [name], [value]
        return list(zip(name, value))


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Manage several metrics as one; ``get`` returns lists of names and values."""

    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)
        self.metrics = [create(m) for m in (metrics or [])]

    def add(self, metric):
        """Add a child metric (anything :func:`create` accepts)."""
        self.metrics.append(create(metric))

    def get_metric(self, index):
        """Return the child metric at ``index``."""
        try:
            return self.metrics[index]
        except IndexError:
            raise ValueError(
                f"Metric index {index} is out of range 0 and {len(self.metrics)}"
            ) from None

    def update_dict(self, labels, preds):
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds):
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self):
        for metric in getattr(self, "metrics", []):
            metric.reset()

    def reset_local(self):
        for metric in self.metrics:
            metric.reset_local()

    def _collect(self, getter):
        names, values = [], []
        for metric in self.metrics:
            name, value = getter(metric)
            if isinstance(name, str):
                name, value = [name], [value]
            names.extend(name)
            values.extend(value)
        return (names, values)

    def get(self):
        return self._collect(lambda m: m.get())

    def get_global(self):
        return self._collect(lambda m: m.get_global())

    def get_config(self):
        config = super().get_config()
        config["metrics"] = [m.get_config() for m in self.metrics]
        return config


@register
@alias("acc")
class Accuracy(EvalMetric):
    """Classification accuracy.

    Predictions whose shape differs from the label's are reduced with ``argmax`` over
    ``axis``; both are then truncated to int32 and compared elementwise.
    """

    def __init__(self, axis=1, name="accuracy", output_names=None, label_names=None):
        super().__init__(
            name,
            axis=axis,
            output_names=output_names,
            label_names=label_names,
            has_global_stats=True,
        )
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _as_nd(label), _as_nd(pred)
            if tuple(pred.shape) != tuple(label.shape):
                pred = nd.argmax(pred, axis=self.axis)
            pred = pred.astype("int32").reshape((pred.size,))
            label = label.astype("int32").reshape((label.size,))
            check_label_shapes(label, pred, shape=True)
            self._accumulate((pred == label).sum(), pred.shape[0])


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """Top-k accuracy: a sample counts when fewer than ``top_k`` classes score above its label."""

    def __init__(self, top_k=1, name="top_k_accuracy", output_names=None, label_names=None):
        super().__init__(
            name,
            top_k=top_k,
            output_names=output_names,
            label_names=label_names,
            has_global_stats=True,
        )
        self.top_k = top_k
        if self.top_k <= 1:
            raise ValueError("Please use Accuracy if top_k is no more than 1")
        self.name += f"_{self.top_k}"

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _as_nd(label), _as_nd(pred)
            if pred.ndim > 2:
                raise ValueError("Predictions should be no more than 2 dims")
            label = label.reshape((label.size,))
            if pred.ndim == 1:
                correct = (pred.astype("int32") == label.astype("int32")).sum()
            else:
                if pred.shape[0] != label.shape[0]:
                    raise ValueError(
                        f"Shape of labels {label.shape} does not match shape of predictions "
                        f"{pred.shape}"
                    )
                top_k = min(pred.shape[1], self.top_k)
                label_score = nd.pick(pred, label.astype("int64"), axis=1, keepdims=True)
                n_above = (pred > label_score).sum(axis=1)
                correct = (n_above < top_k).sum()
            self._accumulate(correct, pred.shape[0])


@register
@alias("ce", "cross-entropy")
class CrossEntropy(EvalMetric):
    """Mean cross-entropy ``-log(p[label] + eps)`` of probability predictions."""

    def __init__(self, eps=1e-12, name="cross-entropy", output_names=None, label_names=None):
        super().__init__(
            name,
            eps=eps,
            output_names=output_names,
            label_names=label_names,
            has_global_stats=True,
        )
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _as_nd(label), _as_nd(pred)
            label = label.reshape((label.size,))
            if label.shape[0] != pred.shape[0]:
                raise ValueError(
                    f"Shape of labels {label.shape} does not match shape of predictions "
                    f"{pred.shape}"
                )
            prob = nd.pick(pred, label.astype("int64"), axis=-1)
            self._accumulate((-nd.log(prob + self.eps)).sum(), label.shape[0])


@register
@alias("loss")
class Loss(EvalMetric):
    """Mean of the loss values passed as predictions (labels are ignored)."""

    def __init__(self, name="loss", output_names=None, label_names=None):
        super().__init__(
            name, output_names=output_names, label_names=label_names, has_global_stats=True
        )

    def update(self, _, preds):
        if isinstance(preds, (NDArray, _np.ndarray)):
            preds = [preds]
        for pred in preds:
            pred = _as_nd(pred)
            self._accumulate(nd.sum(pred), pred.size)


class _RegressionMetric(EvalMetric):
    """Shared update of MSE/MAE/RMSE: one batch-mean per (label, pred) pair."""

    def __init__(self, name, output_names=None, label_names=None):
        super().__init__(
            name, output_names=output_names, label_names=label_names, has_global_stats=True
        )

    def _batch_value(self, diff):
        raise NotImplementedError()

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _as_nd(label), _as_nd(pred)
            if label.ndim == 1:
                label = label.reshape((label.shape[0], 1))
            if pred.ndim == 1:
                pred = pred.reshape((pred.shape[0], 1))
            self._accumulate(self._batch_value(label - pred), 1)


@register
@alias("mse")
class MSE(_RegressionMetric):
    """Mean squared error, averaged per batch (as MXNet 1.x does)."""

    def __init__(self, name="mse", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    def _batch_value(self, diff):
        return nd.mean(nd.square(diff))


@register
@alias("mae")
class MAE(_RegressionMetric):
    """Mean absolute error, averaged per batch (as MXNet 1.x does)."""

    def __init__(self, name="mae", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    def _batch_value(self, diff):
        return nd.mean(nd.abs(diff))


@register
@alias("rmse")
class RMSE(_RegressionMetric):
    """Root mean squared error, averaged per batch (as MXNet 1.x does)."""

    def __init__(self, name="rmse", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    def _batch_value(self, diff):
        return nd.sqrt(nd.mean(nd.square(diff)))


@register
@alias("custom")
class CustomMetric(EvalMetric):
    """A metric computed by ``feval(label, pred)`` on NumPy arrays.

    ``feval`` returns a value (counted as one instance) or ``(sum, num_inst)``.
    This metric reads its inputs, so its ``update`` waits for them.
    """

    def __init__(
        self, feval, name=None, allow_extra_outputs=False, output_names=None, label_names=None
    ):
        if name is None:
            name = getattr(feval, "__name__", "custom")
            if name.find("<") != -1:
                name = f"custom({name})"
        super().__init__(
            name,
            feval=feval,
            allow_extra_outputs=allow_extra_outputs,
            output_names=output_names,
            label_names=label_names,
            has_global_stats=True,
        )
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for pred, label in zip(preds, labels):
            label = label.asnumpy() if isinstance(label, NDArray) else _np.asarray(label)
            pred = pred.asnumpy() if isinstance(pred, NDArray) else _np.asarray(pred)
            reval = self._feval(label, pred)
            if isinstance(reval, tuple):
                sum_metric, num_inst = reval
                self._accumulate(sum_metric, num_inst)
            else:
                self._accumulate(reval, 1)

    def get_config(self):
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(numpy_feval, name=None, allow_extra_outputs=False):
    """Create a :class:`CustomMetric` from a function of NumPy ``(label, pred)``."""

    def feval(label, pred):
        return numpy_feval(label, pred)

    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)
