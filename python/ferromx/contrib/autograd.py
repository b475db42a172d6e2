"""``mx.contrib.autograd``: MXNet's pre-1.0 autograd API, over :mod:`ferromx.autograd`."""

from .. import autograd as _ag

__all__ = ["backward", "compute_gradient", "grad", "grad_and_loss", "mark_variables",
           "set_is_training", "test_section", "train_section"]


def set_is_training(is_train):
    """Sets recording and training together; returns the previous training flag."""
    prev = _ag.is_training()
    _ag.set_recording(is_train)
    _ag.set_training(is_train)
    return prev


def train_section():
    """A scope that records, in training mode."""
    return _ag.record(train_mode=True)


def test_section():
    """A scope that does not record, in predict mode."""
    return _ag.pause(train_mode=False)


def mark_variables(variables, gradients, grad_reqs="write"):
    """Marks ``variables`` as variables whose gradients go into ``gradients``."""
    return _ag.mark_variables(variables, gradients, grad_reqs)


def backward(outputs, out_grads=None, retain_graph=False):
    """Gradients of ``outputs`` into the marked variables' gradient arrays."""
    return _ag.backward(outputs, head_grads=out_grads, retain_graph=retain_graph)


def compute_gradient(outputs):
    """Deprecated MXNet alias of :func:`backward`."""
    return backward(outputs)


def grad_and_loss(func, argnum=None):
    """``func`` wrapped to return ``(gradients, loss)`` for its NDArray arguments (or the
    ones at ``argnum``)."""
    import functools

    from ..ndarray import NDArray, zeros_like

    @functools.wraps(func)
    def wrapped(*args):
        chosen = args if argnum is None else \
            [args[i] for i in ([argnum] if isinstance(argnum, int) else argnum)]
        for x in chosen:
            if not isinstance(x, NDArray):
                raise TypeError("contrib.autograd.grad_and_loss: arguments must be NDArrays")
        grads = [zeros_like(x) for x in chosen]
        mark_variables(chosen, grads)
        with train_section():
            out = func(*args)
        backward([out] if isinstance(out, NDArray) else out)
        return grads, out

    return wrapped


def grad(func, argnum=None):
    """``func`` wrapped to return only the gradients of :func:`grad_and_loss`."""
    import functools

    g = grad_and_loss(func, argnum)

    @functools.wraps(func)
    def wrapped(*args):
        return g(*args)[0]

    return wrapped
