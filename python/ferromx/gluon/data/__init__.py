"""Datasets, samplers and the DataLoader (``mx.gluon.data``)."""

from . import dataloader, dataset, sampler, vision
from .dataloader import (
    DataLoader,
    DataLoaderTimeoutError,
    DataLoaderWorkerError,
    default_batchify_fn,
    default_mp_batchify_fn,
)
from .dataset import ArrayDataset, Dataset, RecordFileDataset, SimpleDataset
from .sampler import (
    BatchSampler,
    FilterSampler,
    IntervalSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
)

__all__ = [
    "ArrayDataset",
    "BatchSampler",
    "DataLoader",
    "DataLoaderTimeoutError",
    "DataLoaderWorkerError",
    "Dataset",
    "FilterSampler",
    "IntervalSampler",
    "RandomSampler",
    "RecordFileDataset",
    "Sampler",
    "SequentialSampler",
    "SimpleDataset",
    "dataloader",
    "dataset",
    "default_batchify_fn",
    "default_mp_batchify_fn",
    "sampler",
    "vision",
]
