"""``contrib.rand_zipfian`` for ``nd`` and ``sym``: candidate sampling from the
approximately Zipfian (log-uniform) distribution, composed of engine operators.

``P(class) = (log(class + 2) - log(class + 1)) / log(range_max + 1)``; classes are drawn as
``floor(exp(u) - 1)`` with ``u ~ U[0, log(range_max + 1))`` (sampling with replacement),
and the expected counts are that probability times ``num_sampled``, in float64 (MXNet's
``contrib.rand_zipfian`` returns the same three arrays).
"""

import math


def rand_zipfian(F, true_classes, num_sampled, range_max, ctx=None):
    """``(sampled_classes int64, expected_count_true, expected_count_sampled)`` in ``F``
    (``nd`` or ``sym``)."""
    log_range = math.log(range_max + 1)
    kw = {} if ctx is None else {"ctx": ctx}
    u = F.random.uniform(0, log_range, shape=(num_sampled,), dtype="float64", **kw)
    sampled = F.cast(F.exp(u) - 1, dtype="int64") % range_max

    def expected(classes):
        c = F.cast(classes, dtype="float64")
        return F.log((c + 2.0) / (c + 1.0)) / log_range * num_sampled

    return sampled, expected(true_classes), expected(sampled)
