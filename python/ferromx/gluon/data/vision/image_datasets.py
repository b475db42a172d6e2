"""Image datasets: a folder per class, an image list, or a RecordIO file."""

import os
import warnings

import numpy as np

from .... import image
from ....image._records import _IndexedRecords
from ..dataset import Dataset

__all__ = ["ImageFolderDataset", "ImageListDataset", "ImageRecordDataset"]

_EXTS = (".jpg", ".jpeg", ".png")


class ImageFolderDataset(Dataset):
    """Images stored as ``root/<class>/<file>``; each sample is ``(image, label)`` with
    labels numbered by sorted class folder (``synsets[label]`` is the folder name).
    ``flag`` 0 decodes grey (1 channel), 1 colour; ``transform(data, label)`` is applied."""

    def __init__(self, root, flag=1, transform=None):
        self._root = os.path.expanduser(root)
        self._flag = flag
        self._transform = transform
        self._exts = list(_EXTS)
        self._list_images(self._root)

    def _list_images(self, root):
        self.synsets = []
        self.items = []
        for folder in sorted(os.listdir(root)):
            path = os.path.join(root, folder)
            if not os.path.isdir(path):
                warnings.warn(f"Ignoring {path}, which is not a directory.", stacklevel=3)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for filename in sorted(os.listdir(path)):
                filename = os.path.join(path, filename)
                ext = os.path.splitext(filename)[1]
                if ext.lower() not in self._exts:
                    warnings.warn(f"Ignoring {filename} of type {ext}. "
                                  f"Only support {', '.join(self._exts)}", stacklevel=3)
                    continue
                self.items.append((filename, label))

    def __getitem__(self, idx):
        img = image.imread(self.items[idx][0], self._flag)
        label = self.items[idx][1]
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self):
        return len(self.items)


class ImageListDataset(Dataset):
    """Images listed in a ``.lst`` file (``index<TAB>label(s)<TAB>path``) or a list of
    ``[label, path]`` entries, relative to ``root``; samples are ``(image, label)``."""

    def __init__(self, root=".", imglist=None, flag=1):
        self._root = os.path.expanduser(root)
        self._flag = flag
        self.items = []
        if isinstance(imglist, str):
            with open(os.path.expanduser(imglist)) as fin:
                for line in fin:
                    parts = line.strip().split("\t")
                    if len(parts) < 3:
                        continue
                    labels = [float(v) for v in parts[1:-1]]
                    label = labels[0] if len(labels) == 1 else np.array(labels, dtype=np.float32)
                    self.items.append((parts[-1], label))
        elif imglist is not None:
            for entry in imglist:
                *labels, path = entry
                label = labels[0] if len(labels) == 1 else np.array(labels, dtype=np.float32)
                self.items.append((path, label))
        else:
            raise ValueError("ImageListDataset: imglist must be a .lst path or a list")

    def __getitem__(self, idx):
        path, label = self.items[idx]
        return image.imread(os.path.join(self._root, path), self._flag), label

    def __len__(self):
        return len(self.items)


class ImageRecordDataset(Dataset):
    """Images in a RecordIO file (``filename`` with its ``.idx`` beside it), as written by
    ``im2rec``/``recordio.pack_img``; samples are ``(image, label)``."""

    def __init__(self, filename, flag=1, transform=None):
        self.idx_file = os.path.splitext(filename)[0] + ".idx"
        self.filename = filename
        self._flag = flag
        self._transform = transform
        try:
            from .... import recordio
        except ImportError:
            recordio = None
        if recordio is not None:
            self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")
            def unpack(s):
                header, img = recordio.unpack(s)
                return header.label, img

            self._unpack = unpack
        else:
            self._record = _IndexedRecords(self.idx_file, self.filename)
            self._unpack = _IndexedRecords.unpack

    def __getitem__(self, idx):
        label, img = self._unpack(self._record.read_idx(self._record.keys[idx]))
        data = image.imdecode(img, self._flag)
        if self._transform is not None:
            return self._transform(data, label)
        return data, label

    def __len__(self):
        return len(self._record.keys)
