"""``nd.contrib``: the table's ``_contrib_*`` operators (``div_sqrt_dim``, ``arange_like``,
``box_nms``, ``index_copy``, the interleaved attention products ...) and the hand-written
ones: MXNet's imperative control flow (``foreach``, ``while_loop``, ``cond``), the
data-dependent ``boolean_mask``, the single-process forms of ``SyncBatchNorm`` and
``BatchNormWithReLU``, and MXNet's GPU-only ``fft``/``ifft``/``count_sketch``, which raise
MXNet's error."""

import math  # noqa: F401 - MXNet's nd.contrib re-exports it

import numpy as np

from .. import base as _base
from ..context import current_context  # noqa: F401 - MXNet's nd.contrib re-exports it
from . import ndarray  # noqa: F401 - MXNet's nd.contrib re-exports the module
from ._op import CONTRIB_FNS as _CONTRIB
from ._updates import group_adagrad_update, mp_adamw_update
from .ndarray import NDArray, array, invoke
from .random import uniform  # noqa: F401 - MXNet's nd.contrib re-exports it

globals().update(_CONTRIB)
__all__ = [  # noqa: PLE0604 - generated names
    "AdaptiveAvgPooling2D", "BatchNormWithReLU", "BilinearResize2D", "SyncBatchNorm",
    "adagrad_update", "adamw_update", "boolean_mask", "group_adagrad_update", "mp_adamw_update",
    "multi_adamw_update", "multi_lamb_update", "multi_mp_adamw_update", "multi_mp_lamb_update", "cond", "count_sketch", "fft", "foreach", "ifft",
    "isfinite", "isinf", "isnan", "rand_zipfian", "while_loop",
    *sorted(_CONTRIB),
]

_INF = float("inf")


def _is_float(data):
    return data._dtype_name in ("float16", "float32", "float64", "bfloat16")


def isinf(data):
    """1 where ``data`` is +-inf, else 0, in ``data``'s dtype (MXNet's ``contrib.isinf``)."""
    if not _is_float(data):
        return invoke("zeros_like", [data])
    return invoke("abs", [data]) == _INF


def isnan(data):
    """1 where ``data`` is NaN, else 0, in ``data``'s dtype (MXNet's ``contrib.isnan``)."""
    if not _is_float(data):
        return invoke("zeros_like", [data])
    return data != data  # noqa: PLR0124 - NaN is the only value unequal to itself


def isfinite(data):
    """1 where ``data`` is neither inf nor NaN, else 0 (MXNet's ``contrib.isfinite``)."""
    if not _is_float(data):
        return invoke("ones_like", [data])
    not_nan = data == data  # noqa: PLR0124 - NaN is the only value unequal to itself
    return not_nan * (invoke("abs", [data]) != _INF)


def adagrad_update(weight, grad, history, out=None, **kwargs):
    """AdaGrad update in place (MXNet's ``_contrib_adagrad_update``)."""
    invoke("adagrad_update", [weight, grad, history], **kwargs)
    return weight


def AdaptiveAvgPooling2D(data, output_size=(), out=None, name=None):
    """Adaptive average pooling of 4-d data to ``output_size`` (one size or (height, width);
    default 1) (MXNet's ``_contrib_AdaptiveAvgPooling2D``)."""
    res = invoke("_contrib_AdaptiveAvgPooling2D", [data], output_size=output_size)
    return _finish(res, out)


def BilinearResize2D(data, like=None, height=1, width=1, scale_height=None,
                     scale_width=None, mode="size", align_corners=True, out=None, name=None):
    """Bilinear resize of 4-d (N, C, H, W) data to (height, width), a scale of the input,
    or the size of ``like`` (``mode='like'``) (MXNet's ``_contrib_BilinearResize2D``)."""
    res = invoke("_contrib_BilinearResize2D", [data, like], height=height, width=width,
                 scale_height=scale_height, scale_width=scale_width, mode=mode,
                 align_corners=align_corners)
    return _finish(res, out)


def _finish(res, out):
    if out is None:
        return res
    out[:] = res
    return out


def rand_zipfian(true_classes, num_sampled, range_max, ctx=None):
    """Log-uniform candidate sampling: ``(sampled_classes, expected_count_true,
    expected_count_sampled)`` (see :mod:`ferromx._zipfian`)."""
    from .. import ndarray as _nd
    from .._zipfian import rand_zipfian as _rz

    if ctx is None:
        ctx = true_classes.context
    return _rz(_nd, true_classes, num_sampled, range_max, ctx=ctx)


def _mx():
    import ferromx

    return ferromx


