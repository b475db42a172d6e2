"""``mx.image``: image decoding, resizing, cropping, augmenters and ``ImageIter``
(MXNet's ``python/mxnet/image``). Decoding runs natively with the GIL released; all
array math is engine operators."""

from .image import *  # noqa: F401,F403
from .image import __all__  # noqa: F401
from .image import _get_interp_method, _imencode  # noqa: F401 - used by recordio.pack_img
