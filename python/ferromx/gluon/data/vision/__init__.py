"""Vision datasets (and, when the image package is present, transforms) of ``gluon.data``."""

from . import datasets
from .datasets import CIFAR10, CIFAR100, MNIST, FashionMNIST

__all__ = ["CIFAR10", "CIFAR100", "MNIST", "FashionMNIST", "datasets"]

try:  # provided by the image package
    from . import transforms  # noqa: F401
except ImportError:  # pragma: no cover - only while the image package is absent
    pass
else:
    __all__.append("transforms")

try:  # ImageFolderDataset, ImageListDataset, ImageRecordDataset (image package)
    from . import image_datasets
    from .image_datasets import *
except ImportError:  # pragma: no cover
    pass
else:
    __all__.append("image_datasets")
    __all__.extend(str(name) for name in getattr(image_datasets, "__all__", ()))
