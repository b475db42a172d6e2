"""Statistical checks of random generators (``mxnet.test_utils``), on host NumPy/SciPy."""

import numpy as np

__all__ = ["chi_square_check", "gen_buckets_probs_with_ppf", "mean_check", "var_check",
           "verify_generator"]



def _scipy_stats():
    """``scipy.stats`` (optional, as in MXNet), imported on first use: it costs ~1.5 s, which
    every ``import ferromx`` (and every DataLoader worker) would otherwise pay."""
    try:
        import scipy.stats as ss
    except ImportError:  # pragma: no cover - scipy is installed in the test environment
        return None
    return ss


def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """``nbuckets`` equal-probability buckets ``(ppf(i/n), ppf((i+1)/n))`` and their
    probabilities ``1/n``."""
    if nbuckets <= 0:
        raise ValueError("nbuckets must be positive")
    probs = [1.0 / nbuckets] * nbuckets
    buckets = [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets)))
               for i in range(nbuckets)]
    return buckets, probs


def mean_check(generator, mu, sigma, nsamples=1000000):
    """Whether the mean of ``generator(nsamples)`` is within ``3 sigma / sqrt(n)`` of ``mu``."""
    mean = np.array(generator(nsamples)).mean()
    half = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - half < mean < mu + half)


def var_check(generator, sigma, nsamples=1000000):
    """Whether the sample variance of ``generator(nsamples)`` is within
    ``3 sqrt(2 sigma^4 / (n - 1))`` of ``sigma^2``."""
    var = np.array(generator(nsamples)).var(ddof=1)
    half = 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - half < var < sigma ** 2 + half)


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Chi-square test of ``generator(nsamples)`` against bucket probabilities.

    ``buckets`` is a list of ``(low, high)`` ranges (continuous) or of values (discrete).
    Returns ``(p value, observed counts, expected counts)``; needs SciPy.
    """
    ss = _scipy_stats()
    if ss is None:
        raise ImportError("scipy is not available. Please check if the scipy python bindings "
                          "are installed.")
    if not isinstance(buckets, list) or len(probs) != len(buckets):
        raise ValueError("buckets must be a list as long as probs")
    samples = np.asarray(generator(nsamples))
    expected = (nsamples * np.array(probs, dtype=np.float32)).astype(np.int32)
    obs = np.zeros(len(buckets), dtype=np.int64)
    if isinstance(buckets[0], (list, tuple)):
        edges = np.zeros(len(buckets) * 2, dtype=np.float32)
        for i, (lo, hi) in enumerate(buckets):
            if lo > hi or (i + 1 < len(buckets) and hi > buckets[i + 1][0]):
                raise ValueError("buckets must be ascending and must not overlap")
            edges[2 * i], edges[2 * i + 1] = lo, hi
        ids = np.searchsorted(edges, samples, side="right") // 2
        for i in range(len(buckets)):
            obs[i] = (ids == i).sum()
    else:
        for i, value in enumerate(buckets):
            obs[i] = (samples == value).sum()
    _, p = ss.chisquare(f_obs=obs, f_exp=expected * (obs.sum() / max(expected.sum(), 1)))
    return p, obs, expected


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5, success_rate=0.2,
                     alpha=0.05):
    """Repeat :func:`chi_square_check` ``nrepeat`` times; raise ``AssertionError`` unless at
    least ``success_rate`` of the p values exceed ``alpha``. Returns the p values."""
    ps, obs_l, exp_l = [], [], []
    for _ in range(nrepeat):
        p, obs, exp = chi_square_check(generator, buckets, probs, nsamples)
        ps.append(p)
        obs_l.append(obs)
        exp_l.append(exp)
    if (np.array(ps) > alpha).sum() < nrepeat * success_rate:
        raise AssertionError(f"Generator test fails, Chi-square p={ps}, obs_freq={obs_l}, "
                             f"expected_freq={exp_l}.\nbuckets={buckets}, probs={probs}")
    return ps
