"""``ferromx.np.random``: MXNet 1.9.1's ``mx.np.random``.

Samples are drawn on the engine by the random operators (``_random_uniform``,
``_random_normal``, ``_random_gamma``, ``_sample_multinomial``, ``_shuffle`` ...); the other
distributions are transforms of those draws (``logistic``, ``gumbel``, ``rayleigh``, ``weibull``,
``pareto``, ``power`` from uniforms; ``beta``/``chisquare``/``f`` from gammas), so array
parameters broadcast NumPy's way, results are ``np.ndarray`` (float32 unless ``dtype``), and
location/scale parameters get their (reparameterised) gradients from autograd. ``size`` is the
full output shape (default: the broadcast shape of the parameters, a scalar for scalars).
"""

import builtins
import numbers

import numpy as _onp

from .. import _native
from .. import ndarray as _nd
from ..context import _ctx_str
from ..ndarray import random as _r

__all__ = [
    "beta", "chisquare", "choice", "exponential", "f", "gamma", "gumbel", "laplace", "logistic",
    "lognormal", "multinomial", "multivariate_normal", "normal", "pareto", "power", "rand", "randint", "randn",
    "rayleigh", "seed", "shuffle", "uniform", "weibull",
]


def _np(r):
    return r if r._is_np else r._as_np()


def _out(res, out):
    if out is not None:
        out[...] = res
        return out
    return res


def _size(size, params, fn):
    if size is None:
        shapes = [p.shape for p in params if isinstance(p, _nd.NDArray)]
        return _onp.broadcast_shapes(*shapes) if shapes else ()
    if isinstance(size, numbers.Integral):
        size = (int(size),)
    size = tuple(int(s) for s in size)
    for p in params:
        if isinstance(p, _nd.NDArray):
            try:
                if _onp.broadcast_shapes(p.shape, size) != size:
                    raise ValueError
            except ValueError:
                raise ValueError(f"{fn}: parameter of shape {p.shape} cannot be broadcast to "
                                 f"size {size}") from None
    return size


def _ctx(ctx, params):
    for p in params:
        if isinstance(p, _nd.NDArray):
            return p.context
    return ctx


def _param(p, dt):
    return _np(p).astype(dt) if isinstance(p, _nd.NDArray) else float(p)


def _dtype(dtype, params):
    if dtype is not None:
        return _onp.dtype(dtype).name
    for p in params:
        if isinstance(p, _nd.NDArray) and p._dtype_name in ("float16", "float64"):
            return p._dtype_name
    from .multiarray import _default_float

    return _default_float()


def _draw(op, shape, ctx, dtype, **attrs):
    return _native.invoke_np(op, [], shape=tuple(shape), ctx=_ctx_str(ctx), dtype=dtype, **attrs)


def _unit(shape, ctx):
    """Uniform draws in the open interval (0, 1), in float64."""
    u = _draw("_random_uniform", shape, ctx, "float64", low=0.0, high=1.0)
    return _nd.clip(u, 1e-300, 1.0 - 2.0 ** -53)


def uniform(low=0.0, high=1.0, size=None, dtype=None, ctx=None, out=None):
    """Samples from U[low, high) (``low``/``high`` may be arrays)."""
    ps = (low, high)
    shp, ctx, dt = _size(size, ps, "uniform"), _ctx(ctx, ps), _dtype(dtype, ps)
    if not any(isinstance(p, _nd.NDArray) for p in ps):
        return _out(_draw("_random_uniform", shp, ctx, dt, low=float(low), high=float(high)), out)
    u = _draw("_random_uniform", shp, ctx, dt, low=0.0, high=1.0)
    lo, hi = _param(low, dt), _param(high, dt)
    return _out(lo + (hi - lo) * u, out)


def normal(loc=0.0, scale=1.0, size=None, dtype=None, ctx=None, out=None):
    """Samples from N(loc, scale²) (``loc``/``scale`` may be arrays, with gradients)."""
    ps = (loc, scale)
    shp, ctx, dt = _size(size, ps, "normal"), _ctx(ctx, ps), _dtype(dtype, ps)
    if not any(isinstance(p, _nd.NDArray) for p in ps):
        return _out(_draw("_random_normal", shp, ctx, dt, loc=float(loc), scale=float(scale)),
                    out)
    z = _draw("_random_normal", shp, ctx, dt, loc=0.0, scale=1.0)
    return _out(_param(loc, dt) + _param(scale, dt) * z, out)


