"""``mx.image``: image decoding, resizing, cropping, augmenters and ``ImageIter``
(MXNet's ``python/mxnet/image``). Decoding runs natively with the GIL released; all
array math is engine operators."""

from .image import *
from .image import (  # noqa: F401 - used by recordio.pack_img
    __all__,
    _get_interp_method,
    _imencode,
)
