"""Vision data: image transforms and image datasets (``gluon.data.vision``)."""

from . import transforms
from .image_datasets import ImageFolderDataset, ImageListDataset, ImageRecordDataset

__all__ = ["ImageFolderDataset", "ImageListDataset", "ImageRecordDataset", "transforms"]