def __getattr__(name):
    # ``nd.contrib.mx`` is the package (MXNet's module imports it as ``mx``); resolved on
    # first use because the package is still being imported when this module loads.
    if name == "mx":
        return _mx()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def boolean_mask(data, index, axis=0, out=None, name=None):
    """The slices of ``data`` along axis 0 where the 1-d ``index`` is nonzero (MXNet's
    ``_contrib_boolean_mask``). The result's length depends on the values, so the mask is
    read (a sync, as in MXNet); the selection is a recorded ``take`` on the engine, so the
    gradient flows back to the selected rows."""
    if axis != 0:
        raise _base.MXNetError(f"boolean_mask: axis {axis} is not supported (only 0, as in MXNet 1.9.1)")
    if index.ndim != 1 or index.shape[0] != data.shape[0]:
        raise _base.MXNetError(
            f"boolean_mask: index must be 1-d with data's first dimension {data.shape[0]}, "
            f"got data {data.shape} and index {index.shape}")
    keep = np.nonzero(index.asnumpy())[0].astype(np.int64)
    pos = array(keep, ctx=data.context, dtype="int64")
    return _finish(invoke("take", [data, pos], axis=0), out)


def _flatten(args, what):
    if isinstance(args, NDArray):
        return [args], 0
    if not isinstance(args, (list, tuple)):
        raise TypeError(f"{what} must be an NDArray or a nested list of NDArrays, got {type(args)}")
    flat, fmts = [], []
    for a in args:
        f, fmt = _flatten(a, what)
        flat.extend(f)
        fmts.append(fmt)
    return flat, fmts


def _regroup(flat, fmt):
    if isinstance(fmt, int):
        return flat[0], flat[1:]
    out = []
    for f in fmt:
        item, flat = _regroup(flat, f)
        out.append(item)
    return out, flat


def foreach(body, data, init_states):
    """Runs ``body(data[i], states) -> (outputs, states)`` over axis 0 of ``data`` (an array or
    a nested list of arrays); returns the outputs stacked over the steps and the last states
    (MXNet's imperative ``contrib.foreach``)."""
    flat_data, _ = _flatten(data, "foreach data")
    _flatten(init_states, "foreach init_states")
    single = isinstance(data, NDArray)
    steps = data.shape[0] if single else flat_data[0].shape[0]
    states, per_step, fmt = init_states, [], None
    for i in range(steps):
        outs, states = body(data[i] if single else [d[i] for d in data], states)
        flat, fmt = _flatten(outs, "foreach output")
        per_step.append(flat)
    stacked = [invoke("stack", list(items), axis=0) for items in zip(*per_step)]
    if fmt is None:
        return [], states
    return _regroup(stacked, fmt)[0], states


def _scalar(v, kind, what):
    if hasattr(v, "asscalar"):
        v = v.asscalar()
    try:
        return kind(v)
    except (TypeError, ValueError) as e:
        raise ValueError(f"Cannot convert {what} to python {kind.__name__}") from e


def while_loop(cond, func, loop_vars, max_iterations=None):
    """Runs ``func(*loop_vars) -> (step_output, new_loop_vars)`` while ``cond(*loop_vars)`` is
    true, at most ``max_iterations`` times (MXNet's imperative ``contrib.while_loop``). Step
    outputs are stacked along a new axis 0 padded to ``max_iterations`` rows (zeros here;
    MXNet leaves the padding uninitialised)."""
    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    max_iterations = _scalar(max_iterations, int, "max_iteration")
    single = isinstance(loop_vars, NDArray)
    loop_vars = [loop_vars] if single else list(loop_vars)
    if not loop_vars:
        raise ValueError("loop_vars should contain at least one element")
    steps, outputs, fmt = 0, [], None
    while steps < max_iterations and _scalar(cond(*loop_vars), bool, "Return value of cond"):
        step_out, new_vars = func(*loop_vars)
        step_out = [] if step_out is None else step_out
        new_vars = [] if new_vars is None else new_vars
        new_vars = [new_vars] if isinstance(new_vars, NDArray) else list(new_vars)
        if len(new_vars) != len(loop_vars):
            raise ValueError("The length of loop_vars should be consistent during the loop")
        loop_vars = new_vars
        flat, fmt = _flatten(list(step_out) if isinstance(step_out, tuple) else step_out, "while output")
        if outputs and len(flat) != len(outputs[0]):
            raise ValueError("Number of elements in step_output should be the same in each step")
        outputs.append(flat)
        steps += 1
    stacked = []
    for k, items in enumerate(zip(*outputs), 1):
        rows = [invoke("expand_dims", [x], axis=0) for x in items]
        if steps != max_iterations:
            pad = (max_iterations - steps, *items[0].shape)
            rows.append(invoke("_full", [], shape=pad, value=0.0, dtype=items[0]._dtype_name,
                               ctx=items[0].context))
        shapes = {tuple(r.shape[1:]) for r in rows}
        if len(shapes) > 1:
            raise ValueError(f"Shapes of {k}-th elements in step_outputs are inconsistent: "
                             + ", ".join(str(tuple(x.shape)) for x in items))
        stacked.append(invoke("concat", rows, dim=0))
    if fmt is not None:
        stacked = _regroup(stacked, fmt)[0]
    return stacked, (loop_vars[0] if single else loop_vars)


def cond(pred, then_func, else_func):
    """``then_func()`` if ``pred`` (an array of one element, or a number) is true, else
    ``else_func()`` (MXNet's imperative ``contrib.cond``)."""
    return then_func() if _scalar(pred, bool, "pred") else else_func()


