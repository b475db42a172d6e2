"""Legacy ``nd`` operators composed of engine operators.

``cumsum``, the ``SVMOutput`` loss (forward plus MXNet's fixed backward, through
``autograd.Function``; ``SoftmaxOutput`` and the regression heads are table operators in
``ops/output_heads.rs``), ``space_to_depth``/``depth_to_space``,
``khatri_rao``, ``L2Normalization``,
``moments``, ``hard_sigmoid``, the composable ``linalg_*`` (``gemm``, ``syrk``, ``trmm``,
``extractdiag``/``makediag``, ``extracttrian``/``maketrian``, ``sumlogdiag``), the
``sample_*``/``random_*`` sampler aliases and the ``random_pdf_*`` densities. Everything runs
as ferromx operators on the engine; results are legacy ``NDArray``s for ``NDArray`` inputs.
"""

import math

import numpy as _onp

from .. import autograd as _ag
from . import random as _rnd
from .ndarray import NDArray

__all__ = [
    "L2Normalization",
    "SVMOutput",
    "SoftmaxActivation",
    "all_finite",
    "amp_cast",
    "amp_multicast",
    "cast_storage",
    "choose_element_0index",
    "cumsum",
    "depth_to_space",
    "fill_element_0index",
    "hard_sigmoid",
    "histogram",
    "identity",
    "khatri_rao",
    "linalg_extractdiag",
    "linalg_extracttrian",
    "linalg_gemm",
    "linalg_makediag",
    "linalg_maketrian",
    "linalg_sumlogdiag",
    "linalg_syrk",
    "linalg_trmm",
    "load_frombuffer",
    "moments",
    "multi_all_finite",
    "multi_sum_sq",
    "normal",
    "onehot_encode",
    "random_exponential",
    "random_gamma",
    "random_generalized_negative_binomial",
    "random_negative_binomial",
    "random_normal",
    "random_pdf_dirichlet",
    "random_pdf_exponential",
    "random_pdf_gamma",
    "random_pdf_generalized_negative_binomial",
    "random_pdf_negative_binomial",
    "random_pdf_normal",
    "random_pdf_poisson",
    "random_pdf_uniform",
    "random_poisson",
    "random_randint",
    "random_uniform",
    "ravel_multi_index",
    "reset_arrays",
    "sample_exponential",
    "sample_gamma",
    "sample_generalized_negative_binomial",
    "sample_multinomial",
    "sample_negative_binomial",
    "sample_normal",
    "sample_poisson",
    "sample_uniform",
    "shuffle",
    "space_to_depth",
    "true_divide",
    "uniform",
    "unravel_index",
]


def _nd():
    from .. import ndarray

    return ndarray


def _legacy(res, like):
    """``res`` in ``like``'s world (np results for np inputs, legacy otherwise)."""
    if isinstance(res, (list, tuple)):
        return type(res)(_legacy(r, like) for r in res)
    if like._is_np:
        return res if res._is_np else res._as_np()
    return res.as_nd_ndarray() if res._is_np else res


def _store(res, out):
    if out is not None:
        out[...] = res
        return out
    return res


def _np(x):
    return x if x._is_np else x._as_np()


def cumsum(a, axis=None, dtype=None, out=None, name=None):
    """Cumulative sum along ``axis`` (the flattened array when None)."""
    from ..numpy import cumsum as _cs

    return _store(_legacy(_cs(_np(a), axis=axis, dtype=dtype), a), out)


def identity(data, out=None, name=None):
    """A copy of ``data`` (gradient passes through)."""
    return _store(data.copy(), out)


class _FixedGrad(_ag.Function):
    """Forward ``fwd(data)``; backward ignores the head gradient and returns ``grad(out)``
    (how MXNet's loss-output operators behave)."""

    def __init__(self, fwd, grad):
        super().__init__()
        self._fwd, self._grad = fwd, grad

    def forward(self, *inputs):
        out = self._fwd(*inputs)
        self.save_for_backward(out, *inputs)
        return out

    def backward(self, _head):
        out, *inputs = self.saved_tensors
        return self._grad(out, *inputs)




