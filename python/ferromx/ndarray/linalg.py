"""``nd.linalg``: matrix products."""

from .ndarray import invoke

__all__ = ["gemm2", "gemm"]


def gemm2(A, B, transpose_a=False, transpose_b=False, alpha=1.0, axis=-2, **kwargs):
    """``alpha · op(A) · op(B)`` over the last two axes (leading axes batch)."""
    return invoke("linalg_gemm2", [A, B], transpose_a=transpose_a, transpose_b=transpose_b,
                  alpha=float(alpha))


def gemm(A, B, C, transpose_a=False, transpose_b=False, alpha=1.0, beta=1.0, **kwargs):
    """``alpha · op(A) · op(B) + beta · C``."""
    return gemm2(A, B, transpose_a, transpose_b, alpha) + C * beta