def SyncBatchNorm(data, gamma, beta, moving_mean, moving_var, eps=1e-3, momentum=0.9,
                  fix_gamma=True, use_global_stats=False, output_mean_var=False, ndev=1,
                  key=None, out=None, name=None):
    """Batch normalization synchronised across ``ndev`` devices; in one process it is
    ``BatchNorm`` over the local batch (MXNet's ``contrib.SyncBatchNorm`` with one device)."""
    if ndev != 1:
        raise _base.MXNetError(f"SyncBatchNorm: ndev={ndev}, but ferromx has one device per process; "
                               "synchronise statistics with kvstore/horovod-style allreduce instead")
    res = invoke("BatchNorm", [data, gamma, beta, moving_mean, moving_var], eps=eps, momentum=momentum,
                 fix_gamma=fix_gamma, use_global_stats=use_global_stats,
                 output_mean_var=output_mean_var)
    return _finish(res, out)


def BatchNormWithReLU(data, gamma, beta, moving_mean, moving_var, eps=1e-3, momentum=0.9,
                      fix_gamma=True, use_global_stats=False, output_mean_var=False, axis=1,
                      cudnn_off=False, min_calib_range=None, max_calib_range=None, out=None,
                      name=None):
    """``relu(BatchNorm(...))`` (MXNet's oneDNN-fused ``contrib.BatchNormWithReLU``); with
    ``output_mean_var`` also the batch mean and variance."""
    res = invoke("BatchNorm", [data, gamma, beta, moving_mean, moving_var], eps=eps, momentum=momentum,
                 fix_gamma=fix_gamma, use_global_stats=use_global_stats,
                 output_mean_var=output_mean_var, axis=axis)
    if output_mean_var:
        return [invoke("relu", [res[0]]), *res[1:]]
    return _finish(invoke("relu", [res]), out)


def _gpu_only(what):
    raise _base.MXNetError(f"{what} is only available for GPU.")


def fft(data, compute_size=128, out=None, name=None):
    """MXNet's ``contrib.fft`` has only a GPU kernel; like MXNet on CPU, this raises."""
    _gpu_only("fft")


def ifft(data, compute_size=128, out=None, name=None):
    """MXNet's ``contrib.ifft`` has only a GPU kernel; like MXNet on CPU, this raises."""
    _gpu_only("ifft")


def count_sketch(data, h, s, out_dim, processing_batch_size=32, out=None, name=None):
    """MXNet's ``contrib.count_sketch`` has only a GPU kernel; like MXNet on CPU, this raises."""
    _gpu_only("CountSketch")


def adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, wd=0, clip_gradient=-1, out=None, name=None, **kwargs):
    """AdamW in place of ``out`` (MXNet's ``contrib.adamw_update``; see
    :func:`ferromx.ndarray._updates.adamw_update`)."""
    from . import _updates

    return _updates.adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, beta1, beta2,
                                 epsilon, wd, clip_gradient, out=out)


def multi_adamw_update(weights, grads, mean, var, rescale_grad, lrs, wds, etas, out=None,
                       name=None, size=0, **kwargs):
    """AdamW over lists of tensors (MXNet's ``contrib.multi_adamw_update``)."""
    from . import _updates

    data = [a for t in zip(weights, grads, mean, var) for a in t]
    return _updates.multi_adamw_update(*data, rescale_grad=rescale_grad, lrs=lrs, wds=wds,
                                       etas=etas, num_weights=size or len(weights), out=out,
                                       **kwargs)


def multi_mp_adamw_update(weights, grads, mean, var, weights32, rescale_grad, lrs, wds, etas,
                          out=None, name=None, size=0, **kwargs):
    """Mixed-precision AdamW over lists of tensors (``contrib.multi_mp_adamw_update``)."""
    from . import _updates

    data = [a for t in zip(weights, grads, mean, var, weights32) for a in t]
    return _updates.multi_mp_adamw_update(*data, rescale_grad=rescale_grad, lrs=lrs, wds=wds,
                                          etas=etas, num_weights=size or len(weights), out=out,
                                          **kwargs)


def multi_lamb_update(weights, grads, mean, var, step_count, lrs, wds, out=None,
                      num_tensors=0, **kwargs):
    """LAMB over lists of tensors (MXNet's ``contrib.multi_lamb_update``)."""
    from . import _updates

    data = [a for t in zip(weights, grads, mean, var) for a in t]
    return _updates.multi_lamb_update(*data, learning_rates=lrs, wds=wds, step_count=step_count,
                                      num_tensors=num_tensors or len(weights), out=out, **kwargs)


def multi_mp_lamb_update(weights, grads, mean, var, weights32, step_count, lrs, wds, out=None,
                         num_tensors=0, **kwargs):
    """Mixed-precision LAMB over lists of tensors (``contrib.multi_mp_lamb_update``)."""
    from . import _updates

    data = [a for t in zip(weights, grads, mean, var, weights32) for a in t]
    return _updates.multi_mp_lamb_update(*data, learning_rates=lrs, wds=wds,
                                         step_count=step_count,
                                         num_tensors=num_tensors or len(weights), out=out,
                                         **kwargs)
