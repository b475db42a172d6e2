"""Signatures of the native ``_np_*`` operators (MXNet's ``mxnet._numpy_op_doc``).

In MXNet this module holds one Python stub per ``_np_<name>`` operator registered in C++;
:mod:`ferromx.numpy_op_signature` copies each stub's signature onto the matching
``np``/``npx`` function. ferromx's operator table registers no ``_np_``-prefixed operator
(its np functions are generated from the table under their own names), so there is no
stub to hold: this module exists so that code importing it, and the check that every
registered ``_np_`` operator is documented here, work unchanged.
"""