def multivariate_normal(mean, cov, size=None, check_valid=None, tol=None):
    """Samples from N(mean, cov): ``mean + L @ z`` with ``L = cholesky(cov)`` on the engine.

    As MXNet, ``mean`` ``(..., N)`` and ``cov`` ``(..., N, N)`` may carry batch axes that
    broadcast; the result has shape ``size + batch + (N,)``. ``cov`` must be positive definite
    (its Cholesky factor is taken); ``check_valid`` and ``tol`` are accepted and ignored."""
    from . import asarray, broadcast_to
    from . import linalg as _la

    mean, cov = asarray(mean), asarray(cov)
    if mean.ndim < 1 or cov.ndim < 2 or cov.shape[-1] != cov.shape[-2] or \
            cov.shape[-1] != mean.shape[-1]:
        raise ValueError(f"multivariate_normal: mean must be (..., N) and cov (..., N, N) "
                         f"(shapes {mean.shape}, {cov.shape})")
    n = mean.shape[-1]
    batch = tuple(_onp.broadcast_shapes(mean.shape[:-1], cov.shape[:-2]))
    size = () if size is None else (size,) if isinstance(size, numbers.Integral) else tuple(size)
    shape = size + batch + (n,)
    dt = mean._dtype_name if mean._dtype_name in ("float32", "float64", "float16") else "float32"
    # float16 is sampled in float32 (the Cholesky kernels are float32/float64), then cast
    work = "float32" if dt == "float16" else dt
    chol = broadcast_to(_la.cholesky(cov.astype(work)), shape + (n,))
    z = normal(0.0, 1.0, size=shape + (1,), dtype=work, ctx=mean.context)
    out = broadcast_to(mean.astype(work), shape) + _la._mm(chol, z).reshape(shape)
    return out.astype(dt) if work != dt else out


def lognormal(mean=0.0, sigma=1.0, size=None, dtype=None, ctx=None, out=None):
    """``exp`` of normal samples with ``mean`` and ``sigma``."""
    return _out(_nd.exp(normal(mean, sigma, size, dtype, ctx)), out)


def randint(low, high=None, size=None, dtype=None, ctx=None, out=None):
    """Integers in [low, high) (``[0, low)`` when ``high`` is None; int64 by default)."""
    if high is None:
        low, high = 0, low
    if int(high) <= int(low):
        raise ValueError(f"randint: low >= high ({low} >= {high})")
    shp = _size(size, (), "randint")
    dt = _onp.dtype(dtype).name if dtype is not None else "int64"
    return _out(_draw("_random_randint", shp, ctx, dt, low=int(low), high=int(high)), out)


def rand(*size, **kwargs):
    """Uniform [0, 1) samples of shape ``size``."""
    return uniform(size=size or None, **kwargs)


def randn(*size, **kwargs):
    """Standard normal samples of shape ``size``."""
    return normal(size=size or None, **kwargs)


def _check(fn, what, p, lower, upper=None, inclusive=True):
    """``p`` if it lies in ``[lower, upper]`` (open unless ``inclusive``), with MXNet's
    ``ValueError`` (``f"{fn}: {what}"``) otherwise: a number is checked here; an array
    through the engine operator ``_check_domain``, whose result the sampler then reads, so
    the error comes at the read as MXNet's kernels raise it, and nothing waits for the
    array's values at the call."""
    if isinstance(p, _nd.NDArray):
        return _native.invoke_np("_check_domain", [p], lower=float(lower), inclusive=inclusive,
                                 upper=None if upper is None else float(upper), what=what,
                                 caller=fn)
    v = _onp.asarray(p, dtype="float64")
    hi = _onp.inf if upper is None else upper
    ok = (v >= lower) & (v <= hi) if inclusive else (v > lower) & (v < hi)
    if v.size and not _onp.all(ok):
        raise ValueError(f"{fn}: {what} (got {v.min() if v.ndim else v})")
    return p


def _positive(fn, strict=True, **params):
    """The parameters (in order), each :func:`_check`-ed to be ``> 0`` (``>= 0`` unless
    ``strict``), with MXNet's wording (``expect scale >= 0``)."""
    return [_check(fn, f"expect {name} {'>' if strict else '>='} 0", p, 0.0,
                   inclusive=not strict) for name, p in params.items()]