def SoftmaxActivation(data, mode="instance", out=None, name=None):
    """Softmax over the last axis (``mode='instance'``) or over axis 1 (``'channel'``)."""
    if mode not in ("instance", "channel"):
        raise ValueError(f"SoftmaxActivation: mode must be 'instance' or 'channel', got {mode!r}")
    if mode == "instance":
        return _store(_nd().softmax(data.reshape((data.shape[0], -1))).reshape(data.shape), out)
    return _store(_nd().softmax(data, axis=1), out)


def space_to_depth(data, block_size, out=None, name=None):
    """NCHW blocks of ``block_size`` x ``block_size`` moved into the channels."""
    n, c, h, w = _nchw(data, "space_to_depth")
    b = int(block_size)
    if h % b or w % b:
        raise ValueError(f"space_to_depth: height and width ({h}, {w}) must be divisible by "
                         f"block_size {b}")
    x = data.reshape((n, c, h // b, b, w // b, b)).transpose((0, 3, 5, 1, 2, 4))
    return _store(x.reshape((n, c * b * b, h // b, w // b)), out)


def depth_to_space(data, block_size, out=None, name=None):
    """NCHW channels rearranged into ``block_size`` x ``block_size`` spatial blocks."""
    n, c, h, w = _nchw(data, "depth_to_space")
    b = int(block_size)
    if c % (b * b):
        raise ValueError(f"depth_to_space: channels {c} must be divisible by block_size² "
                         f"{b * b}")
    x = data.reshape((n, b, b, c // (b * b), h, w)).transpose((0, 3, 4, 1, 5, 2))
    return _store(x.reshape((n, c // (b * b), h * b, w * b)), out)


def _nchw(data, fn):
    if data.ndim != 4:
        raise ValueError(f"{fn}: expects a 4-d NCHW input, got shape {data.shape}")
    return data.shape


def choose_element_0index(lhs, rhs, out=None, name=None):
    """``lhs[i, rhs[i]]`` for each row (``pick``)."""
    return _store(_nd().pick(lhs, rhs, axis=-1), out)


def fill_element_0index(lhs, mhs, rhs, out=None, name=None):
    """``lhs`` with ``lhs[i, rhs[i]] = mhs[i]``."""
    nd = _nd()
    mask = nd.one_hot(rhs.astype("int64"), depth=lhs.shape[-1], dtype="bool")
    vals = mhs.reshape((-1, 1)).broadcast_to(lhs.shape)
    return _store(nd.where(mask.astype(lhs._dtype_name), vals, lhs), out)


def khatri_rao(*args, out=None, name=None):
    """The column-wise Kronecker product of matrices with equal column counts."""
    if not args:
        raise ValueError("khatri_rao: needs at least one matrix")
    k = args[0].shape[-1]
    res = args[0]
    for m in args[1:]:
        if m.ndim != 2 or m.shape[1] != k:
            raise ValueError(f"khatri_rao: all inputs must be matrices with {k} columns, got "
                             f"{m.shape}")
        res = (res.reshape((res.shape[0], 1, k)) * m.reshape((1, m.shape[0], k))).reshape(
            (-1, k))
    return _store(res, out)


def L2Normalization(data, eps=1e-10, mode="instance", out=None, name=None):
    """``data / sqrt(sum(data²) + eps)`` per instance, channel (axis 1) or spatial position."""
    if mode == "instance":
        axes = tuple(range(1, data.ndim))
    elif mode == "channel":
        axes = (1,)
    elif mode == "spatial":
        axes = tuple(range(2, data.ndim))
    else:
        raise ValueError(f"L2Normalization: mode must be 'instance', 'channel' or 'spatial', got "
                         f"{mode!r}")
    norm = _nd().sqrt((data * data).sum(axis=axes, keepdims=True) + eps)
    return _store(data / norm, out)


def moments(data, axes=None, keepdims=False, out=None, name=None):
    """``[mean, variance]`` over ``axes``."""
    mean = data.mean(axis=axes, keepdims=True)
    var = ((data - mean) ** 2).mean(axis=axes, keepdims=keepdims)
    return [mean if keepdims else data.mean(axis=axes), var]


def hard_sigmoid(data, alpha=0.2, beta=0.5, out=None, name=None):
    """``clip(alpha * data + beta, 0, 1)``."""
    return _store(_nd().clip(data * alpha + beta, 0.0, 1.0), out)


def histogram(data, bins=10, range=None, out=None, name=None):
    """``(counts, bin_edges)`` of ``data`` in ``bins`` equal bins over ``range``."""
    from ..numpy import histogram as _h

    b = _np(bins) if isinstance(bins, NDArray) else bins
    cnt, edges = _h(_np(data), bins=b, range=range)
    return [_legacy(cnt, data), _legacy(edges, data)]


def true_divide(lhs, rhs, out=None, name=None):
    """``lhs / rhs``."""
    return _store(lhs / rhs, out)


def cast_storage(data, stype="default", out=None, name=None):
    """Storage cast; only ``'default'`` (dense) exists in ferromx."""
    if stype != "default":
        raise NotImplementedError(f"cast_storage: stype {stype!r} needs sparse storage, which "
                                  f"ferromx does not have")
    return _store(data.copy(), out)


def amp_cast(data, dtype, out=None, name=None):
    """Cast for automatic mixed precision (``cast``)."""
    return _store(data.astype(dtype), out)


def amp_multicast(*data, num_outputs=None, cast_narrow=False, out=None, name=None):
    """All inputs cast to their widest (or, with ``cast_narrow``, narrowest) float type."""
    order = ["float16", "bfloat16", "float32", "float64"]
    names = [d._dtype_name for d in data if d._dtype_name in order]
    if not names:
        return [d.copy() for d in data]
    pick = min if cast_narrow else max
    target = pick(names, key=order.index)
    return [d.astype(target) if d._dtype_name in order else d.copy() for d in data]


def all_finite(data, init_output=True, out=None, name=None):
    """``[1.]`` if every element of ``data`` is finite, else ``[0.]`` (float32)."""
    nd = _nd()
    ok = (nd.abs(data) < _onp.inf).astype("float32").min().reshape((1,))
    return _store(ok, out)


def multi_all_finite(*arrays, num_arrays=1, init_output=True, out=None, name=None):
    """``[1.]`` if every element of every array is finite, else ``[0.]``."""
    res = all_finite(arrays[0])
    for a in arrays[1:]:
        res = _nd().minimum(res, all_finite(a))
    return _store(res, out)


def onehot_encode(indices, out):
    """One-hot rows of ``indices`` written into ``out`` (legacy)."""
    out[...] = _nd().one_hot(indices.astype("int64"), depth=out.shape[1], dtype=out._dtype_name)
    return out


def ravel_multi_index(data, shape=None, out=None, name=None):
    """Flat indices from a ``(ndim, N)`` array of coordinates for ``shape``."""
    shape = tuple(shape)
    if data.shape[0] != len(shape):
        raise ValueError(f"ravel_multi_index: data has {data.shape[0]} rows for a "
                         f"{len(shape)}-d shape")
    strides = _onp.cumprod((1,) + shape[::-1][:-1])[::-1]
    res = None
    for i, s in enumerate(strides):
        term = data[i] * float(s)
        res = term if res is None else res + term
    return _store(res, out)


def unravel_index(data, shape=None, out=None, name=None):
    """Coordinates ``(ndim, N)`` of flat indices ``data`` for ``shape``."""
    rows, rest = [], data
    for d in reversed(tuple(shape)):
        r = _nd().broadcast_mod(rest, _nd().ones_like(rest) * d)
        rows.append(r)
        rest = _nd().floor((rest - r) / d)
    return _store(_nd().stack(*reversed(rows), axis=0), out)


def _k(x):
    return x._dtype_name


def linalg_gemm(A, B, C, transpose_a=False, transpose_b=False, alpha=1.0, beta=1.0,
                axis=-2, out=None, name=None):
    """``alpha * op(A) @ op(B) + beta * C`` over the trailing matrices."""
    if axis != -2:
        raise NotImplementedError("linalg_gemm: only axis=-2 is supported")
    return _store(_nd().linalg_gemm2(A, B, transpose_a=transpose_a, transpose_b=transpose_b)
                  * alpha + C * beta, out)


def _swap_last(x):
    axes = list(range(x.ndim))
    axes[-1], axes[-2] = axes[-2], axes[-1]
    return x.transpose(axes)


def linalg_syrk(A, transpose=False, alpha=1.0, out=None, name=None):
    """``alpha * A @ A.T`` (``A.T @ A`` with ``transpose``)."""
    return _store(_nd().linalg_gemm2(A, A, transpose_a=transpose, transpose_b=not transpose)
                  * alpha, out)


def _tri(x, lower, k=0):
    from ..numpy import tril, triu

    res = (tril if lower else triu)(_np(x), k)
    return _legacy(res, x)


def linalg_trmm(A, B, transpose=False, rightside=False, lower=True, alpha=1.0, out=None,
                name=None):
    """``alpha * op(tri(A)) @ B`` (or ``B @ op(tri(A))`` with ``rightside``)."""
    t = _tri(A, lower)
    gemm = _nd().linalg_gemm2
    res = gemm(B, t, transpose_b=transpose) if rightside else gemm(t, B, transpose_a=transpose)
    return _store(res * alpha, out)


def linalg_extractdiag(A, offset=0, out=None, name=None):
    """The ``offset`` diagonal of the trailing matrices."""
    return _store(_nd().diag(A, k=offset, axis1=-2, axis2=-1), out)


def linalg_makediag(A, offset=0, out=None, name=None):
    """Square matrices with the trailing vectors of ``A`` on diagonal ``offset``."""
    nd = _nd()
    n = A.shape[-1] + abs(offset)
    flat = A.reshape((-1, A.shape[-1]))
    mats = [nd.diag(flat[i], k=offset) for i in range(flat.shape[0])]
    res = nd.stack(*mats, axis=0).reshape(A.shape[:-1] + (n, n))
    return _store(res, out)


def _trian_index(n, offset, lower):
    """Flat positions of the packed triangle: the lower one row by row; the upper one as
    MXNet packs it, row by row of the transpose (column by column)."""
    if lower:
        rows, cols = _onp.tril_indices(n, offset)
        return rows * n + cols
    rows, cols = _onp.tril_indices(n, -offset)
    return cols * n + rows


def linalg_extracttrian(A, offset=0, lower=True, out=None, name=None):
    """The lower (or upper) triangle of the trailing matrices, packed row by row."""
    n = A.shape[-1]
    idx = _trian_index(n, offset, lower if offset == 0 else offset < 0)
    flat = A.reshape(A.shape[:-2] + (n * n,))
    ind = _nd().array(idx, ctx=A.context, dtype="int64")
    return _store(_nd().take(flat, ind, axis=-1), out)


def linalg_maketrian(A, offset=0, lower=True, out=None, name=None):
    """Triangular matrices from packed triangles (the inverse of ``linalg_extracttrian``)."""
    m = A.shape[-1]
    k = abs(offset)
    n = round((math.sqrt(8 * m + 1) - 1) / 2) + k
    low = lower if offset == 0 else offset < 0
    idx = _trian_index(n, offset, low)
    if idx.size != m:
        raise ValueError(f"linalg_maketrian: {m} elements do not form a triangle")
    nd = _nd()
    oh = nd.one_hot(nd.array(idx, ctx=A.context, dtype="int64"), depth=n * n,
                    dtype=A._dtype_name)
    flat = nd.dot(A.reshape((-1, m)), oh)
    return _store(flat.reshape(A.shape[:-1] + (n, n)), out)


def linalg_sumlogdiag(A, out=None, name=None):
    """``sum(log(diag(A)))`` of the trailing matrices."""
    return _store(_nd().log(linalg_extractdiag(A)).sum(axis=-1), out)


# ------------------------------------------------------------------ samplers and densities

normal, uniform, shuffle = _rnd.normal, _rnd.uniform, _rnd.shuffle
random_normal, random_uniform = _rnd.normal, _rnd.uniform
random_gamma, random_poisson, random_randint = _rnd.gamma, _rnd.poisson, _rnd.randint
random_negative_binomial = _rnd.negative_binomial
random_generalized_negative_binomial = _rnd.generalized_negative_binomial


def random_exponential(lam=1.0, shape=None, dtype=None, ctx=None, out=None, name=None):
    """Exponential samples with rate ``lam``."""
    return _rnd.exponential(1.0 / lam, shape=shape, dtype=dtype, ctx=ctx, out=out)


def sample_normal(mu, sigma, shape=None, dtype=None, out=None, name=None):
    """One normal distribution per element of ``mu``/``sigma`` (shape ``mu.shape + shape``)."""
    return _rnd.normal(mu, sigma, shape=shape, dtype=dtype, out=out)


def sample_uniform(low, high, shape=None, dtype=None, out=None, name=None):
    """One uniform distribution per element of ``low``/``high``."""
    return _rnd.uniform(low, high, shape=shape, dtype=dtype, out=out)


def sample_gamma(alpha, beta, shape=None, dtype=None, out=None, name=None):
    """One gamma distribution per element of ``alpha``/``beta``."""
    return _rnd.gamma(alpha, beta, shape=shape, dtype=dtype, out=out)


def sample_exponential(lam, shape=None, dtype=None, out=None, name=None):
    """One exponential distribution (rate ``lam``) per element."""
    return _rnd.exponential(1.0 / lam, shape=shape, dtype=dtype, out=out)


def sample_poisson(lam, shape=None, dtype=None, out=None, name=None):
    """One Poisson distribution per element of ``lam``."""
    return _rnd.poisson(lam, shape=shape, dtype=dtype, out=out)


def sample_negative_binomial(k, p, shape=None, dtype=None, out=None, name=None):
    """One negative binomial distribution per element of ``k``/``p``."""
    return _rnd.negative_binomial(k, p, shape=shape, dtype=dtype, out=out)


def sample_generalized_negative_binomial(mu, alpha, shape=None, dtype=None, out=None,
                                         name=None):
    """One generalized negative binomial distribution per element of ``mu``/``alpha``."""
    return _rnd.generalized_negative_binomial(mu, alpha, shape=shape, dtype=dtype, out=out)


def sample_multinomial(data, shape=None, get_prob=False, dtype="int32", out=None, name=None):
    """Category samples from the distributions in ``data``'s last axis."""
    return _rnd.multinomial(data, shape=shape, get_prob=get_prob, dtype=dtype, out=out)


def _pdf(name, body, names):
    def op(sample, *params, is_log=False, out=None, name=None, **kwargs):
        params = list(params)
        for key in names[len(params):]:  # MXNet's keyword names (mu=, sigma= ...)
            if key in kwargs:
                params.append(kwargs.pop(key))
        if kwargs or len(params) != len(names):
            raise TypeError(f"random_pdf_{op.dist}: takes sample and {list(names)}, got "
                            f"{len(params)} parameters and keywords {sorted(kwargs)}")
        ps = []
        for p in params:
            extra = sample.ndim - p.ndim
            ps.append(p.reshape(p.shape + (1,) * extra) if extra > 0 else p)
        logp = body(sample, *ps)
        return _store(logp if is_log else _nd().exp(logp), out)

    op.dist = name
    op.__name__ = f"random_pdf_{name}"
    op.__doc__ = (f"The {name} density (log-density with ``is_log``) of ``sample`` (shape "
                  f"``params.shape + extra``), per element of the parameters.")
    return op


def _lg(x):
    return _nd().gammaln(x)


random_pdf_normal = _pdf("normal", lambda x, mu, sigma: (
    -((x - mu) ** 2) / (2 * sigma * sigma) - _nd().log(sigma) - 0.5 * math.log(2 * math.pi)), ("mu", "sigma"))
random_pdf_uniform = _pdf("uniform", lambda x, lo, hi: _nd().log(
    ((x >= lo) * (x <= hi)).astype(x._dtype_name) / (hi - lo)), ("low", "high"))
random_pdf_exponential = _pdf("exponential", lambda x, lam: _nd().log(lam) - lam * x, ("lam",))
random_pdf_gamma = _pdf("gamma", lambda x, a, b: (
    a * _nd().log(b) + (a - 1) * _nd().log(x) - b * x - _lg(a)), ("alpha", "beta"))
random_pdf_poisson = _pdf("poisson", lambda x, lam: (
    x * _nd().log(lam) - lam - _lg(x + 1)), ("lam",))
random_pdf_negative_binomial = _pdf("negative_binomial", lambda x, k, p: (
    _lg(x + k) - _lg(x + 1) - _lg(k) + k * _nd().log(p) + x * _nd().log(1 - p)), ("k", "p"))


def _gnb(x, mu, alpha):
    nd = _nd()
    k = 1.0 / alpha
    p = 1.0 / (1.0 + alpha * mu)
    return _lg(x + k) - _lg(x + 1) - _lg(k) + k * nd.log(p) + x * nd.log(1 - p)


random_pdf_generalized_negative_binomial = _pdf("generalized_negative_binomial", _gnb,
                                               ("mu", "alpha"))


def random_pdf_dirichlet(sample, alpha, is_log=False, out=None, name=None):
    """The Dirichlet density of ``sample`` (last axis: the simplex) per row of ``alpha``."""
    nd = _nd()
    extra = sample.ndim - alpha.ndim
    a = alpha.reshape(alpha.shape[:-1] + (1,) * extra + alpha.shape[-1:]) if extra > 0 else alpha
    logp = ((a - 1) * nd.log(sample)).sum(axis=-1) + _lg(a.sum(axis=-1)) - _lg(a).sum(axis=-1)
    return _store(logp if is_log else nd.exp(logp), out)



def reset_arrays(*data, num_arrays=None, out=None, name=None):
    """Sets every input array to zero, in place."""
    for d in data:
        d[...] = 0
    return list(data)


def multi_sum_sq(*data, num_arrays=None, out=None, name=None):
    """The sum of squares of each input, as one float32 array of ``len(data)`` elements."""
    nd = _nd()
    parts = [(d.astype("float32") ** 2).sum().reshape((1,)) for d in data]
    return _store(nd.concat(*parts, dim=0), out)


def load_frombuffer(buf):
    """Loads arrays from the bytes of an MXNet NDArray file (as ``nd.load`` does from a file):
    a list, or a dict when the file has names."""
    from .. import serialization

    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise TypeError(f"load_frombuffer: buf must be bytes, got {type(buf).__name__}")
    arrays, names = serialization.loads_host(bytes(buf))
    values = [serialization.to_ndarray(h) for h in arrays]
    return dict(zip(names, values)) if names else values


def SVMOutput(data, label, margin=1.0, regularization_coefficient=1.0, use_linear=False,
              out=None, name=None):
    """Forward ``data``; backward is MXNet's hinge gradient (squared hinge unless
    ``use_linear``) for rows of class scores ``data`` and class indices ``label``."""
    nd = _nd()

    def grad(o, x, lab):
        k = x.shape[-1]
        flat = x.reshape((-1, k))
        oh = nd.one_hot(lab.reshape((-1,)).astype("int64"), depth=k, dtype=x._dtype_name)
        signed = flat * (2 * oh - 1)  # src for the label class, -src for the others
        active = (signed < margin).astype(x._dtype_name)
        if use_linear:
            g = active * regularization_coefficient
        else:
            g = active * 2.0 * (margin - signed) * regularization_coefficient
        g = g * (1 - 2 * oh)  # the label class moves up, the others down
        return [g.reshape(x.shape), nd.zeros_like(lab)]

    return _store(_FixedGrad(lambda x, _lab: x.copy(), grad)(data, label), out)



def _broadcast_axes(self, *args, **kwargs):
    """MXNet's ``broadcast_axes`` (``broadcast_axis``) as a method."""
    return _nd().broadcast_axes(self, *args, **kwargs)


NDArray.broadcast_axes = _broadcast_axes
