"""``nd.linalg``: matrix products."""

from .ndarray import invoke

__all__ = ["gemm2", "gemm"]


def gemm2(A, B, transpose_a=False, transpose_b=False, alpha=1.0, axis=-2, **kwargs):
    """``alpha · op(A) · op(B)``; ``axis`` holds the matrix rows (default -2), the
    last axis the columns, every other axis is a batch axis."""
    return invoke("linalg_gemm2", [A, B], transpose_a=transpose_a, transpose_b=transpose_b,
                  alpha=float(alpha), axis=int(axis))


def gemm(A, B, C, transpose_a=False, transpose_b=False, alpha=1.0, beta=1.0, axis=-2, **kwargs):
    """``alpha · op(A) · op(B) + beta · C``."""
    return gemm2(A, B, transpose_a, transpose_b, alpha, axis) + C * beta