def _from_unit(fn, params, size, ctx, dtype, transform, out):
    shp, ctx, dt = _size(size, params, fn), _ctx(ctx, params), _dtype(dtype, params)
    u = _unit(shp, ctx)
    ps = [_param(p, "float64") for p in params]
    return _out(transform(u, *ps).astype(dt), out)


def logistic(loc=0.0, scale=1.0, size=None, ctx=None, out=None):
    """Logistic samples: ``loc + scale * log(u / (1 - u))``."""
    return _from_unit("logistic", (loc, scale), size, ctx, None,
                      lambda u, m, s: m + s * (_nd.log(u) - _nd.log1p(-u)), out)


def gumbel(loc=0.0, scale=1.0, size=None, ctx=None, out=None):
    """Gumbel samples: ``loc - scale * log(-log(u))``."""
    return _from_unit("gumbel", (loc, scale), size, ctx, None,
                      lambda u, m, s: m - s * _nd.log(-_nd.log(u)), out)


def laplace(loc=0.0, scale=1.0, size=None, dtype=None, ctx=None, out=None):
    """Laplace (double exponential) samples."""
    def t(u, m, s):
        v = u - 0.5
        return m - s * _nd.sign(v) * _nd.log1p(-2.0 * _nd.abs(v))

    return _from_unit("laplace", (loc, scale), size, ctx, dtype, t, out)


def rayleigh(scale=1.0, size=None, ctx=None, out=None):
    """Rayleigh samples: ``scale * sqrt(-2 log(1 - u))``."""
    (scale,) = _positive("rayleigh", strict=False, scale=scale)
    return _from_unit("rayleigh", (scale,), size, ctx, None,
                      lambda u, s: s * _nd.sqrt(-2.0 * _nd.log1p(-u)), out)


def exponential(scale=1.0, size=None, ctx=None, out=None):
    """Exponential samples with mean ``scale``."""
    (scale,) = _positive("exponential", strict=False, scale=scale)
    return _from_unit("exponential", (scale,), size, ctx, None,
                      lambda u, s: -s * _nd.log1p(-u), out)


def weibull(a, size=None, ctx=None, out=None):
    """Weibull samples of shape ``a``: ``(-log(1 - u)) ** (1 / a)``."""
    (a,) = _positive("weibull", a=a)
    return _from_unit("weibull", (a,), size, ctx, None,
                      lambda u, k: (-_nd.log1p(-u)) ** (1.0 / k), out)


def pareto(a, size=None, ctx=None, out=None):
    """Pareto II (Lomax) samples, as NumPy's: ``(1 - u) ** (-1 / a) - 1``."""
    (a,) = _positive("pareto", a=a)
    return _from_unit("pareto", (a,), size, ctx, None,
                      lambda u, k: _nd.exp(-_nd.log1p(-u) / k) - 1.0, out)


def power(a, size=None, ctx=None, out=None):
    """Power-distribution samples on [0, 1]: ``u ** (1 / a)``."""
    (a,) = _positive("power", a=a)
    return _from_unit("power", (a,), size, ctx, None, lambda u, k: u ** (1.0 / k), out)


def gamma(shape, scale=1.0, size=None, dtype=None, ctx=None, out=None):
    """Gamma samples with ``shape`` (k) and ``scale`` (theta)."""
    ps = (shape, scale)
    shp, ctx, dt = _size(size, ps, "gamma"), _ctx(ctx, ps), _dtype(dtype, ps)
    shape, scale = _positive("gamma", shape=shape, scale=scale)
    if not any(isinstance(p, _nd.NDArray) for p in ps):
        return _out(_draw("_random_gamma", shp, ctx, dt, alpha=float(shape),
                          beta=float(scale)), out)
    k = _np(shape).astype(dt) if isinstance(shape, _nd.NDArray) else None
    if k is None:
        k = _draw("_full", shp, ctx, dt, value=float(shape))
    k = k if k.shape == shp else k.broadcast_to(shp)
    one = _draw("_ones", shp, ctx, dt)
    g = _np(_r.gamma(k, one, dtype=dt))
    return _out(g * _param(scale, dt), out)


def beta(a, b, size=None, dtype=None, ctx=None):
    """Beta(a, b) samples: ``X / (X + Y)`` of gamma draws."""
    x = gamma(a, 1.0, size=size, dtype="float64", ctx=ctx)
    y = gamma(b, 1.0, size=x.shape, dtype="float64", ctx=ctx)
    return (x / (x + y)).astype(_dtype(dtype, (a, b)))


