"""Vision data of ``gluon.data``: datasets, image datasets and transforms."""

from . import datasets, image_datasets, transforms
from .datasets import CIFAR10, CIFAR100, MNIST, FashionMNIST
from .image_datasets import ImageFolderDataset, ImageListDataset, ImageRecordDataset

__all__ = [
    "CIFAR10",
    "CIFAR100",
    "MNIST",
    "FashionMNIST",
    "ImageFolderDataset",
    "ImageListDataset",
    "ImageRecordDataset",
    "datasets",
    "image_datasets",
    "transforms",
]
