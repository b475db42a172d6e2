"""Vision datasets (and, when the image package is present, transforms) of ``gluon.data``."""

from . import datasets
from .datasets import CIFAR10, CIFAR100, MNIST, FashionMNIST

try:  # provided by the image package
    from . import transforms
except ImportError:  # pragma: no cover - only while the image package is absent
    transforms = None

try:  # ImageFolderDataset, ImageListDataset, ImageRecordDataset (image package)
    from .image_datasets import *
except ImportError:  # pragma: no cover
    pass

__all__ = ["CIFAR10", "CIFAR100", "MNIST", "FashionMNIST", "datasets", "transforms"]
