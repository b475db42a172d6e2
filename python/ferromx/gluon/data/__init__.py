"""Datasets, samplers and the DataLoader (``mx.gluon.data``)."""

from . import dataloader, dataset, sampler, vision
from .dataloader import DataLoader, default_batchify_fn, default_mp_batchify_fn
from .dataset import ArrayDataset, Dataset, SimpleDataset
from .sampler import BatchSampler, FilterSampler, RandomSampler, Sampler, SequentialSampler

__all__ = [
    "ArrayDataset",
    "BatchSampler",
    "DataLoader",
    "Dataset",
    "FilterSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SimpleDataset",
    "dataloader",
    "dataset",
    "default_batchify_fn",
    "default_mp_batchify_fn",
    "sampler",
]
