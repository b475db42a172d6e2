"""Gluon helpers (``mx.gluon.utils``), following MXNet 1.9.1."""

import hashlib
import math
import os
import shutil
import ssl
import urllib.request
import uuid
import warnings

import numpy as np

from .. import ndarray as nd
from ..ndarray import NDArray
from ..util import _as_np_mode

__all__ = [
    "check_sha1",
    "clip_global_norm",
    "download",
    "replace_file",
    "split_and_load",
    "split_data",
]


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """Split ``data`` into ``num_slice`` slices along ``batch_axis``.

    With ``even_split`` the size must divide evenly; otherwise the first
    ``size % num_slice`` slices get one extra element.
    """
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ValueError(
            f"data with shape {data.shape} cannot be evenly split into {num_slice} slices along "
            f"axis {batch_axis}. Use a batch size that's multiple of {num_slice} or set "
            "even_split=False to allow uneven partitioning of data."
        )
    if size < num_slice:
        raise ValueError(
            f"Too many slices for data with shape {data.shape}. Arguments are "
            f"num_slice={num_slice} and batch_axis={batch_axis}."
        )
    if num_slice == 1:
        return [data]
    step, extras = divmod(size, num_slice)
    bounds = [0]
    for i in range(num_slice):
        bounds.append(bounds[-1] + step + (1 if i < extras else 0))
    slices = []
    for begin, end in zip(bounds[:-1], bounds[1:]):
        if batch_axis == 0:
            slices.append(data[begin:end])
        else:
            idx = nd.array(np.arange(begin, end, dtype=np.int64), ctx=data.context, dtype="int64")
            slices.append(nd.take(data, idx, axis=batch_axis))
    return slices


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Split ``data`` along ``batch_axis`` and put slice ``i`` on ``ctx_list[i]``."""
    if not isinstance(data, NDArray):
        data = nd.array(np.asarray(data), ctx=ctx_list[0])
    data = _as_np_mode(data)
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [part.as_in_context(ctx) for part, ctx in zip(slices, ctx_list)]


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Rescale ``arrays`` in place so that their joint L2 norm is at most ``max_norm``.

    Returns the norm before clipping: a float when ``check_isfinite`` (which reads it,
    warning on NaN/inf), otherwise an NDArray so that nothing waits.
    """
    if not arrays:
        raise ValueError("arrays must not be empty")
    ctx = arrays[0].context
    total = None
    for arr in arrays:
        part = nd.square(arr).sum().as_in_context(ctx)
        total = part if total is None else total + part
    total_norm = nd.sqrt(total)
    if check_isfinite:
        value = float(total_norm.asnumpy().reshape(-1)[0])
        if not math.isfinite(value):
            warnings.warn(
                UserWarning("nan or inf is detected. Clipping results will be undefined."),
                stacklevel=2,
            )
    scale = nd.clip(max_norm / (total_norm + 1e-8), 0.0, 1.0)
    for arr in arrays:
        arr *= scale.as_in_context(arr.context)
    if check_isfinite:
        return value
    return total_norm


def check_sha1(filename, sha1_hash):
    """Return whether the SHA-1 of the file ``filename`` equals ``sha1_hash``."""
    sha1 = hashlib.sha1()
    with open(filename, "rb") as fobj:
        for chunk in iter(lambda: fobj.read(1048576), b""):
            sha1.update(chunk)
    return sha1.hexdigest() == sha1_hash


def replace_file(src, dst):
    """Move ``src`` onto ``dst`` atomically (replacing ``dst`` if it exists)."""
    os.replace(src, dst)


def _url_file_name(url):
    return url.split("/")[-1].split("?")[0] or "download"


def download(url, path=None, overwrite=False, sha1_hash=None, retries=5, verify_ssl=True):
    """Download ``url`` to ``path`` (a file or a directory; default: the URL's file name
    in the current directory) and return the file's path.

    An existing file is kept unless ``overwrite`` or its SHA-1 differs from
    ``sha1_hash``.  The data is written to a temporary file and moved into place, so an
    interrupted download leaves no partial file.  Raises the last ``OSError`` (for
    example ``urllib.error.URLError`` when offline) after ``retries`` attempts.
    """
    if path is None:
        fname = _url_file_name(url)
    else:
        path = os.path.expanduser(path)
        fname = os.path.join(path, _url_file_name(url)) if os.path.isdir(path) else path
    if not retries > 0:
        raise ValueError(f"Number of retries should be at least 0, currently it's {retries}")
    if not overwrite and os.path.exists(fname) and (not sha1_hash or check_sha1(fname, sha1_hash)):
        return fname
    dirname = os.path.dirname(os.path.abspath(fname))
    os.makedirs(dirname, exist_ok=True)
    context = None
    if not verify_ssl:
        context = ssl._create_unverified_context()
    last_error = None
    for _ in range(retries):
        tmp = f"{fname}.{uuid.uuid4()}"
        try:
            with (
                urllib.request.urlopen(url, timeout=30, context=context) as resp,
                open(tmp, "wb") as fobj,
            ):
                shutil.copyfileobj(resp, fobj, 1 << 20)
            if sha1_hash and not check_sha1(tmp, sha1_hash):
                raise OSError(f"File {fname} downloaded from {url} has a different SHA-1 hash")
            replace_file(tmp, fname)
            return fname
        except OSError as err:
            last_error = err
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    raise last_error