def chisquare(df, size=None, dtype=None, ctx=None):
    """Chi-square samples with ``df`` degrees of freedom (``2 * Gamma(df / 2)``)."""
    k = df / 2.0 if isinstance(df, _nd.NDArray) else float(df) / 2.0
    return gamma(k, 2.0, size=size, dtype=dtype, ctx=ctx)


def f(dfnum, dfden, size=None, ctx=None):
    """F-distribution samples: ratio of scaled chi-squares."""
    x = chisquare(dfnum, size=size, dtype="float64", ctx=ctx)
    y = chisquare(dfden, size=x.shape, dtype="float64", ctx=ctx)
    return ((x / dfnum) / (y / dfden)).astype(_dtype(None, (dfnum, dfden)))


def _probs(p, ctx):
    from . import array

    if isinstance(p, _nd.NDArray):
        return _np(p)
    return array(_onp.asarray(p, dtype="float64"), dtype="float32", ctx=ctx)


def multinomial(n, pvals, size=None, **kwargs):
    """Counts of each of ``len(pvals)`` outcomes in ``n`` draws (int64), shape
    ``size + (len(pvals),)``."""
    ctx = kwargs.pop("ctx", None)
    p = _probs(pvals, ctx)
    if p.ndim != 1:
        raise ValueError(f"multinomial: pvals must be 1-d, got shape {p.shape}")
    shp = () if size is None else ((size,) if isinstance(size, numbers.Integral) else
                                   tuple(size))
    k = p.shape[0]
    if int(n) == 0 or k == 0 or 0 in shp:
        # nothing to draw (no trials, no outcomes or an empty size): all-zero counts
        return _draw("_zeros", shp + (k,), p.context, "int64")
    cats = _native.invoke_np("_sample_multinomial", [p], shape=shp + (int(n),), dtype="int64")
    return _nd.one_hot(cats, depth=k, dtype="int64").sum(axis=-2)


def choice(a, size=None, replace=True, p=None, ctx=None, out=None):
    """Random samples of ``arange(a)`` (``a`` an int) or of the 1-d array ``a``, with
    probabilities ``p``; without replacement via a random permutation (uniform) or the
    Gumbel-top-k trick (with ``p``)."""
    from . import arange

    arr = None
    if isinstance(a, _nd.NDArray):
        arr = _np(a)
        if arr.ndim != 1:
            raise ValueError("choice: a must be 1-dimensional")
        n = arr.shape[0]
        ctx = arr.context
    else:
        n = int(a)
    if n <= 0:
        raise ValueError("choice: a must be greater than 0")
    shp = () if size is None else ((size,) if isinstance(size, numbers.Integral) else
                                   tuple(size))
    cnt = int(_onp.prod(shp)) if shp else 1
    if replace:
        if p is None:
            idx = _draw("_random_randint", shp, ctx, "int64", low=0, high=n)
        else:
            idx = _native.invoke_np("_sample_multinomial", [_probs(p, ctx)], shape=shp,
                                    dtype="int64")
    else:
        if cnt > n:
            raise ValueError("choice: Cannot take a larger sample than population when "
                             "'replace=False'")
        if p is None:
            perm = _native.invoke_np("_shuffle", [arange(n, dtype="int64", ctx=ctx)])
            idx = _nd.slice_axis(perm, axis=0, begin=0, end=cnt).reshape(shp)
        else:
            keys = _nd.log(_probs(p, ctx).astype("float64")) - _nd.log(-_nd.log(_unit((n,),
                                                                                   ctx)))
            top = _nd.topk(keys, k=builtins.max(cnt, 1), ret_typ="indices", dtype="int64")
            idx = _nd.slice_axis(top, axis=0, begin=0, end=cnt).reshape(shp)
    res = idx if arr is None else _nd.take(arr, idx, axis=0)
    return _out(res, out)


def shuffle(x):
    """Shuffles ``x`` in place along its first axis (returns None, as NumPy's)."""
    x[...] = _native.invoke_np("_shuffle", [x])


def seed(seed, ctx="all"):
    """Seeds the random number generators (``mx.random.seed``)."""
    from .. import random as _rand

    _rand.seed(seed, ctx=ctx)
