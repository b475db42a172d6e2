"""The CTC forward algorithm in log space, composed of ``nd`` operators (so autograd gives
its gradient).  Used by :class:`ferromx.gluon.loss.CTCLoss`.

The recursion over time is a Python loop; each step is a handful of batch-vectorised
operators over the ``2 L + 1`` extended-label states.  The blank is the last class
(MXNet's ``blank_label='last'``) and labels are padded with ``-1``.
"""

from .. import ndarray as nd

_NEG = -1e30  # log(0) stand-in: finite, so exp() and gradients stay NaN-free


def _logsumexp(*terms):
    top = terms[0]
    for t in terms[1:]:
        top = nd.maximum(top, t)
    total = nd.exp(terms[0] - top)
    for t in terms[1:]:
        total = total + nd.exp(t - top)
    return top + nd.log(total)


def _shift(alpha, k):
    """``alpha`` moved right by ``k`` states along axis 1, filled with log(0)."""
    n, s = alpha.shape
    pad = nd.full((n, k), _NEG, ctx=alpha.context, dtype=alpha.dtype)
    if k >= s:
        return pad[:, :s] if k > s else pad
    return nd.concat(pad, nd.slice_axis(alpha, axis=1, begin=0, end=s - k), dim=1)


def _label_lengths(label, label_lengths, dtype):
    """Per-sample label lengths: given, or the position of the first ``-1`` padding."""
    if label_lengths is not None:
        return label_lengths.astype(dtype)
    n, length = label.shape
    positions = nd.arange(0, length, ctx=label.context, dtype=dtype).reshape((1, length))
    positions = nd.broadcast_to(positions, (n, length))
    padded = label.astype(dtype) == -1
    return nd.min(nd.where(padded, positions, nd.ones_like(positions) * length), axis=1)


def ctc_loss(pred, label, data_lengths=None, label_lengths=None):
    """Negative log-likelihood of ``label`` under CTC for unnormalised ``pred``.

    Parameters
    ----------
    pred : NDArray, shape (N, T, C)
        Activations (a ``log_softmax`` over C is applied); class ``C - 1`` is the blank.
    label : NDArray, shape (N, L)
        Class indices, padded with ``-1`` (or cut by ``label_lengths``).
    data_lengths, label_lengths : NDArray of shape (N,), optional
        Valid time steps / labels per sample.

    Returns
    -------
    NDArray, shape (N,)
    """
    n, t_max, classes = pred.shape
    if label.ndim != 2 or label.shape[0] != n:
        raise ValueError(
            f"CTCLoss: label must be (batch, label_length) with batch {n}, got shape "
            f"{tuple(label.shape)} for pred of shape (N, T, C) = {tuple(pred.shape)}"
        )
    blank = classes - 1
    lengths = _label_lengths(label, label_lengths, pred.dtype)
    n_lab = label.shape[1]
    # Labels beyond each length become blanks; extended sequence b l1 b l2 ... b.
    positions = nd.arange(0, n_lab, ctx=label.context, dtype=pred.dtype).reshape((1, n_lab))
    valid = nd.broadcast_to(positions, (n, n_lab)) < lengths.reshape((n, 1))
    label = label.astype(pred.dtype)
    lab = nd.where(valid, label, nd.ones_like(label) * blank)
    blanks = nd.ones_like(lab) * blank
    ext = nd.stack(blanks, lab, axis=2).reshape((n, 2 * n_lab))
    ones = nd.ones((n, 2), ctx=label.context, dtype=pred.dtype)
    ext = nd.concat(ext, nd.slice_axis(ones, 1, 0, 1) * blank, dim=1)
    s = 2 * n_lab + 1
    prev2 = nd.concat(-ones, nd.slice_axis(ext, 1, 0, s - 2), dim=1)
    skip = (ext != blank) * (ext != prev2)

    logp = nd.log_softmax(pred, axis=2)
    onehot = nd.one_hot(ext, classes, dtype=pred.dtype)
    emit = nd.batch_dot(logp, onehot, transpose_b=True)  # (N, T, S)
    start = (nd.arange(0, s, ctx=pred.context).reshape((1, s)) < 2).astype(pred.dtype)
    e0 = nd.slice_axis(emit, 1, 0, 1).reshape((n, s))
    alpha = e0 * start + (1 - start) * _NEG
    t_len = None if data_lengths is None else data_lengths.astype(pred.dtype).reshape((n, 1))
    for t in range(1, t_max):
        e_t = nd.slice_axis(emit, 1, t, t + 1).reshape((n, s))
        two_back = _shift(alpha, 2) * skip + (1 - skip) * _NEG
        new = _logsumexp(alpha, _shift(alpha, 1), two_back) + e_t
        if t_len is not None:
            live = (t_len > t).astype(pred.dtype)
            new = new * live + alpha * (1 - live)
        alpha = new
    last = lengths * 2
    end_blank = nd.pick(alpha, last, axis=1)
    end_label = nd.pick(alpha, nd.maximum(last - 1, nd.zeros_like(last)), axis=1)
    has_label = (lengths > 0).astype(pred.dtype)
    end_label = end_label * has_label + (1 - has_label) * _NEG
    return -_logsumexp(end_blank, end_label)
