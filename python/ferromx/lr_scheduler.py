"""Learning-rate schedules, following ``mxnet.lr_scheduler`` (MXNet 1.9.1).

A scheduler is called with the number of updates done so far and returns the learning
rate to use.  All schedulers support a warm-up phase of ``warmup_steps`` updates that
ramps linearly from ``warmup_begin_lr`` to ``base_lr`` (``warmup_mode='linear'``) or stays
at ``warmup_begin_lr`` (``warmup_mode='constant'``).
"""

import logging
from math import cos, pi

_LOG = logging.getLogger(__name__)

__all__ = [
    "CosineScheduler",
    "FactorScheduler",
    "LRScheduler",
    "MultiFactorScheduler",
    "PolyScheduler",
]


class LRScheduler:
    """Base class of learning-rate schedulers.

    Parameters
    ----------
    base_lr : float
        The learning rate after warm-up.
    warmup_steps : int
        Number of warm-up updates.
    warmup_begin_lr : float
        Learning rate at the start of warm-up.
    warmup_mode : str
        ``'linear'`` or ``'constant'``.
    """

    def __init__(self, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode="linear"):
        self.base_lr = base_lr
        if not isinstance(warmup_steps, int):
            raise TypeError(f"warmup_steps must be an int, got {warmup_steps!r}")
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        if self.warmup_begin_lr > self.warmup_final_lr:
            raise ValueError("Base lr has to be higher than warmup_begin_lr")
        if self.warmup_steps < 0:
            raise ValueError("Warmup steps has to be positive or 0")
        if warmup_mode not in ("linear", "constant"):
            raise ValueError("Supports only linear and constant modes of warmup")
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update):
        """Return the warm-up learning rate for ``num_update`` (< ``warmup_steps``)."""
        if num_update >= self.warmup_steps:
            raise ValueError(f"num_update {num_update} is past the warm-up phase")
        if self.warmup_mode == "linear":
            span = self.warmup_final_lr - self.warmup_begin_lr
            return self.warmup_begin_lr + span * float(num_update) / float(self.warmup_steps)
        return self.warmup_begin_lr

    def __call__(self, num_update):
        """Return the learning rate after ``num_update`` updates."""
        raise NotImplementedError("must override this")


class FactorScheduler(LRScheduler):
    """Multiply the learning rate by ``factor`` every ``step`` updates.

    The rate never goes below ``stop_factor_lr``.
    """

    def __init__(
        self,
        step,
        factor=1,
        stop_factor_lr=1e-8,
        base_lr=0.01,
        warmup_steps=0,
        warmup_begin_lr=0,
        warmup_mode="linear",
    ):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise ValueError("Factor must be no more than 1 to make lr reduce")
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        # A loop, not an if: resuming training may jump several steps at once.
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                _LOG.info(
                    "Update[%d]: now learning rate arrived at %0.5e, will not change in the future",
                    num_update,
                    self.base_lr,
                )
            else:
                _LOG.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply the learning rate by ``factor`` after each update count listed in ``step``."""

    def __init__(
        self, step, factor=1, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode="linear"
    ):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, list) or len(step) < 1:
            raise ValueError("step must be a non-empty list of update counts")
        for i, value in enumerate(step):
            if i != 0 and value <= step[i - 1]:
                raise ValueError("Schedule step must be an increasing integer list")
            if value < 1:
                raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise ValueError("Factor must be no more than 1 to make lr reduce")
        self.step = step
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind <= len(self.step) - 1:
            if num_update > self.step[self.cur_step_ind]:
                self.count = self.step[self.cur_step_ind]
                self.cur_step_ind += 1
                self.base_lr *= self.factor
                _LOG.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
            else:
                return self.base_lr
        return self.base_lr


class PolyScheduler(LRScheduler):
    """Polynomial decay from ``base_lr`` to ``final_lr`` over ``max_update`` updates.

    ``lr = final_lr + (base_lr - final_lr) * (1 - t / T) ** pwr`` with ``t`` counted after
    warm-up and ``T = max_update - warmup_steps``.
    """

    def __init__(
        self,
        max_update,
        base_lr=0.01,
        pwr=2,
        final_lr=0,
        warmup_steps=0,
        warmup_begin_lr=0,
        warmup_mode="linear",
    ):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int):
            raise TypeError("max_update must be an int")
        if max_update < 1:
            raise ValueError("maximum number of updates must be strictly positive")
        self.power = pwr
        self.base_lr_orig = self.base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            frac = 1 - float(num_update - self.warmup_steps) / float(self.max_steps)
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * pow(
                frac, self.power
            )
        return self.base_lr


class CosineScheduler(LRScheduler):
    """Cosine decay from ``base_lr`` to ``final_lr`` over ``max_update`` updates.

    ``lr = final_lr + (base_lr - final_lr) * (1 + cos(pi * t / T)) / 2`` with ``t`` counted
    after warm-up and ``T = max_update - warmup_steps``; constant ``final_lr`` afterwards.
    """

    def __init__(
        self,
        max_update,
        base_lr=0.01,
        final_lr=0,
        warmup_steps=0,
        warmup_begin_lr=0,
        warmup_mode="linear",
    ):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int):
            raise TypeError("max_update must be an int")
        if max_update < 1:
            raise ValueError("maximum number of updates must be strictly positive")
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            frac = (num_update - self.warmup_steps) / self.max_steps
            self.base_lr = (
                self.final_lr + (self.base_lr_orig - self.final_lr) * (1 + cos(pi * frac)) / 2
            )
        return self.base_lr
