"""A minimal reader of MXNet's RecordIO files (``.rec``, optionally with its ``.idx``),
used by the image datasets and iterators when ``ferromx.recordio`` is not available."""

import os
import struct

import numpy as np


class _IndexedRecords:
    """A minimal reader of MXNet's indexed RecordIO (``.rec`` + ``.idx``), used only
    when ``ferromx.recordio`` is not available."""

    _MAGIC = 0xCED7230A

    def __init__(self, idx_path, rec_path):
        self._rec = rec_path
        self.keys, self._pos = [], {}
        if idx_path is not None and os.path.isfile(idx_path):
            with open(idx_path) as f:
                for line in f:
                    parts = line.strip().split("\t")
                    if len(parts) == 2:
                        self.keys.append(int(parts[0]))
                        self._pos[int(parts[0])] = int(parts[1])
        else:  # no index: scan the file for record starts
            with open(rec_path, "rb") as f:
                pos, key = 0, 0
                while True:
                    head = f.read(8)
                    if len(head) < 8:
                        break
                    magic, lrec = struct.unpack("<II", head)
                    if magic != self._MAGIC:
                        raise ValueError(f"bad record magic at byte {pos} of {rec_path}")
                    cflag, length = lrec >> 29, lrec & ((1 << 29) - 1)
                    if cflag in (0, 1):
                        self.keys.append(key)
                        self._pos[key] = pos
                        key += 1
                    f.seek((length + 3) // 4 * 4, 1)
                    pos += 8 + (length + 3) // 4 * 4

    def read_idx(self, key):
        out = b""
        with open(self._rec, "rb") as f:
            f.seek(self._pos[key])
            while True:
                magic, lrec = struct.unpack("<II", f.read(8))
                if magic != self._MAGIC:
                    raise ValueError(f"bad record magic at key {key}")
                cflag, length = lrec >> 29, lrec & ((1 << 29) - 1)
                out += f.read(length)
                f.read((4 - length % 4) % 4)
                if cflag in (0, 3):
                    return out

    @staticmethod
    def unpack(s):
        flag, label, _id, _id2 = struct.unpack("<IfQQ", s[:24])
        s = s[24:]
        if flag > 0:
            label = np.frombuffer(s[:4 * flag], dtype=np.float32)
            s = s[4 * flag:]
        return label, s
