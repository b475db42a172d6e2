"""``mx.mod.Module``: training and inference over a bound symbol (MXNet's Module API, one
context).

The module binds its symbol with :meth:`Symbol.simple_bind` (data and label shapes from the
iterator's ``provide_data``/``provide_label``), keeps parameters in the executor's arrays,
and updates them with an :mod:`~ferromx.optimizer` updater. Backward without ``out_grads``
differentiates the outputs with head gradients of ones: the symbol ends in MXNet's output
heads (``SoftmaxOutput``, ``*RegressionOutput``, whose backward ignores the head gradient and
gives the loss gradient, labels from ``label_names``) or in losses (``make_loss``).
"""

import logging
import time

import numpy as np

from .. import initializer as _init
from .. import metric as _metric
from .. import ndarray as nd
from .. import optimizer as _opt
from ..base import MXNetError
from ..context import cpu

__all__ = ["BaseModule", "Module"]


def _shape_list(shapes):
    if shapes is None:
        return []
    return [(d.name, tuple(d.shape)) if hasattr(d, "name") else (d[0], tuple(d[1]))
            for d in shapes]


class BaseModule:
    """The training loop shared by modules: :meth:`fit`, :meth:`score`, :meth:`predict`."""

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.params_initialized = False
        self.optimizer_initialized = False

    def forward_backward(self, data_batch):
        """Forward (training) then backward."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None,
              score_end_callback=None, reset=True, epoch=0, sparse_row_id_fn=None):
        """Evaluate ``eval_metric`` over ``eval_data``; returns ``[(name, value)]``."""
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, _metric.EvalMetric):
            eval_metric = _metric.create(eval_metric)
        eval_metric.reset()
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.forward(batch, is_train=False)
            self.update_metric(eval_metric, batch.label)
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yield ``(outputs, batch index, batch)`` with padding removed."""
        if reset:
            eval_data.reset()
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.forward(batch, is_train=False)
            pad = batch.pad or 0
            outs = [o[:o.shape[0] - pad] for o in self.get_outputs()]
            yield outs, nbatch, batch

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True,
                always_output_list=False, sparse_row_id_fn=None):
        """The outputs over ``eval_data`` (concatenated along the batch axis)."""
        if isinstance(eval_data, (nd.NDArray, np.ndarray)):
            from ..io import NDArrayIter

            eval_data = NDArrayIter(eval_data, batch_size=self.data_shapes[0][1][0])
        per_batch = [[o.copy() for o in outs] for outs, _, _ in
                     self.iter_predict(eval_data, num_batch, reset)]
        if not per_batch:
            return []
        if not merge_batches:
            return per_batch
        merged = [nd.concat(*[b[i] for b in per_batch], dim=0)
                  for i in range(len(per_batch[0]))]
        if len(merged) == 1 and not always_output_list:
            return merged[0]
        return merged

    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd",
            optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=None, arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False,
            begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None,
            sparse_row_id_fn=None):
        """Bind, initialize, and train for ``num_epoch`` epochs over ``train_data``."""
        if num_epoch is None:
            raise ValueError("please specify number of epochs")
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        self.init_params(initializer=initializer or _init.Uniform(0.01), arg_params=arg_params,
                         aux_params=aux_params, allow_missing=allow_missing,
                         force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        validation_metric = validation_metric or eval_metric
        if not isinstance(eval_metric, _metric.EvalMetric):
            eval_metric = _metric.create(eval_metric)
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            train_data.reset()
            for nbatch, batch in enumerate(train_data):
                self.forward_backward(batch)
                self.update()
                self.update_metric(eval_metric, batch.label)
                for cb in _as_list(batch_end_callback):
                    cb(_BatchEndParam(epoch, nbatch, eval_metric, locals()))
            for name, val in eval_metric.get_name_value():
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            arg, aux = self.get_params()
            for cb in _as_list(epoch_end_callback):
                cb(epoch, self.symbol, arg, aux)
            if eval_data is not None:
                res = self.score(eval_data, validation_metric, epoch=epoch)
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)


