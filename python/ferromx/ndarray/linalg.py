"""``nd.linalg``: MXNet 1.9.1's legacy linear-algebra operators under their short names
(``nd.linalg.potrf`` is ``nd.linalg_potrf``). The factorizations (``potrf``, ``potri``,
``trsm``, ``gelqf``, ``syevd``, ``inverse``, ``det``, ``slogdet``) are Rust operators with
MXNet's gradients; the products and the diagonal/triangle helpers are composed of engine
operators."""

from .ndarray import invoke

__all__ = [
    "det",
    "extractdiag",
    "extracttrian",
    "gelqf",
    "gemm",
    "gemm2",
    "inverse",
    "makediag",
    "maketrian",
    "potrf",
    "potri",
    "slogdet",
    "sumlogdiag",
    "syevd",
    "syrk",
    "trmm",
    "trsm",
]


def _nd():
    from .. import ndarray

    return ndarray


def _store(res, out):
    if out is None:
        return res
    if isinstance(res, (list, tuple)):
        for o, r in zip(out, res):
            o[:] = r
        return out
    out[:] = res
    return out


def gemm2(A, B, transpose_a=False, transpose_b=False, alpha=1.0, axis=-2, out=None, **kwargs):
    """``alpha · op(A) · op(B)``; ``axis`` holds the matrix rows (default -2), the
    last axis the columns, every other axis is a batch axis."""
    return _store(invoke("linalg_gemm2", [A, B], transpose_a=transpose_a,
                         transpose_b=transpose_b, alpha=float(alpha), axis=int(axis)), out)


def gemm(A, B, C, transpose_a=False, transpose_b=False, alpha=1.0, beta=1.0, axis=-2,
         out=None, **kwargs):
    """``alpha · op(A) · op(B) + beta · C``."""
    return _store(gemm2(A, B, transpose_a, transpose_b, alpha, axis) + C * beta, out)


def potrf(A, out=None, name=None):
    """Lower Cholesky factor ``L`` with ``A = L·Lᵀ`` (the lower triangle of ``A`` is read)."""
    return _store(invoke("_linalg_potrf", [A]), out)


def potri(A, out=None, name=None):
    """``(L·Lᵀ)⁻¹`` from lower Cholesky factors ``A = L``."""
    return _store(invoke("_linalg_potri", [A]), out)


def trsm(A, B, transpose=False, rightside=False, lower=True, alpha=1.0, out=None, name=None):
    """Triangular solve: ``alpha · op(A)⁻¹ · B`` (``alpha · B · op(A)⁻¹`` with ``rightside``)."""
    return _store(invoke("_linalg_trsm", [A, B], transpose=bool(transpose),
                         rightside=bool(rightside), lower=bool(lower), alpha=float(alpha)), out)


def gelqf(A, out=None, name=None):
    """LQ factorization ``A = L·Q`` of each ``m×n`` matrix (``m ≤ n``): ``[Q, L]``."""
    return _store(invoke("_linalg_gelqf", [A]), out)


def syevd(A, out=None, name=None):
    """Symmetric eigendecomposition ``A = Uᵀ·diag(L)·U``: ``[U, L]`` (rows of ``U`` are the
    eigenvectors, ``L`` ascending)."""
    return _store(invoke("_linalg_syevd", [A]), out)


def inverse(A, out=None, name=None):
    """Inverse of each square matrix."""
    return _store(invoke("_linalg_inverse", [A]), out)


def det(A, out=None, name=None):
    """Determinant of each square matrix."""
    return _store(invoke("_linalg_det", [A]), out)


def slogdet(A, out=None, name=None):
    """``[sign, logabsdet]`` of each square matrix's determinant."""
    return _store(invoke("_linalg_slogdet", [A]), out)


def trmm(A, B, transpose=False, rightside=False, lower=True, alpha=1.0, out=None, name=None):
    """``alpha · op(tri(A)) · B`` (or ``B · op(tri(A))`` with ``rightside``)."""
    return _nd().linalg_trmm(A, B, transpose, rightside, lower, alpha, out=out)


def syrk(A, transpose=False, alpha=1.0, out=None, name=None):
    """``alpha · A·Aᵀ`` (``Aᵀ·A`` with ``transpose``)."""
    return _nd().linalg_syrk(A, transpose, alpha, out=out)


def sumlogdiag(A, out=None, name=None):
    """Sum of the logarithms of each matrix's diagonal."""
    return _nd().linalg_sumlogdiag(A, out=out)


def extractdiag(A, offset=0, out=None, name=None):
    """The ``offset`` diagonal of each matrix."""
    return _nd().linalg_extractdiag(A, offset, out=out)


def makediag(A, offset=0, out=None, name=None):
    """Square matrices with the trailing vectors of ``A`` on diagonal ``offset``."""
    return _nd().linalg_makediag(A, offset, out=out)


def extracttrian(A, offset=0, lower=True, out=None, name=None):
    """The lower (upper) triangle of each matrix, packed row by row."""
    return _nd().linalg_extracttrian(A, offset, lower, out=out)


def maketrian(A, offset=0, lower=True, out=None, name=None):
    """Triangular matrices from packed triangles."""
    return _nd().linalg_maketrian(A, offset, lower, out=out)
