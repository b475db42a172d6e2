"""The DataLoader's fused vision path (worker processes, default batching).

When a dataset is exactly ``ImageFolderDataset(...)`` or ``ImageRecordDataset(...)`` (no
subclass, no ``transform`` of its own) wrapped by ``transform_first(t)``, and ``t`` is
exactly a :class:`~.transforms.Compose` of, in this order,

* at most one of ``RandomResizedCrop``, ``CenterCrop`` or ``Resize`` (with a fixed output
  size: not ``keep_ratio`` with one int),
* optionally ``RandomFlipLeftRight``,
* ``ToTensor``,
* optionally ``Normalize``,

a worker builds the image half of a batch in one native call (``fused_vision_batch``:
decode, crop, resize, mirror, ``/ 255``, normalise, written into the shared-memory block)
instead of one engine op per transform per image.  The random draws are the per-transform
path's own: the crop box comes from :func:`ferromx.image._random_size_box` (the same
``random`` calls as ``random_size_crop``) on the size read from the file's header, and the
flip coins from the ``_image_random_flip_left_right`` seed stream, so after seeding
``random`` and ``mx.random`` both paths give the same bits.  Anything else (another
transform, a subclass, a custom ``batchify_fn``, a file whose header cannot be read) takes
the generic path.
"""

import numpy as np

from .... import _native
from ....context import _ctx_str, current_context
from ....image import image as _img
from ...block import HybridSequential
from .. import dataset as _ds
from . import image_datasets as _idata
from . import transforms as _tr


def _plain(block):
    """No forward hooks (the fused path would skip them)."""
    return not block._forward_hooks and not block._forward_pre_hooks


def _flat_transforms(t):
    """The transforms of an exact ``Compose`` (its hybrid groups opened), or None."""
    if type(t) is not _tr.Compose or not _plain(t):
        return None
    out = []
    for child in t._children.values():
        if type(child) is HybridSequential:
            if not _plain(child):
                return None
            out.extend(child._children.values())
        else:
            out.append(child)
    return out if all(_plain(c) for c in out) else None


def _geometry(t):
    """``(kind, args, (out_h, out_w))`` of a crop/resize transform, or None."""
    kind = type(t)
    if kind is _tr.RandomResizedCrop:
        size, scale, ratio, interp = t._args
        return "rrc", (size, scale, ratio, interp), (size[1], size[0])
    if kind is _tr.CenterCrop:
        size, interp = t._args
        return "center", (size, interp), (size[1], size[0])
    if kind is _tr.Resize:
        size, keep = t._size, t._keep
        if isinstance(size, int):
            if keep or size <= 0:
                return None
            return "resize", (t._interpolation,), (size, size)
        size = tuple(size)
        if len(size) != 2 or min(size) <= 0:
            return None
        return "resize", (t._interpolation,), (size[1], size[0])
    return None


def _per_channel(v, c):
    v = [float(x) for x in (v if isinstance(v, (tuple, list)) else [v])]
    if len(v) == 1:
        return v * c
    if len(v) >= c and all(x == v[0] for x in v[c:]):
        return v[:c]
    return None


class FusedPlan:
    """What a worker needs to build a batch's images natively (see the module docs)."""

    def __init__(self, base, geometry, flip, normalize):
        self.base = base
        self.kind, self.args, self.out_hw = geometry
        self.flip = flip
        self.normalize = normalize
        self.flag = base._flag

    def _encoded(self, idx):
        """``(bytes, label)`` of sample ``idx`` before decoding."""
        base = self.base
        if isinstance(base, _idata.ImageRecordDataset):
            label, img = base._unpack(base._record.read_idx(base._record.keys[idx]))
            return bytes(img), label
        path, label = base.items[idx]
        with open(path, "rb") as f:
            return f.read(), label

    def _box(self, h, w):
        """``(box, interp)``: the crop box and the resize's interpolation code (drawn
        exactly as the per-transform path draws them)."""
        if self.kind == "resize":
            return (0, 0, w, h), self.args[0]
        size, interp = self.args[0], self.args[-1]
        box = None
        if self.kind == "rrc":
            box = _img._random_size_box(h, w, self.args[1], self.args[2])
        if box is None:
            box = _img._center_box(h, w, size)
        _, _, bw, bh = box
        if (bw, bh) == tuple(size):
            return box, 1  # no resize: the code is unused
        return box, _img._get_interp_method(interp, (bh, bw, size[1], size[0]))

    def images(self, indices):
        """``(leaf, labels)`` for a batch, or None when a header cannot be read (the
        generic path then reports the problem as it always does)."""
        try:
            encoded = [self._encoded(i) for i in indices]
            sizes = [_native.image_size(b) for b, _ in encoded]
        except Exception:  # noqa: BLE001 - unreadable, or not a JPEG/PNG header: the
            return None  # generic path reports it with its own error
        boxes, interps = [], []
        for h, w in sizes:
            box, interp = self._box(h, w)
            boxes.append(box)
            interps.append(interp)
        labels = [label for _, label in encoded]
        return FusedImages(self, [b for b, _ in encoded], boxes, interps), labels


class FusedImages:
    """A shared-memory leaf of the worker batch: the fused call writes it in place."""

    def __init__(self, plan, bufs, boxes, interps):
        self.plan, self.bufs, self.boxes, self.interps = plan, bufs, boxes, interps
        c = 1 if plan.flag == 0 else 3
        self.shape = (len(bufs), c) + tuple(plan.out_hw)
        self.dtype = np.dtype(np.float32)
        self.nbytes = int(np.prod(self.shape)) * 4

    def write(self, out):
        """Decode and transform every image into ``out`` (a float32 array of ``shape``)."""
        plan = self.plan
        mean, std = plan.normalize if plan.normalize else (None, None)
        _native.fused_vision_batch(
            self.bufs, out.reshape(-1).view(np.uint8), self.boxes, self.interps, plan.out_hw,
            flag=plan.flag, force_resize=plan.kind == "resize", flip=plan.flip, mean=mean,
            std=std, ctx=_ctx_str(current_context()))


def plan_for(dataset):
    """A :class:`FusedPlan` when ``dataset`` is one the fused path covers, else None."""
    if type(dataset) is not _ds._LazyTransformDataset:
        return None
    closure = dataset._fn
    base = dataset._data
    if type(closure) is not _ds._TransformFirstClosure:
        return None
    if type(base) not in (_idata.ImageFolderDataset, _idata.ImageRecordDataset):
        return None
    if base._transform is not None or base._flag not in (0, 1):
        return None
    steps = _flat_transforms(closure._fn)
    if not steps:
        return None
    geometry = _geometry(steps[0])
    if geometry is None:
        return None
    rest = steps[1:]
    flip = bool(rest) and type(rest[0]) is _tr.RandomFlipLeftRight
    rest = rest[1:] if flip else rest
    if not rest or type(rest[0]) is not _tr.ToTensor:
        return None
    rest = rest[1:]
    normalize = None
    if rest and type(rest[0]) is _tr.Normalize:
        c = 1 if base._flag == 0 else 3
        mean, std = _per_channel(rest[0]._mean, c), _per_channel(rest[0]._std, c)
        if mean is None or std is None or 0.0 in std:
            return None
        normalize = (mean, std)
        rest = rest[1:]
    if rest:
        return None
    return FusedPlan(base, geometry, flip, normalize)