class _BatchEndParam:
    def __init__(self, epoch, nbatch, eval_metric, locals_):
        self.epoch = epoch
        self.nbatch = nbatch
        self.eval_metric = eval_metric
        self.locals = locals_


def _as_list(x):
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]


class Module(BaseModule):
    """A module over ``symbol`` with inputs ``data_names`` and ``label_names``; every other
    argument is a parameter (``fixed_param_names`` are not updated)."""

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",),
                 logger=logging, context=None, work_load_list=None, fixed_param_names=None,
                 state_names=None, group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        if isinstance(context, (list, tuple)):
            if len(context) != 1:
                raise MXNetError("Module: ferromx binds one context (multi-device training "
                                 "is not supported)")
            context = context[0]
        self._context = context if context is not None else cpu()
        self._symbol = symbol
        args = symbol.list_arguments()
        self._data_names = list(data_names or [])
        self._label_names = [n for n in (label_names or []) if n in args]
        for n in self._data_names:
            if n not in args:
                raise ValueError(f"Module: data name {n!r} is not an argument of the symbol "
                                 f"({args})")
        self._fixed = set(fixed_param_names or [])
        self._param_names = [n for n in args
                             if n not in self._data_names and n not in self._label_names]
        self._aux_names = symbol.list_auxiliary_states()
        self._output_names = symbol.list_outputs()
        self._exec = None
        self._updater = None
        self._optimizer = None
        self._data_shapes = self._label_shapes = None
        self._arg_params = self._aux_params = None

    @property
    def symbol(self):
        """The module's symbol."""
        return self._symbol

    @property
    def data_names(self):
        """Names of the data inputs."""
        return self._data_names

    @property
    def label_names(self):
        """Names of the label inputs."""
        return self._label_names

    @property
    def output_names(self):
        """Names of the outputs."""
        return self._output_names

    @property
    def data_shapes(self):
        """``[(name, shape)]`` of the bound data."""
        return self._data_shapes

    @property
    def label_shapes(self):
        """``[(name, shape)]`` of the bound labels."""
        return self._label_shapes

    @property
    def output_shapes(self):
        """``[(name, shape)]`` of the outputs."""
        shapes = dict(self._data_shapes + (self._label_shapes or []))
        _, out, _ = self._symbol.infer_shape(**shapes)
        return list(zip(self._output_names, out))

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Allocate the executor for these input shapes."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        self._data_shapes = _shape_list(data_shapes)
        self._label_shapes = [s for s in _shape_list(label_shapes) if s[0] in self._label_names]
        self.for_training = for_training
        reqs = {}
        for name in self._symbol.list_arguments():
            if name in self._data_names:
                reqs[name] = "write" if inputs_need_grad else "null"
            elif name in self._label_names or name in self._fixed or not for_training:
                reqs[name] = "null"
            else:
                reqs[name] = grad_req
        shapes = dict(self._data_shapes + self._label_shapes)
        self._exec = self._symbol.simple_bind(self._context, grad_req=reqs, **shapes)
        self.binded = True
        if self.params_initialized:
            self._exec.copy_params_from(self._arg_params, self._aux_params)

    def init_params(self, initializer=None, arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initialize the parameters (from ``arg_params``/``aux_params`` where given)."""
        if self.params_initialized and not force_init:
            return
        if not self.binded:
            raise MXNetError("call bind before initializing the parameters")
        init = _init.create(initializer) if initializer is not None else _init.Uniform(0.01)
        attrs = self._symbol.attr_dict()
        for names, given, arrays in ((self._param_names, arg_params, self._exec.arg_dict),
                                     (self._aux_names, aux_params, self._exec.aux_dict)):
            for name in names:
                arr = arrays[name]
                if given and name in given:
                    arr[:] = given[name]
                elif given is not None and not allow_missing and initializer is None:
                    raise RuntimeError(f"{name} is not presented")
                else:
                    init(_init.InitDesc(name, attrs.get(name, {})), arr)
        self._arg_params = {n: self._exec.arg_dict[n] for n in self._param_names}
        self._aux_params = dict(self._exec.aux_dict)
        self.params_initialized = True

    def get_params(self):
        """``(arg_params, aux_params)``: copies of the parameters."""
        return ({n: a.copy() for n, a in self._arg_params.items()},
                {n: a.copy() for n, a in self._aux_params.items()})

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Assign parameter values."""
        self.init_params(initializer=None if not allow_missing else _init.Uniform(0.01),
                         arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        """Create the optimizer (``rescale_grad`` defaults to 1/batch size) and updater."""
        if self.optimizer_initialized and not force_init:
            return
        params = dict(optimizer_params)
        if isinstance(optimizer, str):
            batch = self._data_shapes[0][1][0]
            params.setdefault("rescale_grad", 1.0 / batch)
            optimizer = _opt.create(optimizer, sym=self._symbol,
                                    param_idx2name=dict(enumerate(self._param_names)), **params)
        self._optimizer = optimizer
        self._updater = _opt.get_updater(optimizer)
        self.optimizer_initialized = True

    def _feed(self, data_batch):
        args = self._exec.arg_dict
        for name, value in zip(self._data_names, data_batch.data):
            args[name][:] = value
        if data_batch.label is not None:
            for name, value in zip(self._label_names, data_batch.label):
                args[name][:] = value

    def forward(self, data_batch, is_train=None):
        """Run the symbol on a batch (``is_train`` defaults to ``for_training``)."""
        if is_train is None:
            is_train = self.for_training
        shapes = [tuple(d.shape) for d in data_batch.data]
        if shapes != [s for _, s in self._data_shapes]:
            labels = [(n, tuple(lab.shape)) for n, lab in
                      zip(self._label_names, data_batch.label or [])]
            self.bind(list(zip(self._data_names, shapes)), labels or self._label_shapes,
                      self.for_training, force_rebind=True)
        self._feed(data_batch)
        self._exec.forward(is_train=is_train)

    def backward(self, out_grads=None):
        """Gradients of the outputs (head gradients ``out_grads``, default ones)."""
        self._exec.backward(out_grads)

    def update(self):
        """Apply the optimizer to every trainable parameter."""
        if not self.optimizer_initialized:
            raise MXNetError("call init_optimizer before update")
        grads = self._exec.grad_dict
        for i, name in enumerate(self._param_names):
            if name in grads:
                self._updater(i, grads[name], self._exec.arg_dict[name])

    def get_outputs(self, merge_multi_context=True):
        """The outputs of the last forward."""
        return list(self._exec.outputs)

    def get_input_grads(self, merge_multi_context=True):
        """Gradients of the data inputs (needs ``inputs_need_grad``)."""
        return [self._exec.grad_dict[n] for n in self._data_names]

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Update ``eval_metric`` with the last outputs."""
        eval_metric.update(labels, self.get_outputs())

    def save_params(self, fname):
        """Write the parameters (``arg:``/``aux:`` keys, MXNet's format)."""
        arg, aux = self.get_params()
        data = {f"arg:{k}": v for k, v in arg.items()}
        data.update({f"aux:{k}": v for k, v in aux.items()})
        nd.save(fname, data)

    def load_params(self, fname):
        """Read parameters written by :meth:`save_params` (or MXNet)."""
        loaded = nd.load(fname)
        arg = {k[4:]: v for k, v in loaded.items() if k.startswith("arg:")}
        aux = {k[4:]: v for k, v in loaded.items() if k.startswith("aux:")}
        self.set_params(arg, aux)

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False,
                        remove_amp_cast=True):
        """``prefix-symbol.json`` and ``prefix-NNNN.params``."""
        self._symbol.save(f"{prefix}-symbol.json")
        self.save_params(f"{prefix}-{epoch:04d}.params")

    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A module from a checkpoint (parameters applied at ``bind``/``init_params``)."""
        from .. import model

        sym, arg, aux = model.load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params, mod._aux_params = arg, aux
        mod.params_initialized = True
        return mod
