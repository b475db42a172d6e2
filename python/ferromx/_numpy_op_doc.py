"""Signatures of the native ``_np_*`` operators (MXNet's ``mxnet._numpy_op_doc``).

In MXNet this module holds one Python stub per ``_np_<name>`` operator registered in C++;
:mod:`ferromx.numpy_op_signature` copies each stub's signature onto the matching
``np``/``npx`` function. ferromx's operator table generates most np functions under their
own names; the ``_np_``-prefixed operators it does register (``_np_cumsum``) have their
stub here, so that code importing this module, and the check that every registered
``_np_`` operator is documented here, work unchanged.
"""


def _np_cumsum(a, axis=None, dtype=None, out=None):
    """Return the cumulative sum of the elements along a given axis (the flattened array
    for ``axis=None``), added in the result's dtype; ``np.cumsum`` calls the operator."""



def _np_reshape(a, newshape, order="C", out=None):
    """Give a new shape to an array without changing its data, with NumPy's rule: sizes
    are literal (0 is a zero-size axis, not ``Reshape``'s "copy" code) and one -1 is
    inferred. Recorded graphs use it where a target has a zero-size axis."""
